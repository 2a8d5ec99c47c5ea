import { existsSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { launchChromium, openPage, pageApi } from '../test/browser/page-support.js';

/** Polls the page's hooks every 20 ms (the page's policy forbids evaluating strings in it). */
async function until(page: Page, done: () => Promise<boolean>, timeout = 120_000): Promise<void> {
  const started = Date.now();
  while (!(await done())) {
    if (Date.now() - started > timeout) throw new Error(`the page did not get there within ${timeout} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The network page against a running fleet, in Chromium: how long from opening the page (token given)
 * to its first drawing, and from a click on the largest group's button to that group drawn. Undefined
 * when Chromium is not installed.
 */
export async function measurePage(
  baseUrl: string,
  token: string,
): Promise<{ firstDrawMs: number; openedGroupMs: number; group: string; drawn: number } | undefined> {
  if (!existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium')) return undefined;
  const browser = await launchChromium();
  try {
    const started = performance.now();
    const page = await openPage(browser, baseUrl, { token, refresh: 60_000 });
    await until(page, async () => (await pageApi<number>(page, 'refreshes()')) > 0);
    const firstDrawMs = Math.round(performance.now() - started);
    const button = page.locator('#groups button').first();
    const group = (await button.textContent()) ?? '';
    const opening = performance.now();
    await button.click();
    await page.waitForFunction(
      (label) => document.getElementById('note')?.textContent?.startsWith(label) === true,
      group,
      { timeout: 120_000 },
    );
    await page.waitForFunction('window.fogbridgePage.drawnSites().length > 0', undefined, {
      timeout: 120_000,
    });
    const openedGroupMs = Math.round(performance.now() - opening);
    const drawn = (await pageApi<string[]>(page, 'drawnSites()')).length;
    return { firstDrawMs, openedGroupMs, group, drawn };
  } finally {
    await browser.close();
  }
}
