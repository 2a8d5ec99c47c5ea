import { Logger } from '@aws-lambda-powertools/logger';
import { perContext } from '../context.js';

/** One structured logger per context, at the configured LOG_LEVEL. */
const contextLogger = perContext(
  (settings) => new Logger({ serviceName: 'fogbridge', logLevel: settings.logLevel }),
);

type LogMethod = (message: string, ...extra: Record<string, unknown>[]) => void;

/** The logger of the running invocation (the function's, or the embedded runtime's). */
export const logger: Record<'debug' | 'info' | 'warn' | 'error', LogMethod> = {
  debug: (message, ...extra) => contextLogger().debug(message, ...(extra as never[])),
  info: (message, ...extra) => contextLogger().info(message, ...(extra as never[])),
  warn: (message, ...extra) => contextLogger().warn(message, ...(extra as never[])),
  error: (message, ...extra) => contextLogger().error(message, ...(extra as never[])),
};
