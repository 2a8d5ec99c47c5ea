import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';

/**
 * What the browser tier (and the page benchmark) share: `npm start` in its own process on a fresh data
 * directory, Debian's Chromium driven by playwright-core, and the page's own test hooks.
 */

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const OUTPUT = join(ROOT, 'test/browser/output');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Chromium on a machine without internet: no background connections, no sandbox as root. */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface NpmStart {
  process: ChildProcess;
  url: string;
  dataDir: string;
  stop(): Promise<void>;
}

/** `npm start` on a fresh data directory; resolves once it says where it listens. */
export async function startNpmStart(env: Record<string, string> = {}): Promise<NpmStart> {
  const dataDir = mkdtempSync(join(tmpdir(), 'fogbridge-page-'));
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, PORT: '0', FOGBRIDGE_DATA_DIR: dataDir, LOG_LEVEL: 'ERROR', ...env },
  });
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const found = /fogbridge listening on (http:\/\/\S+)/.exec(seen);
      if (found) resolve(found[1]!);
    });
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${seen}`)));
  });
  return {
    process: child,
    url,
    dataDir,
    stop: async () => {
      if (!child.pid || child.exitCode !== null) return;
      process.kill(-child.pid, 'SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

export function chromiumInstalled(): boolean {
  return existsSync(CHROMIUM);
}

export function launchChromium(): Promise<Browser> {
  if (!chromiumInstalled())
    throw new Error(`Chromium not found at ${CHROMIUM}: .ci/run installs the chromium package`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/** The page's own hooks (`window.fogbridgePage`), called in the page. */
export const pageApi = <T>(page: Page, call: string) =>
  page.evaluate(`window.fogbridgePage.${call}`) as Promise<T>;

/** Opens the page (with `?refresh=`) and, given one, submits the token. */
export async function openPage(
  browser: Browser,
  url: string,
  options: { width?: number; token?: string; refresh?: number } = {},
): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: options.width ?? 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${url}/ui?refresh=${options.refresh ?? 700}`);
  if (options.token !== undefined) {
    await page.fill('#token', options.token);
    await page.press('#token', 'Enter');
  }
  return page;
}

/**
 * Polls `done` (reading the page's hooks or elements) every 20 ms until it holds. The page's policy
 * forbids evaluating strings in it, so playwright's `waitForFunction` cannot be used.
 */
export async function until(done: () => Promise<boolean>, what: string, timeout = 20_000): Promise<void> {
  const started = Date.now();
  while (!(await done())) {
    if (Date.now() - started > timeout) throw new Error(`${what} not within ${timeout} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Resolves once the page has drawn another answer than the one it showed when called. */
export async function nextRefresh(page: Page, timeout = 20_000): Promise<void> {
  const before = await pageApi<number>(page, 'refreshes()');
  await until(
    async () => (await pageApi<number>(page, 'refreshes()')) > before,
    'the page refreshed',
    timeout,
  );
}
