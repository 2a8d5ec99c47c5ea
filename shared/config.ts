import { z } from 'zod';

/**
 * Every environment variable fogbridge reads, parsed once. A bad value fails at start-up with a message
 * naming the variable, not deep inside a request.
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

const positiveInt = z.coerce.number().int().positive();

const schema = z.object({
  CONTROL_PLANE: z.string().default('remote'),
  CONTROLLER_NAMESPACE: z.string().min(1).default('default'),
  CONTROLLER_NAME: z.string().min(1).default('pot'),
  BRIDGE_PORTS_RANGE: portRange.default({ from: 10024, to: 65535 }),
  SERVICE_ANNOTATION_TAG: z.string().min(1).default('service.iofog.org/tag'),
  APP_LABEL: z.string().min(1).default('iofog'),
  DISTRIBUTION: z.enum(['datasance', 'iofog']).default('datasance'),
  COMPONENT_LABEL_DOMAIN: z.string().min(1).optional(),
  TABLE_NAME: z.string().min(1).default('fogbridge'),
  SERVICE_QUEUE_URL: z.string().min(1).optional(),
  FOG_QUEUE_URL: z.string().min(1).optional(),
  AWS_REGION: z.string().min(1).default('us-east-1'),
  HUB_LOCK_LEASE_MS: positiveInt.default(20_000),
  PENDING_GRACE_MS: positiveInt.default(60_000),
  MAX_RECEIVE_COUNT: positiveInt.default(5),
  AUTH_ISSUER: z.string().min(1).optional(),
  AUTH_AUDIENCE: z.string().min(1).optional(),
  AUTH_JWKS_URL: z.url().optional(),
  AUTH_PUBLIC_KEY: z.string().min(1).optional(),
  AUTH_ROLES_CLAIM: z.string().min(1).default('roles'),
  AGENT_TOKEN_MAX_LIFETIME_SECONDS: positiveInt.default(600),
  PROVISIONING_KEY_TTL_SECONDS: positiveInt.default(600),
  KUBECONFIG: z.string().min(1).optional(),
  EKS_CLUSTER_NAME: z.string().min(1).optional(),
  EKS_CLUSTER_ENDPOINT: z.url().optional(),
  EKS_CLUSTER_CA: z.string().min(1).optional(),
  LOADBALANCER_POLL_ATTEMPTS: positiveInt.default(10),
  LOADBALANCER_POLL_INTERVAL_MS: positiveInt.default(2_000),
  LOG_LEVEL: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']).default('INFO'),
});

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
  hubLockLeaseMs: number;
  pendingGraceMs: number;
  /** Receives before SQS moves a message to its DLQ; must match the queues' redrive policy. */
  maxReceiveCount: number;
  logLevel: string;
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
    provisioningKeyTtlSeconds: number;
  };
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const present = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value !== ''),
  );
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = String(issue.path[0]);
    throw new ConfigError(
      `Environment variable ${variable}=${JSON.stringify(env[variable])}: ${issue.message}`,
    );
  }
  const e = parsed.data;
  const componentDomain =
    e.COMPONENT_LABEL_DOMAIN ?? (e.DISTRIBUTION === 'iofog' ? 'iofog.org' : 'datasance.com');
  return {
    controlPlane: e.CONTROL_PLANE.toLowerCase() === 'kubernetes' ? 'kubernetes' : 'remote',
    controllerNamespace: e.CONTROLLER_NAMESPACE,
    controllerName: e.CONTROLLER_NAME,
    bridgePorts: e.BRIDGE_PORTS_RANGE,
    serviceAnnotationTag: e.SERVICE_ANNOTATION_TAG,
    appLabel: e.APP_LABEL,
    componentLabelKey: `${componentDomain}/component`,
    tableName: e.TABLE_NAME,
    serviceQueueUrl: e.SERVICE_QUEUE_URL,
    fogQueueUrl: e.FOG_QUEUE_URL,
    region: e.AWS_REGION,
    hubLockLeaseMs: e.HUB_LOCK_LEASE_MS,
    pendingGraceMs: e.PENDING_GRACE_MS,
    maxReceiveCount: e.MAX_RECEIVE_COUNT,
    logLevel: e.LOG_LEVEL,
    kubernetes: {
      kubeconfig: e.KUBECONFIG,
      eksClusterName: e.EKS_CLUSTER_NAME,
      eksEndpoint: e.EKS_CLUSTER_ENDPOINT,
      eksCertificateAuthority: e.EKS_CLUSTER_CA,
      loadBalancerPollAttempts: e.LOADBALANCER_POLL_ATTEMPTS,
      loadBalancerPollIntervalMs: e.LOADBALANCER_POLL_INTERVAL_MS,
    },
    auth: {
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      jwksUrl: e.AUTH_JWKS_URL,
      publicKey: e.AUTH_PUBLIC_KEY,
      rolesClaim: e.AUTH_ROLES_CLAIM,
      agentTokenMaxLifetimeSeconds: e.AGENT_TOKEN_MAX_LIFETIME_SECONDS,
      provisioningKeyTtlSeconds: e.PROVISIONING_KEY_TTL_SECONDS,
    },
  };
}

let cached: Config | undefined;

/** The process configuration, read from process.env on first use. */
export function config(): Config {
  cached ??= loadConfig(process.env);
  return cached;
}
