import { z } from 'zod';
import { type AddressDenyList, DEFAULT_DENIED_ADDRESSES, parseAddressDenyList } from './domain/hosts.js';

/**
 * Every environment variable fogbridge reads, in one list, parsed once. A bad value fails at start-up with
 * a message naming the variable, not deep inside a request. The CDK app reads the deploy-time ones from
 * CDK context by the `context` key given here and hands them to the functions under the same variable,
 * so the two can never disagree on a name, a default or a rule.
 */
const portRange = z
  .string()
  .regex(/^\d{1,5}-\d{1,5}$/, 'must look like 10024-65535')
  .transform((value) => {
    const [from, to] = value.split('-').map(Number) as [number, number];
    return { from, to };
  })
  .refine(
    ({ from, to }) => from >= 1 && to <= 65535 && from <= to,
    'must be an ascending range within 1-65535',
  );

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const text = z.string().min(1);

/**
 * Which functions receive a setting in AWS: `controller` every function that touches the table,
 * `auth` the API functions, `kubernetes` the workers that call the cluster, `local` none (the embedded
 * runtime and local tools only).
 */
export type SettingScope = 'controller' | 'auth' | 'kubernetes' | 'local';

export interface Setting {
  schema: z.ZodType;
  /** Used when the variable is unset (a string, parsed like a set value). */
  default?: string;
  scope: SettingScope;
  /**
   * The CDK context key for a deploy-time setting; `https` adds the rule API Gateway imposes;
   * `deployDefault` is what a deployment uses when the context does not say (else `default`).
   */
  context?: { key: string; https?: boolean; required?: boolean; deployDefault?: string };
  doc: string;
}

