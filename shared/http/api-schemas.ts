import { z } from 'zod';
import { NATS_MODES, ROUTER_MODES } from '../domain/agent-schema.js';
import { K8S_SERVICE_TYPES, PROVISIONING_STATUSES, SERVICE_TYPES } from '../domain/service.js';
import { SITE_ROLES, SITE_STATES } from '../domain/service-sites.js';
import { CHANGE_FLAGS } from '../store/changes.js';

/**
 * The shapes of the response bodies, as zod schemas (the request schemas are the validators' own, in
 * shared/domain). /api/v3/openapi.json is generated from the route records that name them.
 */
export const errorBody = z.object({ name: z.string(), message: z.string() }).strict();

export const sitesSummaryView = z
  .object({
    expected: z.number().int(),
    applied: z.number().int(),
    pending: z.number().int(),
    offline: z.number().int(),
  })
  .strict();

export const siteView = z
  .object({
    agentUuid: z.string(),
    name: z.string().optional(),
    roles: z.array(z.enum(SITE_ROLES)),
    state: z.enum(SITE_STATES),
    since: z.string().nullable(),
    lastSeen: z.string().nullable(),
  })
  .strict();

export const sitesPageView = z.object({ sites: z.array(siteView), next: z.string().optional() }).strict();

export const serviceView = z
  .object({
    name: z.string(),
    type: z.enum(SERVICE_TYPES),
    resource: z.string(),
    targetPort: z.number().int(),
    servicePort: z.number().int().nullable(),
    k8sType: z.enum(K8S_SERVICE_TYPES).nullable(),
    defaultBridge: z.string(),
    bridgePort: z.number().int().nullable(),
    serviceEndpoint: z.string().nullable(),
    tags: z.array(z.string()),
    provisioningStatus: z.enum(PROVISIONING_STATUSES),
    provisioningError: z.string().nullable(),
    sites: sitesSummaryView
      .extend({ notApplied: z.array(siteView).optional() })
      .strict()
      .optional(),
  })
  .strict();

export const agentView = z
  .object({
    uuid: z.string(),
    name: z.string(),
    host: z.string().nullable(),
    tags: z.array(z.string()),
    routerMode: z.enum(ROUTER_MODES),
    messagingPort: z.number().int().nullable(),
    interRouterPort: z.number().int().nullable(),
    edgeRouterPort: z.number().int().nullable(),
    upstreamRouters: z.array(z.string()),
    isSystem: z.boolean(),
    natsMode: z.enum(['none', 'leaf', 'server']),
    natsServerPort: z.number().int(),
    natsClusterPort: z.number().int(),
    natsLeafPort: z.number().int(),
    natsMqttPort: z.number().int(),
    natsHttpPort: z.number().int(),
    jsStorageSize: z.string(),
    jsMemoryStoreSize: z.string(),
    upstreamNatsServers: z.array(z.string()),
    fogTypeId: z.number().int(),
    platformStatus: z
      .object({ phase: z.enum(['pending', 'ready']), message: z.string().nullable() })
      .strict(),
    router: z
      .object({
        configVersion: z.number().int(),
        acknowledgedVersion: z.number().int(),
        rebuildPending: z.boolean(),
        lastSeen: z.string().nullable(),
      })
      .strict()
      .nullable()
      .optional(),
    warnings: z.array(z.string()).optional(),
    lastActive: z.number().int().nullable(),
    daemonStatus: z.string(),
    daemonOperatingDuration: z.number().int().nullable(),
    lastStatusTime: z.number().int().nullable(),
    ipAddress: z.string(),
    ipAddressExternal: z.string(),
    version: z.string(),
    memoryUsage: z.number().nullable(),
    diskUsage: z.number().nullable(),
    cpuUsage: z.number().nullable(),
    warningMessage: z.string(),
    routerStatus: z.object({ status: z.string(), healthStatus: z.string() }).strict().nullable(),
  })
  .strict();

export const createdAgent = z.object({ uuid: z.string(), warnings: z.array(z.string()).optional() }).strict();
export const microserviceView = z
  .object({
    uuid: z.string(),
    name: z.string(),
    application: z.string(),
    iofogUuid: z.string(),
    hostNetworkMode: z.boolean(),
    images: z.array(z.object({ containerImage: z.string(), fogTypeId: z.number().int() }).strict()),
    registryId: z.number().int(),
    config: z.string(),
    natsConfig: z.object({ natsAccess: z.boolean(), natsRule: z.string().nullable() }).strict(),
  })
  .strict();
