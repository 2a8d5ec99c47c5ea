import type { ApiClient } from './client.js';

/**
 * Churn against a fleet: clients create, retag, re-port and delete services on names of their own, and
 * a model of the writes the API acknowledged says what every router must hold afterwards. The model
 * follows seed 000's tables ("Distribution: service tag against the agent tag", the listener and
 * connector shapes, "Where each object is stored"), not fogbridge's code.
 */

export const TAG_PREFIX = 'service.iofog.org/tag';
const tag = (token: string) => `${TAG_PREFIX}: ${token}`;

export type RouterMode = 'edge' | 'interior';

export interface FleetAgent {
  name: string;
  tags: string[];
  routerMode: RouterMode;
  /** Backend agents hold the connectors of `agent` services. */
  backend?: boolean;
}

/**
 * The hub (first agent: the system agent and default router), then agents tagged `all`, one token,
 * several tokens, a bare tag and a near-miss tag, and two backends (edge and interior).
 */
export const CHURN_FLEET: FleetAgent[] = [
  { name: 'churn-hub', tags: [], routerMode: 'interior' },
  { name: 'churn-all', tags: [tag('all')], routerMode: 'edge' },
  { name: 'churn-a', tags: [tag('a')], routerMode: 'edge' },
  { name: 'churn-b', tags: [tag('b')], routerMode: 'edge' },
  { name: 'churn-ac', tags: [tag('a'), tag('c'), 'site: north'], routerMode: 'edge' },
  { name: 'churn-bare', tags: ['a'], routerMode: 'edge' },
  { name: 'churn-near-miss', tags: [`${TAG_PREFIX}:a`, `${TAG_PREFIX}s: b`], routerMode: 'edge' },
  { name: 'churn-backend-edge', tags: [tag('c')], routerMode: 'edge', backend: true },
  { name: 'churn-backend-interior', tags: [], routerMode: 'interior', backend: true },
];

/** Tokens the services draw their tags from; `d` is selected only by `all`. */
const TOKENS = ['a', 'b', 'c', 'd'];

export interface Fleet {
  hub: string;
  agents: (FleetAgent & { uuid: string })[];
}

export async function createFleet(api: ApiClient): Promise<Fleet> {
  const agents: (FleetAgent & { uuid: string })[] = [];
  for (const [index, agent] of CHURN_FLEET.entries()) {
    const response = await api.post<{ uuid: string }>('/api/v3/iofog', {
      name: agent.name,
      host: `10.77.0.${index + 1}`,
      tags: agent.tags,
      routerMode: agent.routerMode,
    });
    if (response.status !== 201) throw new Error(`agent ${agent.name}: ${response.status} ${response.text}`);
    agents.push({ ...agent, uuid: response.body.uuid });
  }
  return { hub: agents[0]!.uuid, agents };
}

/** A service as the user last set it (what an acknowledged write left). */
export interface ServiceIntent {
  type: 'external' | 'agent';
  /** The host of an external service, or the name of the backend agent. */
  resource: string;
  tags: string[];
  targetPort: number;
}

/**
 * Per name: the intent the API acknowledged last (null: deleted or never created), or, when a request
 * was cut off by a crash, every state the name may legitimately be in.
 */
export class ChurnModel {
  readonly settled = new Map<string, ServiceIntent | null>();
  readonly uncertain = new Map<string, (ServiceIntent | null)[]>();
  readonly counts = { create: 0, update: 0, delete: 0, interrupted: 0, unexpected: 0 };
  readonly unexpected: string[] = [];

  /** Settles every uncertain name to the state the store shows, if it is one of the candidates. */
  resolve(services: ServiceView[]): string[] {
    const problems: string[] = [];
    const byName = new Map(services.map((service) => [service.name, service]));
    for (const [name, candidates] of this.uncertain) {
      const actual = byName.get(name);
      const match = candidates.find((candidate) =>
        candidate === null
          ? actual === undefined
          : actual !== undefined &&
            actual.targetPort === candidate.targetPort &&
            sameSet(actual.tags, candidate.tags),
      );
      if (match === undefined)
        problems.push(`service ${name}: ${describe(actual)} is none of the states its writes allow`);
      else this.settled.set(name, match);
    }
    this.uncertain.clear();
    return problems;
  }
}

export interface ServiceView {
  name: string;
  type: string;
  tags: string[];
  targetPort: number;
  bridgePort: number | null;
  provisioningStatus: string;
  provisioningError: string | null;
}

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

/** JSON with sorted keys: entries compare by content, whatever order their keys were written in. */
const canonical = (value: unknown) =>
  JSON.stringify(value, value && typeof value === 'object' ? Object.keys(value).sort() : undefined);

