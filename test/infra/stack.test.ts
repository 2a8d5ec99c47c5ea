import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../infra/lib/app.js';
import { CONTEXT_KEYS, ContextError, parseSettings } from '../../infra/lib/context.js';
import { REPO_ROOT, STUB_CODE_CONTEXT } from '../../infra/lib/fogbridge-function.js';
import { API_ENTRIES, API_ROUTES, WORKER_ENTRIES } from '../../infra/lib/routes.js';
import { QUEUE_NAMES } from '../../infra/local/queues.js';
import { GLOBAL_INDEXES, TABLE_ATTRIBUTES } from '../../shared/store/table.js';
import {
  apiModulesOnDisk,
  handlerRoutes,
  KUBERNETES_CONTEXT,
  REQUIRED_CONTEXT,
  synthesize,
} from './support.js';

type Resource = { Type: string; Properties: Record<string, unknown>; Metadata?: Record<string, unknown> };

const PRIVATE_NETWORK_CONTEXT = {
  ...KUBERNETES_CONTEXT,
  eksPrivateEndpoint: 'true',
  vpcId: 'vpc-0123456789abcdef0',
  subnetIds: 'subnet-0123456789abcdef0, subnet-0fedcba9876543210',
  securityGroupId: 'sg-0123456789abcdef0',
};

// One synthesis per configuration, shared by the assertions below.
const remote = synthesize();
const kubernetes = synthesize(PRIVATE_NETWORK_CONTEXT);

function resourcesOf(template: typeof remote.template, type: string): [string, Resource][] {
  return Object.entries(template.findResources(type)) as [string, Resource][];
}

function logicalIdOf(template: typeof remote.template, type: string, pathFragment: string): string {
  const found = resourcesOf(template, type).find(([id]) => id.startsWith(pathFragment));
  if (!found) throw new Error(`no ${type} whose logical id starts with ${pathFragment}`);
  return found[0];
}

describe('route table', () => {
  it('has an entry for every API module on disk', () => {
    // Prepare
    const onDisk = apiModulesOnDisk(REPO_ROOT);

    // Act
    const entries = Object.entries(API_ENTRIES).map(([name, entry]) => [name, entry]);

    // Assess
    expect(entries.map(([name]) => name).sort()).toEqual(onDisk);
    for (const [name, entry] of entries) expect(entry).toBe(`functions/api/${name}.ts`);
  });

  it('holds every route each API module serves, with its function and auth, and nothing else', () => {
    // Prepare
    const fromHandlers = handlerRoutes();
    const key = (r: { method: string; path: string; function: string; auth: string }) =>
      `${r.method} ${r.path} -> ${r.function} (${r.auth})`;

    // Act
    const handlerKeys = fromHandlers.map(key).sort();
    const tableKeys = API_ROUTES.map(key).sort();

    // Assess
    expect(fromHandlers.length).toBeGreaterThan(20);
    expect(tableKeys).toEqual(handlerKeys);
    expect(new Set(tableKeys).size).toBe(tableKeys.length);
  });
});