export const SETTINGS = {
  CONTROL_PLANE: {
    schema: z.string(),
    default: 'remote',
    scope: 'controller',
    context: { key: 'controlPlane' },
    doc: '`kubernetes`, or anything else for a remote control plane',
  },
  CONTROLLER_NAMESPACE: {
    schema: text,
    default: 'default',
    scope: 'controller',
    context: { key: 'controllerNamespace' },
    doc: 'namespace of the hub ConfigMap and the Kubernetes Services',
  },
  CONTROLLER_NAME: {
    schema: text,
    default: 'pot',
    scope: 'controller',
    context: { key: 'controllerName' },
    doc: '`app.kubernetes.io/instance` label',
  },
  BRIDGE_PORTS_RANGE: {
    schema: portRange,
    default: '10024-65535',
    scope: 'controller',
    context: { key: 'bridgePortsRange' },
    doc: 'bridge port pool',
  },
  SERVICE_ANNOTATION_TAG: {
    schema: text,
    default: 'service.iofog.org/tag',
    scope: 'controller',
    context: { key: 'serviceAnnotationTag' },
    doc: 'distribution tag prefix',
  },
  APP_LABEL: {
    schema: text,
    default: 'iofog',
    scope: 'controller',
    context: { key: 'appLabel' },
    doc: '`app.kubernetes.io/name` label',
  },
  DISTRIBUTION: {
    schema: z.enum(['datasance', 'iofog']),
    default: 'datasance',
    scope: 'controller',
    context: { key: 'distribution' },
    doc: '`datasance` or `iofog`: router label domain',
  },
  COMPONENT_LABEL_DOMAIN: {
    schema: text,
    scope: 'controller',
    context: { key: 'componentLabelDomain' },
    doc: 'overrides the router label domain',
  },
  HUB_LOCK_LEASE_MS: {
    schema: int(1000, 900_000),
    default: '20000',
    scope: 'controller',
    context: { key: 'hubLockLeaseMs' },
    doc: 'hub lock lease',
  },
  PENDING_GRACE_MS: {
    schema: int(1000, 86_400_000),
    default: '60000',
    scope: 'controller',
    context: { key: 'pendingGraceMs' },
    doc: 'age after which the sweeper re-drives lagging work',
  },
  AGENT_OFFLINE_AFTER_SECONDS: {
    schema: int(1, 86_400),
    default: '60',
    scope: 'controller',
    context: { key: 'agentOfflineAfterSeconds' },
    doc: 'an agent not heard from (its status reports, every 10 s from Edgelet) for this long counts as offline; the default is three of its 20 s change polls',
  },
  CERTIFICATE_RENEW_BEFORE_DAYS: {
    schema: int(1, 365),
    default: '30',
    scope: 'controller',
    context: { key: 'certificateRenewBeforeDays' },
    doc: 'the sweeper renews a certificate fogbridge issued this many days before it expires, and rotates a CA it made itself',
  },
  LINK_ROLLOUT_WAIT_SECONDS: {
    schema: int(0, 3_600),
    default: '60',
    scope: 'controller',
    context: { key: 'linkRolloutWaitSeconds' },
    doc: 'how long an agent that dials another waits, before it is told to rebuild anyway, for the listening agent to acknowledge the certificate and listeners the new link needs',
  },
  DRIFT_CHECK_ROUTERS: {
    schema: int(0, 10_000),
    default: '250',
    scope: 'controller',
    context: { key: 'driftCheckRouters' },
    doc: 'routers each sweep recomputes and compares with their config (0: no drift check)',
  },
  MAX_RECEIVE_COUNT: {
    schema: int(1, 1000),
    default: '5',
    scope: 'controller',
    context: { key: 'maxReceiveCount' },
    doc: 'deliveries before a message goes to its DLQ (the service is marked `failed` on the last)',
  },
  LOG_LEVEL: {
    schema: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']),
    default: 'INFO',
    scope: 'controller',
    context: { key: 'logLevel' },
    doc: 'log level (`POWERTOOLS_LOG_LEVEL` is read when this is unset)',
  },
  METRICS_NAMESPACE: {
    schema: z
      .string()
      .regex(
        /^$|^[A-Za-z0-9._#:/-]{1,255}$/,
        'must be a CloudWatch namespace (letters, digits, . _ - / # :)',
      ),
    default: '',
    scope: 'controller',
    context: { key: 'metricsNamespace', deployDefault: 'fogbridge' },
    doc: "CloudWatch namespace each operation's calls, capacity units, messages and duration are published under (embedded metric format); empty: none are published",
  },
  TABLE_NAME: {
    schema: text,
    default: 'fogbridge',
    scope: 'controller',
    doc: 'DynamoDB table (set by the stack in AWS)',
  },
  SERVICE_QUEUE_URL: {
    schema: text,
    scope: 'controller',
    doc: 'service reconcile queue (set by the stack in AWS, by the runtime locally)',
  },
  FOG_QUEUE_URL: {
    schema: text,
    scope: 'controller',
    doc: 'fog reconcile queue (set by the stack in AWS, by the runtime locally)',
  },
  AWS_REGION: {
    schema: text,
    default: 'us-east-1',
    scope: 'local',
    doc: 'AWS region (set by Lambda in AWS)',
  },
  AWS_ENDPOINT_URL: {
    schema: z.url(),
    scope: 'local',
    doc: 'one endpoint for every AWS service (LocalStack)',
  },
  AWS_ENDPOINT_URL_DYNAMODB: { schema: z.url(), scope: 'local', doc: 'DynamoDB endpoint override' },
  AWS_ENDPOINT_URL_SQS: { schema: z.url(), scope: 'local', doc: 'SQS endpoint override' },
  AWS_ENDPOINT_URL_KMS: { schema: z.url(), scope: 'local', doc: 'KMS endpoint override' },
  SECRETS_KMS_KEY_ID: {
    schema: text,
    scope: 'controller',
    doc: 'KMS key that seals private keys in the table (set by the stack in AWS; the local runtime uses a key file)',
  },
  AUTH_ISSUER: {
    schema: text,
    scope: 'auth',
    context: { key: 'authIssuer', https: true, required: true },
    doc: 'issuer of user tokens',
  },
  AUTH_AUDIENCE: {
    schema: text,
    scope: 'auth',
    context: { key: 'authAudience', required: true },
    doc: 'audience of user tokens',
  },
  AUTH_JWKS_URL: {
    schema: z.url(),
    scope: 'auth',
    context: { key: 'authJwksUrl', https: true },
    doc: 'JWKS endpoint of the identity provider (in AWS: `<authIssuer>/.well-known/jwks.json` unless set)',
  },
  AUTH_PUBLIC_KEY: {
    schema: text,
    scope: 'auth',
    context: { key: 'authPublicKey' },
    doc: 'a public key (PEM, a JWK, or a JWK set as JSON) instead of a JWKS endpoint',
  },
  AUTH_ROLES_CLAIM: {
    schema: text,
    default: 'roles',
    scope: 'auth',
    context: { key: 'authRolesClaim' },
    doc: 'claim holding the roles (an array or a space-separated string)',
  },
  AGENT_TOKEN_MAX_LIFETIME_SECONDS: {
    schema: int(1, 86_400),
    default: '600',
    scope: 'auth',
    context: { key: 'agentTokenMaxLifetimeSeconds' },
    doc: 'longest agent token accepted (`exp − iat`)',
  },
  USER_TOKEN_MAX_LIFETIME_SECONDS: {
    schema: int(60, 31_536_000),
    default: '604800',
    scope: 'auth',
    context: { key: 'userTokenMaxLifetimeSeconds' },
    doc: 'longest user token accepted (`exp − iat`, or `exp − now` without `iat`)',
  },
  PROVISIONING_KEY_TTL_SECONDS: {
    schema: int(1, 86_400),
    default: '600',
    scope: 'auth',
    context: { key: 'provisioningKeyTtlSeconds' },
    doc: 'life of a provisioning key',
  },
  KUBECONFIG: {
    schema: text,
    scope: 'local',
    doc: 'kubeconfig file of the cluster (local runs and tests)',
  },
  EKS_CLUSTER_NAME: {
    schema: text,
    scope: 'kubernetes',
    context: { key: 'eksClusterName' },
    doc: 'EKS cluster the workers call',
  },
  EKS_CLUSTER_ENDPOINT: {
    schema: z.url(),
    scope: 'kubernetes',
    context: { key: 'eksClusterEndpoint', https: true },
    doc: 'its API endpoint',
  },
  EKS_CLUSTER_CA: {
    schema: text,
    scope: 'kubernetes',
    context: { key: 'eksClusterCa' },
    doc: 'base64 PEM of its CA, as `aws eks describe-cluster` returns it',
  },
  LOADBALANCER_POLL_ATTEMPTS: {
    schema: int(1, 100),
    default: '10',
    scope: 'kubernetes',
    context: { key: 'loadBalancerPollAttempts' },
    doc: 'LoadBalancer ingress checks',
  },
  LOADBALANCER_POLL_INTERVAL_MS: {
    schema: int(100, 60_000),
    default: '2000',
    scope: 'kubernetes',
    context: { key: 'loadBalancerPollIntervalMs' },
    doc: 'time between them',
  },
  DENIED_RESOURCE_ADDRESSES: {
    schema: z.string().transform((value, context) => {
      try {
        return parseAddressDenyList(value);
      } catch (error) {
        context.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
    default: DEFAULT_DENIED_ADDRESSES,
    scope: 'controller',
    context: { key: 'deniedResourceAddresses' },
    doc: 'address ranges (CIDR) and host names an `external` or `k8s` resource may not name; `none` allows all',
  },
  ROUTER_IMAGE: {
    schema: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,511}$/, 'must be a container image reference'),
    default: 'ghcr.io/datasance/router:3.9.0',
    scope: 'controller',
    context: { key: 'routerImage' },
    doc: "image of every agent's router microservice (a multi-architecture image)",
  },
  ROUTER_REGISTRY_ID: {
    schema: int(1, 1_000_000),
    default: '1',
    scope: 'controller',
    context: { key: 'routerRegistryId' },
    doc: 'registry the router image is pulled from (1: Docker Hub, public)',
  },
  NATS_IMAGE: {
    schema: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,511}$/, 'must be a container image reference'),
    default: 'ghcr.io/datasance/nats:2.15.0',
    scope: 'controller',
    context: { key: 'natsImage' },
    doc: "image of every agent's NATS microservice (a multi-architecture image)",
  },
  NATS_REGISTRY_ID: {
    schema: int(1, 1_000_000),
    default: '1',
    scope: 'controller',
    context: { key: 'natsRegistryId' },
    doc: 'registry the NATS image is pulled from (1: Docker Hub, public)',
  },
  HOST: { schema: text, default: '127.0.0.1', scope: 'local', doc: 'local runtime listen address' },
  PORT: { schema: int(0, 65535), default: '51121', scope: 'local', doc: 'its port (0 picks a free port)' },
  FOGBRIDGE_DATA_DIR: {
    schema: text,
    default: '.fogbridge',
    scope: 'local',
    doc: 'local runtime data (embedded DynamoDB files, signing key, admin token)',
  },
  SWEEP_INTERVAL_MS: {
    schema: int(100, 86_400_000),
    default: '30000',
    scope: 'local',
    doc: 'local runtime sweeper period (EventBridge schedules it in AWS)',
  },
} satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;
type Parsed = { [K in SettingName]: z.output<(typeof SETTINGS)[K]['schema']> | undefined };

