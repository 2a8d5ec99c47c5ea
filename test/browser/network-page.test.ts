import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareDrawnSites, STATE_COLOURS, type Topology } from '../../functions/ui/graph.js';
import { mintUserToken } from '../../infra/local/auth.js';
import { checkoutYaml } from '../fixtures/seed-000.js';
import { CHECKOUT_MICROSERVICE, createAgent, FOG_A, HUB } from '../fixtures/world.js';
import { ApiClient, eventually } from '../support/client.js';
import { ScriptedAgent } from '../support/scripted-agent.js';
import {
  launchChromium,
  type NpmStart,
  nextRefresh,
  OUTPUT,
  openPage as openPageAt,
  pageApi,
  startNpmStart,
} from './page-support.js';

/**
 * The network page in a real browser (Debian's Chromium, driven by playwright-core) against `npm start`:
 * the README's fleet (hub, fog-a with orders/checkout, the checkout service) and ten edge agents, four
 * of them tagged for checkout, each a scripted Edgelet polling the controller.
 */

/** A colour as the graph library reports a node's style. */
const rgb = (hex: string) =>
  `rgb(${[1, 3, 5].map((at) => Number.parseInt(hex.slice(at, at + 2), 16)).join(',')})`;

let npmStart: NpmStart;
let url: string;
let dataDir: string;
let admin: ApiClient;
let viewerToken: string;
let browser: Browser;
const agents = new Map<string, ScriptedAgent>();
/** Agents whose Edgelet is stopped: `status` still reports but does not pull changes; `silent` neither. */
const stopped = new Map<string, 'status' | 'silent'>();
let ticking = true;
let ticker: Promise<void>;