describe('DynamoDB table', () => {
  it('is on-demand with point-in-time recovery, deletion protection, TTL and the shared GSIs', () => {
    // Prepare
    const { template } = remote;

    // Act
    const tables = resourcesOf(template, 'AWS::DynamoDB::Table');

    // Assess
    expect(tables).toHaveLength(1);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      KeySchema: [
        { AttributeName: 'PK', KeyType: 'HASH' },
        { AttributeName: 'SK', KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: GLOBAL_INDEXES.map((index) => ({
        IndexName: index.name,
        KeySchema: [
          { AttributeName: index.partitionKey, KeyType: 'HASH' },
          { AttributeName: index.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      })),
    });
    const attributes = (tables[0]![1].Properties.AttributeDefinitions as { AttributeName: string }[]).map(
      (a) => a.AttributeName,
    );
    expect(attributes.sort()).toEqual([...TABLE_ATTRIBUTES].sort());
    expect(tables[0]![1]).toMatchObject({ DeletionPolicy: 'Retain' });
  });
});

describe('queues', () => {
  it('are FIFO with FIFO dead-letter queues, explicit dedup ids, SSE and the configured redrive', () => {
    // Prepare
    const { template } = synthesize({ maxReceiveCount: '7', workerTimeoutSeconds: 90 });

    // Act
    const queues = Object.fromEntries(
      resourcesOf(template, 'AWS::SQS::Queue').map(([id, r]) => [
        r.Properties.QueueName as string,
        { id, r },
      ]),
    );

    // Assess
    expect(Object.keys(queues).sort()).toEqual(Object.values(QUEUE_NAMES).sort());
    for (const { r } of Object.values(queues)) {
      expect(r.Properties).toMatchObject({
        FifoQueue: true,
        ContentBasedDeduplication: false,
        SqsManagedSseEnabled: true,
      });
    }
    for (const [main, dlq] of [
      [QUEUE_NAMES.service, QUEUE_NAMES.serviceDlq],
      [QUEUE_NAMES.fog, QUEUE_NAMES.fogDlq],
    ] as const) {
      expect(queues[main]!.r.Properties.RedrivePolicy).toEqual({
        deadLetterTargetArn: { 'Fn::GetAtt': [queues[dlq]!.id, 'Arn'] },
        maxReceiveCount: 7,
      });
      expect(queues[main]!.r.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * 90);
      expect(queues[dlq]!.r.Properties.RedrivePolicy).toBeUndefined();
    }
  });

  it('refuse requests without TLS', () => {
    // Prepare
    const { template } = remote;

    // Act
    const policies = resourcesOf(template, 'AWS::SQS::QueuePolicy');

    // Assess
    expect(policies).toHaveLength(4);
    for (const [, policy] of policies) {
      expect(JSON.stringify(policy.Properties)).toContain('"aws:SecureTransport":"false"');
    }
  });

  it('raise an alarm on any message in a DLQ and on old messages in a main queue', () => {
    // Prepare
    const { template } = synthesize({ queueAgeAlarmSeconds: 1200 });

    // Act
    const alarms = resourcesOf(template, 'AWS::CloudWatch::Alarm').map(([, r]) => r.Properties);

    // Assess
    const dlqAlarms = alarms.filter((a) => a.MetricName === 'ApproximateNumberOfMessagesVisible');
    const ageAlarms = alarms.filter((a) => a.MetricName === 'ApproximateAgeOfOldestMessage');
    expect(dlqAlarms).toHaveLength(2);
    expect(ageAlarms).toHaveLength(2);
    for (const alarm of dlqAlarms) {
      expect(alarm).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
      expect(JSON.stringify(alarm.Dimensions)).toContain('DeadLetterQueue');
    }
    for (const alarm of ageAlarms) {
      expect(alarm).toMatchObject({ Threshold: 1200, ComparisonOperator: 'GreaterThanThreshold' });
      expect(JSON.stringify(alarm.Dimensions)).not.toContain('DeadLetterQueue');
    }
  });
});

describe('workers', () => {
  it('consume the queues with partial batch responses, batches of 10 and bounded concurrency', () => {
    // Prepare
    const { template } = synthesize({ maxConcurrency: '3', fogMaxConcurrency: '3' });

    // Act
    const mappings = resourcesOf(template, 'AWS::Lambda::EventSourceMapping').map(([, r]) => r.Properties);

    // Assess
    expect(mappings).toHaveLength(2);
    for (const mapping of mappings) {
      expect(mapping).toMatchObject({
        BatchSize: 10,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: 3 },
      });
    }
    const pairs = mappings.map((m) => [
      (m.EventSourceArn as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0],
      (m.FunctionName as { Ref: string }).Ref,
    ]);
    expect(pairs.sort()).toEqual(
      [
        [
          logicalIdOf(template, 'AWS::SQS::Queue', 'FogReconcileQueue'),
          logicalIdOf(template, 'AWS::Lambda::Function', 'WorkerFogReconcileFunction'),
        ],
        [
          logicalIdOf(template, 'AWS::SQS::Queue', 'ServiceReconcileQueue'),
          logicalIdOf(template, 'AWS::Lambda::Function', 'WorkerServiceReconcileFunction'),
        ],
      ].sort(),
    );
  });

  it('give the fog worker its own concurrency, sized for fan-outs to many agents', () => {
    // Prepare
    const { template } = synthesize({ maxConcurrency: '4', fogMaxConcurrency: '40' });

    // Act
    const byQueue = Object.fromEntries(
      resourcesOf(template, 'AWS::Lambda::EventSourceMapping').map(([, r]) => [
        (r.Properties.EventSourceArn as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0],
        (r.Properties.ScalingConfig as { MaximumConcurrency: number }).MaximumConcurrency,
      ]),
    );

    // Assess
    expect(byQueue).toEqual({
      [logicalIdOf(template, 'AWS::SQS::Queue', 'FogReconcileQueue')]: 40,
      [logicalIdOf(template, 'AWS::SQS::Queue', 'ServiceReconcileQueue')]: 4,
    });
  });

  it('run the sweeper on an EventBridge rate schedule from context', () => {
    // Prepare
    const every = (minutes?: number) =>
      synthesize(minutes === undefined ? {} : { sweepMinutes: String(minutes) }).template;

    // Act
    const byDefault = every();
    const everyFive = every(5);

    // Assess
    byDefault.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [
        Match.objectLike({
          Arn: {
            'Fn::GetAtt': [logicalIdOf(byDefault, 'AWS::Lambda::Function', 'WorkerSweeperFunction'), 'Arn'],
          },
        }),
      ],
    });
    everyFive.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(5 minutes)' });
  });
});

