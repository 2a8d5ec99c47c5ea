import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { type Parsed, parseBody, show } from './validation.js';
import { loadYamlDocument } from './yaml.js';

/**
 * NATS account rules and user rules: named sets of limits and permissions an application's account
 * and its users are signed with. The shapes are the reference controller's (the Go SDK's
 * `NatsRuleInfo`), in JSON and as the `NatsAccountRule` / `NatsUserRule` YAML kinds. Five system rules
 * ship with fogbridge; they are immutable and their names reserved. Pure.
 */

/** A rule, user or NATS name: what a path segment, a creds file name and a JWT name can all carry. */
export const natsName = z
  .string()
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .refine((value) => /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(value), {
    message: 'must start with a letter or digit and hold only letters, digits, ".", "_" and "-"',
  });

/**
 * A subject in a permission, import or export: dot-separated tokens, none empty, no whitespace; `*`
 * stands alone as a token, `>` only as the last one. (NATS reads a space as a queue-group separator in
 * permissions; fogbridge models none.)
 */
export function subjectProblem(subject: string): string | undefined {
  if (subject.length === 0) return 'must not be empty';
  if (subject.length > 255) return 'must be at most 255 characters';
  if (/\s/.test(subject)) return 'must not contain whitespace';
  const tokens = subject.split('.');
  if (tokens.some((token) => token === ''))
    return 'must not have an empty token (two dots, or a dot at an end)';
  for (const [index, token] of tokens.entries()) {
    if (token.includes('>') && (token !== '>' || index !== tokens.length - 1))
      return "may use '>' only as the whole last token";
    if (token.includes('*') && token !== '*') return "may use '*' only as a whole token";
  }
  return undefined;
}

export const natsSubject = z.string().superRefine((value, context) => {
  const problem = subjectProblem(value);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});

const subjects = z.array(natsSubject).max(256, 'must hold at most 256 subjects');

/** A count limit: an integer, -1 meaning unlimited. */
const countLimit = z.number().int('must be an integer').min(-1);

