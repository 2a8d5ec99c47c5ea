import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { FUNCTION_BUILD, FUNCTION_ENVIRONMENT, REPO_ROOT } from '../infra/lib/fogbridge-function.js';
import { API_ENTRIES, WORKER_ENTRIES } from '../infra/lib/routes.js';
import { percentile } from './support.js';

/** Cold processes per bundle; the median import time is reported. */
const IMPORTS = 5;

/**
 * Bundles every function as the stack deploys it (the same esbuild options) and imports each in fresh
 * Node processes, as a cold Lambda would (with the function's NODE_OPTIONS): its size, its source map's,
 * and the median time of `await import(bundle)`.
 */
export async function runBundles() {
  const outdir = mkdtempSync(join(tmpdir(), 'fogbridge-bundles-'));
  const rows: Record<string, { kilobytes: number; mapKilobytes: number; importMs: number }> = {};
  try {
    for (const [name, entry] of Object.entries({ ...API_ENTRIES, ...WORKER_ENTRIES })) {
      const outfile = join(outdir, name, 'index.mjs');
      await build({
        ...FUNCTION_BUILD,
        mainFields: [...FUNCTION_BUILD.mainFields],
        entryPoints: [join(REPO_ROOT, entry)],
        outfile,
        logLevel: 'error',
      });
      const times = Array.from({ length: IMPORTS }, () => importMs(outfile));
      rows[name] = {
        kilobytes: Math.round(statSync(outfile).size / 1024),
        mapKilobytes: existsOr0(`${outfile}.map`),
        importMs: Math.round(percentile(times, 50)),
      };
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
  const sizes = Object.values(rows).map((row) => row.kilobytes);
  const times = Object.values(rows).map((row) => row.importMs);
  const result = {
    functions: rows,
    largestKilobytes: Math.max(...sizes),
    medianKilobytes: percentile(sizes, 50),
    slowestImportMs: Math.max(...times),
    medianImportMs: percentile(times, 50),
  };
  console.log('\nFunction bundles (as deployed; import time: median of fresh processes)');
  console.table(
    Object.fromEntries(
      Object.entries(rows).map(([name, row]) => [
        name,
        { 'bundle (KB)': row.kilobytes, 'source map (KB)': row.mapKilobytes, 'import (ms)': row.importMs },
      ]),
    ),
  );
  console.table({
    'bundle size largest / median (KB)': `${result.largestKilobytes} / ${result.medianKilobytes}`,
    'import time slowest / median (ms)': `${result.slowestImportMs} / ${result.medianImportMs}`,
  });
  return result;
}

/** One cold import of a bundle in a fresh Node process, with the function's NODE_OPTIONS. */
function importMs(bundle: string): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(pathToFileURL(bundle).href)}); console.log(performance.now() - t);`;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH, AWS_REGION: 'us-east-1', ...FUNCTION_ENVIRONMENT },
  });
  return Number(output.toString().trim().split('\n').at(-1));
}

function existsOr0(file: string): number {
  try {
    return Math.round(statSync(file).size / 1024);
  } catch {
    return 0;
  }
}