describe('HTTP API', () => {
  it('has one route per table row; user routes carry the JWT authorizer, agent and public routes none', () => {
    // Prepare
    const { template } = remote;
    const authorizerId = logicalIdOf(template, 'AWS::ApiGatewayV2::Authorizer', 'HttpApiUserJwt');

    // Act
    const routes = new Map(
      resourcesOf(template, 'AWS::ApiGatewayV2::Route').map(([, r]) => [r.Properties.RouteKey as string, r]),
    );

    // Assess
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      JwtConfiguration: { Issuer: REQUIRED_CONTEXT.authIssuer, Audience: [REQUIRED_CONTEXT.authAudience] },
    });
    expect(routes.size).toBe(API_ROUTES.length);
    for (const row of API_ROUTES) {
      const route = routes.get(`${row.method} ${row.path}`);
      expect(route, `${row.method} ${row.path}`).toBeDefined();
      if (row.auth === 'user') {
        expect(route!.Properties).toMatchObject({
          AuthorizationType: 'JWT',
          AuthorizerId: { Ref: authorizerId },
        });
      } else {
        expect(route!.Properties.AuthorizationType, `${row.method} ${row.path}`).toBe('NONE');
        expect(route!.Properties.AuthorizerId).toBeUndefined();
      }
    }
    expect(API_ROUTES.filter((r) => r.auth === 'agent').length).toBeGreaterThan(0);
  });

  it('sends each route to the function of its table row', () => {
    // Prepare
    const { template } = remote;
    const integrations = Object.fromEntries(
      resourcesOf(template, 'AWS::ApiGatewayV2::Integration').map(([id, r]) => [
        id,
        (r.Properties.IntegrationUri as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0],
      ]),
    );

    // Act
    const targetOf = new Map(
      resourcesOf(template, 'AWS::ApiGatewayV2::Route').map(([, r]) => {
        const target = r.Properties.Target as { 'Fn::Join': [string, [string, { Ref: string }]] };
        return [r.Properties.RouteKey as string, integrations[target['Fn::Join'][1][1].Ref]];
      }),
    );

    // Assess
    for (const row of API_ROUTES) {
      const pascal = row.function
        .split('-')
        .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
        .join('');
      expect(targetOf.get(`${row.method} ${row.path}`)).toMatch(new RegExp(`^Api${pascal}Function`));
    }
  });

  it('logs access and throttles on its default stage', () => {
    // Prepare
    const { template } = synthesize({ apiThrottleRateLimit: 20, apiThrottleBurstLimit: 40 });

    // Act
    const stages = resourcesOf(template, 'AWS::ApiGatewayV2::Stage').map(([, r]) => r.Properties);

    // Assess
    expect(stages).toHaveLength(1);
    expect(stages[0]).toMatchObject({
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 20, ThrottlingBurstLimit: 40 },
      AccessLogSettings: {
        DestinationArn: expect.anything(),
        Format: expect.stringContaining('$context.requestId'),
      },
    });
  });
});

