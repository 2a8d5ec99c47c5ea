/// <reference lib="dom" />
import cytoscape from 'cytoscape';
import {
  compareDrawnSites,
  graphOf,
  type Link,
  type Placement,
  type Service,
  type Site,
  STATE_COLOURS,
  serviceRows,
  siteRows,
  sitesAndLinks,
  type Topology,
  withNewerSites,
} from './graph.js';

/**
 * The network page: asks for a token once (kept for the browser session), reads GET /api/v3/topology
 * with it every few seconds, draws the sites and links, colours them by state (or, a service selected,
 * by their state of that service) and lists sites and services in tables that filter as you type.
 */

const TOKEN_KEY = 'fogbridge.token';
/** How often the page reads the topology: `?refresh=` milliseconds, never more often than every 3 s. */
const REFRESH_FLOOR_MS = 3000;
const REFRESH_MS = Math.max(
  REFRESH_FLOOR_MS,
  Number(new URLSearchParams(location.search).get('refresh')) || 5000,
);
/** Pages of the full form followed at most (a larger fleet is read in its summary form). */
const MAX_PAGES = 10;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const status = $<HTMLParagraphElement>('status');
const main = $<HTMLElement>('main');
const tokenInput = $<HTMLInputElement>('token');
const serviceSelect = $<HTMLSelectElement>('service');
const note = $<HTMLParagraphElement>('note');

interface View {
  sites: Site[];
  links: Link[];
  services: Service[];
  topology: Topology;
  placements: Placement[] | undefined;
}

let view: View | undefined;
let refreshes = 0;
let drawnIds = '';

const cy = cytoscape({
  container: $('graph'),
  elements: [],
  minZoom: 0.2,
  maxZoom: 3,
  style: [
    {
      selector: 'node',
      style: {
        label: 'data(label)',
        'font-size': 11,
        'text-valign': 'bottom',
        'text-margin-y': 4,
        'background-color': (node: cytoscape.NodeSingular) =>
          STATE_COLOURS[node.data('shade') as keyof typeof STATE_COLOURS],
        'border-width': 2,
        'border-color': '#37474f',
        width: 22,
        height: 22,
      },
    },
    { selector: 'node[routerMode = "interior"]', style: { shape: 'round-rectangle', width: 30, height: 30 } },
    { selector: 'node[?hub]', style: { 'border-width': 4, width: 40, height: 40 } },
    { selector: 'node[kind = "nats-hub"]', style: { shape: 'diamond' } },
    { selector: 'node[?silent]', style: { 'border-style': 'dashed' } },
    {
      selector: 'edge',
      style: {
        width: 2,
        'line-color': '#546e7a',
        'curve-style': 'bezier',
        'target-arrow-shape': 'triangle',
        'target-arrow-color': '#546e7a',
      },
    },
    {
      selector: 'edge[?notHeld]',
      style: { 'line-color': '#c62828', 'target-arrow-color': '#c62828', 'line-style': 'dashed' },
    },
    {
      selector: 'edge[kind != "router"]',
      style: { width: 1, 'line-style': 'dotted', 'target-arrow-shape': 'none' },
    },
  ],
});

/** What tests and curious users can ask of the page: the drawn sites and their colours. */
(window as unknown as { fogbridgePage: unknown }).fogbridgePage = {
  refreshes: () => refreshes,
  drawnSites: () => cy.nodes('[kind = "site"]').map((node) => node.id()),
  drawnLinks: () => cy.edges().map((edge) => edge.id()),
  lineStyleOf: (id: string) => cy.getElementById(id).style('line-style') as string,
  borderStyleOf: (id: string) => cy.getElementById(id).style('border-style') as string,
  colourOf: (id: string) => cy.getElementById(id).style('background-color') as string,
  drawnMismatch: () =>
    compareDrawnSites(
      view?.sites ?? [],
      cy.nodes('[kind = "site"]').map((node) => node.id()),
    ),
};

async function api<T>(
  path: string,
  token: string,
): Promise<{ ok: true; body: T } | { ok: false; status: number; message: string }> {
  const response = await fetch(`/api/v3${path}`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await response.json().catch(() => ({}))) as T & { message?: string };
  return response.ok
    ? { ok: true, body }
    : { ok: false, status: response.status, message: body.message ?? response.statusText };
}

function show(message: string, kind: 'info' | 'error' = 'info'): void {
  status.textContent = message;
  status.dataset.kind = kind;
}

function hideEverything(): void {
  view = undefined;
  main.hidden = true;
  cy.elements().remove();
  drawnIds = '';
  for (const id of ['sites-body', 'services-body']) $(id).replaceChildren();
}

/** Reads the topology (following the full form's pages) and, a service selected, where it is. */
async function read(token: string): Promise<View | { refused: string } | { failed: string }> {
  const filters = new URLSearchParams();
  for (const name of ['tag', 'agent']) {
    const value = $<HTMLInputElement>(`filter-${name}`).value.trim();
    if (value) filters.set(name, value);
  }
  const first = await api<Topology>(`/topology?${filters}`, token);
  if (!first.ok) {
    return first.status === 401 || first.status === 403
      ? { refused: `The token was refused (${first.status}): ${first.message}` }
      : { failed: `The topology could not be read (${first.status}): ${first.message}` };
  }
  const topology = first.body;
  let { sites, links } = sitesAndLinks(topology);
  if (topology.form === 'full') {
    let next = topology.next;
    for (let page = 1; next && page < MAX_PAGES; page += 1) {
      const more = await api<Topology>(`/topology?${filters}&after=${encodeURIComponent(next)}`, token);
      if (!more.ok || more.body.form !== 'full') break;
      sites = [...sites, ...more.body.sites.filter((site) => !sites.some((known) => known.key === site.key))];
      links = [...links, ...more.body.links];
      next = more.body.next;
    }
  }
  const services = topology.form === 'full' ? (topology.services ?? []) : topology.services.notReady;
  let placements: Placement[] | undefined;
  const selected = serviceSelect.value;
  if (selected) {
    const answer = await api<Topology>(
      `/topology?service=${encodeURIComponent(selected)}&form=full&limit=1000`,
      token,
    );
    placements = answer.ok ? (answer.body.placements ?? []) : [];
    if (answer.ok && answer.body.form === 'full') sites = withNewerSites(sites, answer.body.sites);
  }
  return { sites, links, services, topology, placements };
}

