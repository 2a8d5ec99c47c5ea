// Building test binaries from Go modules once per machine: a cache folder, an exclusive build lock
// (two suites that start together build once), and running the go command.
import { spawn } from 'node:child_process';
import { open, readFile, stat, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pidAlive } from './processes.js';

const LOCK_STALE_MS = 60 * 60_000;

export function cacheRoot(): string {
  return process.env.FOGBRIDGE_CACHE_DIR ?? join(homedir(), '.cache', 'fogbridge');
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Takes an exclusive lock file (O_EXCL), waiting for another builder; breaks locks of dead processes. */
export async function acquireLock(lockPath: string, what: string): Promise<() => Promise<void>> {
  let waitingSince: number | undefined;
  for (;;) {
    try {
      const handle = await open(lockPath, 'wx');
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return async () => {
        await unlink(lockPath).catch(() => undefined);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
    const age = await stat(lockPath).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if ((Number.isInteger(holder) && holder > 0 && !pidAlive(holder)) || age > LOCK_STALE_MS) {
      process.stderr.write(`[go-build] breaking stale build lock ${lockPath} (pid ${holder})\n`);
      await unlink(lockPath).catch(() => undefined);
      continue;
    }
    if (waitingSince === undefined) {
      waitingSince = Date.now();
      process.stderr.write(
        `[go-build] another process (pid ${holder}) is building ${what}; waiting for it\n`,
      );
    }
    await sleep(1_000);
  }
}

export function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('error', (error) =>
      reject(new Error(`cannot run ${command}: ${error.message} (is Go installed and on PATH?)`)),
    );
    child.once('exit', (code, signal) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(' ')} failed with ${signal ?? `exit code ${code}`}`)),
    );
  });
}
