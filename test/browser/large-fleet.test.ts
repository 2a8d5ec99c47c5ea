import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareDrawnSites, type Grouping, groupNodeId, type Topology } from '../../functions/ui/graph.js';
import { mintUserToken } from '../../infra/local/auth.js';
import { createAgent, HUB } from '../fixtures/world.js';
import { ApiClient, eventually } from '../support/client.js';
import { withClients } from '../support/processes.js';
import { ScriptedAgent } from '../support/scripted-agent.js';
import {
  launchChromium,
  type NpmStart,
  nextRefresh,
  OUTPUT,
  openPage,
  pageApi,
  ROOT,
  startNpmStart,
} from './page-support.js';

/**
 * The network page at 1,000 sites, in a real browser against `npm start`: the hub, three interior
 * routers and 996 edge agents under them, in three zones, two thirds listening for checkout. Every
 * agent is provisioned and applies its first config once, except eight never provisioned (offline)
 * and six that report but never pull their changes (pending). The overview must be readable without
 * typing: groups with the API's counts, no two labels on top of each other, a keyboard path to one
 * site's details, and a phone's width. Its screenshots are the ones in docs/.
 */

const SITES = 1000;
const QUIET = 8;
const LAGGING = 6;

type Summary = Extract<Topology, { form: 'summary' }>;
type Box = { x1: number; y1: number; x2: number; y2: number };

let npmStart: NpmStart;
let admin: ApiClient;
let viewer: ApiClient;
let viewerToken: string;
let browser: Browser;

