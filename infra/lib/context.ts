import type { IConstruct } from 'constructs';
import { z } from 'zod';
import { ConfigError, parseSetting, SETTINGS, type Setting, type SettingName } from '../../shared/config.js';

/**
 * Every deploy-time setting of the CDK app, read from CDK context (`-c key=value` on the command line or
 * `"context"` in cdk.json) and validated here, in one place. A missing or bad value fails synth with a
 * message naming the context key and showing how to pass it.
 */
export class ContextError extends Error {
  override name = 'ContextError';
}

/** Context from the command line arrives as strings; cdk.json may hold real booleans and numbers. */
const flag = z.preprocess((value) => {
  if (typeof value !== 'string') return value;
  const lowered = value.trim().toLowerCase();
  if (lowered === 'true') return true;
  if (lowered === 'false') return false;
  return value;
}, z.boolean());

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** CloudWatch Logs accepts only these retention periods. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

const shape = {
  /** CloudFormation stack name. */
  stackName: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9-]{0,127}$/, 'must be a valid stack name')
    .default('fogbridge')
    .describe('CloudFormation stack name'),
  /** Prefix for the queue names (`<prefix>service-reconcile.fifo`), for two deployments in one region. */
  namePrefix: z
    .string()
    .regex(/^[A-Za-z0-9_-]{0,40}$/, 'may hold only letters, digits, - and _ (40 at most)')
    .default('')
    .describe(
      'prefix for the queue names (`<prefix>service-reconcile.fifo`), for two deployments in one region',
    ),

  // Queues and workers.
  /** Lambda's SQS maximum concurrency of the service worker (2 to 1000). */
  maxConcurrency: int(2, 1000)
    .default(5)
    .describe("Lambda's SQS maximum concurrency of the service worker (2 to 1000)"),
  /**
   * The fog worker's: a fan-out is one message per agent, each its own FIFO group, so a new service for
   * 1,000 agents is 1,000 reconciles of about five store calls; 25 concurrent batches finish it in a few
   * seconds where 5 would take four times as long.
   */
  fogMaxConcurrency: int(2, 1000)
    .default(25)
    .describe(
      "the fog worker's maximum concurrency: a fan-out is one message per agent, each its own FIFO group",
    ),
  /** FIFO event sources take at most 10 records per batch. */
  batchSize: int(1, 10).default(10).describe('records per worker batch (FIFO event sources take at most 10)'),
  workerTimeoutSeconds: int(10, 900).default(60).describe('worker Lambda timeout'),
  workerMemoryMb: int(128, 10_240).default(512).describe('worker Lambda memory'),
  /** HTTP APIs wait at most 30 s for an integration. */
  apiTimeoutSeconds: int(3, 29)
    .default(15)
    .describe('API Lambda timeout (HTTP APIs wait at most 30 s for an integration)'),
  apiMemoryMb: int(128, 10_240).default(512).describe('API Lambda memory'),
  sweepMinutes: int(1, 1440).default(1).describe("period of the sweeper's EventBridge schedule"),
  /** Sized for a burst of 500 creates from 50 clients (the benchmark's S1) without 429s. */
  apiThrottleRateLimit: int(1, 10_000).default(200).describe('API Gateway steady rate limit (requests/s)'),
  apiThrottleBurstLimit: int(1, 5_000).default(500).describe('API Gateway burst limit'),

  // Observability.
  logRetentionDays: z.coerce
    .number()
    .refine((value) => (LOG_RETENTION_DAYS as readonly number[]).includes(value), {
      message: `must be one of ${LOG_RETENTION_DAYS.join(', ')}`,
    })
    .default(30)
    .describe("CloudWatch Logs retention of every function's log group"),
  queueAgeAlarmSeconds: int(60, 1_209_600)
    .default(900)
    .describe('age of the oldest queued message that raises the queue alarms'),
  /** SNS topic the queue alarms notify; none by default. */
  alarmTopicArn: z
    .preprocess(
      (value) => (value === '' ? undefined : value),
      z
        .string()
        .regex(/^arn:aws[a-z-]*:sns:/, 'must be an SNS topic ARN')
        .optional(),
    )
    .optional()
    .describe('SNS topic the queue alarms notify; none by default'),

  // EKS network (controlPlane=kubernetes; the cluster itself is in shared/config.ts).
  eksPrivateEndpoint: flag
    .default(false)
    .describe('the EKS API is reached privately: the workers run in the VPC below'),
  vpcId: z
    .preprocess(
      (value) => (value === '' ? undefined : value),
      z
        .string()
        .regex(/^vpc-([0-9a-f]{8}|[0-9a-f]{17})$/, 'must be a VPC id (vpc-...)')
        .optional(),
    )
    .describe('VPC of the workers (eksPrivateEndpoint)'),
  /** Comma-separated subnet ids. */
  subnetIds: z
    .preprocess(
      (value) =>
        value === '' || value === undefined
          ? undefined
          : Array.isArray(value)
            ? value
            : String(value)
                .split(',')
                .map((id) => id.trim())
                .filter((id) => id !== ''),
      z
        .array(z.string().regex(/^subnet-([0-9a-f]{8}|[0-9a-f]{17})$/, 'must be subnet ids (subnet-...)'))
        .min(1)
        .optional(),
    )
    .describe('comma-separated subnet ids of the workers (eksPrivateEndpoint)'),
  securityGroupId: z
    .preprocess(
      (value) => (value === '' ? undefined : value),
      z
        .string()
        .regex(/^sg-([0-9a-f]{8}|[0-9a-f]{17})$/, 'must be a security group id (sg-...)')
        .optional(),
    )
    .describe('security group of the workers (eksPrivateEndpoint)'),
};