export const applicationView = z
  .object({
    name: z.string(),
    description: z.string(),
    isActivated: z.boolean(),
    isSystem: z.boolean(),
    createdAt: z.string(),
    natsConfig: z.object({ natsAccess: z.boolean(), natsRule: z.string().nullable() }).strict(),
    microservices: z.array(microserviceView),
  })
  .strict();
export const createdMicroservice = z.object({ uuid: z.string() }).strict();
export const defaultRouterView = z
  .object({
    host: z.string(),
    messagingPort: z.number().int(),
    interRouterPort: z.number().int(),
    edgeRouterPort: z.number().int(),
  })
  .strict();
export const natsHubView = z
  .object({
    host: z.string(),
    serverPort: z.number().int(),
    clusterPort: z.number().int(),
    leafPort: z.number().int(),
    mqttPort: z.number().int(),
    httpPort: z.number().int(),
  })
  .strict();
export const natsBootstrapView = z
  .object({
    operatorJwt: z.string(),
    operatorPublicKey: z.string(),
    operatorSeed: z.string(),
    systemAccountJwt: z.string(),
    systemAccountPublicKey: z.string(),
    sysUserCredsBase64: z.string(),
  })
  .strict();
export const natsOperatorView = z
  .object({ name: z.string(), publicKey: z.string(), jwt: z.string() })
  .strict();
export const natsAccountView = z
  .object({
    id: z.number().int(),
    name: z.string(),
    publicKey: z.string(),
    jwt: z.string(),
    isSystem: z.boolean(),
    isLeafSystem: z.boolean(),
  })
  .strict();
/** A user of an application's account; a bearer user's `jwt` (its password) is empty except in its creation's answer. */
export const natsUserView = z
  .object({
    id: z.number().int(),
    name: z.string(),
    publicKey: z.string(),
    jwt: z.string(),
    isBearer: z.boolean(),
    accountName: z.string().optional(),
    applicationName: z.string().optional(),
    microserviceUuid: z.string().optional(),
  })
  .strict();
export const natsCredsView = z.object({ credsBase64: z.string() }).strict();
/** An account or user rule as stored, with its id and whether it is a system rule. */
export const natsRuleView = z
  .object({ id: z.number().int(), name: z.string(), isSystem: z.boolean() })
  .loose();
export const routerConfigView = z
  .object({
    bridges: z
      .object({
        tcpListeners: z
          .record(z.string(), z.object({ name: z.string(), port: z.string(), address: z.string() }))
          .optional(),
        tcpConnectors: z
          .record(
            z.string(),
            z.object({
              name: z.string(),
              host: z.string(),
              port: z.string(),
              address: z.string(),
              processId: z.string(),
            }),
          )
          .optional(),
      })
      .passthrough()
      .optional(),
  })
  .passthrough();
export const reconcileAccepted = z
  .object({ name: z.string(), provisioningStatus: z.literal('pending') })
  .strict();
export const volumeMountView = z
  .object({
    uuid: z.string(),
    name: z.string(),
    version: z.number(),
    type: z.enum(['secret', 'configMap']),
    data: z.record(z.string(), z.string()),
  })
  .strict();

export const createdCertificateAuthority = z
  .object({
    name: z.string(),
    subject: z.string(),
    type: z.enum(['self-signed', 'k8s-secret', 'direct']),
    valid_from: z.string(),
    valid_to: z.string(),
  })
  .strict();

export const certificateAuthorityView = z
  .object({
    name: z.string(),
    subject: z.string(),
    isCA: z.literal(true),
    validFrom: z.string(),
    validTo: z.string(),
    serialNumber: z.string(),
    data: z.object({ certificate: z.string() }).strict(),
    rotation: z
      .strictObject({ phase: z.enum(['trust', 'reissue']), startedAt: z.string(), phaseSince: z.string() })
      .optional(),
  })
  .strict();

