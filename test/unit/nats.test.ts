import { decode } from '@nats-io/jwt';
import { describe, expect, it } from 'vitest';
import { newOperator, newSystemAccount, newUser } from '../../shared/domain/nats-claims.js';
import {
  clusterRoutes,
  leafRemotes,
  mergeOperatorRoutes,
  NATS_TEMPLATES,
  NatsConfigError,
  natsArtefacts,
  normalizeStoreSize,
  operatorAgentRoutes,
  renderNatsTemplate,
  serverTemplate,
} from '../../shared/domain/nats-conf.js';

/** Every variable of the templates, with values as fogbridge would fill them. */
const VARIABLES: Record<string, string> = {
  OPERATOR_JWT: 'eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln',
  SYSTEM_ACCOUNT: 'ACCOUNTPUBLICKEY',
  NATS_CLUSTER_ROUTES: '["nats://10.0.0.5:6222","nats://10.0.0.6:6222"]',
  NATS_LEAF_REMOTES: '[]',
  CONTROLLER_NAME: 'pot',
  SERVER_NAME: 'fog-a',
  JETSTREAM_DOMAIN: 'iofog',
  JETSTREAM_KEY: 'a2V5',
  JETSTREAM_PREV_KEY: '',
  NATS_SERVER_PORT: '4222',
  NATS_LEAF_PORT: '7422',
  NATS_CLUSTER_PORT: '6222',
  NATS_MQTT_PORT: '8883',
  NATS_HTTP_PORT: '8222',
  NATS_LEAF_ADVERTISE: '10.0.0.5',
  NATS_TLS_DIR: '/etc/nats/certs',
  NATS_CERT_NAME: 'nats-server-fog-a',
  NATS_MQTT_CERT_NAME: 'nats-mqtt-server-fog-a',
  NATS_JWT_DIR: '/home/runner/nats/jwt',
  NATS_JS_MAX_MEMORY_STORE: '1g',
  NATS_JS_MAX_FILE_STORE: '10g',
};

/** The operator's server.conf as iofog-operator writes it (controllers/controlplanes/nats/config.go). */
const OPERATOR_SERVER_CONF = `cluster: {
  name: pot
  port: 6222
  routes: ["nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222"]
}
`;

describe('NATS templates', () => {
  it.each(Object.keys(NATS_TEMPLATES) as (keyof typeof NATS_TEMPLATES)[])(
    'renders %s with every variable replaced',
    (template) => {
      // Act
      const text = renderNatsTemplate(template, VARIABLES);

      // Assess
      expect(text).not.toMatch(/\$[A-Z]/);
      expect(text).toContain('server_name: "fog-a"');
      expect(text).toContain(`operator = ${VARIABLES.OPERATOR_JWT}`);
      expect(text).toContain('cert_file: "/etc/nats/certs/nats-mqtt-server-fog-a/tls.crt"');
    },
  );

  it('renders the reference server.conf cluster block (seeds: NATS_TLS_DIR), byte for byte', () => {
    // Act
    const text = renderNatsTemplate('server.conf', VARIABLES);

    // Assess
    expect(text).toContain(`
cluster: {
  name: pot
  port: 6222
  no_advertise: true
  routes: ["nats://10.0.0.5:6222","nats://10.0.0.6:6222"]
  tls: {
    ca_file: "/etc/nats/certs/nats-server-fog-a/ca.crt"
    cert_file: "/etc/nats/certs/nats-server-fog-a/tls.crt"
    key_file: "/etc/nats/certs/nats-server-fog-a/tls.key"
    handshake_first: true
    verify: true
    timeout: "3s"
  }
}
`);
    expect(text).toContain('  advertise: 10.0.0.5\n');
  });

  it.each<[string, string]>([
    ['server.conf', 'NATS_CLUSTER_ROUTES'],
    ['server-no-cluster.conf', 'NATS_LEAF_ADVERTISE'],
    ['leaf.conf', 'NATS_LEAF_REMOTES'],
  ])(
    'refuses to render %s with %s unset, naming it (the reference left it in the file)',
    (template, name) => {
      // Prepare
      const { [name]: _left, ...variables } = VARIABLES;

      // Act / Assess
      expect(() => renderNatsTemplate(template as keyof typeof NATS_TEMPLATES, variables)).toThrow(
        new NatsConfigError(`${template} needs ${name}, which have no value`),
      );
    },
  );

  it('refuses an empty value other than the previous JetStream key', () => {
    // Act / Assess
    expect(() => renderNatsTemplate('leaf.conf', { ...VARIABLES, SERVER_NAME: '' })).toThrow(/SERVER_NAME/);
  });
});

