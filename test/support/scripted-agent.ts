import { createHash, createPrivateKey, type KeyObject, randomBytes, sign } from 'node:crypto';

/**
 * A stand-in for a real Edgelet that follows Edgelet's own source, not fogbridge's (references are to
 * EDGELET-PROTOCOL.md and the Edgelet files it cites), so a test fails where a real agent would:
 * - transport (`api_client.go`): base URL `<controller>/api/v3`, `Content-Type: application/json` on
 *   every call, a fresh JWT for every request; success is 200 with a JSON object (or `null`) or 204,
 *   anything else is an error;
 * - provisioning (`provision_body.go`, `agent.go`): `{key, type, engine[, flavor]}`; the private key is
 *   loaded the way `internal/auth/jwt.go` loads it (standard base64 of a JSON JWK, `kty` OKP, `crv`
 *   Ed25519, `d` unpadded base64url of the 32-byte seed);
 * - tokens (`jwt.go`): header `{"alg":"EdDSA","typ":"JWT"}`, claims `aud` [controllerUrl], `exp` =
 *   `iat` + 600, `iat` = `nbf`, `iss`, `jti` = base32(sha256({claims, nonce})), `sub`, `tokenUse`;
 * - changes (`workers.go`, `changes.go`): flags count only as JSON booleans, `lastUpdated` only as a
 *   string, and is sent back (as that string) only when every handled flag succeeded;
 * - microservices (`sync.go`, `registry_resolve.go`): an item without `uuid` or `imageId`/`imageName`
 *   is skipped; `config` only as a string, `registryId` only as a number; a container needs a registry
 *   from `/agent/registries` or the built-in ids 1 and 2;
 * - the router container (`processmanager/manager.go` `shouldContainerBeUpdated`, the engine's
 *   container comparison, and the Datasance Router's `internal/router/router.go` `UpdateRouter`):
 *   Edgelet creates it from the first router item it gets and recreates it only when an item says
 *   `rebuild` or its image, environment, ports or host network differ (never for `config` or volume
 *   mappings alone); the Router inside reads its whole config when it starts and afterwards applies
 *   only `bridges` changes. `runningRouter` is what skrouterd holds.
 */

export class EdgeletError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`controller answered ${status}: ${body}`);
  }
}

/** A microservice as Edgelet parses it out of `GET /agent/microservices`. */
export interface ParsedMicroservice {
  uuid: string;
  imageId: string;
  name: string;
  application: string;
  config: string;
  registryId: number;
  isRouter: boolean;
  isNats: boolean;
  /** Edgelet recreates the container when set. */
  rebuild: boolean;
  hostNetworkMode: boolean;
  env: { key: string; value: string }[];
  capAdd: string[];
  portMappings: { internal: number; external: number }[];
  /** `type` as Edgelet reads it: "volumeMount", "volume", anything else a bind. */
  volumeMappings: {
    hostDestination: string;
    containerDestination: string;
    accessMode: string;
    type: 'volumeMount' | 'volume' | 'bind';
  }[];
}

/** The router container on the node and what the Router inside it runs. */
export interface RunningRouter {
  /** The item the container was (re)created from. */
  item: ParsedMicroservice;
  /** What skrouterd holds: the config it started with, with the `bridges` applied since. */
  config: Record<string, unknown>;
  /** How many times the container was created or recreated. */
  starts: number;
}

/** A volume mount as Edgelet keeps it (`internal/volumemount/manager.go`): files decoded, by version. */
export interface MountedVolume {
  uuid: string;
  name: string;
  version: number;
  type: 'secret' | 'configMap';
  files: Record<string, string>;
}

export interface Registry {
  id: number;
  url: string;
  isPublic: boolean;
}

/** Edgelet's local registries: 1 docker.io, 2 from_cache (3 is Hugging Face, refused for images). */
const BUILT_IN_REGISTRY_IDS = [1, 2];
const JWT_ISSUER = 'https://edgelet.default.svc.bridge.local';
const JWT_LIFETIME_SECONDS = 600;