export type Config = {
  controlPlane: 'kubernetes' | 'remote';
  controllerNamespace: string;
  controllerName: string;
  bridgePorts: { from: number; to: number };
  serviceAnnotationTag: string;
  appLabel: string;
  componentLabelKey: string;
  tableName: string;
  serviceQueueUrl: string | undefined;
  fogQueueUrl: string | undefined;
  region: string;
  /** Endpoint overrides (the embedded runtime, LocalStack, emulators); AWS itself when unset. */
  endpoints: { dynamodb: string | undefined; sqs: string | undefined; kms: string | undefined };
  /** What seals private keys at rest: a KMS key (AWS), or the local runtime's key (32 bytes). */
  secrets: { kmsKeyId: string | undefined; localKey: Buffer | undefined };
  /** Fixed credentials for an emulator; the default credential chain when unset. */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  hubLockLeaseMs: number;
  pendingGraceMs: number;
  /** How long an agent may go unheard before its sites count as offline rather than pending. */
  agentOfflineAfterMs: number;
  /** How long before its notAfter the sweeper renews a certificate (and rotates a CA fogbridge made). */
  certificateRenewBeforeDays: number;
  /** How long a dialling router's rebuild waits for the listening agent to acknowledge its side. */
  linkRolloutWaitMs: number;
  /** Routers the periodic sweep checks for drift, in a window that rotates over every agent. */
  driftCheckRouters: number;
  /** Receives before SQS moves a message to its DLQ; must match the queues' redrive policy. */
  maxReceiveCount: number;
  logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  /** Where a service's `resource` may not point the hub router (metadata endpoints by default). */
  deniedResourceAddresses: AddressDenyList;
  /** The router system microservice every agent with a router runs. */
  router: { image: string; registryId: number };
  nats: { image: string; registryId: number };
  /** Where Lambda publishes its operation metrics; none when undefined. */
  metricsNamespace: string | undefined;
  kubernetes: {
    /** A kubeconfig file (local runs and tests); otherwise the EKS settings below. */
    kubeconfig: string | undefined;
    eksClusterName: string | undefined;
    eksEndpoint: string | undefined;
    /** Base64 PEM of the cluster CA, as `aws eks describe-cluster` returns it. */
    eksCertificateAuthority: string | undefined;
    loadBalancerPollAttempts: number;
    loadBalancerPollIntervalMs: number;
  };
  auth: {
    issuer: string | undefined;
    audience: string | undefined;
    /** JWKS endpoint of the identity provider (Cognito, Auth0, Keycloak, ...). */
    jwksUrl: string | undefined;
    /** A public key (PEM, a JWK, or a JWK set as JSON) when there is no JWKS endpoint. */
    publicKey: string | undefined;
    /** Claim holding the roles: an array or a space-separated string containing admin and/or viewer. */
    rolesClaim: string;
    agentTokenMaxLifetimeSeconds: number;
    userTokenMaxLifetimeSeconds: number;
    provisioningKeyTtlSeconds: number;
  };
  /** The embedded runtime (`npm start`) and the local tools. */
  local: { host: string; port: number; dataDir: string; sweepIntervalMs: number };
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** One setting's value: the variable if set (not empty), else the default; undefined when neither. */
export function parseSetting<N extends string = SettingName>(
  name: N,
  raw: string | undefined,
  setting: Setting = SETTINGS[name as unknown as SettingName],
): unknown {
  const value = raw === undefined || raw === '' ? setting.default : raw;
  if (value === undefined) return undefined;
  const parsed = setting.schema.safeParse(value);
  if (!parsed.success) {
    throw new ConfigError(
      `Environment variable ${name}=${JSON.stringify(raw ?? value)}: ${parsed.error.issues[0]!.message}`,
    );
  }
  return parsed.data;
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const withFallbacks: Record<string, string | undefined> = {
    ...env,
    LOG_LEVEL: env.LOG_LEVEL || env.POWERTOOLS_LOG_LEVEL,
  };
  const e = Object.fromEntries(
    (Object.keys(SETTINGS) as SettingName[]).map((name) => [name, parseSetting(name, withFallbacks[name])]),
  ) as Parsed;
  const componentDomain =
    e.COMPONENT_LABEL_DOMAIN ?? (e.DISTRIBUTION === 'iofog' ? 'iofog.org' : 'datasance.com');
  return {
    controlPlane: e.CONTROL_PLANE!.toLowerCase() === 'kubernetes' ? 'kubernetes' : 'remote',
    controllerNamespace: e.CONTROLLER_NAMESPACE!,
    controllerName: e.CONTROLLER_NAME!,
    bridgePorts: e.BRIDGE_PORTS_RANGE!,
    serviceAnnotationTag: e.SERVICE_ANNOTATION_TAG!,
    appLabel: e.APP_LABEL!,
    componentLabelKey: `${componentDomain}/component`,
    tableName: e.TABLE_NAME!,
    serviceQueueUrl: e.SERVICE_QUEUE_URL,
    fogQueueUrl: e.FOG_QUEUE_URL,
    region: e.AWS_REGION!,
    endpoints: {
      dynamodb: e.AWS_ENDPOINT_URL_DYNAMODB ?? e.AWS_ENDPOINT_URL,
      sqs: e.AWS_ENDPOINT_URL_SQS ?? e.AWS_ENDPOINT_URL,
      kms: e.AWS_ENDPOINT_URL_KMS ?? e.AWS_ENDPOINT_URL,
    },
    secrets: { kmsKeyId: e.SECRETS_KMS_KEY_ID, localKey: undefined },
    credentials: undefined,
    hubLockLeaseMs: e.HUB_LOCK_LEASE_MS!,
    pendingGraceMs: e.PENDING_GRACE_MS!,
    agentOfflineAfterMs: e.AGENT_OFFLINE_AFTER_SECONDS! * 1000,
    certificateRenewBeforeDays: e.CERTIFICATE_RENEW_BEFORE_DAYS!,
    linkRolloutWaitMs: e.LINK_ROLLOUT_WAIT_SECONDS! * 1000,
    driftCheckRouters: e.DRIFT_CHECK_ROUTERS!,
    maxReceiveCount: e.MAX_RECEIVE_COUNT!,
    logLevel: e.LOG_LEVEL!,
    deniedResourceAddresses: e.DENIED_RESOURCE_ADDRESSES!,
    router: { image: e.ROUTER_IMAGE!, registryId: e.ROUTER_REGISTRY_ID! },
    nats: { image: e.NATS_IMAGE!, registryId: e.NATS_REGISTRY_ID! },
    metricsNamespace: e.METRICS_NAMESPACE || undefined,
    kubernetes: {
      kubeconfig: e.KUBECONFIG,
      eksClusterName: e.EKS_CLUSTER_NAME,
      eksEndpoint: e.EKS_CLUSTER_ENDPOINT,
      eksCertificateAuthority: e.EKS_CLUSTER_CA,
      loadBalancerPollAttempts: e.LOADBALANCER_POLL_ATTEMPTS!,
      loadBalancerPollIntervalMs: e.LOADBALANCER_POLL_INTERVAL_MS!,
    },
    auth: {
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      jwksUrl: e.AUTH_JWKS_URL,
      publicKey: e.AUTH_PUBLIC_KEY,
      rolesClaim: e.AUTH_ROLES_CLAIM!,
      agentTokenMaxLifetimeSeconds: e.AGENT_TOKEN_MAX_LIFETIME_SECONDS!,
      userTokenMaxLifetimeSeconds: e.USER_TOKEN_MAX_LIFETIME_SECONDS!,
      provisioningKeyTtlSeconds: e.PROVISIONING_KEY_TTL_SECONDS!,
    },
    local: {
      host: e.HOST!,
      port: e.PORT!,
      dataDir: e.FOGBRIDGE_DATA_DIR!,
      sweepIntervalMs: e.SWEEP_INTERVAL_MS!,
    },
  };
}

let fromProcess: Config | undefined;

/**
 * The configuration of this process, read from its environment on first use: what a Lambda function
 * runs with. The embedded runtime builds its own configuration and passes it to the handlers.
 */
export function processConfig(): Config {
  fromProcess ??= loadConfig(process.env);
  return fromProcess;
}

/**
 * The AWS SDK warns on every client when Node is older than it prefers; fogbridge runs on Node 20 locally
 * on purpose (Lambda runs 22). Called by the local entry points before any client exists.
 */
export function quietSdkVersionWarning(): void {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
}