export const certificateAuthorityListView = z
  .object({
    cas: z.array(
      z
        .object({
          name: z.string(),
          subject: z.string(),
          isCA: z.literal(true),
          validFrom: z.string(),
          validTo: z.string(),
          serialNumber: z.string(),
          valid_from: z.string(),
          valid_to: z.string(),
          days_remaining: z.number(),
          is_expired: z.boolean(),
        })
        .strict(),
    ),
  })
  .strict();

/** A CA or certificate as the SDK's CertificateInfo decodes it (`hosts` one comma-separated string). */
const listedCertificate = {
  name: z.string(),
  subject: z.string(),
  hosts: z.string(),
  isCA: z.boolean(),
  validFrom: z.string(),
  validTo: z.string(),
  serialNumber: z.string(),
  daysRemaining: z.number(),
  isExpired: z.boolean(),
  caName: z.string().nullable(),
};

export const certificateListView = z
  .object({ certificates: z.array(z.strictObject(listedCertificate)) })
  .strict();

export const certificateInfoView = z.strictObject({
  ...listedCertificate,
  certificateChain: z.array(z.strictObject({ name: z.string(), subject: z.string() })),
  data: z.strictObject({ certificate: z.string() }),
});

export const expiringCertificateListView = z
  .object({
    certificates: z.array(
      z.strictObject({
        ...listedCertificate,
        is_ca: z.boolean(),
        valid_from: z.string(),
        valid_to: z.string(),
        days_remaining: z.number(),
        ca_name: z.string().nullable(),
      }),
    ),
  })
  .strict();

const issuedCertificate = {
  name: z.string(),
  subject: z.string(),
  hosts: z.string(),
  validFrom: z.string(),
  validTo: z.string(),
  caName: z.string().nullable(),
  valid_from: z.string(),
  valid_to: z.string(),
  ca_name: z.string().nullable(),
};

export const createdCertificate = z.strictObject(issuedCertificate);

export const renewedCertificate = z.strictObject({ ...issuedCertificate, renewed: z.literal(true) });

export const rotatedCertificateAuthority = z.strictObject({
  name: z.string(),
  subject: z.string(),
  validFrom: z.string(),
  validTo: z.string(),
  serialNumber: z.string(),
  phase: z.literal('trust'),
});

export const agentReconcileAccepted = z
  .object({ uuid: z.string(), reconcile: z.literal('requested') })
  .strict();
export const statusView = z
  .object({
    status: z.literal('online'),
    timestamp: z.number(),
    uptimeSec: z.number(),
    versions: z.object({ controller: z.string(), ecnViewer: z.string(), fogbridge: z.string() }).strict(),
  })
  .strict();
export const provisioningKeyView = z.object({ key: z.string(), expirationTime: z.number() }).strict();
export const provisionedView = z
  .object({ uuid: z.string(), privateKey: z.string(), namespace: z.string() })
  .strict();
export const changesView = z
  .object({
    ...Object.fromEntries(CHANGE_FLAGS.map((flag) => [flag, z.boolean()])),
    lastUpdated: z.string(),
  })
  .strict();
export const agentMicroserviceView = z
  .object({
    uuid: z.string(),
    name: z.string(),
    application: z.string(),
    imageId: z.string(),
    registryId: z.number().int(),
    config: z.string(),
    rebuild: z.boolean(),
    hostNetworkMode: z.boolean(),
    isPrivileged: z.boolean(),
    portMappings: z.array(
      z
        .object({ internal: z.number().int(), external: z.number().int(), protocol: z.enum(['tcp', 'udp']) })
        .strict(),
    ),
    volumeMappings: z.array(z.unknown()),
    env: z.array(z.object({ key: z.string(), value: z.string() }).strict()),
    capAdd: z.array(z.string()),
    isRouter: z.boolean(),
    isNats: z.boolean(),
    isController: z.boolean().optional(),
  })
  .strict();
export const agentRegistryView = z
  .object({
    id: z.number().int(),
    url: z.string(),
    isPublic: z.boolean(),
    username: z.string(),
    password: z.string(),
    userEmail: z.string(),
  })
  .strict();

export const imageRegistryView = z
  .object({
    id: z.number().int(),
    url: z.string(),
    isPublic: z.boolean(),
    username: z.string(),
    userEmail: z.string(),
  })
  .strict();