describe('NATS routes and template choice', () => {
  it.each<[string, { host: string | null; clusterPort: number }[], string[], string]>([
    [
      'one server',
      [{ host: '10.0.0.5', clusterPort: 6222 }],
      ['nats://10.0.0.5:6222'],
      'server-no-cluster.conf',
    ],
    [
      'two servers',
      [
        { host: '10.0.0.5', clusterPort: 6222 },
        { host: '10.0.0.6', clusterPort: 16222 },
      ],
      ['nats://10.0.0.5:6222', 'nats://10.0.0.6:16222'],
      'server.conf',
    ],
    [
      'a server without host and a duplicate',
      [
        { host: null, clusterPort: 6222 },
        { host: '10.0.0.5', clusterPort: 6222 },
        { host: '10.0.0.5', clusterPort: 6222 },
      ],
      ['nats://10.0.0.5:6222'],
      'server-no-cluster.conf',
    ],
  ])('routes %s, and picks the template', (_case, servers, routes, template) => {
    // Act / Assess
    expect(clusterRoutes(servers)).toEqual(routes);
    expect(serverTemplate(clusterRoutes(servers))).toBe(template);
  });

  it('links a leaf to each upstream over TLS with its own certificate, binding the system account', () => {
    // Act
    const remotes = leafRemotes({
      upstreams: [{ host: 'nats.example.com', leafPort: 7422 }],
      links: [{ account: 'ACCOUNTPUBLICKEY', credentials: '/etc/nats/creds/sys/admin-leaf-fog-a.creds' }],
      certName: 'nats-server-fog-a',
    });

    // Assess
    expect(remotes).toEqual([
      {
        urls: ['tls://nats.example.com:7422'],
        account: 'ACCOUNTPUBLICKEY',
        credentials: '/etc/nats/creds/sys/admin-leaf-fog-a.creds',
        tls: {
          ca_file: '/etc/nats/certs/nats-server-fog-a/ca.crt',
          cert_file: '/etc/nats/certs/nats-server-fog-a/tls.crt',
          key_file: '/etc/nats/certs/nats-server-fog-a/tls.key',
          verify: true,
          handshake_first: true,
          timeout: '3s',
        },
      },
    ]);
  });

  it('links each account the leaf serves to each upstream: the system account first, then the applications', () => {
    // Act
    const remotes = leafRemotes({
      upstreams: [
        { host: 'hub.example.com', leafPort: 7422 },
        { host: '10.0.0.7', leafPort: 17422 },
      ],
      links: [
        { account: 'ASYS', credentials: '/etc/nats/creds/sys/admin-leaf-fog-a.creds' },
        { account: 'AORDERS', credentials: '/etc/nats/creds/orders/leaf-fog-a.creds' },
      ],
      certName: 'nats-server-fog-a',
    }) as { urls: string[]; account: string; credentials: string }[];

    // Assess
    expect(remotes.map((remote) => [remote.account, remote.urls[0], remote.credentials])).toEqual([
      ['ASYS', 'tls://hub.example.com:7422', '/etc/nats/creds/sys/admin-leaf-fog-a.creds'],
      ['ASYS', 'tls://10.0.0.7:17422', '/etc/nats/creds/sys/admin-leaf-fog-a.creds'],
      ['AORDERS', 'tls://hub.example.com:7422', '/etc/nats/creds/orders/leaf-fog-a.creds'],
      ['AORDERS', 'tls://10.0.0.7:17422', '/etc/nats/creds/orders/leaf-fog-a.creds'],
    ]);
  });

  it.each<[string, string]>([
    ['10', '10g'],
    ['10GB', '10gb'],
    ['512 m', '512m'],
    ['1t', '1t'],
  ])('normalises the store size %s to %s as the reference does', (value, normalised) => {
    // Act / Assess
    expect(normalizeStoreSize(value)).toBe(normalised);
  });

  it.each<['hub' | 'server' | 'leaf', string, string]>([
    ['hub', 'admin-hub', 'nats-creds-sys-admin-hub'],
    ['server', 'admin-server-fog-a', 'nats-creds-sys-admin-server-fog-a'],
    ['leaf', 'admin-leaf-fog-a', 'nats-creds-sys-admin-leaf-fog-a'],
  ])('names the %s artefacts after the agent', (role, user, credsMount) => {
    // Act / Assess
    expect(natsArtefacts('fog-a', role)).toEqual({
      serverCertificate: 'nats-server-fog-a',
      mqttCertificate: 'nats-mqtt-server-fog-a',
      configMount: 'nats-server-conf-fog-a',
      jwtMount: 'nats-jwt-dir-fog-a',
      jetstreamKey: 'nats-jetstream-key-fog-a',
      user,
      credsMount,
      credsKey: `sys/${user}.creds`,
    });
  });
});

