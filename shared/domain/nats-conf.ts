/**
 * The NATS server configs an agent's NATS microservice runs with: the
 * reference's three templates, verbatim but for `$NATS_TLS_DIR` (v3.8's name for
 * `$NATS_SSL_DIR`) and the one `handshake_first` the no-cluster template repeated; rendered from an
 * explicit variable map by a renderer that refuses to leave a `$NAME` behind (the reference left them,
 * which NATS reads as environment references). Pure.
 */

const TLS_BLOCK = (certName: string, extra: string[] = []) =>
  [
    '  tls: {',
    `    ca_file: "$NATS_TLS_DIR/${certName}/ca.crt"`,
    `    cert_file: "$NATS_TLS_DIR/${certName}/tls.crt"`,
    `    key_file: "$NATS_TLS_DIR/${certName}/tls.key"`,
    '    handshake_first: true',
    ...extra,
    '    timeout: "3s"',
    '  }',
  ].join('\n');

const HEAD = `port: $NATS_SERVER_PORT
server_name: "$SERVER_NAME"
pid_file: /home/runner/run/nats.pid
http_port: $NATS_HTTP_PORT

# Operator
operator = $OPERATOR_JWT

# System account
system_account = $SYSTEM_ACCOUNT

jetstream: {
  store_dir: /home/runner/data
  domain: "$JETSTREAM_DOMAIN"
  max_memory_store: $NATS_JS_MAX_MEMORY_STORE
  max_file_store: $NATS_JS_MAX_FILE_STORE
  cipher: chachapoly
  key: "$JETSTREAM_KEY"
  prev_encryption_key: "$JETSTREAM_PREV_KEY"
}
`;

const CLUSTER = `
cluster: {
  name: $CONTROLLER_NAME
  port: $NATS_CLUSTER_PORT
  no_advertise: true
  routes: $NATS_CLUSTER_ROUTES
${TLS_BLOCK('$NATS_CERT_NAME', ['    verify: true'])}
}
`;

const SERVER_LEAFNODES = `
leafnodes: {
  port: $NATS_LEAF_PORT
  advertise: $NATS_LEAF_ADVERTISE
${TLS_BLOCK('$NATS_CERT_NAME', ['    verify: true'])}
}
`;

const MQTT = `
mqtt: {
  port: $NATS_MQTT_PORT
${TLS_BLOCK('$NATS_MQTT_CERT_NAME')}
}
`;

const RESOLVER = (interval: string) => `
resolver: {
  type: full
  dir: "$NATS_JWT_DIR"
  allow_delete: false
  interval: "${interval}"
}
`;

export const NATS_TEMPLATES = {
  'server.conf': HEAD + CLUSTER + SERVER_LEAFNODES + MQTT + RESOLVER('2m'),
  'server-no-cluster.conf': HEAD + SERVER_LEAFNODES + MQTT + RESOLVER('2m'),
  'leaf.conf': `${HEAD}
leafnodes: {
  reconnect: "10s"
  remotes: $NATS_LEAF_REMOTES
}
${MQTT}${RESOLVER('10m')}`,
} as const;
export type NatsTemplate = keyof typeof NATS_TEMPLATES;

export class NatsConfigError extends Error {
  override name = 'NatsConfigError';
}

/** Replaces every `$NAME`; a name without a value, or a value left empty, is an error, never output. */
export function renderNatsTemplate(
  template: NatsTemplate,
  variables: Readonly<Record<string, string>>,
): string {
  const missing = new Set<string>();
  const text = NATS_TEMPLATES[template].replace(/\$([A-Z][A-Z0-9_]*)/g, (_match, name: string) => {
    const value = variables[name];
    if (value === undefined || (value === '' && name !== 'JETSTREAM_PREV_KEY')) {
      missing.add(name);
      return '';
    }
    return value;
  });
  if (missing.size > 0)
    throw new NatsConfigError(`${template} needs ${[...missing].sort().join(', ')}, which have no value`);
  return text;
}

/** Folders the NATS container reads (mounts) and writes (volumes), as the reference lays them out. */
export const NATS_PATHS = {
  tlsDir: '/etc/nats/certs',
  configDir: '/etc/nats/config',
  credsDir: '/etc/nats/creds',
  jwtDir: '/home/runner/nats/jwt',
  jwtMountDir: '/tmp/nats/jwt',
  dataDir: '/home/runner/data',
} as const;

/** The NATS hub as an upstream (`upstreamNatsServers`): whatever the hub record names. */
export { DEFAULT_NATS_HUB } from './placement.js';

export interface NatsPorts {
  serverPort: number;
  clusterPort: number;
  leafPort: number;
  mqttPort: number;
  httpPort: number;
}

export const DEFAULT_NATS_PORTS: NatsPorts = {
  serverPort: 4222,
  clusterPort: 6222,
  leafPort: 7422,
  mqttPort: 8883,
  httpPort: 8222,
};

/**
 * The ports an agent's NATS process listens on: a port its row does not hold is NATS's default one.
 * Every reader of an agent's NATS ports reads them through here.
 */
export const natsPortsOf = (row: { natsPorts?: Partial<NatsPorts> | null | undefined }): NatsPorts => ({
  ...DEFAULT_NATS_PORTS,
  ...row.natsPorts,
});

