import { describe, expect, it } from 'vitest';
import { injectedLatencyFrom } from '../../infra/local/settings.js';

describe('the embedded runtime latency model', () => {
  it.each<[string, { dynamodb: number; sqs: number }]>([
    ['', { dynamodb: 0, sqs: 0 }],
    ['dynamodb=4ms', { dynamodb: 4, sqs: 0 }],
    ['dynamodb=4ms,sqs=10ms', { dynamodb: 4, sqs: 10 }],
  ])('reads FOGBRIDGE_INJECT_LATENCY=%j', (value, delays) => {
    // Act / Assess
    expect(injectedLatencyFrom({ FOGBRIDGE_INJECT_LATENCY: value })).toEqual(delays);
  });

  it('refuses a value it cannot read, naming the setting', () => {
    // Act / Assess
    expect(() => injectedLatencyFrom({ FOGBRIDGE_INJECT_LATENCY: 'dynamodb=fast' })).toThrow(
      /FOGBRIDGE_INJECT_LATENCY/,
    );
  });
});
