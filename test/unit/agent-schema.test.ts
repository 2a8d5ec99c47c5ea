import { describe, expect, it } from 'vitest';
import {
  createAgentBody,
  DEFAULT_ROUTER_PORTS,
  parseCreateAgentBody,
  parsePatchAgentBody,
  ROUTER_MODES,
} from '../../shared/domain/agent-schema.js';
import { parseBody } from '../../shared/domain/validation.js';
import { ValidationError } from '../../shared/errors.js';

/** Runs `act`, expecting a ValidationError with exactly `message`. */
function expectValidationError(act: () => unknown, message: string): void {
  let thrown: unknown;
  try {
    act();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ValidationError);
  expect((thrown as ValidationError).message).toBe(message);
}

// The seed's Edgelet node agent example: metadata.name test-1 with one distribution tag and one generic tag.
const test1 = {
  name: 'test-1',
  tags: ['service.iofog.org/tag: checkout', 'genertic-agent-tag'],
};

describe('agent schema constants', () => {
  it('knows the router modes none, edge and interior', () => {
    // Act / Assess
    expect([...ROUTER_MODES]).toEqual(['none', 'edge', 'interior']);
  });

  it('defaults the router ports', () => {
    // Act / Assess
    expect(DEFAULT_ROUTER_PORTS).toEqual({
      messagingPort: 5671,
      interRouterPort: 55671,
      edgeRouterPort: 45671,
    });
  });

  it.each(['isActivated', 'dockerPruningFrequency', 'logLevel', 'colour'])(
    'ignores %s and reports it as an unknown field (Spec decision 5, warn mode)',
    (field) => {
      // Act
      const parsed = parseBody(createAgentBody, { ...test1, [field]: 1 });

      // Assess
      expect(parsed).toStrictEqual({ value: test1, unknownFields: [field] });
    },
  );

  it('takes potctl fogType as the declared architecture', () => {
    // Act / Assess
    expect(parseCreateAgentBody({ ...test1, fogType: 2 })).toStrictEqual({ ...test1, fogType: 2 });
  });
});

describe('parseCreateAgentBody', () => {
  it('accepts the seed agent test-1 with its tags as written', () => {
    // Act
    const body = parseCreateAgentBody(test1);

    // Assess
    expect(body).toStrictEqual({
      name: 'test-1',
      tags: ['service.iofog.org/tag: checkout', 'genertic-agent-tag'],
    });
  });

  it.each([...ROUTER_MODES])('accepts routerMode %s', (routerMode) => {
    // Act / Assess
    expect(parseCreateAgentBody({ ...test1, routerMode }).routerMode).toBe(routerMode);
  });

  it('keeps the NATS fields and drops the reference fields fogbridge does not model (Spec decision 5)', () => {
    // Prepare
    const body = {
      ...test1,
      fogType: 0,
      isActivated: true,
      natsMode: 'leaf',
      natsServerPort: 4222,
      natsLeafPort: 7422,
      natsClusterPort: 6222,
      jsStorageSize: '10GB',
      upstreamNatsServers: ['default-nats-hub'],
    };

    // Act
    const parsed = parseCreateAgentBody(body);

    // Assess
    expect(parsed).toStrictEqual({
      name: 'test-1',
      tags: ['service.iofog.org/tag: checkout', 'genertic-agent-tag'],
      fogType: 0,
      natsMode: 'leaf',
      natsServerPort: 4222,
      natsLeafPort: 7422,
      natsClusterPort: 6222,
      jsStorageSize: '10GB',
      upstreamNatsServers: ['default-nats-hub'],
    });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a NATS mode it does not have', { natsMode: 'hub' }, "Field 'natsMode'"],
    [
      'a Kubernetes quantity as a store size',
      { jsStorageSize: '1Gi' },
      'must be a size like 10g, 512m or 1t',
    ],
    ['a NATS port out of range', { natsClusterPort: 70000 }, "Field 'natsClusterPort'"],
  ])('rejects %s', (_case, fields, message) => {
    // Act / Assess
    expect(() => parseCreateAgentBody({ ...test1, ...fields })).toThrow(message);
  });

  it('keeps router fields', () => {
    // Prepare
    const body = {
      ...test1,
      host: '198.51.100.20',
      routerMode: 'interior',
      messagingPort: 5671,
      interRouterPort: 55671,
      edgeRouterPort: 45671,
      upstreamRouters: ['default-router'],
      uuid: 'fog-a',
    };

    // Act
    const parsed = parseCreateAgentBody(body);

    // Assess
    expect(parsed).toStrictEqual(body);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'fogType outside 0-4',
      { fogType: 7 },
      "Field 'fogType' must be an architecture type from 0 to 4 (1 amd64, 2 arm64, 3 riscv64, 4 arm; 0 unknown), got 7",
    ],
    [
      'routerMode outside the enum',
      { routerMode: 'hub' },
      `Field 'routerMode' is not one of enum values: none,edge,interior (got "hub")`,
    ],
    [
      'messagingPort 0',
      { messagingPort: 0 },
      "Field 'messagingPort' must be an integer between 1 and 65535, got 0",
    ],
    [
      'edgeRouterPort 70000',
      { edgeRouterPort: 70000 },
      "Field 'edgeRouterPort' must be an integer between 1 and 65535, got 70000",
    ],
    [
      'a host with a space',
      { host: 'bad host' },
      `Field 'host' must be a DNS name or an IP address, got "bad host"`,
    ],
    ['a blank name', { name: ' ' }, `Field 'name' must not be empty, got " "`],
    ['tags as a string', { tags: 'checkout' }, `Field 'tags' must be an array, got "checkout"`],
    ['an empty tag', { tags: [''] }, `Field 'tags.0' must not be empty, got ""`],
    [
      'a uuid starting with a dash',
      { uuid: '-fog' },
      `Field 'uuid' must be 1-64 letters, digits or dashes, got "-fog"`,
    ],
  ])('rejects %s', (_case, change, message) => {
    // Act / Assess
    expectValidationError(() => parseCreateAgentBody({ ...test1, ...change }), message);
  });

  it('rejects a body without name', () => {
    // Act / Assess
    expectValidationError(
      () => parseCreateAgentBody({ tags: test1.tags }),
      "Required field 'name' is missing",
    );
  });
});

describe('parsePatchAgentBody', () => {
  it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    ['an empty body', {}, {}],
    ['new tags only', { tags: ['service.iofog.org/tag: all'] }, { tags: ['service.iofog.org/tag: all'] }],
    ['an unknown field only (ignored)', { isActivated: true }, {}],
    ['a NATS mode', { natsMode: 'server' }, { natsMode: 'server' }],
  ])('keeps %s as sent', (_case, body, parsed) => {
    // Act / Assess
    expect(parsePatchAgentBody(body)).toStrictEqual(parsed);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['uuid', { uuid: 'fog-b' }, "Field 'uuid' cannot be changed"],
    [
      'routerMode outside the enum',
      { routerMode: 'Edge' },
      `Field 'routerMode' is not one of enum values: none,edge,interior (got "Edge")`,
    ],
  ])('rejects %s', (_case, body, message) => {
    // Act / Assess
    expectValidationError(() => parsePatchAgentBody(body), message);
  });
});