/** Every running agent reports and pulls its changes, as Edgelet's workers do, until the suite ends. */
async function tickAgents(): Promise<void> {
  while (ticking) {
    await Promise.all(
      [...agents].map(async ([name, agent]) => {
        const mode = stopped.get(name);
        if (mode === 'silent') return;
        await agent.reportStatus().catch(() => undefined);
        if (!mode) await agent.poll().catch(() => undefined);
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
}

async function topology(query = ''): Promise<Topology> {
  const answer = await new ApiClient(url, viewerToken).get<Topology>(`/api/v3/topology${query}`);
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

const openPage = (options: { width?: number; token?: string } = {}): Promise<Page> =>
  openPageAt(browser, url, options);

const refreshed = (page: Page) => nextRefresh(page);

beforeAll(async () => {
  mkdirSync(OUTPUT, { recursive: true });
  npmStart = await startNpmStart({ AGENT_OFFLINE_AFTER_SECONDS: '4' });
  ({ url, dataDir } = npmStart);
  admin = new ApiClient(url, readFileSync(join(dataDir, 'admin.token'), 'utf8').trim());
  viewerToken = await mintUserToken(dataDir, { role: 'viewer', subject: 'vera' });
  // The README's fleet, and ten edge agents; the first four listen for checkout.
  const uuids = new Map<string, string>([['hub', await createAgent(admin, HUB)]]);
  uuids.set('fog-a', await createAgent(admin, FOG_A));
  expect((await admin.post('/api/v3/application', { name: 'orders' })).status).toBe(201);
  expect((await admin.post('/api/v3/microservices', CHECKOUT_MICROSERVICE)).status).toBe(201);
  expect((await admin.postYaml('/api/v3/services/yaml', checkoutYaml)).status).toBe(201);
  for (let n = 1; n <= 10; n += 1) {
    const name = `edge-${String(n).padStart(2, '0')}`;
    const tags = n <= 4 ? ['service.iofog.org/tag: checkout'] : [];
    uuids.set(name, await createAgent(admin, { name, host: `10.0.1.${n}`, tags }));
  }
  for (const [name, uuid] of uuids) {
    const key = await admin.get<{ key: string }>(`/api/v3/iofog/${uuid}/provisioning-key`);
    const agent = new ScriptedAgent(url);
    await agent.provision(key.body.key, 1);
    agents.set(name, agent);
  }
  ticker = tickAgents();
  browser = await launchChromium();
  // Every site applied and every link held before the page is looked at.
  await eventually(
    async () => {
      const now = await topology();
      const settled =
        now.form === 'full' &&
        now.sites.length === 12 &&
        now.sites.every((site) => site.state === 'applied') &&
        now.links.every((link) => link.kind !== 'router' || link.held === true) &&
        now.services?.[0]?.status === 'ready';
      return settled ? now : undefined;
    },
    'the fleet settled',
    120_000,
  );
}, 240_000);

afterAll(async () => {
  ticking = false;
  await ticker;
  await browser?.close();
  await npmStart?.stop();
});

describe('the network page', () => {
  it('draws every site and link the API has and, for checkout, colours each site by its state of it', async () => {
    // Prepare
    const page = await openPage({ token: viewerToken });
    await refreshed(page);
    const api = await topology();
    if (api.form !== 'full') throw new Error('expected the full form for 12 sites');
    const uuidOf = (name: string) => api.sites.find((site) => site.name === name)!.key;

    // Act
    await page.selectOption('#service', 'checkout');
    await refreshed(page);
    await refreshed(page);

    // Assess: the drawn sites are the API's, every link is drawn, and checkout's sites are applied
    const drawn = await pageApi<string[]>(page, 'drawnSites()');
    expect(compareDrawnSites(api.sites, drawn)).toEqual({ missing: [], unknown: [] });
    expect((await pageApi<string[]>(page, 'drawnLinks()')).sort()).toEqual(
      api.links.map((link) => `${link.kind}:${link.from}>${link.to}`).sort(),
    );
    const placements = (await topology('?service=checkout')) as {
      placements?: { site: string; roles: string[] }[];
    };
    expect(placements.placements?.find((p) => p.site === uuidOf('fog-a'))?.roles).toContain('connector');
    for (const name of ['hub', 'fog-a', 'edge-01', 'edge-02', 'edge-03', 'edge-04']) {
      expect(await pageApi<string>(page, `colourOf(${JSON.stringify(uuidOf(name))})`), name).toBe(
        rgb(STATE_COLOURS.applied),
      );
    }
    for (const name of ['edge-05', 'edge-06', 'edge-10']) {
      expect(await pageApi<string>(page, `colourOf(${JSON.stringify(uuidOf(name))})`), name).toBe(
        rgb(STATE_COLOURS.uninvolved),
      );
    }
    for (const link of api.links.filter((each) => each.kind === 'router')) {
      expect(
        await pageApi<string>(page, `lineStyleOf(${JSON.stringify(`router:${link.from}>${link.to}`)})`),
      ).toBe('solid');
    }
    expect(await pageApi<string>(page, `borderStyleOf(${JSON.stringify(uuidOf('hub'))})`)).toBe('solid');
    expect(await page.locator('#sites-body tr').count()).toBe(12);
    await page.screenshot({ path: join(OUTPUT, 'network.png'), fullPage: true });
    // The token is kept for the browser session: a reload draws the network without asking again.
    await page.reload();
    await expect.poll(() => pageApi<number>(page, 'refreshes()'), { timeout: 20_000 }).toBeGreaterThan(0);
    expect(compareDrawnSites(api.sites, await pageApi<string[]>(page, 'drawnSites()'))).toEqual({
      missing: [],
      unknown: [],
    });
    await page.context().close();
  });

  it('turns a site pending when its agent stops applying, and offline when it falls silent', async () => {
    // Prepare: edge-02 reports its status but no longer pulls its changes
    const api = await topology();
    const edge02 = api.form === 'full' ? api.sites.find((site) => site.name === 'edge-02')!.key : '';
    stopped.set('edge-02', 'status');

    // Act: a new service for the agents tagged checkout, and the page colouring by it
    const created = await admin.post('/api/v3/services', {
      name: 'payments',
      type: 'external',
      resource: 'payments.example.com',
      targetPort: 443,
      tags: ['checkout'],
    });
    expect(created.status, created.text).toBe(201);
    const page = await openPage({ token: viewerToken });
    await expect
      .poll(() => page.locator('#service option[value="payments"]').count(), { timeout: 20_000 })
      .toBe(1);
    await page.selectOption('#service', 'payments');

    // Assess: pending while it is heard from, offline once it is not
    const colour = () => pageApi<string>(page, `colourOf(${JSON.stringify(edge02)})`);
    await expect.poll(colour, { timeout: 60_000, interval: 300 }).toBe(rgb(STATE_COLOURS.pending));
    stopped.set('edge-02', 'silent');
    await expect.poll(colour, { timeout: 60_000, interval: 300 }).toBe(rgb(STATE_COLOURS.offline));
    expect(await pageApi<string>(page, `borderStyleOf(${JSON.stringify(edge02)})`)).toBe('dashed');
    await expect
      .poll(() => page.locator('#sites-body tr', { hasText: 'edge-02' }).textContent(), { timeout: 20_000 })
      .toContain('offline');
    await page.screenshot({ path: join(OUTPUT, 'network-offline.png'), fullPage: true });
    stopped.delete('edge-02');
    await expect.poll(colour, { timeout: 60_000, interval: 300 }).toBe(rgb(STATE_COLOURS.applied));
    await page.context().close();
  });

  it('works from the keyboard alone: token, service, filter', async () => {
    // Prepare
    const page = await openPage();
    const focused = () => page.evaluate(() => document.activeElement?.id ?? '');
    const tabTo = async (id: string) => {
      for (let step = 0; step < 15 && (await focused()) !== id; step += 1) await page.keyboard.press('Tab');
      expect(await focused()).toBe(id);
    };

    // Act: the token typed and submitted with Enter, checkout chosen by typing, sites filtered
    await tabTo('token');
    await page.keyboard.type(viewerToken);
    await page.keyboard.press('Enter');
    await expect.poll(() => pageApi<number>(page, 'refreshes()'), { timeout: 20_000 }).toBeGreaterThan(0);
    await tabTo('service');
    await page.keyboard.type('checkout');
    await tabTo('site-filter');
    await page.keyboard.type('edge-0');

    // Assess: every control was reached and acted on without a pointer, and focus is visible
    expect(await page.locator('#service').inputValue()).toBe('checkout');
    await expect.poll(() => page.locator('#sites-body tr').count()).toBe(9);
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    expect(outline).not.toBe('none');
    await page.context().close();
  });

  it('keeps the tables usable 390 pixels wide', async () => {
    // Prepare / Act
    const page = await openPage({ width: 390, token: viewerToken });
    await refreshed(page);

    // Assess: nothing wider than the screen, and each row's cells stacked with their labels
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    const row = page.locator('#sites-body tr').first();
    const box = await row.boundingBox();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    expect(
      await row
        .locator('td')
        .first()
        .evaluate((td) => getComputedStyle(td, '::before').content),
    ).toBe('"Name: "');
    await page.screenshot({ path: join(OUTPUT, 'network-phone.png'), fullPage: true });
    await page.context().close();
  });

  it('shows nothing and says why without a token or with a bad one', async () => {
    // Prepare / Act: no token
    const page = await openPage();
    await expect.poll(() => page.locator('#status').textContent()).toContain('Enter a viewer or admin token');
    expect(await page.locator('#main').isHidden()).toBe(true);
    expect(await pageApi<string[]>(page, 'drawnSites()')).toEqual([]);

    // Act: a token that is not one
    await page.fill('#token', 'not-a-token');
    await page.press('#token', 'Enter');

    // Assess
    await expect.poll(() => page.locator('#status').textContent()).toContain('The token was refused (401)');
    expect(await page.locator('#main').isHidden()).toBe(true);
    expect(await pageApi<string[]>(page, 'drawnSites()')).toEqual([]);
    await page.context().close();
  });

  it("serves only its own files, with a policy that forbids framing and sniffing; the API's answers too", async () => {
    // Act
    const files = await Promise.all(
      ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'].map(async (name) => {
        const response = await fetch(`${url}/ui/${name}`);
        return `${name}: ${response.status}`;
      }),
    );
    const pageAnswer = await fetch(`${url}/ui`);
    const apiAnswer = await fetch(`${url}/api/v3/status`);
    const refused = await fetch(`${url}/api/v3/topology`);

    // Assess
    expect(files).toEqual([
      'constructor: 404',
      '__proto__: 404',
      'toString: 404',
      'hasOwnProperty: 404',
      'valueOf: 404',
    ]);
    const policy = pageAnswer.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(pageAnswer.headers.get('x-content-type-options')).toBe('nosniff');
    for (const answer of [apiAnswer, refused]) {
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('content-security-policy')).toBe(
        "default-src 'none'; frame-ancestors 'none'",
      );
    }
    expect(refused.status).toBe(401);
  });

  it('under its policy, draws the fleet with no violation; ?refresh=1 reads at most once per 3 s, never two at once', async () => {
    // Prepare
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/.test(message.text())) violations.push(message.text());
    });
    const starts: number[] = [];
    let inFlight = 0;
    let overlapped = 0;
    const isTopology = (requestUrl: string) => new URL(requestUrl).pathname === '/api/v3/topology';
    page.on('request', (request) => {
      if (!isTopology(request.url())) return;
      if (inFlight > 0) overlapped += 1;
      inFlight += 1;
      starts.push(Date.now());
    });
    const done = (request: { url(): string }) => {
      if (isTopology(request.url())) inFlight -= 1;
    };
    page.on('requestfinished', done);
    page.on('requestfailed', done);

    // Act
    await page.goto(`${url}/ui?refresh=1`);
    await page.fill('#token', viewerToken);
    await page.press('#token', 'Enter');
    await expect.poll(() => pageApi<string[]>(page, 'drawnSites()'), { timeout: 20_000 }).toHaveLength(12);
    const from = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 7_000));
    const inWindow = starts.filter((start) => start >= from).length;

    // Assess
    expect(violations).toEqual([]);
    expect(inWindow).toBeGreaterThanOrEqual(1);
    expect(inWindow).toBeLessThanOrEqual(3);
    expect(overlapped).toBe(0);
    await context.close();
  });
});
