/// <reference lib="dom" />
import cytoscape from 'cytoscape';
import {
  compareDrawnSites,
  type Grouping,
  graphOf,
  groupNodeId,
  groupText,
  type Link,
  type NodeData,
  overviewOf,
  type Placement,
  type Service,
  type Site,
  type SiteGroup,
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
 * by their state of that service) and lists sites and services in tables that filter as you type. A
 * large fleet (the summary form) is drawn as an overview: the hub, the sites that are not healthy, and
 * its sites grouped by state, upstream router or tag, each group a node with its count that opens (its
 * sites drawn) on click, from its button, or from the keyboard. A refresh keeps the zoom, the pan and
 * the selected site; a site's details show on selecting it.
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
/** Sites an opened group draws at most (one page of the full form). */
const GROUP_DRAWN = 1000;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const status = $<HTMLParagraphElement>('status');
const main = $<HTMLElement>('main');
const tokenInput = $<HTMLInputElement>('token');
const serviceSelect = $<HTMLSelectElement>('service');
const note = $<HTMLParagraphElement>('note');
const groupBy = $<HTMLSelectElement>('group-by');
const groupList = $<HTMLUListElement>('groups');
const back = $<HTMLButtonElement>('back');
const details = $<HTMLElement>('details');

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
/** What is looked at (the overview's grouping, the group opened, the filters): a new one is fitted. */
let drawnView = '';
/** The group opened from the overview, if any. */
let opened: { grouping: Grouping; group: SiteGroup } | undefined;
/** The site whose details show. */
let selected: string | undefined;

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
        'text-wrap': 'wrap',
        'text-max-width': '140px',
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
      selector: 'node[kind = "group"]',
      style: {
        shape: 'ellipse',
        width: 'mapData(count, 1, 1000, 26, 60)',
        height: 'mapData(count, 1, 1000, 26, 60)',
      },
    },
    { selector: 'node:selected', style: { 'border-color': '#0d47a1', 'border-width': 5 } },
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
      selector: 'edge.faint',
      style: { opacity: 0.25, 'curve-style': 'haystack', 'target-arrow-shape': 'none' },
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
  groupCounts: () =>
    Object.fromEntries(cy.nodes('[kind = "group"]').map((node) => [node.id(), node.data('count') as number])),
  /** Each drawn node's label box, in the graph's own coordinates. */
  labelBoxes: () =>
    cy.nodes().map((node) => ({
      id: node.id(),
      box: node.boundingBox({ includeNodes: false, includeEdges: false, includeLabels: true }),
    })),
  viewport: () => ({ zoom: cy.zoom(), pan: cy.pan() }),
  renderedPositionOf: (id: string) => cy.getElementById(id).renderedPosition(),
  selectedSites: () => cy.nodes(':selected').map((node) => node.id()),
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
  const filters = currentFilters();
  if (opened) {
    filters.set(opened.grouping, opened.group.value);
    filters.set('form', 'full');
    filters.set('limit', String(GROUP_DRAWN));
  }
  const first = await api<Topology>(`/topology?${filters}`, token);
  if (!first.ok) {
    return first.status === 401 || first.status === 403
      ? { refused: `The token was refused (${first.status}): ${first.message}` }
      : { failed: `The topology could not be read (${first.status}): ${first.message}` };
  }
  const topology = first.body;
  let { sites, links } = sitesAndLinks(topology);
  if (topology.form === 'full' && !opened) {
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

/** The filters the controls ask for: tag, an agent's neighbourhood, a name to find. */
function currentFilters(): URLSearchParams {
  const filters = new URLSearchParams();
  for (const [name, id] of [
    ['tag', 'filter-tag'],
    ['agent', 'filter-agent'],
    ['name', 'find'],
  ] as const) {
    const value = $<HTMLInputElement>(id).value.trim();
    if (value) filters.set(name, value);
  }
  return filters;
}

/** What a read is for: the group opened, the filters and the service selected. */
function viewAsked(): string {
  return JSON.stringify([
    opened && groupNodeId(opened.grouping, opened.group.value),
    `${currentFilters()}`,
    serviceSelect.value,
  ]);
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
  const asked = viewAsked();
  const answer = await read(token).catch((error: Error) => ({
    failed: `The API did not answer: ${error.message}`,
  }));
  // Another view was asked for while this one was read (a group opened or closed, a filter or service
  // changed): this answer is not drawn as that view; the view asked for now is read instead.
  if (viewAsked() !== asked) return readAndRender();
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
  const summary = current.topology.form === 'summary' && !opened ? current.topology : undefined;
  const { nodes, edges } = summary
    ? overviewOf(summary, grouping(), current.placements)
    : graphOf(current.sites, current.links, current.placements);
  draw(
    nodes,
    edges,
    `${opened ? groupNodeId(opened.grouping, opened.group.value) : summary ? grouping() : 'all'}|${currentFilters()}`,
  );
  $('overview-controls').hidden = !(summary || opened);
  back.hidden = !opened;
  renderGroups(summary ? summary.groups[grouping()].groups : []);
  note.textContent = summary
    ? `A large fleet (${summary.counts.sites} sites), grouped by ${groupBy.selectedOptions[0]?.textContent ?? grouping()}: open a group to draw its sites. The hub and the sites that are not healthy are always drawn${summary.unhealthy.more > 0 ? ` (the first ${summary.unhealthy.sites.length}; ${summary.unhealthy.more} more in their state's group)` : ''}.`
    : opened
      ? `${groupText(opened.group)}${current.topology.counts.sites > current.sites.length ? `; drawn are the first ${current.sites.filter((site) => !site.hub).length}: find a site by name to narrow it` : ''}.`
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
  renderDetails();
}

function grouping(): Grouping {
  return groupBy.value as Grouping;
}

/**
 * Updates the graph in place, so nodes keep where the layout put them between refreshes. A new view
 * is laid out and fitted; new or gone nodes in the same view are laid out again without moving the
 * zoom or the pan; the selection stays with the nodes that stay.
 */
function draw(nodes: NodeData[], edges: ReturnType<typeof graphOf>['edges'], viewKey: string): void {
  const ids = nodes
    .map((node) => node.id)
    .sort()
    .join(' ');
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
  // Hundreds of links to one router would hide the sites: drawn faint and straight in a large view.
  cy.edges().toggleClass('faint', isLarge(nodes) && edges.length > 60);
  if (selected && cy.getElementById(selected).nonempty() && !cy.getElementById(selected).selected())
    cy.getElementById(selected).select();
  const newView = viewKey !== drawnView;
  if (!newView && ids === drawnIds) return;
  drawnIds = ids;
  drawnView = viewKey;
  // The graph's box was hidden (no size) until the first answer.
  cy.resize();
  layOut(nodes, newView);
}

/** An overview, an opened group or any drawing of more than 60 nodes: laid out as a grid. */
function isLarge(nodes: readonly NodeData[]): boolean {
  return nodes.some((node) => node.kind === 'group') || opened !== undefined || nodes.length > 60;
}

/**
 * A small network as a tree from the hub; an overview or a group as a grid ordered hub first, then
 * groups, then sites by name. Either way each node's box includes its label and no two overlap.
 */
function layOut(nodes: readonly NodeData[], fit: boolean): void {
  const hub = nodes.find((node) => node.hub);
  const large = isLarge(nodes);
  const rank = (node: cytoscape.NodeSingular) =>
    node.data('hub') ? 0 : node.data('kind') === 'group' ? 1 : 2;
  const common = { fit, padding: 30, avoidOverlap: true, nodeDimensionsIncludeLabels: true, animate: false };
  cy.layout(
    large
      ? {
          name: 'grid',
          ...common,
          avoidOverlapPadding: 12,
          condense: true,
          sort: (a: cytoscape.NodeSingular, b: cytoscape.NodeSingular) =>
            rank(a) - rank(b) || String(a.data('label')).localeCompare(String(b.data('label'))),
        }
      : {
          name: 'breadthfirst',
          ...common,
          directed: false,
          spacingFactor: 1.1,
          ...(hub ? { roots: [hub.id] } : {}),
        },
  ).run();
}

/** One button per group of the overview: the keyboard's (and a narrow screen's) way to open one. */
function renderGroups(groups: readonly SiteGroup[]): void {
  const wanted = groups.map((group) => `${group.value}\u0000${groupText(group)}`).join('\n');
  if (groupList.dataset.shown === wanted) return;
  groupList.dataset.shown = wanted;
  groupList.replaceChildren(
    ...groups.map((group) => {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = groupText(group);
      button.addEventListener('click', () => openGroup(grouping(), group));
      item.append(button);
      return item;
    }),
  );
}

function openGroup(by: Grouping, group: SiteGroup): void {
  opened = { grouping: by, group };
  void refresh();
}

/** The selected site's details, from the last answer; hidden when it is no longer drawn. */
function renderDetails(): void {
  const site = selected ? view?.sites.find((candidate) => candidate.key === selected) : undefined;
  details.hidden = !site;
  if (!site) return;
  const row = siteRows([site])[0]!;
  const upstreams = (view?.links ?? [])
    .filter((link) => link.kind === 'router' && link.from === site.key)
    .map((link) => view?.sites.find((candidate) => candidate.key === link.to)?.name ?? link.to);
  const facts: [string, string][] = [
    ['Name', site.name],
    ['Key', site.key],
    ['Host', site.host ?? '—'],
    ['Router', row.mode],
    ['State', site.state],
    ['Heard from', row.heard],
    ['Config acknowledged', row.config],
    ['Dials', upstreams.join(', ') || '—'],
    ...(site.rollout
      ? ([['Rebuild waits for', `${site.rollout.upstreamName}: ${site.rollout.reason}`]] as [
          string,
          string,
        ][])
      : []),
  ];
  $('details-list').replaceChildren(
    ...facts.flatMap(([term, value]) => {
      const dt = document.createElement('dt');
      dt.textContent = term;
      const dd = document.createElement('dd');
      dd.textContent = value;
      return [dt, dd];
    }),
  );
}

function showDetails(key: string): void {
  selected = key;
  cy.nodes(':selected').unselect();
  cy.getElementById(key).select();
  renderDetails();
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
        const key = (row as { key?: unknown }).key;
        if (column === 'name' && bodyId === 'sites-body' && typeof key === 'string') {
          const button = document.createElement('button');
          button.type = 'button';
          button.className = 'site-link';
          button.textContent = value;
          button.addEventListener('click', () => showDetails(key));
          td.append(button);
        } else td.textContent = value;
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
groupBy.addEventListener('change', () => {
  if (view) render(view);
});
back.addEventListener('click', () => {
  opened = undefined;
  void refresh();
});
cy.on('tap', 'node', (event) => {
  const node = event.target as cytoscape.NodeSingular;
  if (node.data('kind') === 'group') {
    const [, by, ...value] = node.id().split(':');
    const group =
      view?.topology.form === 'summary'
        ? view.topology.groups[by as Grouping].groups.find((each) => each.value === value.join(':'))
        : undefined;
    if (group) openGroup(by as Grouping, group);
  } else if (node.data('kind') === 'site') showDetails(node.id());
});
cy.on('tap', (event) => {
  if (event.target !== cy) return;
  selected = undefined;
  renderDetails();
});
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
