import { z } from 'zod';
import { parseSetting, type Setting } from '../../shared/config.js';

/**
 * Settings only the embedded runtime reads (AWS has no use for them, so they stay out of the product's
 * table and its `Config`).
 */
export const LOCAL_RUNTIME_SETTINGS = {
  FOGBRIDGE_INJECT_LATENCY: {
    schema: z
      .string()
      .regex(
        /^$|^(dynamodb|sqs)=\d{1,4}ms(,(dynamodb|sqs)=\d{1,4}ms)?$/,
        'must look like dynamodb=4ms,sqs=10ms',
      )
      .transform((text) => {
        const delays = { dynamodb: 0, sqs: 0 };
        for (const part of text ? text.split(',') : []) {
          const [service, ms] = part.split('=') as ['dynamodb' | 'sqs', string];
          delays[service] = Number.parseInt(ms, 10);
        }
        return delays;
      }),
    default: '',
    scope: 'local',
    doc: 'a delay added to every DynamoDB / SQS call of the embedded runtime, a model of the network to AWS (`npm run bench -- --latency`)',
  },
} satisfies Record<string, Setting>;

/** Milliseconds added to each DynamoDB / SQS call. */
export type InjectedLatency = { dynamodb: number; sqs: number };

/** FOGBRIDGE_INJECT_LATENCY from `env`; a bad value is a ConfigError naming it. */
export function injectedLatencyFrom(env: Record<string, string | undefined>): InjectedLatency {
  return parseSetting(
    'FOGBRIDGE_INJECT_LATENCY',
    env.FOGBRIDGE_INJECT_LATENCY,
    LOCAL_RUNTIME_SETTINGS.FOGBRIDGE_INJECT_LATENCY,
  ) as InjectedLatency;
}
