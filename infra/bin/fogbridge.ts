import { createApp } from '../lib/app.js';
import { ContextError } from '../lib/context.js';
import { STUB_CODE_CONTEXT } from '../lib/fogbridge-function.js';

try {
  const { app } = createApp();
  if (app.node.tryGetContext(STUB_CODE_CONTEXT) !== undefined) {
    throw new ContextError(`Context key "${STUB_CODE_CONTEXT}" is for template tests only; remove it`);
  }
  app.synth();
} catch (error) {
  if (!(error instanceof ContextError)) throw error;
  // A configuration mistake: name the context key, without a stack trace.
  console.error(`fogbridge: ${error.message}`);
  process.exit(1);
}
