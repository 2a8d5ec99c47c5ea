import { describe, expect, it } from 'vitest';
import {
  lifetimeSeconds,
  microserviceCredsMount,
  type PlannedMicroservice,
  type PlannedUser,
  planAccountUsers,
  reservedUserName,
} from '../../shared/domain/nats-accounts.js';
import { accountClaims, userClaims } from '../../shared/domain/nats-claims.js';
import {
  accountRuleBody,
  parseAccountRuleDocument,
  parseUserRuleDocument,
  SYSTEM_ACCOUNT_RULES,
  SYSTEM_USER_RULES,
  subjectProblem,
} from '../../shared/domain/nats-rules.js';
import { parseBody } from '../../shared/domain/validation.js';

/** Application accounts' pure rules: which users an account has, names, expiries, subjects, claims. */

const ACCOUNT = { publicKey: 'AACCOUNT', revocations: { UREVOKED: 1 } };
const user = (name: string, over: Partial<PlannedUser> = {}): PlannedUser => ({
  name,
  kind: 'microservice',
  publicKey: `U${name.toUpperCase()}`,
  accountKey: 'AACCOUNT',
  rule: 'default-user',
  ruleDigest: 'd-default',
  microserviceUuid: `ms-${name}`,
  ...over,
});
const ms = (name: string, over: Partial<PlannedMicroservice> = {}): PlannedMicroservice => ({
  uuid: `ms-${name}`,
  name,
  natsAccess: true,
  ...over,
});
const DIGESTS = new Map([
  ['default-user', 'd-default'],
  ['default-leaf-user', 'd-leaf'],
  ['quiet', 'd-quiet'],
]);

describe('the users an account should have', () => {
  it.each<{
    case: string;
    enabled?: boolean;
    users: PlannedUser[];
    microservices: PlannedMicroservice[];
    scope?: string;
    revoke?: string[];
    issue?: string[];
    reissue?: string[];
    conflicts?: string[];
  }>([
    { case: 'every microservice has its user', users: [user('a')], microservices: [ms('a')] },
    { case: 'a microservice without one gets one', users: [], microservices: [ms('a')], issue: ['a'] },
    {
      case: 'a microservice without access has none',
      users: [],
      microservices: [ms('a', { natsAccess: false })],
    },
    {
      case: 'a user whose microservice lost its access goes',
      users: [user('a')],
      microservices: [ms('a', { natsAccess: false })],
      revoke: ['a'],
    },
    { case: 'a user whose microservice is gone goes', users: [user('a')], microservices: [], revoke: ['a'] },
    {
      case: 'a user of another microservice of the same name goes, and the new one gets its own',
      users: [user('a', { microserviceUuid: 'ms-old' })],
      microservices: [ms('a')],
      revoke: ['a'],
      issue: ['a'],
    },
    {
      case: 'an application without access has no users at all',
      enabled: false,
      users: [
        user('a'),
        user('dash', { kind: 'api', microserviceUuid: undefined }),
        user('leaf-fog', { kind: 'leaf' }),
      ],
      microservices: [ms('a')],
      revoke: ['a', 'dash', 'leaf-fog'],
    },
    {
      case: 'users signed by another account key are reissued (a new operator)',
      users: [
        user('a', { accountKey: 'AOLD' }),
        user('dash', { kind: 'api', accountKey: 'AOLD', microserviceUuid: undefined }),
      ],
      microservices: [ms('a')],
      reissue: ['a', 'dash'],
    },
    {
      case: 'a revoked user is reissued',
      users: [user('a', { publicKey: 'UREVOKED' })],
      microservices: [ms('a')],
      reissue: ['a'],
    },
    {
      case: "a user whose microservice's rule changed is reissued",
      users: [user('a')],
      microservices: [ms('a', { natsRule: 'quiet' })],
      reissue: ['a'],
    },
    {
      case: 'a leaf user with its own rule is kept',
      users: [
        user('leaf-fog', {
          kind: 'leaf',
          rule: 'default-leaf-user',
          ruleDigest: 'd-leaf',
          microserviceUuid: undefined,
        }),
      ],
      microservices: [],
    },
    {
      case: 'a microservice named like an API user gets none: a conflict',
      users: [user('a', { kind: 'api', microserviceUuid: undefined })],
      microservices: [ms('a')],
      conflicts: ['a'],
    },
    {
      case: 'a scope looks at its microservice only',
      users: [user('b', { accountKey: 'AOLD' })],
      microservices: [ms('a'), ms('b'), ms('c')],
      scope: 'ms-a',
      issue: ['a'],
    },
  ])(
    '$case',
    ({
      enabled = true,
      users,
      microservices,
      scope,
      revoke = [],
      issue = [],
      reissue = [],
      conflicts = [],
    }) => {
      // Act
      const plan = planAccountUsers({
        enabled,
        account: ACCOUNT,
        users,
        microservices,
        ruleDigests: DIGESTS,
        defaultUserRule: 'default-user',
        ...(scope ? { scope } : {}),
      });

      // Assess
      expect({
        revoke: plan.revoke.map((u) => u.name),
        issue: plan.issue.map((m) => m.name),
        reissue: plan.reissue.map((u) => u.name),
        conflicts: plan.conflicts.map((c) => c.microservice.name),
      }).toEqual({ revoke, issue, reissue, conflicts });
    },
  );
});

