import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as kms from 'aws-cdk-lib/aws-kms';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { SETTINGS, type SettingName, type SettingScope } from '../../shared/config.js';
import { createTableInput } from '../../shared/store/table.js';
import { QUEUE_NAMES } from '../local/queues.js';
import type { FogbridgeSettings } from './context.js';
import { EksAccess } from './eks-access.js';
import { FogbridgeFunction } from './fogbridge-function.js';
import { pageBuildCommands } from './page-build.js';
import { ReconcileQueue } from './reconcile-queue.js';
import {
  API_ENTRIES,
  API_ROUTES,
  type ApiFunctionName,
  WORKER_ENTRIES,
  type WorkerFunctionName,
} from './routes.js';

export interface FogbridgeStackProps extends StackProps {
  settings: FogbridgeSettings;
}

type QueueKey = 'service' | 'fog';

/** What each function may touch. Queue sends also decide which queue URLs the function is told. */
interface Needs {
  table: boolean;
  sends: QueueKey[];
  /** User and agent token settings. */
  auth: boolean;
  /** Seals or opens private keys with the stack's KMS key. */
  secrets?: boolean;
  /** Calls the Kubernetes API (controlPlane=kubernetes): EKS settings, access entry, VPC if private. */
  kubernetes?: boolean;
  /** Serves the network page: its files are built beside the bundle. */
  page?: boolean;
}

const API_NEEDS: Record<ApiFunctionName, Needs> = {
  // Every mutating API module may re-drive services and routers (requeue on router, agent or
  // microservice changes), so it may send to both queues; nothing else.
  services: { table: true, sends: ['service', 'fog'], auth: true },
  agents: { table: true, sends: ['service', 'fog'], auth: true },
  registry: { table: true, sends: ['service', 'fog'], auth: true },
  // Registries only raise agents' change flags (in the table).
  registries: { table: true, sends: [], auth: true },
  // Seals CA keys, reads the operator's CA Secrets on Kubernetes, re-drives every agent after an import.
  certificates: { table: true, sends: ['fog'], auth: true, secrets: true, kubernetes: true },
  router: { table: true, sends: ['service', 'fog'], auth: true },
  // Opens and seals the NATS seeds (bootstrap), re-drives NATS agents when the hub moves.
  nats: { table: true, sends: ['fog'], auth: true, secrets: true },
  // The Edgelet's routes read and acknowledge; provisioning writes a key; volume mounts open the agent's
  // own certificate keys. No queue.
  'agent-protocol': { table: true, sends: [], auth: true, secrets: true },
  // Liveness and the OpenAPI document: no data, no token.
  status: { table: false, sends: [], auth: false },
  openapi: { table: false, sends: [], auth: false },
  // Reads only.
  topology: { table: true, sends: [], auth: true },
  // The page's static files: no data, no token (the page asks for one and calls the API with it).
  ui: { table: false, sends: [], auth: false, page: true },
};

const WORKER_NEEDS: Record<WorkerFunctionName, Needs & { kubernetes: boolean }> = {
  // Fans out router reconciles to the fog queue; consumes its own queue through the event source.
  'service-reconcile': { table: true, sends: ['fog'], auth: false, kubernetes: true },
  // Writes agent router configs and, for the default router on Kubernetes, the hub ConfigMap; issues
  // agents' certificates (signs with the fleet CAs' keys, seals the new ones).
  'fog-reconcile': { table: true, sends: [], auth: false, kubernetes: true, secrets: true },
  sweeper: { table: true, sends: ['service', 'fog'], auth: false, kubernetes: false },
};

const ATTRIBUTE_TYPES: Record<string, dynamodb.AttributeType> = {
  S: dynamodb.AttributeType.STRING,
  N: dynamodb.AttributeType.NUMBER,
  B: dynamodb.AttributeType.BINARY,
};

/**
 * fogbridge in AWS: an HTTP API in front of one Lambda function per API module, one DynamoDB table,
 * two SQS FIFO reconcile queues with FIFO dead-letter queues, the two reconcile workers on those queues,
 * the sweeper on an EventBridge schedule, alarms on the queues, and (controlPlane=kubernetes) EKS access
 * entries for the workers.
 */
export class FogbridgeStack extends Stack {
  readonly table: dynamodb.Table;
  readonly queues: Record<QueueKey, ReconcileQueue>;
  readonly api: apigw.HttpApi;
  readonly apiStage: apigw.HttpStage;
  readonly apiFunctions: Record<ApiFunctionName, FogbridgeFunction>;
  readonly workers: Record<WorkerFunctionName, FogbridgeFunction>;
  readonly eksAccess: EksAccess | undefined;
  readonly secretsKey: kms.Key;