/** JetStream's file and memory store limits when an agent sets none (the reference's defaults). */
export const DEFAULT_JETSTREAM_SIZES = { jsStorageSize: '10g', jsMemoryStoreSize: '1g' } as const;

/** A server's cluster routes: every NATS server with a host, itself included (the reference's rule). */
export function clusterRoutes(servers: readonly { host: string | null; clusterPort: number }[]): string[] {
  return [
    ...new Set(
      servers.flatMap((server) => (server.host ? [`nats://${server.host}:${server.clusterPort}`] : [])),
    ),
  ];
}

/** The agent servers' routes in a stable order (by agent), so a file changes only when the set does. */
export function agentServerRoutes(
  servers: readonly { agentUuid: string; host: string | null; clusterPort: number }[],
): string[] {
  return clusterRoutes([...servers].sort((a, b) => (a.agentUuid < b.agentUuid ? -1 : 1)));
}

/** The template of a server: the cluster template, unless its route list is itself alone. */
export function serverTemplate(routes: readonly string[]): NatsTemplate {
  return routes.length === 1 ? 'server-no-cluster.conf' : 'server.conf';
}

/**
 * A leaf's remotes: one per (account it links × upstream NATS server with a host), over TLS with the
 * leaf's own server certificate. It links the system account (its system user), and the account of
 * every application with NATS access whose microservices it serves (that account's leaf user), so those
 * microservices reach their peers on other agents through the upstreams.
 */
export function leafRemotes(input: {
  upstreams: readonly { host: string; leafPort: number }[];
  links: readonly { account: string; credentials: string }[];
  certName: string;
}): unknown[] {
  const file = (name: string) => `${NATS_PATHS.tlsDir}/${input.certName}/${name}`;
  return input.links.flatMap((link) =>
    input.upstreams.map((upstream) => ({
      urls: [`tls://${upstream.host}:${upstream.leafPort}`],
      account: link.account,
      credentials: link.credentials,
      tls: {
        ca_file: file('ca.crt'),
        cert_file: file('tls.crt'),
        key_file: file('tls.key'),
        verify: true,
        handshake_first: true,
        timeout: '3s',
      },
    })),
  );
}

/** The reference's size normalisation: digits and a unit (`g` when none), lower case. */
export function normalizeStoreSize(value: string): string {
  const match = /^([0-9]+)\s*([mMgGtT][bB]?)?$/.exec(value.trim());
  if (!match) throw new NatsConfigError(`${JSON.stringify(value)} is not a size like 10g or 512m`);
  return `${match[1]}${(match[2] ?? 'g').toLowerCase()}`;
}

/**
 * `iofog-nats-config`'s route list: every route naming `nats-headless` (the operator's
 * pods) is kept in order, the agent server routes follow. The operator's own format, `", "` between.
 */
export function mergeOperatorRoutes(serverConf: string, agentRoutes: readonly string[]): string {
  const { match, routes: current } = parseRoutes(serverConf);
  const kept = current.filter(isOperatorRoute);
  const routes = [...new Set([...kept, ...agentRoutes])];
  return serverConf.replace(match, `routes: [${routes.map((route) => JSON.stringify(route)).join(', ')}]`);
}

/** The routes of `iofog-nats-config` that are not the operator's own pods (the agent servers'). */
export function operatorAgentRoutes(serverConf: string): string[] {
  return parseRoutes(serverConf).routes.filter((route) => !isOperatorRoute(route));
}

const isOperatorRoute = (route: string) => route.includes('nats-headless');

function parseRoutes(serverConf: string): { match: string; routes: string[] } {
  const match = /routes:\s*(\[[^\]]*\])/m.exec(serverConf);
  if (!match) throw new NatsConfigError('server.conf has no "routes: [...]" in its cluster block');
  let current: unknown;
  try {
    current = JSON.parse(match[1]!);
  } catch {
    throw new NatsConfigError(`server.conf's routes are not a JSON array: ${match[1]!.slice(0, 80)}`);
  }
  const routes = (Array.isArray(current) ? current : []).filter(
    (route): route is string => typeof route === 'string',
  );
  return { match: match[0], routes };
}

/** Everything an agent's NATS process is made of, named after the agent. */
export interface NatsArtefacts {
  serverCertificate: string;
  mqttCertificate: string;
  configMount: string;
  jwtMount: string;
  jetstreamKey: string;
  /** The system-account user the process (and, for a leaf, its remote) connects as. */
  user: string;
  credsMount: string;
  credsKey: string;
}

export function natsArtefacts(token: string, role: 'hub' | 'server' | 'leaf'): NatsArtefacts {
  const user =
    role === 'hub' ? 'admin-hub' : role === 'server' ? `admin-server-${token}` : `admin-leaf-${token}`;
  return {
    serverCertificate: `nats-server-${token}`,
    mqttCertificate: `nats-mqtt-server-${token}`,
    configMount: `nats-server-conf-${token}`,
    jwtMount: `nats-jwt-dir-${token}`,
    jetstreamKey: `nats-jetstream-key-${token}`,
    user,
    credsMount: `nats-creds-sys-${user}`,
    credsKey: `sys/${user}.creds`,
  };
}