describe('names and expiries of users made through the API', () => {
  it.each([
    'SYS',
    'sys',
    'admin-hub',
    'ADMIN-HUB',
    'admin-server-hub',
    'admin-leaf-fog-a',
    'leaf-fog-a',
    'Leaf-x',
  ])('%s is reserved', (name) => {
    // Act / Assess
    expect(reservedUserName(name)).toMatch(/is a name fogbridge gives its own NATS users/);
  });

  it.each(['dashboard', 'admin', 'systems', 'admin-hubble-viewer', 'leafy'])('%s is free', (name) => {
    // Act / Assess
    expect(reservedUserName(name)).toBeUndefined();
  });

  it.each<[number | string, number | RegExp]>([
    [3600, 3600],
    ['24h', 86_400],
    ['7d', 604_800],
    ['3m', 3 * 30 * 86_400],
    ['36m', 36 * 30 * 86_400],
    [-60, /must be in the future/],
    [0, /must be in the future/],
    [1.5, /whole number of seconds/],
    ['0d', /must be in the future/],
    ['37m', /at most 3 years/],
    [10 ** 9, /at most 94608000 seconds/],
    ['1w', /24h, 7d, 3m/],
    ['12', /24h, 7d, 3m/],
  ])('expiresIn %s: %s', (expiresIn, expected) => {
    // Act
    const lifetime = lifetimeSeconds(expiresIn);

    // Assess
    if (typeof expected === 'number') expect(lifetime).toBe(expected);
    else expect(lifetime).toMatch(expected);
  });

  it('mounts a microservice creds where the reference controller does', () => {
    // Act / Assess
    expect(microserviceCredsMount('orders', 'checkout')).toEqual({
      name: 'nats-creds-orders-checkout',
      key: 'orders/checkout.creds',
      path: '/etc/nats/creds/orders/checkout.creds',
    });
  });
});

describe('subjects in permissions, imports and exports', () => {
  it.each<[string, string | undefined]>([
    ['orders.created', undefined],
    ['orders.*', undefined],
    ['orders.>', undefined],
    ['>', undefined],
    ['$SYS.ACCOUNT.*.>', undefined],
    ['', 'must not be empty'],
    ['orders created', 'must not contain whitespace'],
    ['orders\tcreated', 'must not contain whitespace'],
    ['orders..created', 'must not have an empty token (two dots, or a dot at an end)'],
    ['.orders', 'must not have an empty token (two dots, or a dot at an end)'],
    ['orders.', 'must not have an empty token (two dots, or a dot at an end)'],
    ['orders.>.x', "may use '>' only as the whole last token"],
    ['orders.a>', "may use '>' only as the whole last token"],
    ['orders.a*', "may use '*' only as a whole token"],
  ])('%j: %s', (subject, problem) => {
    // Act / Assess
    expect(subjectProblem(subject)).toBe(problem);
  });
});

