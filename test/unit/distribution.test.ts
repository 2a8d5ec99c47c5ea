import { describe, expect, it } from 'vitest';
import {
  agentDistributionTokens,
  agentSelectsService,
  agentTagForToken,
  DISTRIBUTION_ALL,
  nearMissDistributionTags,
  serviceDistributionTokens,
} from '../../shared/domain/distribution.js';
import { buildTcpListener } from '../../shared/domain/router-objects.js';

// SERVICE_ANNOTATION_TAG default (seed: "The prefix is SERVICE_ANNOTATION_TAG, default service.iofog.org/tag").
const PREFIX = 'service.iofog.org/tag';

// The services of the seed's YAML examples, with the tags their metadata.tags hold.
const services = [
  {
    name: 'checkout',
    bridgePort: 10024,
    tags: ['checkout', 'service.beta.kubernetes.io/aws-load-balancer-type: nlb'],
  },
  { name: 'payments', bridgePort: 10025, tags: ['payments'] },
  { name: 'untagged', bridgePort: 10026, tags: [] as string[] },
];

/** Names of the services an agent with `agentTags` selects (fog reconcile direction). */
const selectedBy = (agentTags: string[], prefix = PREFIX) =>
  services
    .filter((service) => agentSelectsService(agentDistributionTokens(agentTags, prefix), service.tags))
    .map((service) => service.name);

describe('seed table "Distribution: service tag against the agent tag"', () => {
  // Agent tag | Matches
  it.each<[string, string[], string]>([
    ['service.iofog.org/tag: checkout', ['checkout'], 'Services whose metadata.tags include checkout'],
    ['service.iofog.org/tag: all', ['checkout', 'payments', 'untagged'], 'Every service'],
    ['checkout', [], 'Nothing. The prefix is required'],
    [
      'service.iofog.org/tag:checkout',
      [],
      'Nothing. The space after the colon is part of the stored value (prefix + ": " + token)',
    ],
  ])('agent tag %j selects %j (%s)', (agentTag, expected) => {
    // Act / Assess
    expect(selectedBy([agentTag])).toEqual(expected);
  });
});

describe('seed example: plant-a, plant-b, plant-c', () => {
  // Agent | Tags | Listeners after reconcile
  it.each<[string, string, object[]]>([
    [
      'plant-a',
      'service.iofog.org/tag: checkout',
      [{ name: 'checkout-listener', port: '10024', address: 'checkout' }],
    ],
    [
      'plant-b',
      'service.iofog.org/tag: all',
      [
        { name: 'checkout-listener', port: '10024', address: 'checkout' },
        { name: 'payments-listener', port: '10025', address: 'payments' },
        { name: 'untagged-listener', port: '10026', address: 'untagged' },
      ],
    ],
    ['plant-c', 'checkout', []],
  ])('%s tagged %j gets listeners %j', (_agent, agentTag, listeners) => {
    // Prepare
    const tokens = agentDistributionTokens([agentTag], PREFIX);

    // Act
    const built = services
      .filter((service) => agentSelectsService(tokens, service.tags))
      .map((service) => buildTcpListener(service.name, service.bridgePort));

    // Assess
    expect(built).toStrictEqual(listeners);
  });
});

describe('serviceDistributionTokens: service → agents (handleServiceDistribution)', () => {
  it.each<[string, string[], string[]]>([
    [
      'seed Kubernetes example: checkout matches, the annotation tag does not because it contains ":"',
      ['checkout', 'service.beta.kubernetes.io/aws-load-balancer-type: nlb'],
      ['checkout'],
    ],
    ['a tag containing "=" is skipped', ['payments', 'env=prod'], ['payments']],
    ['a tag containing ":" without a space is skipped', ['a:b:c', 'vendor'], ['vendor']],
    ['no tags, no tokens', [], []],
    ['duplicates collapse', ['checkout', 'checkout'], ['checkout']],
  ])('%s', (_case, tags, tokens) => {
    // Act / Assess
    expect(serviceDistributionTokens(tags)).toEqual(tokens);
  });

  it.each<[string, string]>([
    [DISTRIBUTION_ALL, 'service.iofog.org/tag: all'],
    ['checkout', 'service.iofog.org/tag: checkout'],
    ['payments', 'service.iofog.org/tag: payments'],
  ])('looks up agents for token %j by the agent tag %j', (token, agentTag) => {
    // Act / Assess
    expect(agentTagForToken(token, PREFIX)).toBe(agentTag);
  });

  it('the "all" token is the literal all', () => {
    // Act / Assess
    expect(DISTRIBUTION_ALL).toBe('all');
  });

  it('the agent tag it looks up is one the fog reconcile reads back as the same token', () => {
    // Prepare
    const tokens = serviceDistributionTokens([
      'checkout',
      'service.beta.kubernetes.io/aws-load-balancer-type: nlb',
    ]);

    // Act
    const agentTags = tokens.map((token) => agentTagForToken(token, PREFIX));

    // Assess
    expect(agentTags).toEqual(['service.iofog.org/tag: checkout']);
    expect(agentDistributionTokens(agentTags, PREFIX)).toEqual(['checkout']);
  });
});

