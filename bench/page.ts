import { chromiumInstalled, launchChromium, openPage, pageApi, until } from '../test/browser/page-support.js';

/**
 * The network page against a running fleet, in Chromium: how long from opening the page (token given)
 * to its first drawing, and from a click on the largest group's button to that group drawn. Undefined
 * when Chromium is not installed.
 */
export async function measurePage(
  baseUrl: string,
  token: string,
): Promise<{ firstDrawMs: number; openedGroupMs: number; group: string; drawn: number } | undefined> {
  if (!chromiumInstalled()) return undefined;
  const browser = await launchChromium();
  try {
    const started = performance.now();
    const page = await openPage(browser, baseUrl, { token, refresh: 60_000 });
    await until(async () => (await pageApi<number>(page, 'refreshes()')) > 0, 'the first drawing', 120_000);
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
