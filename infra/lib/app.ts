import { App, type AppProps, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { readSettings } from './context.js';
import { FogbridgeStack } from './fogbridge-stack.js';

/**
 * The CDK app: reads and validates the context, creates the stack, and registers cdk-nag's AwsSolutions
 * checks as a synth-time validation plugin (an unacknowledged finding fails `cdk synth`).
 */
export function createApp(props: AppProps = {}): { app: App; stack: FogbridgeStack } {
  const app = new App(props);
  const settings = readSettings(app);
  const stack = new FogbridgeStack(app, 'Fogbridge', {
    stackName: settings.stackName,
    description: 'fogbridge: serverless controller for ioFog / Datasance PoT TCP bridge services',
    settings,
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}