describe("iofog-nats-config's routes", () => {
  it.each<[string, string[], string]>([
    [
      'adds agent routes after the operator pods, in its format',
      ['nats://10.0.0.5:6222'],
      '  routes: ["nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222", "nats://10.0.0.5:6222"]',
    ],
    [
      'keeps only the operator pods when no agent serves',
      [],
      '  routes: ["nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222"]',
    ],
  ])('%s', (_case, agentRoutes, line) => {
    // Act
    const merged = mergeOperatorRoutes(OPERATOR_SERVER_CONF, agentRoutes);

    // Assess
    expect(merged.split('\n')[3]).toBe(line);
    expect(merged.replace(line, '')).toBe(
      OPERATOR_SERVER_CONF.replace(OPERATOR_SERVER_CONF.split('\n')[3]!, ''),
    );
  });

  it('drops an agent route that is no longer wanted and reports the agent routes it held', () => {
    // Prepare
    const withStale = mergeOperatorRoutes(OPERATOR_SERVER_CONF, [
      'nats://10.0.0.5:6222',
      'nats://10.0.0.6:6222',
    ]);

    // Act
    const merged = mergeOperatorRoutes(withStale, ['nats://10.0.0.6:6222']);

    // Assess
    expect(operatorAgentRoutes(withStale)).toEqual(['nats://10.0.0.5:6222', 'nats://10.0.0.6:6222']);
    expect(operatorAgentRoutes(merged)).toEqual(['nats://10.0.0.6:6222']);
    expect(merged).toContain('"nats://nats-1.nats-headless:6222", "nats://10.0.0.6:6222"]');
  });

  it.each<[string, string, RegExp]>([
    ['no routes line', 'cluster: {\n  port: 6222\n}\n', /has no "routes: \[\.\.\.\]"/],
    ['routes that are not JSON', 'routes: [nats://a:6222]\n', /are not a JSON array/],
  ])('refuses a server.conf with %s', (_case, text, message) => {
    // Act / Assess
    expect(() => mergeOperatorRoutes(text, [])).toThrow(message);
  });
});

describe('NATS identities', () => {
  it('signs operator → SYS → user, with the reference claims, and a byte-exact creds file', async () => {
    // Act
    const operator = await newOperator('pot-operator');
    const account = await newSystemAccount(operator.seed);
    const user = await newUser('admin-hub', account.seed, ['STANDARD', 'WEBSOCKET']);

    // Assess
    const [o, a, u] = [decode(operator.jwt), decode(account.jwt), decode(user.jwt)];
    expect([o.name, o.sub, o.iss]).toEqual(['pot-operator', operator.publicKey, operator.publicKey]);
    expect([a.name, a.sub, a.iss]).toEqual(['SYS', account.publicKey, operator.publicKey]);
    expect([u.name, u.sub, u.iss]).toEqual(['admin-hub', user.publicKey, account.publicKey]);
    expect(a.nats).toMatchObject({
      type: 'account',
      version: 2,
      limits: {
        conn: -1,
        leaf: -1,
        data: -1,
        exports: -1,
        imports: -1,
        payload: -1,
        subs: -1,
        wildcards: true,
      },
      exports: [
        {
          name: 'account-monitoring-streams',
          subject: '$SYS.ACCOUNT.*.>',
          type: 'stream',
          account_token_position: 3,
        },
        {
          name: 'account-monitoring-services',
          subject: '$SYS.REQ.ACCOUNT.*.*',
          type: 'service',
          response_type: 'Stream',
          account_token_position: 4,
        },
      ],
    });
    expect((a.nats as { limits: Record<string, unknown> }).limits).not.toHaveProperty('mem_storage');
    expect(u.nats).toMatchObject({ type: 'user', allowed_connection_types: ['STANDARD', 'WEBSOCKET'] });
    expect(u).not.toHaveProperty('exp');
    expect(user.creds).toBe(`-----BEGIN NATS USER JWT-----
${user.jwt}
------END NATS USER JWT------

************************* IMPORTANT *************************
NKEY Seed printed below can be used sign and prove identity.
NKEYs are sensitive and should be treated as secrets.

-----BEGIN USER NKEY SEED-----
${user.seed}
------END USER NKEY SEED------
`);
  });
});