/** The controller settings that are deploy-time settings: the shared list, by their context key. */
const DEPLOY_SETTINGS = (Object.entries(SETTINGS) as [SettingName, Setting][]).flatMap(([env, setting]) =>
  setting.context ? [{ env, key: setting.context.key, setting, context: setting.context }] : [],
);

export type ContextKey = keyof typeof shape | (typeof DEPLOY_SETTINGS)[number]['key'];
export const CONTEXT_KEYS: ContextKey[] = [
  ...(Object.keys(shape) as ContextKey[]),
  ...DEPLOY_SETTINGS.map((d) => d.key),
];

/** The context options that shape the stack itself, with their rules, defaults and descriptions. */
export const DEPLOY_OPTIONS = shape;

const schema = z.object(shape);
type Parsed = z.infer<typeof schema>;

/** The controller settings (shared/config.ts) the stack itself looks at, parsed, by context key. */
interface ControllerSettings {
  controlPlane: 'remote' | 'kubernetes';
  controllerNamespace: string;
  maxReceiveCount: number;
  hubLockLeaseMs: number;
  loadBalancerPollAttempts: number;
  loadBalancerPollIntervalMs: number;
  authIssuer: string;
  authAudience: string;
  authJwksUrl: string;
  eksClusterName?: string;
  eksClusterEndpoint?: string;
  eksClusterCa?: string;
}

export interface FogbridgeSettings extends Parsed, ControllerSettings {
  /** What the functions get: each controller setting under its environment variable, as a string. */
  environment: Partial<Record<SettingName, string>>;
  /** Visibility timeout of the reconcile queues: 6 × the worker timeout, as Lambda recommends. */
  visibilityTimeoutSeconds: number;
  eks:
    | {
        clusterName: string;
        endpoint: string;
        certificateAuthority: string;
        /** Present when the workers run in the VPC to reach a private cluster endpoint. */
        network: { vpcId: string; subnetIds: string[]; securityGroupId: string } | undefined;
      }
    | undefined;
}

/** Example values for the error message, so it shows a working command line. */
const EXAMPLES: Partial<Record<ContextKey, string>> = {
  authIssuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf',
  authAudience: 'fogbridge',
  eksClusterName: 'my-cluster',
  eksClusterEndpoint: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
  eksClusterCa:
    '$(aws eks describe-cluster --name my-cluster --query cluster.certificateAuthority.data --output text)',
  vpcId: 'vpc-0123456789abcdef0',
  subnetIds: 'subnet-0123456789abcdef0,subnet-0fedcba9876543210',
  securityGroupId: 'sg-0123456789abcdef0',
};

function howToPass(key: ContextKey): string {
  return `pass it as "cdk synth -c ${key}=${EXAMPLES[key] ?? '...'}" or set "${key}" under "context" in cdk.json`;
}

function missing(key: ContextKey, why?: string): ContextError {
  return new ContextError(`Context key "${key}" is required${why ? ` ${why}` : ''}: ${howToPass(key)}`);
}

function invalid(key: ContextKey, value: unknown, message: string): ContextError {
  return new ContextError(
    `Context key "${key}"=${JSON.stringify(value)} is invalid: ${message}; ${howToPass(key)}`,
  );
}

/** Reads and validates every context key; throws a ContextError naming the first bad or missing one. */
export function readSettings(scope: IConstruct): FogbridgeSettings {
  const raw: Record<string, unknown> = {};
  for (const key of CONTEXT_KEYS) {
    const value: unknown = scope.node.tryGetContext(key);
    if (value !== undefined) raw[key] = value;
  }
  return parseSettings(raw);
}