describe('agentDistributionTokens: agent → services (fog reconcile)', () => {
  it.each<[string, string[], string[]]>([
    [
      'seed Agent YAML: keeps the distribution tag, ignores the generic tag',
      ['service.iofog.org/tag: checkout', 'genertic-agent-tag'],
      ['checkout'],
    ],
    ['all is a token', ['service.iofog.org/tag: all'], ['all']],
    ['trims the text after the first colon', ['service.iofog.org/tag:   checkout  '], ['checkout']],
    [
      'keeps the text after the first colon only (later colons are part of the token)',
      ['service.iofog.org/tag: a:b'],
      ['a:b'],
    ],
    ['no space after the colon selects nothing (Spec decision 1)', ['service.iofog.org/tag:checkout'], []],
    ['the prefix is required', ['checkout'], []],
    ['a different prefix selects nothing', ['example.com/tag: checkout'], []],
    ['an empty token selects nothing', ['service.iofog.org/tag: '], []],
    [
      'several tokens, duplicates collapse',
      [
        'service.iofog.org/tag: checkout',
        'service.iofog.org/tag: payments',
        'service.iofog.org/tag: checkout',
      ],
      ['checkout', 'payments'],
    ],
  ])('%s', (_case, agentTags, tokens) => {
    // Act / Assess
    expect(agentDistributionTokens(agentTags, PREFIX)).toEqual(tokens);
  });

  it('follows a configured SERVICE_ANNOTATION_TAG prefix', () => {
    // Prepare
    const prefix = 'datasance.com/service-tag';
    const agentTags = ['datasance.com/service-tag: payments', 'service.iofog.org/tag: checkout'];

    // Act
    const selected = selectedBy(agentTags, prefix);

    // Assess
    expect(selected).toEqual(['payments']);
  });
});

describe('agentSelectsService', () => {
  it.each<[string[], string[], boolean]>([
    [['checkout'], ['checkout'], true],
    [['checkout'], ['payments'], false],
    [['all'], [], true],
    [['all'], ['payments'], true],
    [['checkout', 'payments'], ['payments'], true],
    [[], ['checkout'], false],
    // a service tag with ':' is an annotation only, even when the agent token spells it
    [
      ['service.beta.kubernetes.io/aws-load-balancer-type: nlb'],
      ['service.beta.kubernetes.io/aws-load-balancer-type: nlb'],
      false,
    ],
    [['env=prod'], ['env=prod'], false],
  ])('agent tokens %j, service tags %j → %s', (agentTokens, serviceTags, selected) => {
    // Act / Assess
    expect(agentSelectsService(agentTokens, serviceTags)).toBe(selected);
  });
});

describe('nearMissDistributionTags (Spec decision 1: warn about tags that select nothing)', () => {
  it.each<[string[], string[]]>([
    [['service.iofog.org/tag:checkout'], ['service.iofog.org/tag:checkout']],
    [['service.iofog.org/tag: checkout', 'genertic-agent-tag'], []],
    [['service.iofog.org/tag: all'], []],
    [
      ['service.iofog.org/tag: checkout', 'service.iofog.org/tag:all', 'checkout'],
      ['service.iofog.org/tag:all'],
    ],
  ])('agent tags %j → near misses %j', (agentTags, nearMisses) => {
    // Act / Assess
    expect(nearMissDistributionTags(agentTags, PREFIX)).toEqual(nearMisses);
  });
});
