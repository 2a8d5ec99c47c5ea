import { Logger } from '@aws-lambda-powertools/logger';

/** One structured logger for every function; level from POWERTOOLS_LOG_LEVEL / LOG_LEVEL. */
export const logger = new Logger({ serviceName: 'fogbridge' });