describe('functions', () => {
  it('run Node.js 22 on arm64, each with its own log group with retention, and no source-map work at run time', () => {
    // Prepare
    const { template } = synthesize({ logRetentionDays: '90' });

    // Act
    const functions = resourcesOf(template, 'AWS::Lambda::Function').map(([, r]) => r.Properties);
    const logGroups = Object.fromEntries(resourcesOf(template, 'AWS::Logs::LogGroup'));

    // Assess
    expect(functions).toHaveLength(Object.keys(API_ENTRIES).length + Object.keys(WORKER_ENTRIES).length);
    for (const fn of functions) {
      expect(fn).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
      });
      expect(
        (fn.Environment as { Variables: Record<string, string> }).Variables.NODE_OPTIONS,
      ).toBeUndefined();
      const group = (fn.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
      expect(logGroups[group]?.Properties.RetentionInDays, String(fn.Description)).toBe(90);
    }
    for (const group of Object.values(logGroups)) expect(group.Properties.RetentionInDays).toBe(90);
  });

  it('get only the environment they need', () => {
    // Prepare
    const { template } = remote;
    const env = (prefix: string) =>
      (
        template.findResources('AWS::Lambda::Function')[
          logicalIdOf(template, 'AWS::Lambda::Function', `${prefix}Function`)
        ] as Resource
      ).Properties.Environment as { Variables: Record<string, unknown> };

    // Act
    const services = env('ApiServices').Variables;
    const status = env('ApiStatus').Variables;
    const serviceWorker = env('WorkerServiceReconcile').Variables;
    const sweeper = env('WorkerSweeper').Variables;

    // Assess
    expect(services).toMatchObject({
      CONTROL_PLANE: 'remote',
      TABLE_NAME: { Ref: logicalIdOf(template, 'AWS::DynamoDB::Table', 'Table') },
      SERVICE_QUEUE_URL: { Ref: logicalIdOf(template, 'AWS::SQS::Queue', 'ServiceReconcileQueue') },
      AUTH_ISSUER: REQUIRED_CONTEXT.authIssuer,
      AUTH_AUDIENCE: REQUIRED_CONTEXT.authAudience,
      AUTH_JWKS_URL: `${REQUIRED_CONTEXT.authIssuer}/.well-known/jwks.json`,
      BRIDGE_PORTS_RANGE: '10024-65535',
      MAX_RECEIVE_COUNT: '5',
    });
    expect(status.TABLE_NAME).toBeUndefined();
    expect(status.AUTH_ISSUER).toBeUndefined();
    expect(serviceWorker.FOG_QUEUE_URL).toBeDefined();
    expect(serviceWorker.AUTH_ISSUER).toBeUndefined();
    expect(serviceWorker.EKS_CLUSTER_NAME).toBeUndefined();
    expect(sweeper).toMatchObject({ SERVICE_QUEUE_URL: expect.anything(), FOG_QUEUE_URL: expect.anything() });
  });
});