const BYTE_UNITS: Record<string, number> = { k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** A byte limit: an integer (-1 unlimited) or a size such as `512k`, `100m`, `1g`, `1t`. */
const byteLimit = z
  .union([
    countLimit,
    z.string().refine((value) => /^(-1|[0-9]{1,15}[kmgtKMGT]?)$/.test(value.trim()), {
      message: 'must be -1, a number of bytes, or a size such as 512k, 100m, 1g',
    }),
  ])
  .transform((value) => {
    if (typeof value === 'number') return value;
    const match = /^([0-9]+)([kmgt])?$/i.exec(value.trim());
    if (!match) return -1;
    return Number(match[1]) * (match[2] ? BYTE_UNITS[match[2].toLowerCase()]! : 1);
  });

const nonNegative = z.number().int('must be an integer').min(0);

/** An account's import of another account's stream or service. */
const accountImport = z.strictObject({
  name: z.string().max(255).optional(),
  subject: natsSubject,
  type: z.enum(['stream', 'service']),
  account: z.string().refine((value) => /^A[A-Z2-7]{55}$/.test(value), {
    message: 'must be an account public key (56 characters starting with A)',
  }),
  token: z.string().max(8192).optional(),
  to: natsSubject.optional(),
  local_subject: natsSubject.optional(),
  share: z.boolean().optional(),
});

/** A stream or service an account offers to others. */
const accountExport = z.strictObject({
  name: z.string().max(255).optional(),
  subject: natsSubject,
  type: z.enum(['stream', 'service']),
  description: z.string().max(1024).optional(),
  info_url: z.string().max(1024).optional(),
  token_req: z.boolean().optional(),
  response_type: z.enum(['Singleton', 'Stream', 'Chunked']).optional(),
  account_token_position: z.number().int().min(1).optional(),
});

/** JetStream limits of one tier (`R1`, `R3`): the NATS claim's own field names. */
const tierLimits = z.strictObject({
  mem_storage: byteLimit.optional(),
  disk_storage: byteLimit.optional(),
  streams: countLimit.optional(),
  consumer: countLimit.optional(),
  max_ack_pending: countLimit.optional(),
  mem_max_stream_bytes: byteLimit.optional(),
  disk_max_stream_bytes: byteLimit.optional(),
  max_bytes_required: z.boolean().optional(),
});

const permissionFields = {
  respMax: nonNegative.optional(),
  respTtl: nonNegative.optional(),
  pubAllow: subjects.optional(),
  pubDeny: subjects.optional(),
  subAllow: subjects.optional(),
  subDeny: subjects.optional(),
};

export const accountRuleFields = {
  description: z.string().max(1024).optional(),
  infoUrl: z.string().max(1024).optional(),
  maxConnections: countLimit.optional(),
  maxLeafNodeConnections: countLimit.optional(),
  maxData: byteLimit.optional(),
  maxExports: countLimit.optional(),
  maxImports: countLimit.optional(),
  maxMsgPayload: byteLimit.optional(),
  maxSubscriptions: countLimit.optional(),
  exportsAllowWildcards: z.boolean().optional(),
  disallowBearer: z.boolean().optional(),
  responsePermissions: z
    .strictObject({ maxMsgs: nonNegative.optional(), expires: nonNegative.optional() })
    .optional(),
  imports: z.array(accountImport).max(256).optional(),
  exports: z.array(accountExport).max(256).optional(),
  memStorage: byteLimit.optional(),
  diskStorage: byteLimit.optional(),
  streams: countLimit.optional(),
  consumer: countLimit.optional(),
  maxAckPending: countLimit.optional(),
  memMaxStreamBytes: byteLimit.optional(),
  diskMaxStreamBytes: byteLimit.optional(),
  maxBytesRequired: z.boolean().optional(),
  tieredLimits: z.record(z.string().min(1).max(16), tierLimits).optional(),
  ...permissionFields,
};

const CONNECTION_TYPES = [
  'STANDARD',
  'WEBSOCKET',
  'LEAFNODE',
  'LEAFNODE_WS',
  'MQTT',
  'MQTT_WS',
  'IN_PROCESS',
] as const;

/** `HH:MM:SS`, as NATS reads a user's allowed connection times. */
const clockTime = z.string().refine((value) => /^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$/.test(value), {
  message: 'must be a time of day HH:MM:SS',
});

/** A source address range, `a.b.c.d/n` or an IPv6 prefix. */
const cidr = z.string().refine((value) => /^[0-9a-fA-F:.]{2,45}\/[0-9]{1,3}$/.test(value), {
  message: 'must be an address range such as 10.0.0.0/8',
});

export const userRuleFields = {
  description: z.string().max(1024).optional(),
  maxSubscriptions: countLimit.optional(),
  maxPayload: byteLimit.optional(),
  maxData: byteLimit.optional(),
  bearerToken: z.boolean().optional(),
  proxyRequired: z.boolean().optional(),
  allowedConnectionTypes: z.array(z.enum(CONNECTION_TYPES)).max(CONNECTION_TYPES.length).optional(),
  src: z.array(cidr).max(64).optional(),
  times: z
    .array(z.strictObject({ start: clockTime, end: clockTime }))
    .max(64)
    .optional(),
  timesLocation: z.string().max(64).optional(),
  tags: z.array(z.string().min(1).max(255)).max(64).optional(),
  ...permissionFields,
};

export const accountRuleBody = z.strictObject({ name: natsName, ...accountRuleFields });
export const accountRulePatch = z.strictObject({ name: natsName.optional(), ...accountRuleFields });
export const userRuleBody = z.strictObject({ name: natsName, ...userRuleFields });
export const userRulePatch = z.strictObject({ name: natsName.optional(), ...userRuleFields });

export type AccountRule = z.output<typeof accountRuleBody>;
export type UserRule = z.output<typeof userRuleBody>;
export type RuleKind = 'account' | 'user';

// --- The system rules ------------------------------------------------------------------------------

export const SYSTEM_ACCOUNT_RULE = 'default-system-account';
export const APPLICATION_ACCOUNT_RULE = 'default-account';
export const MICROSERVICE_USER_RULE = 'default-user';
export const MQTT_BEARER_USER_RULE = 'default-mqtt-user';
export const LEAF_USER_RULE = 'default-leaf-user';

/** The system account's two `$SYS` monitoring exports (every server's system account offers them). */
export const SYSTEM_EXPORTS = [
  {
    name: 'account-monitoring-streams',
    subject: '$SYS.ACCOUNT.*.>',
    type: 'stream',
    account_token_position: 3,
    description: 'Account specific monitoring stream',
    info_url: 'https://docs.nats.io/nats-server/configuration/sys_accounts',
  },
  {
    name: 'account-monitoring-services',
    subject: '$SYS.REQ.ACCOUNT.*.*',
    type: 'service',
    response_type: 'Stream',
    account_token_position: 4,
    description: 'Request account specific monitoring services for: SUBSZ, CONNZ, LEAFZ, JSZ and INFO',
    info_url: 'https://docs.nats.io/nats-server/configuration/sys_accounts',
  },
] as const;

const UNLIMITED_ACCOUNT = {
  maxLeafNodeConnections: -1,
  maxImports: -1,
  maxExports: -1,
  maxConnections: -1,
  maxData: -1,
  maxMsgPayload: -1,
  maxSubscriptions: -1,
  exportsAllowWildcards: true,
};

/** The system rules, as the reference ships them, with fixed ids. */
export const SYSTEM_ACCOUNT_RULES: readonly (AccountRule & { id: number })[] = [
  {
    id: 1,
    name: SYSTEM_ACCOUNT_RULE,
    description: 'Default system account rule',
    exports: SYSTEM_EXPORTS.map((entry) => ({ ...entry })),
    ...UNLIMITED_ACCOUNT,
  },
  {
    id: 2,
    name: APPLICATION_ACCOUNT_RULE,
    description: 'Default application account rule',
    memStorage: -1,
    diskStorage: -1,
    streams: -1,
    maxAckPending: -1,
    memMaxStreamBytes: -1,
    diskMaxStreamBytes: -1,
    consumer: -1,
    ...UNLIMITED_ACCOUNT,
  },
];

export const SYSTEM_USER_RULES: readonly (UserRule & { id: number })[] = [
  {
    id: 3,
    name: MICROSERVICE_USER_RULE,
    description: 'Default microservice user rule',
    bearerToken: false,
    allowedConnectionTypes: ['STANDARD', 'WEBSOCKET'],
    maxData: -1,
    maxSubscriptions: -1,
    maxPayload: -1,
  },
  {
    id: 4,
    name: MQTT_BEARER_USER_RULE,
    description: 'Default MQTT bearer user rule',
    bearerToken: true,
    maxData: -1,
    maxSubscriptions: -1,
    maxPayload: -1,
    allowedConnectionTypes: ['MQTT', 'STANDARD'],
  },
  {
    id: 5,
    name: LEAF_USER_RULE,
    description: 'Default leaf node user rule for remote connection from leaf to server',
    bearerToken: false,
    maxData: -1,
    maxSubscriptions: -1,
    maxPayload: -1,
    allowedConnectionTypes: ['LEAFNODE', 'WEBSOCKET'],
  },
];

/** The first id a rule created through the API gets (the system rules hold the ones below). */
export const FIRST_CUSTOM_RULE_ID = 100;

export function systemRule(
  kind: RuleKind,
  name: string,
): ((AccountRule | UserRule) & { id: number }) | undefined {
  const rules: readonly ((AccountRule | UserRule) & { id: number })[] =
    kind === 'account' ? SYSTEM_ACCOUNT_RULES : SYSTEM_USER_RULES;
  return rules.find((rule) => rule.name === name);
}

export function isSystemRuleName(name: string): boolean {
  return [...SYSTEM_ACCOUNT_RULES, ...SYSTEM_USER_RULES].some((rule) => rule.name === name);
}

// --- YAML kinds ---------------------------------------------------------------------------------

/**
 * A `NatsAccountRule` spec may also state a rule in the NATS claim's own terms (`limits`,
 * `default_permissions`, `info_url`, `tiered_limits`): a camelCase field wins over its claim name.
 */
const accountRuleSpec = z.strictObject({
  ...accountRuleFields,
  info_url: z.string().max(1024).optional(),
  tiered_limits: accountRuleFields.tieredLimits,
  jetstream: z.unknown().optional(),
  jetstreamEnabled: z.unknown().optional(),
  limits: z
    .strictObject({
      conn: countLimit.optional(),
      leaf: countLimit.optional(),
      data: byteLimit.optional(),
      exports: countLimit.optional(),
      imports: countLimit.optional(),
      payload: byteLimit.optional(),
      subs: countLimit.optional(),
      wildcards: z.boolean().optional(),
      disallow_bearer: z.boolean().optional(),
      ...tierLimits.shape,
    })
    .optional(),
  default_permissions: z
    .strictObject({
      pub: z.strictObject({ allow: subjects.optional(), deny: subjects.optional() }).optional(),
      sub: z.strictObject({ allow: subjects.optional(), deny: subjects.optional() }).optional(),
      resp: z.strictObject({ max: nonNegative.optional(), ttl: nonNegative.optional() }).optional(),
    })
    .optional(),
});

const userRuleSpec = z.strictObject({
  ...userRuleFields,
  pub: z.strictObject({ allow: subjects.optional(), deny: subjects.optional() }).optional(),
  sub: z.strictObject({ allow: subjects.optional(), deny: subjects.optional() }).optional(),
  resp: z.strictObject({ max: nonNegative.optional(), ttl: nonNegative.optional() }).optional(),
  subs: countLimit.optional(),
  payload: byteLimit.optional(),
  bearer_token: z.boolean().optional(),
  proxy_required: z.boolean().optional(),
  allowed_connection_types: userRuleFields.allowedConnectionTypes,
  times_location: z.string().max(64).optional(),
  locale: z.string().max(64).optional(),
});

const ruleDocument = (spec: z.ZodType) =>
  z.strictObject({
    apiVersion: z.unknown().optional(),
    kind: z.unknown(),
    metadata: z.strictObject({ name: natsName, namespace: z.string().optional() }),
    spec,
  });

export const accountRuleDocument = ruleDocument(accountRuleSpec);
export const userRuleDocument = ruleDocument(userRuleSpec);

const defined = <T extends Record<string, unknown>>(record: T): Partial<T> =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Partial<T>;

/** A `kind: NatsAccountRule` document, as the account rule it states. */
export function parseAccountRuleDocument(source: string): Parsed<AccountRule> {
  const { value, unknownFields } = parseBody(
    accountRuleDocument,
    loadYamlDocument(source, 'NatsAccountRule'),
  );
  const spec = value.spec as z.output<typeof accountRuleSpec>;
  const { limits = {}, default_permissions: permissions = {}, info_url, tiered_limits, ...fields } = spec;
  delete fields.jetstream;
  delete fields.jetstreamEnabled;
  const fromClaims = defined({
    infoUrl: info_url,
    tieredLimits: tiered_limits,
    maxConnections: limits.conn,
    maxLeafNodeConnections: limits.leaf,
    maxData: limits.data,
    maxExports: limits.exports,
    maxImports: limits.imports,
    maxMsgPayload: limits.payload,
    maxSubscriptions: limits.subs,
    exportsAllowWildcards: limits.wildcards,
    disallowBearer: limits.disallow_bearer,
    memStorage: limits.mem_storage,
    diskStorage: limits.disk_storage,
    streams: limits.streams,
    consumer: limits.consumer,
    maxAckPending: limits.max_ack_pending,
    memMaxStreamBytes: limits.mem_max_stream_bytes,
    diskMaxStreamBytes: limits.disk_max_stream_bytes,
    maxBytesRequired: limits.max_bytes_required,
    pubAllow: permissions.pub?.allow,
    pubDeny: permissions.pub?.deny,
    subAllow: permissions.sub?.allow,
    subDeny: permissions.sub?.deny,
    respMax: permissions.resp?.max,
    respTtl: permissions.resp?.ttl,
  });
  return { value: { name: value.metadata.name, ...fromClaims, ...defined(fields) }, unknownFields };
}

/** A `kind: NatsUserRule` document, as the user rule it states. */
export function parseUserRuleDocument(source: string): Parsed<UserRule> {
  const { value, unknownFields } = parseBody(userRuleDocument, loadYamlDocument(source, 'NatsUserRule'));
  const spec = value.spec as z.output<typeof userRuleSpec>;
  const {
    pub,
    sub,
    resp,
    subs,
    payload,
    bearer_token,
    proxy_required,
    allowed_connection_types,
    times_location,
    locale,
    ...fields
  } = spec;
  const fromClaims = defined({
    maxSubscriptions: subs,
    maxPayload: payload,
    bearerToken: bearer_token,
    proxyRequired: proxy_required,
    allowedConnectionTypes: allowed_connection_types,
    timesLocation: times_location ?? locale,
    pubAllow: pub?.allow,
    pubDeny: pub?.deny,
    subAllow: sub?.allow,
    subDeny: sub?.deny,
    respMax: resp?.max,
    respTtl: resp?.ttl,
  });
  return { value: { name: value.metadata.name, ...fromClaims, ...defined(fields) }, unknownFields };
}

/** A PATCH (JSON or YAML) names the rule of its path, if it names one at all. */
export function checkRuleName(kind: RuleKind, path: string, named: string | undefined): void {
  if (named !== undefined && named !== path) {
    throw new ValidationError(
      `Field 'name' (${show(named)}) does not match the ${kind} rule in the path (${show(path)}); a rule cannot be renamed`,
    );
  }
}
