import { fileURLToPath } from 'node:url';
import { type Duration, Validations } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** The repository root: entries, package-lock.json and tsconfig.json live there. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Lets an ESM bundle load the CommonJS dependencies that `require()` Node built-ins. */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __fogbridgeCreateRequire } from 'node:module'; " +
  'const require = __fogbridgeCreateRequire(import.meta.url);';

/**
 * How every function is bundled, in esbuild's own terms (the stack passes the same to NodejsFunction;
 * `npm run bench -- --scenarios bundles` builds with it to report sizes and import times): ESM for
 * Node.js 22, minified (names kept for stack traces and error classes), the SDK bundled in.
 */
export const FUNCTION_BUILD = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  mainFields: ['module', 'main'],
  banner: { js: ESM_REQUIRE_BANNER },
  minify: true,
  keepNames: true,
  sourcemap: 'external',
  sourcesContent: false,
  tsconfig: `${REPO_ROOT}tsconfig.json`,
} as const;

/**
 * Environment every function gets besides its own settings. No `--enable-source-maps`: Node would then
 * map every stack trace through a multi-megabyte map, and AWS advises against it where latency matters.
 * The maps are kept beside each bundle (without a reference from it) to decode a stack trace offline;
 * kept names already say which function threw.
 */
export const FUNCTION_ENVIRONMENT = {
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/** Context key that swaps real bundling for a stub handler (fast template tests only). */
export const STUB_CODE_CONTEXT = 'fogbridge:stubCode';

export interface FogbridgeFunctionProps {
  /** Entry file relative to the repository root, e.g. `functions/api/services.ts`. */
  entry: string;
  description: string;
  timeout: Duration;
  memorySize: number;
  environment: Record<string, string>;
  logRetention: logs.RetentionDays;
  /** Commands run once the function is bundled (to put files beside the bundle). */
  afterBundling?: (inputDir: string, outputDir: string) => string[];
  /** Run inside these subnets (to reach a private EKS endpoint). */
  network?: { vpc: ec2.IVpc; subnets: ec2.ISubnet[]; securityGroup: ec2.ISecurityGroup };
}

/**
 * One Lambda function the way every fogbridge function is built: Node.js 22 on arm64, bundled locally by
 * esbuild as minified ESM with a source map beside it (no Docker), its own role that may write only to its own log group,
 * and an explicit log group with a retention period.
 */
export class FogbridgeFunction extends Construct {
  readonly function: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: FogbridgeFunctionProps) {
    super(scope, id);

    this.logGroup = new logs.LogGroup(this, 'Logs', { retention: props.logRetention });
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `fogbridge ${id}: ${props.description}`,
    });
    // Instead of AWSLambdaBasicExecutionRole (logs on every group): this function's group only.
    this.logGroup.grantWrite(this.role);

    const common = {
      description: props.description,
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      timeout: props.timeout,
      memorySize: props.memorySize,
      role: this.role,
      logGroup: this.logGroup,
      environment: { ...FUNCTION_ENVIRONMENT, ...props.environment },
      ...(props.network
        ? {
            vpc: props.network.vpc,
            vpcSubnets: { subnets: props.network.subnets },
            securityGroups: [props.network.securityGroup],
          }
        : {}),
    } satisfies Partial<lambda.FunctionProps>;

    if (props.network) {
      // A role passed in does not get Lambda's VPC policy automatically; the ENI actions need Resource "*".
      this.role.addManagedPolicy(
        iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaVPCAccessExecutionRole'),
      );
      Validations.of(this.role).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
        reason:
          'A function in a VPC must create and delete its network interfaces; the AWS managed policy is the ' +
          'documented minimum (ec2:*NetworkInterface* on Resource "*", which EC2 cannot scope further).',
      });
    }

    if (this.node.tryGetContext(STUB_CODE_CONTEXT) === true) {
      this.function = new lambda.Function(this, 'Function', {
        ...common,
        handler: 'index.handler',
        code: lambda.Code.fromInline('export const handler = async () => ({});'),
      });
    } else {
      this.function = new NodejsFunction(this, 'Function', {
        ...common,
        entry: `${REPO_ROOT}${props.entry}`,
        handler: 'handler',
        projectRoot: REPO_ROOT,
        depsLockFilePath: `${REPO_ROOT}package-lock.json`,
        bundling: {
          format: OutputFormat.ESM,
          target: FUNCTION_BUILD.target,
          mainFields: [...FUNCTION_BUILD.mainFields],
          banner: FUNCTION_BUILD.banner.js,
          // Pin the SDK the code was tested with instead of the one in the Lambda runtime.
          bundleAwsSDK: true,
          minify: FUNCTION_BUILD.minify,
          keepNames: FUNCTION_BUILD.keepNames,
          sourceMap: true,
          sourceMapMode: SourceMapMode.EXTERNAL,
          sourcesContent: FUNCTION_BUILD.sourcesContent,
          tsconfig: FUNCTION_BUILD.tsconfig,
          forceDockerBundling: false,
          ...(props.afterBundling
            ? {
                commandHooks: {
                  beforeBundling: () => [],
                  beforeInstall: () => [],
                  afterBundling: props.afterBundling,
                },
              }
            : {}),
        },
      });
    }

    Validations.of(this.function).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'nodejs22.x is the runtime fogbridge is built and tested for (the code must run on Node 20 and 22); ' +
        'a newer runtime is adopted deliberately, not by the latest-runtime rule.',
    });
  }
}
