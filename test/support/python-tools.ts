import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pidAlive } from './processes.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function log(tool: string, message: string): void {
  process.stderr.write(`[${tool}] ${message}\n`);
}

/** Runs a command with its output streamed to stderr; rejects on a non-zero exit. */
export function runLogged(tool: string, command: string, args: string[]): Promise<void> {
  log(tool, `$ ${command} ${args.join(' ')}`);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited with ${code ?? signal}`)),
    );
  });
}

/**
 * An exclusive lock file holding its owner's pid. A lock whose owner died, or that is older than
 * `staleMs`, is taken over, so a killed test run never wedges the next one.
 */
export async function withLockFile<T>(
  tool: string,
  path: string,
  work: () => Promise<T>,
  staleMs = 20 * 60_000,
): Promise<T> {
  let announced = false;
  for (;;) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let stale = false;
      try {
        const owner = Number(readFileSync(path, 'utf8').trim());
        stale =
          (Number.isInteger(owner) && owner > 0 && !pidAlive(owner)) ||
          Date.now() - statSync(path).mtimeMs > staleMs;
      } catch {
        // The owner removed it between our open and read: try again.
      }
      if (stale) {
        try {
          unlinkSync(path);
        } catch {
          // Someone else removed it first.
        }
        continue;
      }
      if (!announced) {
        log(tool, `waiting for another process holding ${path}`);
        announced = true;
      }
      await sleep(1_000);
    }
  }
  try {
    return await work();
  } finally {
    try {
      unlinkSync(path);
    } catch {
      // Already gone.
    }
  }
}

/**
 * A Python command-line tool from PyPI in its own project-local virtualenv (`.venvs/<tool>/`),
 * installed on first use at the pinned version and reused afterwards. Returns the binary's path.
 */
export async function ensurePythonTool(tool: string, requirement: string, binary: string): Promise<string> {
  const venv = join(process.env.FOGBRIDGE_VENVS_DIR ?? join(repoRoot, '.venvs'), tool);
  const executable = join(venv, 'bin', binary);
  // Written only after pip succeeded, so a half-finished install is redone.
  const marker = join(venv, `.installed-${requirement.replace(/[^A-Za-z0-9.=-]/g, '_')}`);
  if (existsSync(executable) && existsSync(marker)) return executable;
  mkdirSync(venv, { recursive: true });
  await withLockFile(tool, join(venv, '.install.lock'), async () => {
    if (existsSync(executable) && existsSync(marker)) return;
    const started = Date.now();
    log(tool, `installing ${requirement} into ${venv} (first run only)`);
    const python = join(venv, 'bin', 'python');
    if (!existsSync(python)) await runLogged(tool, process.env.PYTHON ?? 'python3', ['-m', 'venv', venv]);
    await runLogged(tool, python, [
      '-m',
      'pip',
      'install',
      '--disable-pip-version-check',
      '--quiet',
      requirement,
    ]);
    if (!existsSync(executable)) throw new Error(`pip finished but ${executable} is missing`);
    closeSync(openSync(marker, 'w'));
    log(tool, `installed in ${Math.round((Date.now() - started) / 1000)} s`);
  });
  return executable;
}