/** The read in flight, if any: a refresh asked meanwhile waits for it instead of overlapping it. */
let reading: Promise<void> | undefined;

function refresh(): Promise<void> {
  reading ??= readAndRender().finally(() => {
    reading = undefined;
  });
  return reading;
}

async function readAndRender(): Promise<void> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) {
    hideEverything();
    show('Enter a viewer or admin token to see the network.');
    return;
  }
  const answer = await read(token).catch((error: Error) => ({
    failed: `The API did not answer: ${error.message}`,
  }));
  if ('refused' in answer) {
    hideEverything();
    show(answer.refused, 'error');
    return;
  }
  if ('failed' in answer) {
    show(answer.failed, 'error');
    return;
  }
  view = answer;
  main.hidden = false;
  render(answer);
  refreshes += 1;
  const shown = `${answer.sites.length} sites, ${answer.links.length} links, ${answer.services.length} services`;
  show(`${shown}; updated ${new Date().toLocaleTimeString()}`);
}

function render(current: View): void {
  const { nodes, edges } = graphOf(current.sites, current.links, current.placements);
  const ids = nodes
    .map((node) => node.id)
    .sort()
    .join(' ');
  // Updated in place, so nodes keep where the layout put them between refreshes.
  cy.batch(() => {
    const wanted = new Set([...nodes.map((node) => node.id), ...edges.map((edge) => edge.id)]);
    cy.elements()
      .filter((element) => !wanted.has(element.id()))
      .remove();
    for (const data of nodes) {
      const existing = cy.getElementById(data.id);
      if (existing.nonempty()) existing.data(data);
      else cy.add({ group: 'nodes', data });
    }
    for (const data of edges) {
      const existing = cy.getElementById(data.id);
      if (existing.nonempty()) existing.data(data);
      else cy.add({ group: 'edges', data });
    }
  });
  if (ids !== drawnIds) {
    drawnIds = ids;
    // The graph's box was hidden (no size) until the first answer.
    cy.resize();
    const hub = nodes.find((node) => node.hub);
    cy.layout({
      name: 'breadthfirst',
      directed: false,
      spacingFactor: 1.1,
      ...(hub ? { roots: [hub.id] } : {}),
    }).run();
    cy.fit(undefined, 30);
  }
  const summary = current.topology.form === 'summary' ? current.topology : undefined;
  note.textContent = summary
    ? `A large fleet (${summary.counts.sites} sites): shown are the hub, its neighbours and the sites that are not healthy. Filter by tag or agent to see others.`
    : '';
  renderServiceChoices(current.services);
  renderTable('sites-body', siteRows(current.sites, $<HTMLInputElement>('site-filter').value), [
    'name',
    'mode',
    'state',
    'heard',
    'config',
  ]);
  renderTable(
    'services-body',
    serviceRows(current.services, current.sites, $<HTMLInputElement>('service-filter').value),
    ['name', 'type', 'port', 'status', 'connector', 'sites'],
  );
}

function renderServiceChoices(services: readonly Service[]): void {
  const wanted = ['', ...services.map((service) => service.name)];
  const present = [...serviceSelect.options].map((option) => option.value);
  if (wanted.join('\n') === present.join('\n')) return;
  const selected = serviceSelect.value;
  serviceSelect.replaceChildren(
    ...wanted.map((name) => {
      const option = document.createElement('option');
      option.value = name;
      option.textContent = name || '(none: colour by site state)';
      return option;
    }),
  );
  serviceSelect.value = wanted.includes(selected) ? selected : '';
}

const HEADINGS: Record<string, string> = {
  name: 'Name',
  mode: 'Router',
  state: 'State',
  heard: 'Heard from',
  config: 'Config acknowledged',
  type: 'Type',
  port: 'Bridge port',
  status: 'Status',
  connector: 'Connector on',
  sites: 'Sites',
};

function renderTable(bodyId: string, rows: readonly object[], columns: readonly string[]): void {
  $(bodyId).replaceChildren(
    ...rows.map((row) => {
      const tr = document.createElement('tr');
      for (const column of columns) {
        const td = document.createElement('td');
        const value = String((row as Record<string, unknown>)[column] ?? '');
        td.textContent = value;
        td.dataset.label = HEADINGS[column] ?? column;
        if (column === 'state') td.className = `state state-${value}`;
        tr.append(td);
      }
      return tr;
    }),
  );
}

$<HTMLFormElement>('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const token = tokenInput.value.trim();
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  tokenInput.value = '';
  void refresh();
});
$('forget').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  void refresh();
});
$<HTMLFormElement>('filters').addEventListener('submit', (event) => {
  event.preventDefault();
  void refresh();
});
serviceSelect.addEventListener('change', () => void refresh());
for (const id of ['site-filter', 'service-filter']) {
  $(id).addEventListener('input', () => {
    if (view) render(view);
  });
}

/** The next read starts a full interval after the last one ended: one tab never stacks reads. */
async function refreshForever(): Promise<void> {
  await refresh();
  setTimeout(() => void refreshForever(), REFRESH_MS);
}
void refreshForever();