/** Go's `base64.StdEncoding.DecodeString`: padded standard base64 only. */
function decodeStdBase64(text: string): Buffer {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) {
    throw new Error('failed to decode base64 key: illegal base64 data');
  }
  return Buffer.from(text, 'base64');
}

/** `jwt.go` loadPrivateKey: base64 of a JSON JWK; the seed in `d` (unpadded base64url, 32 bytes). */
export function loadEdgeletKey(base64Key: string): KeyObject {
  const jwk = JSON.parse(decodeStdBase64(base64Key).toString('utf8')) as Record<string, unknown>;
  if (jwk.kty !== 'OKP') throw new Error('key must be OKP type');
  if (jwk.crv !== 'Ed25519') throw new Error('key must use Ed25519 curve');
  if (typeof jwk.d !== 'string' || !/^[A-Za-z0-9_-]*$/.test(jwk.d)) {
    throw new Error('failed to decode private key');
  }
  const seed = Buffer.from(jwk.d, 'base64url');
  if (seed.length !== 32) throw new Error(`invalid private key length: expected 32, got ${seed.length}`);
  // ed25519.NewKeyFromSeed: the PKCS#8 wrapping of the seed, as Go derives the key from it.
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  return createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
}

/** Go's `encoding/json` of a map: keys sorted. */
function goJson(value: Record<string, unknown>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))));
}

/** RFC 4648 base32 without padding (Go's `base32.StdEncoding.WithPadding(NoPadding)`). */
function base32(bytes: Buffer): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

export class ScriptedAgent {
  private privateKey: KeyObject | undefined;
  uuid = '';
  namespace = '';
  /** Edgelet starts initializing and stays so until one changes tick handles everything. */
  initialization = true;
  /** Every answer the controller gave, as `METHOD command -> status`. */
  readonly exchanges: string[] = [];
  registries: Registry[] = [];
  microservices: ParsedMicroservice[] = [];
  /** The router container, once an item for it arrived; undefined while none runs. */
  runningRouter: RunningRouter | undefined;
  volumeMounts: unknown[] = [];
  /** The volume mounts as written on the node, by uuid. */
  readonly mounted = new Map<string, MountedVolume>();

  /** `controllerUrl` as configured on the agent: the controller's base URL plus `/api/v3`. */
  readonly controllerUrl: string;

  constructor(baseUrl: string) {
    this.controllerUrl = `${baseUrl}/api/v3`;
  }

  /** `GenerateJWT`: a new token each call. Overrides let security tests forge what a real agent would not. */
  token(overrides: { jti?: string; subject?: string; lifetimeSeconds?: number } = {}): string {
    if (!this.privateKey) throw new Error('agent is not provisioned');
    const now = Math.floor(Date.now() / 1000);
    const claims: Record<string, unknown> = {
      aud: [this.controllerUrl],
      exp: now + (overrides.lifetimeSeconds ?? JWT_LIFETIME_SECONDS),
      iat: now,
      iss: JWT_ISSUER,
      nbf: now,
      sub: overrides.subject ?? this.uuid,
      tokenUse: 'controller',
    };
    const nonce = randomBytes(16).toString('hex');
    claims.jti =
      overrides.jti ??
      base32(
        createHash('sha256')
          .update(JSON.stringify({ claims: JSON.parse(goJson(claims)), nonce }))
          .digest(),
      );
    const signingInput = `${Buffer.from(goJson({ alg: 'EdDSA', typ: 'JWT' })).toString('base64url')}.${Buffer.from(goJson(claims)).toString('base64url')}`;
    return `${signingInput}.${sign(null, Buffer.from(signingInput), this.privateKey).toString('base64url')}`;
  }