  constructor(scope: Construct, id: string, props: FogbridgeStackProps) {
    super(scope, id, props);
    const settings = props.settings;
    const logRetention = settings.logRetentionDays as logs.RetentionDays;

    this.table = this.createTable();
    this.secretsKey = new kms.Key(this, 'SecretsKey', {
      description: 'fogbridge: seals the private keys (CAs, agent certificates) stored in its table',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    const alarmAction = settings.alarmTopicArn
      ? new cloudwatchActions.SnsAction(sns.Topic.fromTopicArn(this, 'AlarmTopic', settings.alarmTopicArn))
      : undefined;
    const queueProps = {
      visibilityTimeout: Duration.seconds(settings.visibilityTimeoutSeconds),
      maxReceiveCount: settings.maxReceiveCount,
      ageAlarmSeconds: settings.queueAgeAlarmSeconds,
      ...(alarmAction ? { alarmAction } : {}),
    };
    this.queues = {
      service: new ReconcileQueue(this, 'ServiceReconcile', {
        ...queueProps,
        queueName: `${settings.namePrefix}${QUEUE_NAMES.service}`,
        deadLetterQueueName: `${settings.namePrefix}${QUEUE_NAMES.serviceDlq}`,
      }),
      fog: new ReconcileQueue(this, 'FogReconcile', {
        ...queueProps,
        queueName: `${settings.namePrefix}${QUEUE_NAMES.fog}`,
        deadLetterQueueName: `${settings.namePrefix}${QUEUE_NAMES.fogDlq}`,
      }),
    };

    const environment = this.environmentFor(settings);
    const network = this.workerNetwork(settings);

    const makeFunction = (
      name: string,
      entry: string,
      needs: Needs & { kubernetes?: boolean },
      sizing: { timeoutSeconds: number; memoryMb: number },
      inVpc: boolean,
    ) => {
      const fn = new FogbridgeFunction(this, name, {
        entry,
        description: entry,
        timeout: Duration.seconds(sizing.timeoutSeconds),
        memorySize: sizing.memoryMb,
        logRetention,
        environment: environment(needs),
        ...(needs.page ? { afterBundling: pageBuildCommands } : {}),
        ...(inVpc && network ? { network } : {}),
      });
      if (needs.table) this.grantTable(fn);
      // Exactly the two calls shared/secrets.ts makes (no data keys, no re-encryption).
      if (needs.secrets) this.secretsKey.grant(fn.role, 'kms:Encrypt', 'kms:Decrypt');
      for (const key of needs.sends) this.queues[key].queue.grantSendMessages(fn.role);
      return fn;
    };

    const apiSizing = { timeoutSeconds: settings.apiTimeoutSeconds, memoryMb: settings.apiMemoryMb };
    const kubernetes = settings.eks !== undefined;
    this.apiFunctions = Object.fromEntries(
      (Object.keys(API_ENTRIES) as ApiFunctionName[]).map((name) => {
        const needs = { ...API_NEEDS[name], kubernetes: kubernetes && API_NEEDS[name].kubernetes === true };
        return [
          name,
          makeFunction(`Api${pascal(name)}`, API_ENTRIES[name], needs, apiSizing, needs.kubernetes),
        ];
      }),
    ) as Record<ApiFunctionName, FogbridgeFunction>;

    const workerSizing = { timeoutSeconds: settings.workerTimeoutSeconds, memoryMb: settings.workerMemoryMb };
    this.workers = Object.fromEntries(
      (Object.keys(WORKER_ENTRIES) as WorkerFunctionName[]).map((name) => {
        const needs = { ...WORKER_NEEDS[name], kubernetes: kubernetes && WORKER_NEEDS[name].kubernetes };
        return [
          name,
          makeFunction(`Worker${pascal(name)}`, WORKER_ENTRIES[name], needs, workerSizing, needs.kubernetes),
        ];
      }),
    ) as Record<WorkerFunctionName, FogbridgeFunction>;

    const eventSource = (queue: sqs.IQueue, maxConcurrency: number) =>
      new SqsEventSource(queue, {
        batchSize: settings.batchSize,
        reportBatchItemFailures: true,
        maxConcurrency,
      });
    this.workers['service-reconcile'].function.addEventSource(
      eventSource(this.queues.service.queue, settings.maxConcurrency),
    );
    this.workers['fog-reconcile'].function.addEventSource(
      eventSource(this.queues.fog.queue, settings.fogMaxConcurrency),
    );

    const sweeper = this.workers.sweeper.function;
    // A failed sweep is simply redone at the next tick: no retries piling up behind the schedule.
    sweeper.configureAsyncInvoke({
      retryAttempts: 0,
      maxEventAge: Duration.minutes(Math.min(settings.sweepMinutes, 360)),
    });
    new events.Rule(this, 'SweepSchedule', {
      description: 'fogbridge sweeper: re-drive lagging services and routers, free orphaned port claims',
      schedule: events.Schedule.rate(Duration.minutes(settings.sweepMinutes)),
      targets: [new targets.LambdaFunction(sweeper, { retryAttempts: 0 })],
    });

    ({ api: this.api, stage: this.apiStage } = this.createApi(settings, logRetention));

    this.eksAccess = settings.eks
      ? new EksAccess(this, 'Eks', {
          clusterName: settings.eks.clusterName,
          endpoint: settings.eks.endpoint,
          certificateAuthority: settings.eks.certificateAuthority,
          namespace: settings.controllerNamespace,
          roles: Object.fromEntries([
            ...(Object.keys(WORKER_NEEDS) as WorkerFunctionName[])
              .filter((name) => WORKER_NEEDS[name].kubernetes)
              .map((name) => [`Worker${pascal(name)}`, this.workers[name].role] as const),
            ...(Object.keys(API_NEEDS) as ApiFunctionName[])
              .filter((name) => API_NEEDS[name].kubernetes)
              .map((name) => [`Api${pascal(name)}`, this.apiFunctions[name].role] as const),
          ]),
        })
      : undefined;

    new CfnOutput(this, 'ApiUrl', { value: this.apiStage.url, description: 'Base URL of the HTTP API' });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'ServiceQueueName', { value: this.queues.service.queue.queueName });
    new CfnOutput(this, 'ServiceQueueUrl', { value: this.queues.service.queue.queueUrl });
    new CfnOutput(this, 'ServiceDeadLetterQueueUrl', { value: this.queues.service.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'FogQueueName', { value: this.queues.fog.queue.queueName });
    new CfnOutput(this, 'FogQueueUrl', { value: this.queues.fog.queue.queueUrl });
    new CfnOutput(this, 'FogDeadLetterQueueUrl', { value: this.queues.fog.deadLetterQueue.queueUrl });
  }

  /** The table exactly as shared/store/table.ts describes it, so the local runtime and AWS cannot drift. */
  private createTable(): dynamodb.Table {
    const input = createTableInput('fogbridge');
    if (input.BillingMode !== 'PAY_PER_REQUEST') {
      throw new Error(`createTableInput uses ${input.BillingMode}; the stack supports PAY_PER_REQUEST only`);
    }
    const attribute = (name: string): dynamodb.Attribute => {
      const definition = input.AttributeDefinitions?.find((a) => a.AttributeName === name);
      const type = definition?.AttributeType ? ATTRIBUTE_TYPES[definition.AttributeType] : undefined;
      if (!type) throw new Error(`createTableInput has no attribute definition for ${name}`);
      return { name, type };
    };
    const keyOf = (schema: { AttributeName?: string; KeyType?: string }[] | undefined, kind: string) => {
      const name = schema?.find((k) => k.KeyType === kind)?.AttributeName;
      return name === undefined ? undefined : attribute(name);
    };
    const table = new dynamodb.Table(this, 'Table', {
      partitionKey: keyOf(input.KeySchema, 'HASH')!,
      ...(keyOf(input.KeySchema, 'RANGE') ? { sortKey: keyOf(input.KeySchema, 'RANGE')! } : {}),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      // Provisioning keys and agent token ids carry `ttl` (epoch seconds); see shared/store/credentials.ts.
      timeToLiveAttribute: 'ttl',
    });
    for (const index of input.GlobalSecondaryIndexes ?? []) {
      const sortKey = keyOf(index.KeySchema, 'RANGE');
      table.addGlobalSecondaryIndex({
        indexName: index.IndexName!,
        partitionKey: keyOf(index.KeySchema, 'HASH')!,
        ...(sortKey ? { sortKey } : {}),
        projectionType: dynamodb.ProjectionType.ALL,
      });
    }
    return table;
  }

  private grantTable(fn: FogbridgeFunction): void {
    this.table.grantReadWriteData(fn.role);
    const tableArn = this.resolve((this.table.node.defaultChild as dynamodb.CfnTable).getAtt('Arn')) as {
      'Fn::GetAtt': [string, string];
    };
    Validations.of(fn.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${tableArn['Fn::GetAtt'][0]}.Arn>/index/*]`,
      reason:
        "Queries on the GSIs of fogbridge's own table (service by token, agent by name, ...): the ARN is " +
        'scoped to that table; "index/*" covers its four indexes.',
    });
  }

  /**
   * Builds each function's environment from the settings; only what it needs. The variables are the
   * controller settings of shared/config.ts, given to the functions whose scope they belong to.
   */
  private environmentFor(settings: FogbridgeSettings) {
    const inScope = (scope: SettingScope) =>
      Object.fromEntries(
        Object.entries(settings.environment).filter(
          ([name]) => SETTINGS[name as SettingName].scope === scope,
        ),
      ) as Record<string, string>;
    const controller = inScope('controller');
    const auth = inScope('auth');
    const kubernetes = settings.eks ? inScope('kubernetes') : {};
    return (needs: Needs & { kubernetes?: boolean }): Record<string, string> => ({
      LOG_LEVEL: settings.environment.LOG_LEVEL ?? 'INFO',
      ...(needs.table ? { ...controller, TABLE_NAME: this.table.tableName } : {}),
      ...(needs.sends.includes('service') ? { SERVICE_QUEUE_URL: this.queues.service.queue.queueUrl } : {}),
      ...(needs.sends.includes('fog') ? { FOG_QUEUE_URL: this.queues.fog.queue.queueUrl } : {}),
      ...(needs.auth ? auth : {}),
      ...(needs.kubernetes ? kubernetes : {}),
      ...(needs.secrets ? { SECRETS_KMS_KEY_ID: this.secretsKey.keyArn } : {}),
    });
  }

  /** Subnets and security group for the workers that call a private EKS endpoint. */
  private workerNetwork(settings: FogbridgeSettings) {
    const network = settings.eks?.network;
    if (!network) return undefined;
    const subnets = network.subnetIds.map((subnetId, n) =>
      ec2.Subnet.fromSubnetId(this, `Subnet${n}`, subnetId),
    );
    // The functions are placed by explicit subnets, so the imported VPC needs no subnet layout.
    const vpc = ec2.Vpc.fromVpcAttributes(this, 'Vpc', {
      vpcId: network.vpcId,
      availabilityZones: this.availabilityZones,
    });
    const securityGroup = ec2.SecurityGroup.fromSecurityGroupId(
      this,
      'WorkerSecurityGroup',
      network.securityGroupId,
      {
        mutable: false,
      },
    );
    return { vpc, subnets, securityGroup };
  }

  private createApi(settings: FogbridgeSettings, logRetention: logs.RetentionDays) {
    const api = new apigw.HttpApi(this, 'HttpApi', {
      apiName: `${this.stackName}-api`,
      description: 'fogbridge controller API',
      createDefaultStage: false,
    });
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logRetention });
    const stage = api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: settings.apiThrottleRateLimit, burstLimit: settings.apiThrottleBurstLimit },
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            routeKey: '$context.routeKey',
            status: '$context.status',
            responseLength: '$context.responseLength',
            integrationLatency: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
            authorizerError: '$context.authorizer.error',
          }),
        ),
      },
    });

    const userAuthorizer = new HttpJwtAuthorizer('UserJwt', settings.authIssuer, {
      authorizerName: 'user-jwt',
      jwtAudience: [settings.authAudience],
      identitySource: ['$request.header.Authorization'],
    });
    const noAuthorizer = new apigw.HttpNoneAuthorizer();
    const integrations = new Map<ApiFunctionName, HttpLambdaIntegration>();
    for (const route of API_ROUTES) {
      let integration = integrations.get(route.function);
      if (!integration) {
        integration = new HttpLambdaIntegration(
          `${pascal(route.function)}Integration`,
          this.apiFunctions[route.function].function,
        );
        integrations.set(route.function, integration);
      }
      const [created] = api.addRoutes({
        path: route.path,
        methods: [apigw.HttpMethod[route.method]],
        integration,
        authorizer: route.auth === 'user' ? userAuthorizer : noAuthorizer,
      });
      if (route.auth !== 'user') {
        Validations.of(created!).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason:
            route.auth === 'agent'
              ? "Edgelet route: the function verifies the agent's EdDSA token against the key stored at " +
                'provisioning (API Gateway authorizers cannot); a missing or bad token is a 401.'
              : 'Public by design: liveness (status), the OpenAPI document, or agent provisioning, which ' +
                'takes a one-time provisioning key in the body.',
        });
      }
    }
    return { api, stage };
  }
}

function pascal(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
