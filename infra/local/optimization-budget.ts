import { setFlagsFromString } from 'node:v8';

/**
 * How much bytecode a function runs before V8 considers it for its optimizing compiler: sixteen times
 * the default of Node 20's V8 (66 KiB; later versions differ). In the embedded runtime the API,
 * dynalite and fauxqs share the machine's cores with V8's compiler threads. With the default, the
 * first burst after a start made V8 optimize what that burst ran a few dozen times (dynalite's request
 * validation and expression parser above all: about 380 ms of compiler time during a burst of 50
 * creates, on two cores) while the burst waited for the cores. Functions that stay hot are still
 * optimized, a little later: long runs (500 creates, 1,000 agents onboarded) are as fast as with the
 * default (docs/benchmarks.md).
 *
 * Imported first by the processes that run the embedded runtime (`npm start`, the benchmark's), so
 * that it holds from their first function on; the flag is the process's, so every thread started later
 * (the emulators', the workers') has it too.
 */
const OPTIMIZATION_BUDGET = 16 * 66 * 1024;

setFlagsFromString(`--interrupt-budget=${OPTIMIZATION_BUDGET}`);