  /** `doRequest`: one call to `/agent/<command>` with Edgelet's headers and success rule. */
  async request(
    method: string,
    command: string,
    body?: unknown,
    options: { authorization?: string } = {},
  ): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'request-id': String(process.hrtime.bigint()),
    };
    const authorization =
      options.authorization ?? (command === 'provision' ? undefined : `Bearer ${this.token()}`);
    if (authorization) headers.authorization = authorization;
    const response = await fetch(`${this.controllerUrl}/agent/${command}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    this.exchanges.push(`${method} ${command} -> ${response.status}`);
    if (response.status === 204) return {};
    if (response.status !== 200) throw new EdgeletError(response.status, text);
    let decoded: unknown;
    try {
      decoded = JSON.parse(text);
    } catch {
      throw new EdgeletError(response.status, `failed to decode response: ${text.slice(0, 80)}`);
    }
    if (decoded === null) return {};
    if (typeof decoded !== 'object' || Array.isArray(decoded)) {
      throw new EdgeletError(response.status, 'json: cannot unmarshal into map[string]interface {}');
    }
    return decoded as Record<string, unknown>;
  }

  /** `Ping`: `GET <controllerUrl>/status`, connected when the answer is 200 with a `status` key. */
  async ping(): Promise<boolean> {
    const response = await fetch(`${this.controllerUrl}/status`, {
      headers: { 'content-type': 'application/json' },
    });
    if (response.status !== 200) return false;
    const body = (await response.json()) as Record<string, unknown>;
    return 'status' in body;
  }

  /** `Provision`: `{key, type, engine, flavor}`; keeps uuid, privateKey and namespace when non-empty strings. */
  async provision(key: string, type = 1): Promise<Record<string, unknown>> {
    const result = await this.request('POST', 'provision', {
      key,
      type,
      engine: 'docker',
      flavor: 'edgelet',
    });
    if (typeof result.uuid === 'string' && result.uuid !== '') this.uuid = result.uuid;
    if (typeof result.namespace === 'string' && result.namespace !== '') this.namespace = result.namespace;
    if (typeof result.privateKey === 'string' && result.privateKey !== '') {
      this.privateKey = loadEdgeletKey(result.privateKey);
    }
    // After provisioning Edgelet reports its settings and status.
    await this.request('PATCH', 'config', {
      networkInterface: 'eth0',
      statusFrequency: 10,
      changeFrequency: 20,
    });
    await this.reportStatus();
    return result;
  }

  /** `PUT /agent/status` with the fields Edgelet's `getFogStatus` sends. */
  async reportStatus(overrides: Record<string, unknown> = {}): Promise<void> {
    await this.request('PUT', 'status', {
      daemonStatus: 'RUNNING',
      daemonOperatingDuration: 61_000,
      daemonLastStart: Date.now() - 61_000,
      warningMessage: 'HEALTHY',
      memoryUsage: 12.5,
      diskUsage: 3.25,
      cpuUsage: 1.5,
      memoryViolation: false,
      diskViolation: false,
      cpuViolation: false,
      systemAvailableDisk: 1024,
      systemAvailableMemory: 2048,
      systemTotalCpu: 4,
      microserviceStatus: JSON.stringify(
        this.microservices.map((microservice) => ({
          id: microservice.uuid,
          status: 'RUNNING',
          healthStatus: 'HEALTHY',
        })),
      ),
      repositoryCount: 1,
      repositoryStatus: '[]',
      systemTime: Date.now(),
      lastStatusTime: Date.now(),
      ipAddress: '10.0.0.5',
      ipAddressExternal: '203.0.113.5',
      microserviceMessageCounts: '[]',
      lastCommandTime: Date.now(),
      tunnelStatus: '{}',
      version: '1.1.0',
      isReadyToUpgrade: false,
      isReadyToRollback: false,
      activeVolumeMounts: 0,
      volumeMountLastUpdate: 0,
      gpsStatus: '',
      availableRuntimes: ['runc'],
      ...overrides,
    });
  }

  /** The change flags as Edgelet reads them: booleans only, `lastUpdated` a string or nothing. */
  async changes(): Promise<{
    flags: Record<string, boolean>;
    lastUpdated: string;
    raw: Record<string, unknown>;
  }> {
    const raw = await this.request('GET', 'config/changes');
    const flags = Object.fromEntries(
      Object.entries(raw).filter((entry): entry is [string, boolean] => typeof entry[1] === 'boolean'),
    );
    return { flags, lastUpdated: typeof raw.lastUpdated === 'string' ? raw.lastUpdated : '', raw };
  }

  /**
   * One tick of Edgelet's changes worker: handle each flag (during initialization the loaders run
   * whenever their key is present), then acknowledge with the same string if everything succeeded.
   */
  async poll(): Promise<{
    flags: Record<string, boolean>;
    acknowledged: boolean;
    routerConfig?: Record<string, unknown>;
  }> {
    const { flags, lastUpdated } = await this.changes();
    const init = this.initialization;
    let ok = true;
    const attempt = async (work: () => Promise<unknown>) => {
      try {
        await work();
      } catch {
        ok = false;
      }
    };
    if ('registries' in flags && (flags.registries || init)) await attempt(() => this.loadRegistries());
    if ('volumeMounts' in flags && (flags.volumeMounts || init)) await attempt(() => this.loadVolumeMounts());
    for (const list of ['models', 'runtimeClasses']) {
      if (list in flags && (flags[list] || init)) await attempt(() => this.loadOptionalList(list));
    }
    let routerConfig: Record<string, unknown> | undefined;
    if (flags.microserviceConfig || flags.microserviceList || flags.microserviceModels || init) {
      await attempt(async () => {
        await this.loadMicroservices();
        routerConfig = this.runningRouter?.config;
      });
    }
    if (flags.config && !init) await attempt(() => this.request('GET', 'config'));
    let acknowledged = false;
    if (lastUpdated !== '' && ok) {
      await this.request('PATCH', 'config/changes', { lastUpdated });
      acknowledged = true;
    }
    this.initialization = this.initialization && !ok;
    return { flags, acknowledged, routerConfig };
  }

  /** `loadRegistries`: `{registries: [...]}` with numeric ids. */
  async loadRegistries(): Promise<Registry[]> {
    const result = await this.request('GET', 'registries');
    if (!Array.isArray(result.registries)) throw new Error('invalid response format');
    this.registries = (result.registries as Record<string, unknown>[])
      .filter((item) => item && typeof item === 'object')
      .map((item) => ({
        id: typeof item.id === 'number' ? item.id : 0,
        url: typeof item.url === 'string' ? item.url : '',
        isPublic: item.isPublic === true,
      }));
    return this.registries;
  }

  async loadVolumeMounts(): Promise<unknown[]> {
    const result = await this.request('GET', 'volumeMounts');
    this.volumeMounts = Array.isArray(result.volumeMounts) ? result.volumeMounts : [];
    this.applyVolumeMounts(this.volumeMounts);
    return this.volumeMounts;
  }

  /**
   * `ProcessVolumeMountChanges`: items need a string uuid; `type: "secret"` is a secret, anything else a
   * config map; each data value is standard base64 (a value that does not decode is skipped); an
   * existing mount is rewritten only when `version` goes up; a uuid no longer listed is removed.
   */
  private applyVolumeMounts(items: unknown[]): void {
    const seen = new Set<string>();
    for (const item of items) {
      const mount = item as Record<string, unknown>;
      if (typeof mount?.uuid !== 'string' || mount.uuid === '') continue;
      seen.add(mount.uuid);
      const version = typeof mount.version === 'number' ? mount.version : 0;
      const current = this.mounted.get(mount.uuid);
      if (current && version <= current.version) continue;
      const files: Record<string, string> = {};
      const data =
        mount.data && typeof mount.data === 'object' ? (mount.data as Record<string, unknown>) : {};
      for (const [key, value] of Object.entries(data)) {
        const text = typeof value === 'string' ? value.replace(/^"|"$/g, '') : '';
        if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) continue;
        files[key] = Buffer.from(text, 'base64').toString('utf8');
      }
      this.mounted.set(mount.uuid, {
        uuid: mount.uuid,
        name: typeof mount.name === 'string' ? mount.name : '',
        version,
        type: mount.type === 'secret' ? 'secret' : 'configMap',
        files,
      });
    }
    for (const uuid of [...this.mounted.keys()]) if (!seen.has(uuid)) this.mounted.delete(uuid);
  }

  /**
   * The file a container of `microservice` reads at `path`: through the `volumeMount` mapping whose
   * container folder holds it (`hostDestination` "<mount>" or "<mount>/<key>"), from that mount's files.
   */
  containerFile(microservice: ParsedMicroservice, path: string): string | undefined {
    for (const mapping of microservice.volumeMappings) {
      if (mapping.type !== 'volumeMount') continue;
      const [name, key] = mapping.hostDestination.split('/', 2) as [string, string | undefined];
      const mount = [...this.mounted.values()].find((candidate) => candidate.name === name);
      if (!mount) continue;
      if (key !== undefined && path === mapping.containerDestination) return mount.files[key];
      if (key === undefined && path.startsWith(`${mapping.containerDestination}/`))
        return mount.files[path.slice(mapping.containerDestination.length + 1)];
    }
    return undefined;
  }

  /**
   * Every file the container of `microservice` sees through its `volumeMount` mappings, by container
   * path: what Edgelet writes into the mount folders it binds into the container.
   */
  containerFiles(microservice: ParsedMicroservice): Map<string, string> {
    const files = new Map<string, string>();
    for (const mapping of microservice.volumeMappings) {
      if (mapping.type !== 'volumeMount') continue;
      const [name, key] = mapping.hostDestination.split('/', 2) as [string, string | undefined];
      const mount = [...this.mounted.values()].find((candidate) => candidate.name === name);
      if (!mount) continue;
      for (const [file, content] of Object.entries(mount.files)) {
        if (key === undefined) files.set(`${mapping.containerDestination}/${file}`, content);
        else if (file === key) files.set(mapping.containerDestination, content);
      }
    }
    return files;
  }

  /** `/agent/models` and `/agent/runtimeClasses`: a 404 means an empty list, anything else must answer. */
  async loadOptionalList(command: string): Promise<unknown[]> {
    try {
      const result = await this.request('GET', command);
      return Array.isArray(result[command]) ? (result[command] as unknown[]) : [];
    } catch (error) {
      if (error instanceof EdgeletError && error.status === 404) return [];
      throw error;
    }
  }

  /** `loadMicroservices`: parse each item as `parseMicroservice` does, skip what it rejects. */
  async loadMicroservices(): Promise<ParsedMicroservice[]> {
    const result = await this.request('GET', 'microservices');
    if (!Array.isArray(result.microservices)) throw new Error('invalid response format');
    this.microservices = (result.microservices as unknown[]).flatMap((item) => {
      const parsed =
        item && typeof item === 'object' ? parseMicroservice(item as Record<string, unknown>) : undefined;
      return parsed ? [parsed] : [];
    });
    this.runRouter(this.microservices.find((microservice) => microservice.isRouter));
    return this.microservices;
  }

  /**
   * The router container after a list: removed when no item names it; created, or recreated when the
   * item says `rebuild` or its container differs (then the Router starts from the whole config); else
   * the running Router applies the new `bridges` and keeps everything else it started with.
   */
  private runRouter(item: ParsedMicroservice | undefined): void {
    if (!item) {
      this.runningRouter = undefined;
      return;
    }
    const config = JSON.parse(item.config) as Record<string, unknown>;
    const current = this.runningRouter;
    if (!current || item.rebuild || containerDiffers(current.item, item)) {
      this.runningRouter = { item, config, starts: (current?.starts ?? 0) + 1 };
      return;
    }
    const { bridges: _started, ...startedWith } = current.config;
    this.runningRouter = {
      item: { ...current.item, config: item.config },
      config: 'bridges' in config ? { ...startedWith, bridges: config.bridges } : startedWith,
      starts: current.starts,
    };
  }

  /** `ResolveRegistryForMicroservice`: the registry a container would be pulled from, or an error. */
  resolveRegistry(microservice: ParsedMicroservice): Registry | { id: number; url: string; isPublic: true } {
    if (microservice.registryId <= 0) throw new Error(`registry is not valid ${microservice.registryId}`);
    const fromController = this.registries.find((registry) => registry.id === microservice.registryId);
    if (fromController) return fromController;
    if (BUILT_IN_REGISTRY_IDS.includes(microservice.registryId)) {
      return {
        id: microservice.registryId,
        url: microservice.registryId === 1 ? 'docker.io' : 'from_cache',
        isPublic: true,
      };
    }
    throw new Error(`registry is not valid ${microservice.registryId}`);
  }

  /** The router container's config: the router microservice's `config`, decoded. */
  routerConfig(): Record<string, unknown> | undefined {
    const router = this.microservices.find((microservice) => microservice.isRouter);
    return router ? (JSON.parse(router.config) as Record<string, unknown>) : undefined;
  }
}

/** What Edgelet's engine compares to decide a container must be recreated: image, env, ports, network. */
function containerDiffers(running: ParsedMicroservice, next: ParsedMicroservice): boolean {
  const spec = (item: ParsedMicroservice) =>
    JSON.stringify([
      item.imageId,
      item.env,
      item.hostNetworkMode ? [] : item.portMappings,
      item.hostNetworkMode,
    ]);
  return spec(running) !== spec(next);
}

/** `parseMicroservice` (sync.go): type assertions on the map; a wrong type is as good as absent. */
function parseMicroservice(data: Record<string, unknown>): ParsedMicroservice | undefined {
  const text = (key: string) => (typeof data[key] === 'string' ? (data[key] as string) : '');
  const flag = (key: string) => data[key] === true;
  const uuid = text('uuid');
  const imageId = text('imageId') || text('imageName');
  if (uuid === '' || imageId === '') return undefined;
  const ports = Array.isArray(data.portMappings) ? (data.portMappings as Record<string, unknown>[]) : [];
  return {
    uuid,
    imageId,
    name: text('name'),
    application: text('application'),
    config: text('config'),
    registryId: typeof data.registryId === 'number' ? data.registryId : 0,
    isRouter: flag('isRouter'),
    isNats: flag('isNats'),
    rebuild: flag('rebuild'),
    hostNetworkMode: flag('hostNetworkMode'),
    env: (Array.isArray(data.env) ? (data.env as Record<string, unknown>[]) : [])
      .map((entry) => ({ key: String(entry?.key ?? ''), value: String(entry?.value ?? '') }))
      .filter((entry) => entry.key !== '' || entry.value !== ''),
    capAdd: (Array.isArray(data.capAdd) ? data.capAdd : []).filter(
      (cap): cap is string => typeof cap === 'string',
    ),
    portMappings: ports
      .map((port) => ({
        internal:
          typeof port?.internal === 'number'
            ? port.internal
            : typeof port?.portInternal === 'number'
              ? port.portInternal
              : 0,
        external:
          typeof port?.external === 'number'
            ? port.external
            : typeof port?.portExternal === 'number'
              ? port.portExternal
              : 0,
      }))
      .filter((port) => port.internal > 0 || port.external > 0),
    volumeMappings: (Array.isArray(data.volumeMappings)
      ? (data.volumeMappings as Record<string, unknown>[])
      : []
    ).map((mapping) => ({
      hostDestination: typeof mapping?.hostDestination === 'string' ? mapping.hostDestination : '',
      containerDestination:
        typeof mapping?.containerDestination === 'string' ? mapping.containerDestination : '',
      accessMode: typeof mapping?.accessMode === 'string' ? mapping.accessMode : '',
      type: mapping?.type === 'volumeMount' ? 'volumeMount' : mapping?.type === 'volume' ? 'volume' : 'bind',
    })),
  };
}