/**
 * The controller settings from context: each validated by the same rule as its environment variable
 * (and https where API Gateway or EKS demand it), kept as the string the functions will be given.
 */
function parseControllerSettings(raw: Record<string, unknown>) {
  const values: Record<string, unknown> = {};
  const environment: Partial<Record<SettingName, string>> = {};
  for (const { env, key, setting, context } of DEPLOY_SETTINGS) {
    const given = raw[key];
    const text =
      given === undefined || given === null || given === ''
        ? (context.deployDefault ?? setting.default)
        : String(given);
    if (text === undefined) {
      if (context.required) throw missing(key);
      continue;
    }
    if (context.https && !/^https:\/\//.test(text)) throw invalid(key, given, 'must be an https:// URL');
    try {
      values[key] = parseSetting(env, text);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      throw invalid(key, given, error.message.replace(/^Environment variable [^:]+: /, ''));
    }
    environment[env] = text;
  }
  const issuer = String(values.authIssuer);
  values.authJwksUrl ??= `${issuer.replace(/\/+$/, '')}/.well-known/jwks.json`;
  environment.AUTH_JWKS_URL ??= String(values.authJwksUrl);
  values.controlPlane = String(values.controlPlane).toLowerCase() === 'kubernetes' ? 'kubernetes' : 'remote';
  return { values, environment };
}

export function parseSettings(raw: Record<string, unknown>): FogbridgeSettings {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = String(issue.path[0]) as ContextKey;
    if (raw[key] === undefined) throw missing(key);
    throw invalid(key, raw[key], issue.message);
  }
  const controller = parseControllerSettings(raw);
  const settings = {
    ...parsed.data,
    ...(controller.values as unknown as ControllerSettings),
    environment: controller.environment,
  };

  if (settings.hubLockLeaseMs >= settings.workerTimeoutSeconds * 1000) {
    throw new ContextError(
      `Context key "hubLockLeaseMs"=${settings.hubLockLeaseMs} must be shorter than the worker timeout ` +
        `(workerTimeoutSeconds=${settings.workerTimeoutSeconds}); lower it or raise workerTimeoutSeconds`,
    );
  }
  const pollMs = settings.loadBalancerPollAttempts * settings.loadBalancerPollIntervalMs;
  if (settings.controlPlane === 'kubernetes' && pollMs >= settings.workerTimeoutSeconds * 1000) {
    throw new ContextError(
      `Context keys "loadBalancerPollAttempts" × "loadBalancerPollIntervalMs" (${pollMs} ms) must fit in the ` +
        `worker timeout (workerTimeoutSeconds=${settings.workerTimeoutSeconds})`,
    );
  }
  if (settings.queueAgeAlarmSeconds < settings.workerTimeoutSeconds) {
    throw new ContextError(
      `Context key "queueAgeAlarmSeconds"=${settings.queueAgeAlarmSeconds} must be at least the worker timeout ` +
        `(workerTimeoutSeconds=${settings.workerTimeoutSeconds}), or every slow batch raises the alarm`,
    );
  }

  let eks: FogbridgeSettings['eks'];
  if (settings.controlPlane === 'kubernetes') {
    const why = 'when controlPlane=kubernetes';
    if (!settings.eksClusterName) throw missing('eksClusterName', why);
    if (!settings.eksClusterEndpoint) throw missing('eksClusterEndpoint', why);
    if (!settings.eksClusterCa) throw missing('eksClusterCa', why);
    let network: { vpcId: string; subnetIds: string[]; securityGroupId: string } | undefined;
    if (settings.eksPrivateEndpoint) {
      const vpcWhy = 'when eksPrivateEndpoint=true';
      if (!settings.vpcId) throw missing('vpcId', vpcWhy);
      if (!settings.subnetIds) throw missing('subnetIds', vpcWhy);
      if (!settings.securityGroupId) throw missing('securityGroupId', vpcWhy);
      network = {
        vpcId: settings.vpcId,
        subnetIds: settings.subnetIds,
        securityGroupId: settings.securityGroupId,
      };
    }
    eks = {
      clusterName: settings.eksClusterName,
      endpoint: settings.eksClusterEndpoint,
      certificateAuthority: settings.eksClusterCa,
      network,
    };
  } else if (settings.eksPrivateEndpoint) {
    throw new ContextError(
      'Context key "eksPrivateEndpoint"=true needs controlPlane=kubernetes: pass "-c controlPlane=kubernetes" too',
    );
  }

  return {
    ...settings,
    visibilityTimeoutSeconds: 6 * settings.workerTimeoutSeconds,
    eks,
  };
}