async function summary(): Promise<Summary> {
  const answer = await viewer.get<Summary>('/api/v3/topology?form=summary');
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

/** Pairs of drawn nodes whose label boxes overlap (in the graph's own coordinates). */
async function overlappingLabels(page: Page): Promise<string[]> {
  const boxes = await pageApi<{ id: string; box: Box }[]>(page, 'labelBoxes()');
  const sorted = [...boxes].sort((a, b) => a.box.x1 - b.box.x1);
  const overlaps: string[] = [];
  for (const [index, a] of sorted.entries()) {
    for (const b of sorted.slice(index + 1)) {
      if (b.box.x1 >= a.box.x2) break;
      if (a.box.y1 < b.box.y2 && b.box.y1 < a.box.y2) overlaps.push(`${a.id} / ${b.id}`);
    }
  }
  return overlaps;
}

/** Clicks a drawn node where the graph drew it. */
async function clickNode(page: Page, id: string): Promise<void> {
  const at = await pageApi<{ x: number; y: number }>(page, `renderedPositionOf(${JSON.stringify(id)})`);
  const graph = await page.locator('#graph').boundingBox();
  await page.mouse.click(graph!.x + at.x, graph!.y + at.y);
}

beforeAll(async () => {
  mkdirSync(OUTPUT, { recursive: true });
  npmStart = await startNpmStart({ AGENT_OFFLINE_AFTER_SECONDS: '3600' });
  admin = new ApiClient(npmStart.url, readFileSync(join(npmStart.dataDir, 'admin.token'), 'utf8').trim());
  viewerToken = await mintUserToken(npmStart.dataDir, { role: 'viewer', subject: 'vera' });
  viewer = new ApiClient(npmStart.url, viewerToken);
  // Prepare: the hub, three interiors, then the edges under them
  const uuids = [await createAgent(admin, HUB)];
  for (const n of [1, 2, 3])
    uuids.push(
      await createAgent(admin, { name: `interior-${n}`, host: `10.9.0.${n}`, routerMode: 'interior' }),
    );
  const edges = Array.from({ length: SITES - 4 }, (_, i) => i);
  const edgeUuids: string[] = [];
  await withClients(edges, 20, async (i) => {
    const zone = ['a', 'b', 'c'][i % 3]!;
    edgeUuids[i] = await createAgent(admin, {
      name: `edge-${String(i).padStart(4, '0')}`,
      host: `10.${10 + Math.floor(i / 250)}.${i % 250}.1`,
      upstreamRouters: [`interior-${(i % 3) + 1}`],
      tags: [`zone-${zone}`, ...(i % 3 !== 2 ? ['service.iofog.org/tag: checkout'] : [])],
    });
  });
  uuids.push(...edgeUuids);
  // Every first config built before the agents come up.
  await eventually(
    async () => ((await summary()).counts.byState.new === 0 ? true : undefined),
    'every first config built',
    300_000,
  );
  const provisioned = uuids.slice(0, SITES - QUIET);
  await withClients(provisioned, 20, async (uuid) => {
    const key = await admin.get<{ key: string }>(`/api/v3/iofog/${uuid}/provisioning-key`);
    const agent = new ScriptedAgent(npmStart.url);
    await agent.provision(key.body.key, 1);
    await agent.reportStatus();
    if (provisioned.indexOf(uuid) < provisioned.length - LAGGING) await agent.poll();
  });
  await eventually(
    async () => {
      const counts = (await summary()).counts;
      return counts.sites === SITES && counts.byState.applied === SITES - QUIET - LAGGING ? true : undefined;
    },
    'the fleet applied',
    300_000,
  );
  browser = await launchChromium();
}, 900_000);

afterAll(async () => {
  await browser?.close();
  await npmStart?.stop();
});

describe('the network page at 1,000 sites', () => {
  it('draws an overview: the hub, every unhealthy site, and each grouping with the API counts, no label on another', async () => {
    // Prepare
    const page = await openPage(browser, npmStart.url, { token: viewerToken, refresh: 3000 });
    await nextRefresh(page);
    const api = await summary();

    // Act / Assess: each grouping in turn
    for (const grouping of ['state', 'upstream', 'tag'] as Grouping[]) {
      await page.selectOption('#group-by', grouping);
      const expected = Object.fromEntries(
        api.groups[grouping].groups.map((group) => [groupNodeId(grouping, group.value), group.count]),
      );
      await expect.poll(() => pageApi<Record<string, number>>(page, 'groupCounts()')).toEqual(expected);
      expect(await overlappingLabels(page), grouping).toEqual([]);
      const drawn = await pageApi<string[]>(page, 'drawnSites()');
      const hub = api.hub.sites.find((site) => site.hub)!;
      expect(compareDrawnSites([hub, ...api.unhealthy.sites], drawn)).toEqual({ missing: [], unknown: [] });
      if (grouping === 'state')
        await page.screenshot({ path: join(ROOT, 'docs/images/network-1000-overview.png'), fullPage: false });
    }
    expect(api.unhealthy.sites).toHaveLength(QUIET + LAGGING);
    expect(api.groups.state.groups.map((group) => [group.value, group.count])).toEqual([
      ['applied', SITES - QUIET - LAGGING],
      ['offline', QUIET],
      ['pending', LAGGING],
    ]);
    expect(api.groups.upstream.groups.map((group) => group.label)).toEqual([
      'via interior-1',
      'via interior-2',
      'via interior-3',
      'via hub',
      'no upstream router',
    ]);
    await page.context().close();
  });

  it('opens a group on click: its sites drawn, none missing, no label on another', async () => {
    // Prepare
    const page = await openPage(browser, npmStart.url, { token: viewerToken, refresh: 3000 });
    await nextRefresh(page);
    await page.selectOption('#group-by', 'upstream');
    const via = (await summary()).groups.upstream.groups.find((group) => group.label === 'via interior-2')!;
    const listed = await viewer.get<Extract<Topology, { form: 'full' }>>(
      `/api/v3/topology?form=full&limit=1000&upstream=${via.value}`,
    );
    // The overview grouped by upstream is drawn before its node is clicked, as a user sees it first.
    await expect
      .poll(() => pageApi<Record<string, number>>(page, 'groupCounts()'))
      .toHaveProperty([groupNodeId('upstream', via.value)], via.count);

    // Act
    await clickNode(page, groupNodeId('upstream', via.value));
    await expect
      .poll(() => pageApi<string[]>(page, 'drawnSites()'), { timeout: 20_000 })
      .toHaveLength(listed.body.sites.length);

    // Assess: the group's sites (and interior-2, the far end of their links)
    expect(listed.body.counts.sites).toBe(via.count);
    expect(compareDrawnSites(listed.body.sites, await pageApi<string[]>(page, 'drawnSites()'))).toEqual({
      missing: [],
      unknown: [],
    });
    expect(await overlappingLabels(page)).toEqual([]);
    expect(await page.locator('#note').textContent()).toContain(`via interior-2: ${via.count} sites`);
    await page.screenshot({ path: join(ROOT, 'docs/images/network-1000-group.png'), fullPage: false });
    await page.context().close();
  });

  it("reaches one site's details from the keyboard alone", async () => {
    // Prepare
    const page = await openPage(browser, npmStart.url, { refresh: 3000 });
    const focused = () => page.evaluate(() => document.activeElement?.textContent ?? '');
    const focusedId = () => page.evaluate(() => document.activeElement?.id ?? '');
    const tabUntil = async (wanted: (text: string, id: string) => boolean, steps = 40) => {
      for (let step = 0; step < steps; step += 1) {
        if (wanted(await focused(), await focusedId())) return;
        await page.keyboard.press('Tab');
      }
      throw new Error(`not reached in ${steps} tabs; focus on "${await focused()}"`);
    };

    // Act: token, the pending group's button, the first site of the group, its details
    await tabUntil((_, id) => id === 'token');
    await page.keyboard.type(viewerToken);
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#groups button').count(), { timeout: 20_000 }).toBeGreaterThan(0);
    await tabUntil((text) => text.startsWith('pending:'));
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.locator('#note').textContent(), { timeout: 20_000 })
      .toContain('pending: 6 sites');
    // The group's six sites, and the routers they dial (the far ends of their links)
    const pendingRows = page.locator('#sites-body tr', { hasText: 'pending' });
    await expect.poll(() => pendingRows.count()).toBe(LAGGING);
    const first = (await pendingRows.first().locator('button.site-link').textContent())!;
    await tabUntil((text) => text === first);
    await page.keyboard.press('Enter');

    // Assess
    await expect.poll(() => page.locator('#details').isVisible()).toBe(true);
    const details = await page.locator('#details-list').textContent();
    expect(details).toContain(first);
    expect(details).toContain('pending');
    expect(await pageApi<string[]>(page, 'selectedSites()')).toHaveLength(1);
    await page.context().close();
  });

  it('keeps zoom, pan and the selected site across refreshes', async () => {
    // Prepare: an opened group, a site selected, the graph zoomed in
    const page = await openPage(browser, npmStart.url, { token: viewerToken, refresh: 3000 });
    await nextRefresh(page);
    await page.locator('#groups button', { hasText: 'offline:' }).click();
    await expect
      .poll(() => page.locator('#note').textContent(), { timeout: 20_000 })
      .toContain('offline: 8 sites');
    await page.locator('#sites-body tr', { hasText: 'offline' }).first().locator('button.site-link').click();
    const graph = (await page.locator('#graph').boundingBox())!;
    await page.mouse.move(graph.x + graph.width / 2, graph.y + graph.height / 2);
    await page.mouse.wheel(0, -400);
    const before = await pageApi<{ zoom: number; pan: { x: number; y: number } }>(page, 'viewport()');
    const chosen = await pageApi<string[]>(page, 'selectedSites()');

    // Act
    await nextRefresh(page);
    await nextRefresh(page);

    // Assess
    expect(chosen).toHaveLength(1);
    expect(await pageApi(page, 'viewport()')).toEqual(before);
    expect(await pageApi<string[]>(page, 'selectedSites()')).toEqual(chosen);
    expect(await page.locator('#details').isVisible()).toBe(true);
    await page.context().close();
  });

  it('finds a site by name among the 1,000', async () => {
    // Prepare
    const page = await openPage(browser, npmStart.url, { token: viewerToken, refresh: 3000 });
    await nextRefresh(page);

    // Act
    await page.fill('#find', 'edge-0421');
    await page.press('#find', 'Enter');

    // Assess: the site, with the far ends of its links: interior-2 (its router) and the hub (its NATS
    // leaf's server), the hub listed first
    await expect
      .poll(() => page.locator('#sites-body button.site-link').allTextContents(), { timeout: 20_000 })
      .toEqual(['hub', 'edge-0421', 'interior-2']);
    const found = await viewer.get<Extract<Topology, { form: 'full' }>>('/api/v3/topology?name=edge-0421');
    expect(found.body.counts.sites).toBe(1);
    expect(compareDrawnSites(found.body.sites, await pageApi<string[]>(page, 'drawnSites()'))).toEqual({
      missing: [],
      unknown: [],
    });
    await page.context().close();
  });

  it('keeps the overview usable 390 pixels wide', async () => {
    // Prepare / Act
    const page = await openPage(browser, npmStart.url, { width: 390, token: viewerToken, refresh: 3000 });
    await nextRefresh(page);
    await expect.poll(() => page.locator('#groups button').count()).toBeGreaterThan(0);

    // Assess: nothing wider than the screen; every group's button inside it
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    for (const button of await page.locator('#groups button').all()) {
      const box = (await button.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
    }
    expect(await overlappingLabels(page)).toEqual([]);
    await page.screenshot({ path: join(OUTPUT, 'network-1000-phone.png'), fullPage: true });
    await page.context().close();
  });
});