describe('IAM', () => {
  it('grants no wildcard actions and no managed policies on the default (remote) stack', () => {
    // Prepare
    const { template } = remote;

    // Act
    const statements = resourcesOf(template, 'AWS::IAM::Policy').flatMap(
      ([, r]) => (r.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement,
    );
    const actions = statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    const roles = resourcesOf(template, 'AWS::IAM::Role').map(([, r]) => r.Properties);

    // Assess
    expect(actions.length).toBeGreaterThan(0);
    for (const action of actions) {
      expect(action).not.toBe('*');
      expect(action).not.toMatch(/:\*$/);
    }
    expect(actions).not.toContain('dynamodb:*');
    expect(actions).not.toContain('sqs:*');
    for (const role of roles) expect(role.ManagedPolicyArns).toBeUndefined();
  });

  it('lets only the functions that need them use the table and the queues', () => {
    // Prepare
    const { template } = remote;
    const policyOf = (prefix: string) => {
      const found = resourcesOf(template, 'AWS::IAM::Policy').find(([id]) => id.startsWith(`${prefix}Role`));
      return JSON.stringify(found?.[1].Properties.PolicyDocument ?? {});
    };

    // Act
    const status = policyOf('ApiStatus');
    const services = policyOf('ApiServices');
    const fogWorker = policyOf('WorkerFogReconcile');

    // Assess
    expect(status).not.toContain('dynamodb:');
    expect(status).not.toContain('sqs:');
    expect(services).toContain('dynamodb:PutItem');
    expect(services).toContain('sqs:SendMessage');
    expect(services).not.toContain('sqs:ReceiveMessage');
    expect(fogWorker).toContain('sqs:ReceiveMessage');
    expect(fogWorker).not.toContain('sqs:SendMessage');
  });
});

describe('the secrets key', () => {
  it('is one rotating KMS key, kept on stack deletion, that exactly the functions sealing or opening private keys may use', () => {
    // Prepare
    const { template } = remote;
    const keyId = logicalIdOf(template, 'AWS::KMS::Key', 'SecretsKey');
    const kmsActionsOf = (prefix: string) =>
      resourcesOf(template, 'AWS::IAM::Policy')
        .filter(([id]) => id.startsWith(`${prefix}Role`))
        .flatMap(
          ([, r]) =>
            (r.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement,
        )
        .flatMap((statement) => (Array.isArray(statement.Action) ? statement.Action : [statement.Action]))
        .filter((action) => action.startsWith('kms:'))
        .sort();
    const envOf = (prefix: string) =>
      (
        (
          template.findResources('AWS::Lambda::Function')[
            logicalIdOf(template, 'AWS::Lambda::Function', `${prefix}Function`)
          ] as Resource
        ).Properties.Environment as { Variables: Record<string, unknown> }
      ).Variables;

    // Act
    const key = template.findResources('AWS::KMS::Key')[keyId] as Resource & { DeletionPolicy?: string };

    // Assess
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe('Retain');
    for (const prefix of ['ApiCertificates', 'ApiAgentProtocol', 'WorkerFogReconcile']) {
      expect(kmsActionsOf(prefix)).toEqual(['kms:Decrypt', 'kms:Encrypt']);
      expect(envOf(prefix).SECRETS_KMS_KEY_ID).toEqual({ 'Fn::GetAtt': [keyId, 'Arn'] });
    }
    for (const prefix of ['ApiServices', 'ApiStatus', 'WorkerServiceReconcile', 'WorkerSweeper']) {
      expect(kmsActionsOf(prefix)).toEqual([]);
      expect(envOf(prefix).SECRETS_KMS_KEY_ID).toBeUndefined();
    }
  });
});

describe('EKS access (controlPlane=kubernetes)', () => {
  it('gives each role that calls the cluster (the reconcile workers, the certificates API that imports CA Secrets) a namespaced edit access entry', () => {
    // Prepare
    const { template } = kubernetes;

    // Act
    const entries = resourcesOf(template, 'AWS::EKS::AccessEntry').map(([, r]) => r.Properties);

    // Assess
    expect(entries).toHaveLength(3);
    const principals = entries.map((e) => (e.PrincipalArn as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0]);
    expect(principals.sort()).toEqual(
      [
        logicalIdOf(template, 'AWS::IAM::Role', 'WorkerFogReconcileRole'),
        logicalIdOf(template, 'AWS::IAM::Role', 'WorkerServiceReconcileRole'),
        logicalIdOf(template, 'AWS::IAM::Role', 'ApiCertificatesRole'),
      ].sort(),
    );
    for (const entry of entries) {
      expect(entry).toMatchObject({
        ClusterName: KUBERNETES_CONTEXT.eksClusterName,
        AccessPolicies: [
          {
            AccessScope: { Type: 'namespace', Namespaces: [KUBERNETES_CONTEXT.controllerNamespace] },
            PolicyArn: {
              'Fn::Join': ['', expect.arrayContaining([expect.stringMatching(/\/AmazonEKSEditPolicy$/)])],
            },
          },
        ],
      });
    }
  });

  it('tells the reconcile workers the cluster and puts them (only) in the private subnets', () => {
    // Prepare
    const { template } = kubernetes;
    const fn = (prefix: string) =>
      (
        template.findResources('AWS::Lambda::Function')[
          logicalIdOf(template, 'AWS::Lambda::Function', `${prefix}Function`)
        ] as Resource
      ).Properties;

    // Act
    const serviceWorker = fn('WorkerServiceReconcile');
    const fogWorker = fn('WorkerFogReconcile');
    const sweeper = fn('WorkerSweeper');
    const api = fn('ApiServices');

    // Assess
    for (const worker of [serviceWorker, fogWorker]) {
      expect(worker).toMatchObject({
        Environment: {
          Variables: expect.objectContaining({
            CONTROL_PLANE: 'kubernetes',
            CONTROLLER_NAMESPACE: 'iofog',
            EKS_CLUSTER_NAME: KUBERNETES_CONTEXT.eksClusterName,
            EKS_CLUSTER_ENDPOINT: KUBERNETES_CONTEXT.eksClusterEndpoint,
            EKS_CLUSTER_CA: KUBERNETES_CONTEXT.eksClusterCa,
          }),
        },
        VpcConfig: {
          SubnetIds: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
          SecurityGroupIds: ['sg-0123456789abcdef0'],
        },
      });
    }
    expect(sweeper.VpcConfig).toBeUndefined();
    expect(api.VpcConfig).toBeUndefined();
    expect(
      (api.Environment as { Variables: Record<string, unknown> }).Variables.EKS_CLUSTER_NAME,
    ).toBeUndefined();
  });

  it('has no access entries or VPC settings on a remote control plane', () => {
    // Prepare
    const { template } = remote;

    // Act
    const entries = resourcesOf(template, 'AWS::EKS::AccessEntry');
    const inVpc = resourcesOf(template, 'AWS::Lambda::Function').filter(([, r]) => r.Properties.VpcConfig);

    // Assess
    expect(entries).toHaveLength(0);
    expect(inVpc).toHaveLength(0);
  });
});

describe('context', () => {
  it.each([
    ['authIssuer', { authAudience: 'fogbridge' }],
    ['authAudience', { authIssuer: 'https://issuer.example.com' }],
    ['eksClusterName', { ...REQUIRED_CONTEXT, controlPlane: 'kubernetes' }],
    ['eksClusterEndpoint', { ...REQUIRED_CONTEXT, controlPlane: 'kubernetes', eksClusterName: 'c' }],
    ['eksClusterCa', { ...REQUIRED_CONTEXT, ...KUBERNETES_CONTEXT, eksClusterCa: undefined }],
    ['vpcId', { ...REQUIRED_CONTEXT, ...KUBERNETES_CONTEXT, eksPrivateEndpoint: 'true' }],
    ['subnetIds', { ...REQUIRED_CONTEXT, ...PRIVATE_NETWORK_CONTEXT, subnetIds: undefined }],
    ['securityGroupId', { ...REQUIRED_CONTEXT, ...PRIVATE_NETWORK_CONTEXT, securityGroupId: undefined }],
  ])('fails synth naming the missing required key %s and how to pass it', (key, context) => {
    // Prepare
    const build = () => createApp({ context: { [STUB_CODE_CONTEXT]: true, ...context } });

    // Act
    const thrown = (() => {
      try {
        build();
        return undefined;
      } catch (error) {
        return error as Error;
      }
    })();

    // Assess
    expect(thrown).toBeInstanceOf(ContextError);
    expect(thrown!.message).toContain(`"${key}"`);
    expect(thrown!.message).toContain(`-c ${key}=`);
  });

  it.each([
    ['maxReceiveCount', '0'],
    ['maxConcurrency', '1'],
    ['bridgePortsRange', '70000-80000'],
    ['authIssuer', 'http://issuer.example.com'],
    ['logRetentionDays', '42'],
    ['distribution', 'openshift'],
    ['eksPrivateEndpoint', 'maybe'],
  ])('rejects a bad value of %s, naming the key', (key, value) => {
    // Prepare
    const raw = { ...REQUIRED_CONTEXT, [key]: value };

    // Act
    const parse = () => parseSettings(raw);

    // Assess
    expect(parse).toThrow(ContextError);
    expect(parse).toThrow(`"${key}"`);
  });

  it('documents a default for every optional key and derives the rest', () => {
    // Prepare
    const raw = { ...REQUIRED_CONTEXT };

    // Act
    const settings = parseSettings(raw);

    // Assess
    expect(settings).toMatchObject({
      controlPlane: 'remote',
      maxReceiveCount: 5,
      maxConcurrency: 5,
      fogMaxConcurrency: 25,
      apiThrottleRateLimit: 200,
      apiThrottleBurstLimit: 500,
      sweepMinutes: 1,
      workerTimeoutSeconds: 60,
      visibilityTimeoutSeconds: 360,
      logRetentionDays: 30,
      authJwksUrl: 'https://issuer.example.com/.well-known/jwks.json',
      eks: undefined,
    });
    expect(CONTEXT_KEYS).toEqual(expect.arrayContaining(['authIssuer', 'maxReceiveCount', 'eksClusterName']));
  });

  it('refuses a hub lock lease that does not fit in the worker timeout', () => {
    // Prepare
    const raw = { ...REQUIRED_CONTEXT, hubLockLeaseMs: '30000', workerTimeoutSeconds: '30' };

    // Act
    const parse = () => parseSettings(raw);

    // Assess
    expect(parse).toThrow(/hubLockLeaseMs/);
  });
});

describe('cdk-nag AwsSolutions', () => {
  it.each([
    ['remote', remote],
    ['kubernetes with private endpoint', kubernetes],
  ])('reports no unacknowledged finding on the %s stack', (_name, synthesized) => {
    // Prepare
    const checks = new AwsSolutionsChecks();

    // Act
    const report = checks.validateScope(synthesized.stack);
    const errors = Annotations.fromStack(synthesized.stack).findError(
      '*',
      Match.stringLikeRegexp('AwsSolutions-.*'),
    );

    // Assess
    const findings = report.violations.map(
      (v) => `${v.severity} ${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
    );
    expect(findings.filter((f) => f.startsWith('error'))).toEqual([]);
    expect(findings).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('still catches what it is there to catch (acknowledgments are per finding, not blanket)', () => {
    // Prepare
    const { stack } = createApp({ context: { ...REQUIRED_CONTEXT, [STUB_CODE_CONTEXT]: true } });
    stack.table.grantFullAccess(stack.apiFunctions.status.role);

    // Act
    const report = new AwsSolutionsChecks().validateScope(stack);

    // Assess
    expect(report.violations.map((v) => v.ruleName)).toContain('AwsSolutions-IAM5[Action::dynamodb:*]');
  });
});