describe('what a rule puts in a JWT', () => {
  it('signs the default application rule unlimited, JetStream on', () => {
    // Act
    const claims = accountClaims(SYSTEM_ACCOUNT_RULES[1]!);

    // Assess
    expect(claims).toEqual({
      limits: {
        conn: -1,
        leaf: -1,
        data: -1,
        exports: -1,
        imports: -1,
        payload: -1,
        subs: -1,
        wildcards: true,
        mem_storage: -1,
        disk_storage: -1,
        streams: -1,
        consumer: -1,
        max_ack_pending: -1,
        mem_max_stream_bytes: -1,
        disk_max_stream_bytes: -1,
        max_bytes_required: false,
      },
      default_permissions: { pub: {}, sub: {} },
      description: 'Default application account rule',
    });
  });

  it('leaves out no limit of a partial rule (NATS reads a missing one as 0), and JetStream off without its limits', () => {
    // Prepare
    const rule = parseBody(accountRuleBody, {
      name: 'partial',
      maxConnections: 10,
      maxData: '1k',
      subAllow: ['a.>'],
    }).value;

    // Act
    const claims = accountClaims(rule, { UREVOKED: 7 });

    // Assess
    expect(claims).toEqual({
      limits: {
        conn: 10,
        leaf: -1,
        data: 1024,
        exports: -1,
        imports: -1,
        payload: -1,
        subs: -1,
        wildcards: true,
      },
      default_permissions: { pub: {}, sub: { allow: ['a.>'] } },
      revocations: { UREVOKED: 7 },
    });
  });

  it('allows nothing in a disabled account', () => {
    // Act
    const claims = accountClaims(SYSTEM_ACCOUNT_RULES[1]!, { UA: 1 }, { disabled: true });

    // Assess
    expect(claims.limits).toEqual({
      conn: 0,
      leaf: 0,
      data: 0,
      exports: 0,
      imports: 0,
      payload: 0,
      subs: 0,
      wildcards: false,
    });
    expect(claims.revocations).toEqual({ UA: 1 });
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    [
      'default-user',
      {},
      {
        subs: -1,
        data: -1,
        payload: -1,
        bearer_token: false,
        allowed_connection_types: ['STANDARD', 'WEBSOCKET'],
      },
    ],
    [
      'default-mqtt-user',
      { bearer: true },
      { bearer_token: true, allowed_connection_types: ['MQTT', 'STANDARD'] },
    ],
    ['default-leaf-user', {}, { bearer_token: false, allowed_connection_types: ['LEAFNODE', 'WEBSOCKET'] }],
  ])('signs a user of rule %s', (name, options, expected) => {
    // Act
    const claims = userClaims(SYSTEM_USER_RULES.find((rule) => rule.name === name)!, options);

    // Assess
    expect(claims).toMatchObject({ pub: {}, sub: {}, ...expected });
  });
});

describe('the YAML rule kinds', () => {
  it('reads a NatsAccountRule stated in the NATS claim names, camelCase winning', () => {
    // Act
    const { value } = parseAccountRuleDocument(`kind: NatsAccountRule
metadata:
  name: claims
spec:
  maxConnections: 5
  info_url: https://example.com
  limits:
    conn: 9
    subs: 100
    mem_storage: 1m
  default_permissions:
    pub:
      deny: ["secret.>"]
    resp:
      max: 1
`);

    // Assess
    expect(value).toEqual({
      name: 'claims',
      infoUrl: 'https://example.com',
      maxConnections: 5,
      maxSubscriptions: 100,
      memStorage: 1024 * 1024,
      pubDeny: ['secret.>'],
      respMax: 1,
    });
  });

  it('reads a NatsUserRule stated in the NATS claim names', () => {
    // Act
    const { value } = parseUserRuleDocument(`kind: NatsUserRule
metadata:
  name: claims
spec:
  sub:
    allow: ["a.>"]
  payload: 1k
  bearer_token: true
  allowed_connection_types: [MQTT]
  locale: Europe/Istanbul
`);

    // Assess
    expect(value).toEqual({
      name: 'claims',
      subAllow: ['a.>'],
      maxPayload: 1024,
      bearerToken: true,
      allowedConnectionTypes: ['MQTT'],
      timesLocation: 'Europe/Istanbul',
    });
  });
});