const topologySiteView = z
  .object({
    key: z.string(),
    kind: z.enum(['agent', 'default-router']),
    name: z.string(),
    host: z.string().nullable(),
    routerMode: z.enum(ROUTER_MODES),
    natsMode: z.enum(NATS_MODES).nullable(),
    hub: z.boolean(),
    online: z.boolean().nullable(),
    lastSeen: z.string().nullable(),
    state: z.enum(SITE_STATES),
    since: z.string().nullable(),
    configVersion: z.number().int().nullable().optional(),
    acknowledgedVersion: z.number().int().nullable().optional(),
    rebuildPending: z.boolean().optional(),
    rollout: z
      .strictObject({
        upstream: z.string(),
        upstreamName: z.string(),
        reason: z.string(),
        since: z.string(),
        toldAt: z.string().optional(),
      })
      .optional(),
    caRotation: z
      .array(
        z.strictObject({
          certificate: z.string(),
          ca: z.string(),
          signedBy: z.enum(['new', 'old']),
          trusts: z.array(z.enum(['new', 'old'])),
        }),
      )
      .optional(),
  })
  .strict();

const routerLinkView = z
  .object({
    kind: z.literal('router'),
    from: z.string(),
    to: z.string(),
    role: z.enum(['edge', 'inter-router']),
    host: z.string(),
    port: z.number().int(),
    held: z.boolean().nullable(),
    reason: z.string().optional(),
  })
  .strict();

const natsLinkView = z
  .object({
    kind: z.enum(['nats-leaf', 'nats-route']),
    from: z.string(),
    to: z.string(),
    host: z.string(),
    port: z.number().int(),
  })
  .strict();

const topologyServiceView = z
  .object({
    name: z.string(),
    type: z.enum(SERVICE_TYPES),
    bridgePort: z.number().int().nullable(),
    status: z.enum(PROVISIONING_STATUSES),
    connector: z.string().nullable(),
    hub: z.string().nullable(),
    sites: sitesSummaryView,
  })
  .strict();

const placementView = z
  .object({ site: z.string(), roles: z.array(z.enum(SITE_ROLES)), state: z.enum(SITE_STATES) })
  .strict();

const topologyCountsView = z
  .object({
    sites: z.number().int(),
    byRouterMode: z.record(z.enum(ROUTER_MODES), z.number().int()),
    byState: z.record(z.enum(SITE_STATES), z.number().int()),
    online: z.number().int(),
    silent: z.number().int(),
    routerLinks: z.number().int(),
    natsLinks: z.number().int(),
  })
  .strict();

const topologyNatsHubView = z
  .object({ host: z.string(), leafPort: z.number().int(), agentUuid: z.string().nullable() })
  .strict()
  .nullable();

const siteGroupsView = z
  .object({
    groups: z.array(
      z
        .object({
          value: z.string(),
          label: z.string(),
          count: z.number().int(),
          unhealthy: z.number().int(),
        })
        .strict(),
    ),
    more: z.number().int(),
  })
  .strict();

/** GET /api/v3/topology: the full form (a page of sites) or, for a large fleet, the summary form. */
export const topologyView = z.discriminatedUnion('form', [
  z
    .object({
      form: z.literal('full'),
      counts: topologyCountsView,
      sites: z.array(topologySiteView),
      links: z.array(z.union([routerLinkView, natsLinkView])),
      natsHub: topologyNatsHubView,
      services: z.array(topologyServiceView).optional(),
      placements: z.array(placementView).optional(),
      next: z.string().optional(),
    })
    .strict(),
  z
    .object({
      form: z.literal('summary'),
      counts: topologyCountsView,
      hub: z
        .object({ sites: z.array(topologySiteView), links: z.array(routerLinkView), more: z.number().int() })
        .strict(),
      unhealthy: z.object({ sites: z.array(topologySiteView), more: z.number().int() }).strict(),
      groups: z
        .object({ state: siteGroupsView, upstream: siteGroupsView, tag: siteGroupsView })
        .strict()
        .describe(
          "The sites grouped by state, by the router they dial (`none`: no router) and by tag; each group's `value` is the `state`, `upstream` or `tag` filter that lists exactly its sites",
        ),
      services: z
        .object({
          count: z.number().int(),
          byStatus: z.record(z.string(), z.number().int()),
          notReady: z.array(topologyServiceView),
        })
        .strict(),
      natsHub: topologyNatsHubView,
      placements: z.array(placementView).optional(),
    })
    .strict(),
]);