const describe = (service: ServiceView | undefined) =>
  service ? `tags [${service.tags.join(',')}] targetPort ${service.targetPort}` : 'absent';

/** A deterministic generator per client, so a failing run can be read again. */
function seeded(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/** A request that never got an answer: the runtime died under it. */
export class InterruptedError extends Error {}

/**
 * Runs `clients` clients for `seconds`, each on six names of its own. `api()` is the runtime to talk to
 * now (a restarted runtime has a new address); a request cut off by a crash makes its name uncertain,
 * and the client leaves that name alone from then on.
 */
export async function runChurn(options: {
  clients: number;
  seconds: number;
  fleet: Fleet;
  model: ChurnModel;
  api: () => Promise<ApiClient>;
  prefix?: string;
}): Promise<void> {
  const { model, fleet } = options;
  const backends = fleet.agents.filter((agent) => agent.backend);
  const deadline = Date.now() + options.seconds * 1000;
  const send = async (call: (api: ApiClient) => Promise<{ status: number; text: string }>) => {
    const api = await options.api();
    try {
      return await call(api);
    } catch {
      throw new InterruptedError();
    }
  };
  await Promise.all(
    Array.from({ length: options.clients }, async (_, client) => {
      const random = seeded(client + 1);
      const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
      const names = Array.from({ length: 6 }, (_, i) => `${options.prefix ?? 'churn'}-c${client}-${i}`);
      const tags = () => TOKENS.filter(() => random() < 0.4);
      while (Date.now() < deadline) {
        const name = pick(names);
        if (model.uncertain.has(name)) continue;
        const current = model.settled.get(name) ?? null;
        let next: ServiceIntent | null;
        let operation: 'create' | 'update' | 'delete';
        let call: (api: ApiClient) => Promise<{ status: number; text: string }>;
        if (current === null) {
          const type = random() < 0.5 ? 'external' : 'agent';
          next = {
            type,
            resource: type === 'external' ? `${name}.example.com` : pick(backends).name,
            tags: tags(),
            targetPort: 1000 + Math.floor(random() * 9000),
          };
          const body = { name, ...next };
          operation = 'create';
          call = (api) => api.post('/api/v3/services', body);
        } else if (random() < 0.7) {
          next = { ...current, tags: tags(), targetPort: 1000 + Math.floor(random() * 9000) };
          const body = { tags: next.tags, targetPort: next.targetPort };
          operation = 'update';
          call = (api) => api.patch(`/api/v3/services/${name}`, body);
        } else {
          next = null;
          operation = 'delete';
          call = (api) => api.delete(`/api/v3/services/${name}`);
        }
        model.counts[operation]++;
        try {
          const response = await send(call);
          if (response.status === 201 || response.status === 204) model.settled.set(name, next);
          else {
            model.counts.unexpected++;
            if (model.unexpected.length < 10)
              model.unexpected.push(`${operation} ${name}: ${response.status} ${response.text}`);
          }
        } catch (error) {
          if (!(error instanceof InterruptedError)) throw error;
          model.counts.interrupted++;
          model.uncertain.set(name, [current, next]);
        }
      }
    }),
  );
}

/** The seed's rule: the tokens an agent's tags select (`prefix: token`, one space, `all` for all). */
export function selectedTokens(agentTags: readonly string[]): string[] {
  return agentTags.flatMap((agentTag) =>
    agentTag.startsWith(`${TAG_PREFIX}: `) ? [agentTag.slice(TAG_PREFIX.length + 2).trim()] : [],
  );
}

interface Listener {
  name: string;
  port: string;
  address: string;
}
interface Connector extends Listener {
  host: string;
  processId: string;
}
export interface Bridges {
  listeners: Record<string, Listener>;
  connectors: Record<string, Connector>;
}

/** What each router must hold of the model's services (seed 000), by agent uuid. */
export function expectedBridges(
  fleet: Fleet,
  intents: Map<string, ServiceIntent>,
  bridgePorts: Map<string, number>,
): Map<string, Bridges> {
  const expected = new Map(
    fleet.agents.map((agent) => [agent.uuid, { listeners: {}, connectors: {} } as Bridges]),
  );
  for (const [name, intent] of intents) {
    const listener = { name: `${name}-listener`, port: String(bridgePorts.get(name)), address: name };
    for (const agent of fleet.agents) {
      const tokens = selectedTokens(agent.tags);
      const selected = tokens.includes('all') || intent.tags.some((token) => tokens.includes(token));
      if (agent.uuid === fleet.hub || selected) expected.get(agent.uuid)!.listeners[listener.name] = listener;
    }
    const port = String(intent.targetPort);
    if (intent.type === 'external') {
      expected.get(fleet.hub)!.connectors[`${name}-connector`] = {
        name: `${name}-connector`,
        host: intent.resource,
        port,
        address: name,
        processId: `${intent.resource}-external-${port}`,
      };
    } else {
      const backend = fleet.agents.find((agent) => agent.name === intent.resource)!;
      expected.get(backend.uuid)!.connectors[`${name}-connector`] = {
        name: `${name}-connector`,
        host: backend.routerMode === 'interior' ? '127.0.0.1' : 'edgelet.default.svc.bridge.local',
        port,
        address: name,
        processId: `${backend.uuid}-local-${port}`,
      };
    }
  }
  return expected;
}

export type MismatchKind = 'service' | 'hub' | 'agent listener' | 'backend connector';

/**
 * Everything the API shows that differs from the model: services (present, ready, as last written) and
 * every router's entries for the model's names (`prefix`-…), each mismatch tagged with its kind.
 */
export async function churnMismatches(
  api: ApiClient,
  fleet: Fleet,
  model: ChurnModel,
  prefix = 'churn',
): Promise<{ kind: MismatchKind; text: string }[]> {
  const problems: { kind: MismatchKind; text: string }[] = [];
  const services = (await api.get<ServiceView[]>('/api/v3/services')).body.filter((service) =>
    service.name.startsWith(`${prefix}-c`),
  );
  const byName = new Map(services.map((service) => [service.name, service]));
  const intents = new Map<string, ServiceIntent>();
  for (const [name, intent] of model.settled) {
    const service = byName.get(name);
    if (intent === null) {
      if (service) problems.push({ kind: 'service', text: `service ${name}: should be gone` });
      continue;
    }
    intents.set(name, intent);
    if (!service) problems.push({ kind: 'service', text: `service ${name}: missing` });
    else if (service.provisioningStatus !== 'ready')
      problems.push({
        kind: 'service',
        text: `service ${name}: ${service.provisioningStatus} ${service.provisioningError ?? ''}`,
      });
    else if (service.targetPort !== intent.targetPort || !sameSet(service.tags, intent.tags))
      problems.push({ kind: 'service', text: `service ${name}: ${describe(service)} != as written` });
  }
  for (const service of services)
    if (!model.settled.has(service.name))
      problems.push({ kind: 'service', text: `service ${service.name}: never written` });
  const ports = new Map(services.map((service) => [service.name, service.bridgePort ?? -1]));
  const expected = expectedBridges(fleet, intents, ports);
  for (const agent of fleet.agents) {
    const config = (
      await api.get<{
        bridges?: { tcpListeners?: Record<string, Listener>; tcpConnectors?: Record<string, Connector> };
      }>(`/api/v3/iofog/${agent.uuid}/router-config`)
    ).body;
    const mine = <T>(entries: Record<string, T> | undefined) =>
      Object.fromEntries(Object.entries(entries ?? {}).filter(([name]) => name.startsWith(`${prefix}-c`)));
    const want = expected.get(agent.uuid)!;
    const isHub = agent.uuid === fleet.hub;
    compareEntries(
      problems,
      isHub ? 'hub' : 'agent listener',
      agent.name,
      want.listeners,
      mine(config.bridges?.tcpListeners),
    );
    compareEntries(
      problems,
      isHub ? 'hub' : 'backend connector',
      agent.name,
      want.connectors,
      mine(config.bridges?.tcpConnectors),
    );
  }
  return problems;
}

function compareEntries(
  problems: { kind: MismatchKind; text: string }[],
  kind: MismatchKind,
  router: string,
  want: Record<string, unknown>,
  held: Record<string, unknown>,
): void {
  for (const [name, entry] of Object.entries(want)) {
    if (!(name in held)) problems.push({ kind, text: `${router}: ${name} missing` });
    else if (canonical(held[name]) !== canonical(entry))
      problems.push({
        kind,
        text: `${router}: ${name} is ${JSON.stringify(held[name])}, want ${JSON.stringify(entry)}`,
      });
  }
  for (const name of Object.keys(held))
    if (!(name in want)) problems.push({ kind, text: `${router}: ${name} should not be there` });
}

/** Mismatches counted by kind, for a report. */
export function countByKind(problems: { kind: MismatchKind }[]): Record<MismatchKind, number> {
  const counts: Record<MismatchKind, number> = {
    service: 0,
    hub: 0,
    'agent listener': 0,
    'backend connector': 0,
  };
  for (const problem of problems) counts[problem.kind]++;
  return counts;
}
