import { DEFAULT_ROUTER } from '../domain/placement.js';

/**
 * One example body per request the API takes, as a client would send it (the seed's checkout service,
 * its agent and microservice). The OpenAPI document shows them, and a unit test feeds each through the
 * route's own validator, so an example that stops validating fails the build.
 */
export const examples = {
  service: {
    name: 'checkout',
    type: 'microservice',
    resource: 'orders/checkout',
    targetPort: 8080,
    defaultBridge: DEFAULT_ROUTER,
    tags: ['checkout'],
  },
  servicePatch: { tags: ['checkout', 'shop'], targetPort: 8081 },
  serviceYaml: `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: checkout
  tags:
    - checkout
spec:
  type: microservice
  resource: orders/checkout
  targetPort: 8080
  defaultBridge: ${DEFAULT_ROUTER}
`,
  agent: { name: 'fog-a', host: '10.0.0.5', tags: ['service.iofog.org/tag: checkout'] },
  agentPatch: { tags: ['service.iofog.org/tag: checkout', 'service.iofog.org/tag: shop'] },
  application: { name: 'orders', description: 'The orders application' },
  applicationPatch: { isActivated: true },
  /** potctl's Application document (its SDK re-serializes it with sorted keys). */
  applicationYaml: `apiVersion: datasance.com/v3
kind: Application
metadata:
  name: orders
  namespace: ""
spec:
  microservices:
  - agent:
      name: fog-a
    images:
      arm: ghcr.io/example/checkout:1.0-arm64
      x86: ghcr.io/example/checkout:1.0
    name: checkout
`,
  microservice: {
    name: 'checkout',
    application: 'orders',
    agentName: 'fog-a',
    hostNetworkMode: false,
    images: [{ containerImage: 'ghcr.io/example/checkout:1.0', fogTypeId: 1 }],
    registryId: 1,
  },
  microserviceYaml: `apiVersion: datasance.com/v3
kind: Microservice
metadata:
  name: orders/checkout
  namespace: ""
spec:
  agent:
    name: fog-a
  application: orders
  images:
    x86: ghcr.io/example/checkout:1.0
`,
  microservicePatch: { agentName: 'fog-b' },
  /** What Edgelet sends for the Controller container it runs next to the system agent's router. */
  controllerRegister: {
    uuid: 'c0ffee00-0000-4000-8000-000000000001',
    name: 'controller',
    schedule: 0,
    images: [{ containerImage: 'ghcr.io/datasance/controller:3.9.0', archId: 1 }],
    registryId: 1,
    ports: [{ internal: 51121, external: 51121, protocol: 'tcp' }],
    hostNetworkMode: false,
  },
  /** The operator's import of a fleet CA on Kubernetes (remote control planes create them themselves). */
  certificateAuthority: { name: 'router-site-ca', type: 'k8s-secret', secretName: 'router-site-ca' },
  certificate: {
    name: 'orders-api',
    subject: 'orders-api',
    hosts: 'orders.example.com,10.0.0.5',
    expiration: 12,
    ca: { type: 'direct', secretName: 'router-site-ca' },
  },
  certificateYaml: [
    'apiVersion: datasance.com/v3',
    'kind: Certificate',
    'metadata:',
    '  name: orders-api',
    'spec:',
    '  subject: orders-api',
    '  hosts: orders.example.com,10.0.0.5',
    '  expiration: 12',
    '  ca:',
    '    type: direct',
    '    secretName: router-site-ca',
    '',
  ].join('\n'),
  imageRegistry: { url: 'registry.example.com', isPublic: false, username: 'puller', password: 'secret' },
  defaultRouter: {
    host: 'router.example.com',
    messagingPort: 5671,
    interRouterPort: 55671,
    edgeRouterPort: 45671,
  },
  /** What the operator sends once the `nats` Service has an address (zeros already replaced). */
  natsHub: {
    host: 'nats.example.com',
    serverPort: 4222,
    clusterPort: 6222,
    leafPort: 7422,
    mqttPort: 8883,
    httpPort: 8222,
  },
  natsAccountRule: {
    name: 'orders-limits',
    maxConnections: 100,
    maxSubscriptions: 1000,
    memStorage: '256m',
    diskStorage: '1g',
    streams: 10,
    consumer: 100,
    pubAllow: ['orders.>'],
    subAllow: ['orders.>', '_INBOX.>'],
  },
  natsAccountRuleYaml: `apiVersion: datasance.com/v3
kind: NatsAccountRule
metadata:
  name: orders-limits
spec:
  description: Orders may hold 10 streams
  limits:
    conn: 100
    subs: 1000
    mem_storage: 256m
    disk_storage: 1g
    streams: 10
  default_permissions:
    pub:
      allow: ["orders.>"]
`,
  natsUserRule: { name: 'reader', subAllow: ['orders.>', '_INBOX.>'], pubDeny: ['orders.>'] },
  natsUserRuleYaml: `apiVersion: datasance.com/v3
kind: NatsUserRule
metadata:
  name: reader
spec:
  sub:
    allow: ["orders.>", "_INBOX.>"]
  pub:
    deny: ["orders.>"]
`,
  /** potctl sends `expiresIn` in seconds; `24h`, `7d` and `3m` (months) are read too. */
  natsUser: { name: 'dashboard', expiresIn: 86400, natsRule: 'default-user' },
  natsEnsureAccount: { natsRule: 'default-account' },
  /** Edgelet also sends `engine` (and some builds `flavor`): ignored, with a Warning header. */
  provision: { key: 'Y2hhbmdlLW1lLXRvLWEta2V5', type: 1 },
  /** Edgelet sends back the `lastUpdated` string it was shown. */
  acknowledgement: { lastUpdated: '7' },
  agentStatus: {
    daemonStatus: 'RUNNING',
    daemonOperatingDuration: 3600000,
    warningMessage: 'HEALTHY',
    cpuUsage: 3.5,
    microserviceStatus: '[{"id":"fog-a-router","status":"RUNNING","healthStatus":"HEALTHY"}]',
    ipAddress: '10.0.0.5',
    version: '1.1.0',
  },
  agentConfig: { networkInterface: 'eth0', statusFrequency: 10, changeFrequency: 20, logLevel: 'INFO' },
} as const;
