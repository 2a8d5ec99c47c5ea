import { describe, expect, it } from 'vitest';
import {
  type CreateServiceBody,
  createServiceBody,
  parseCreateServiceBody,
  parsePatchServiceBody,
  parseServiceDocument,
  parseServiceYaml,
  toServiceSpec,
} from '../../shared/domain/service-schema.js';
import { parseBody } from '../../shared/domain/validation.js';
import { ValidationError } from '../../shared/errors.js';
import { checkoutKubernetesYaml, checkoutYaml, paymentsYaml } from '../fixtures/seed-000.js';

// The three YAML documents of the seed, verbatim.
const REMOTE_YAML = checkoutYaml;
const KUBERNETES_YAML = checkoutKubernetesYaml;
const K8S_TYPE_YAML = paymentsYaml;

const RESERVED_NAMES = [
  'controller',
  'router',
  'router-internal',
  'docker',
  'podman',
  'kubernetes',
  'nats',
  'nats-headless',
  'nats-server',
];

const RESERVED_MESSAGE =
  'is a reserved name (controller, router, router-internal, docker, podman, kubernetes, nats, nats-headless, nats-server)';
const DNS_MESSAGE = 'must be a DNS label (^[a-z0-9]([a-z0-9-]*[a-z0-9])?$, at most 63 characters)';
const PORT_MESSAGE = 'must be an integer between 1 and 65535';

/** A variant of a seed document with one line replaced; fails loudly if the line is not there. */
function edit(document: string, line: string, replacement: string): string {
  if (!document.includes(line)) throw new Error(`test setup: ${JSON.stringify(line)} not in document`);
  return document.replace(line, replacement);
}

/** Runs `act`, expecting a ValidationError with exactly `message`. */
function expectValidationError(act: () => unknown, message: string): void {
  let thrown: unknown;
  try {
    act();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ValidationError);
  expect((thrown as ValidationError).name).toBe('ValidationError');
  expect((thrown as ValidationError).message).toBe(message);
}

describe('parseServiceYaml: the seed documents', () => {
  it('parses the remote control plane example', () => {
    // Act
    const body = parseServiceYaml(REMOTE_YAML);

    // Assess
    expect(body).toEqual({
      name: 'checkout',
      tags: ['checkout'],
      type: 'microservice',
      resource: 'orders/checkout',
      targetPort: 8080,
      defaultBridge: 'default-router',
    });
  });

  it('parses the Kubernetes control plane example, keeping the annotation tag verbatim', () => {
    // Act
    const body = parseServiceYaml(KUBERNETES_YAML);

    // Assess
    expect(body).toEqual({
      name: 'checkout',
      tags: ['checkout', 'service.beta.kubernetes.io/aws-load-balancer-type: nlb'],
      type: 'microservice',
      resource: 'orders/checkout',
      targetPort: 8080,
      servicePort: 80,
      k8sType: 'LoadBalancer',
      defaultBridge: 'default-router',
    });
  });

  it('parses the type: k8s example', () => {
    // Act
    const body = parseServiceYaml(K8S_TYPE_YAML);

    // Assess
    expect(body).toEqual({
      name: 'payments',
      tags: ['payments'],
      type: 'k8s',
      resource: 'payments.payments.svc.cluster.local',
      targetPort: 8080,
      defaultBridge: 'default-router',
    });
  });

  it.each([
    ['another apiVersion', edit(REMOTE_YAML, 'apiVersion: iofog.org/v3', 'apiVersion: datasance.com/v3')],
    ['no apiVersion', edit(REMOTE_YAML, 'apiVersion: iofog.org/v3\n', '')],
  ])('does not check apiVersion (%s)', (_case, yaml) => {
    // Act / Assess
    expect(parseServiceYaml(yaml).name).toBe('checkout');
  });

  it('makes metadata.tags and spec.defaultBridge optional', () => {
    // Prepare
    const yaml = `kind: Service
metadata:
  name: vendor
spec:
  type: external
  resource: 203.0.113.10
  targetPort: 443
`;

    // Act
    const body = parseServiceYaml(yaml);

    // Assess
    expect(body).toEqual({ name: 'vendor', type: 'external', resource: '203.0.113.10', targetPort: 443 });
  });

  it.each<[string, string]>([
    ['microservice', 'orders/checkout'],
    ['microservice', '11111111-1111-1111-1111-111111111111'],
    ['agent', 'fog-a'],
    ['k8s', 'payments.payments.svc.cluster.local'],
    ['external', '203.0.113.10'],
  ])('accepts spec.type %s with resource %s', (type, resource) => {
    // Prepare
    const yaml = edit(
      edit(REMOTE_YAML, 'type: microservice', `type: ${type}`),
      'resource: orders/checkout',
      `resource: ${resource}`,
    );

    // Act
    const body = parseServiceYaml(yaml);

    // Assess
    expect([body.type, body.resource]).toEqual([type, resource]);
  });

  it.each(['LoadBalancer', 'ClusterIP', 'NodePort'])('accepts spec.k8sType %s', (k8sType) => {
    // Act / Assess
    expect(
      parseServiceYaml(edit(KUBERNETES_YAML, 'k8sType: LoadBalancer', `k8sType: ${k8sType}`)).k8sType,
    ).toBe(k8sType);
  });

  it.each<[string, number]>([
    ['1', 1],
    ['65535', 65535],
    ['"8080"', 8080],
  ])('accepts spec.targetPort %s as %d', (written, port) => {
    // Act / Assess
    expect(parseServiceYaml(edit(REMOTE_YAML, 'targetPort: 8080', `targetPort: ${written}`)).targetPort).toBe(
      port,
    );
  });

  it('accepts a single document that starts with ---', () => {
    // Act / Assess
    expect(parseServiceYaml(`---\n${REMOTE_YAML}`).name).toBe('checkout');
  });

  it('accepts a small, legitimate alias', () => {
    // Prepare
    const yaml = edit(
      edit(KUBERNETES_YAML, 'targetPort: 8080', 'targetPort: &port 8080'),
      'servicePort: 80',
      'servicePort: *port',
    );

    // Act
    const body = parseServiceYaml(yaml);

    // Assess
    expect([body.targetPort, body.servicePort]).toEqual([8080, 8080]);
  });
});

describe('parseServiceYaml: metadata.name', () => {
  it.each(RESERVED_NAMES)('rejects the reserved name %s', (name) => {
    // Act / Assess
    expectValidationError(
      () => parseServiceYaml(edit(REMOTE_YAML, 'name: checkout', `name: ${name}`)),
      `Field 'metadata.name' ${RESERVED_MESSAGE}, got "${name}"`,
    );
  });

  it.each(['Checkout', '-checkout', 'checkout-', 'check_out', 'check.out', 'check out', 'a'.repeat(64)])(
    'rejects %j, which is not a DNS label',
    (name) => {
      // Act / Assess
      expectValidationError(
        () => parseServiceYaml(edit(REMOTE_YAML, 'name: checkout', `name: "${name}"`)),
        `Field 'metadata.name' ${DNS_MESSAGE}, got "${name}"`,
      );
    },
  );

  it.each(['a', '0', 'ssh', 'check-out-2', 'router-a', 'nats2', 'a'.repeat(63)])(
    'accepts the DNS label %j',
    (name) => {
      // Act / Assess
      expect(parseServiceYaml(edit(REMOTE_YAML, 'name: checkout', `name: "${name}"`)).name).toBe(name);
    },
  );

  it('rejects a name that is not a string', () => {
    // Act / Assess
    expectValidationError(
      () => parseServiceYaml(edit(REMOTE_YAML, 'name: checkout', 'name: 123')),
      "Field 'metadata.name' must be a string, got 123",
    );
  });
});

describe('parseServiceYaml: field errors name the field and the value', () => {
  it.each<[string, string, string, string]>([
    ['targetPort 0', 'targetPort: 8080', 'targetPort: 0', `Field 'spec.targetPort' ${PORT_MESSAGE}, got 0`],
    [
      'targetPort 70000',
      'targetPort: 8080',
      'targetPort: 70000',
      `Field 'spec.targetPort' ${PORT_MESSAGE}, got 70000`,
    ],
    [
      'targetPort 65536',
      'targetPort: 8080',
      'targetPort: 65536',
      `Field 'spec.targetPort' ${PORT_MESSAGE}, got 65536`,
    ],
    [
      'targetPort -1',
      'targetPort: 8080',
      'targetPort: -1',
      `Field 'spec.targetPort' ${PORT_MESSAGE}, got -1`,
    ],
    [
      'targetPort 80.5',
      'targetPort: 8080',
      'targetPort: 80.5',
      `Field 'spec.targetPort' ${PORT_MESSAGE}, got 80.5`,
    ],
    [
      'targetPort "http"',
      'targetPort: 8080',
      'targetPort: http',
      `Field 'spec.targetPort' must be a number, got "http"`,
    ],
    ['servicePort 0', 'servicePort: 80', 'servicePort: 0', `Field 'spec.servicePort' ${PORT_MESSAGE}, got 0`],
    [
      'servicePort 70000',
      'servicePort: 80',
      'servicePort: 70000',
      `Field 'spec.servicePort' ${PORT_MESSAGE}, got 70000`,
    ],
    [
      'type outside the enum',
      'type: microservice',
      'type: database',
      `Field 'spec.type' is not one of enum values: microservice,agent,k8s,external (got "database")`,
    ],
    [
      'type with the wrong case',
      'type: microservice',
      'type: Microservice',
      `Field 'spec.type' is not one of enum values: microservice,agent,k8s,external (got "Microservice")`,
    ],
    [
      'k8sType outside the enum',
      'k8sType: LoadBalancer',
      'k8sType: ExternalName',
      `Field 'spec.k8sType' is not one of enum values: LoadBalancer,ClusterIP,NodePort (got "ExternalName")`,
    ],
    [
      'empty resource',
      'resource: orders/checkout',
      'resource: ""',
      `Field 'spec.resource' must not be empty, got ""`,
    ],
    [
      'tags that are not a list',
      '  tags:\n    - checkout\n    # contains ":", so this is a Kubernetes annotation only, not a distribution tag\n    - "service.beta.kubernetes.io/aws-load-balancer-type: nlb"',
      '  tags: checkout',
      `Field 'metadata.tags' must be an array, got "checkout"`,
    ],
    [
      'a tag that is not a string',
      '    - checkout\n',
      '    - 42\n',
      `Field 'metadata.tags.0' must be a string, got 42`,
    ],
  ])('rejects %s', (_case, line, replacement, message) => {
    // Act / Assess
    expectValidationError(() => parseServiceYaml(edit(KUBERNETES_YAML, line, replacement)), message);
  });

  it.each<[string, string, string]>([
    ['metadata.name', '  name: checkout\n', "Required field 'metadata.name' is missing"],
    [
      'spec.resource',
      '  resource: orders/checkout    # <application>/<microservice>, or a microservice uuid\n',
      "Required field 'spec.resource' is missing",
    ],
    ['spec.targetPort', '  targetPort: 8080\n', "Required field 'spec.targetPort' is missing"],
    ['spec.type', '  type: microservice\n', "Required field 'spec.type' is missing"],
  ])('rejects a document without %s', (_field, line, message) => {
    // Act / Assess
    expectValidationError(() => parseServiceYaml(edit(REMOTE_YAML, line, '')), message);
  });
});

describe('parseServiceYaml: unknown and assigned fields', () => {
  it('rejects spec.bridgePort: it is assigned, not accepted from YAML', () => {
    // Prepare
    const yaml = edit(REMOTE_YAML, '  targetPort: 8080\n', '  targetPort: 8080\n  bridgePort: 10024\n');

    // Act / Assess
    expectValidationError(
      () => parseServiceYaml(yaml),
      "Field 'spec.bridgePort' is assigned by the controller and cannot be set, got 10024",
    );
  });

  it.each<[string, string, string, string]>([
    [
      'spec.tags (tags live under metadata.tags, not spec)',
      '  targetPort: 8080\n',
      '  targetPort: 8080\n  tags:\n    - checkout\n',
      'spec.tags',
    ],
    ['spec.hostPort', '  targetPort: 8080\n', '  targetPort: 8080\n  hostPort: 80\n', 'spec.hostPort'],
    [
      'spec.serviceEndpoint (assigned)',
      '  targetPort: 8080\n',
      '  targetPort: 8080\n  serviceEndpoint: 198.51.100.7\n',
      'spec.serviceEndpoint',
    ],
    [
      'spec.provisioningStatus (assigned)',
      '  targetPort: 8080\n',
      '  targetPort: 8080\n  provisioningStatus: ready\n',
      'spec.provisioningStatus',
    ],
    [
      'metadata.labels',
      '  name: checkout\n',
      '  name: checkout\n  labels:\n    app: checkout\n',
      'metadata.labels',
    ],
    // Spec decision 5: unknown fields are accepted, ignored and reported (Kubernetes' warn mode).
    ['a top-level field', 'kind: Service\n', 'kind: Service\nstatus:\n  ready: true\n', 'status'],
  ])('ignores the unknown field %s and reports it', (_case, line, replacement, field) => {
    // Act
    const parsed = parseServiceDocument(edit(REMOTE_YAML, line, replacement));

    // Assess
    expect(parsed).toStrictEqual({ value: parseServiceYaml(REMOTE_YAML), unknownFields: [field] });
  });
});

describe('parseServiceYaml: document shape', () => {
  it.each<[string, string, string]>([
    ['missing kind', edit(REMOTE_YAML, 'kind: Service\n', ''), 'Invalid YAML format: missing kind field'],
    ['empty document', '', 'Invalid YAML format: missing kind field'],
    ['a list instead of a mapping', '- kind: Service\n', 'Invalid YAML format: missing kind field'],
    ['wrong kind', edit(REMOTE_YAML, 'kind: Service', 'kind: Deployment'), 'Invalid kind "Deployment"'],
    [
      'kind with the wrong case',
      edit(REMOTE_YAML, 'kind: Service', 'kind: service'),
      'Invalid kind "service"',
    ],
    [
      'Kubernetes-style kind',
      edit(REMOTE_YAML, 'kind: Service', 'kind: Microservice'),
      'Invalid kind "Microservice"',
    ],
    [
      'missing metadata',
      edit(
        REMOTE_YAML,
        'metadata:\n  name: checkout\n  tags:\n    - checkout          # distribution token; matched against agent tags\n',
        '',
      ),
      'Invalid YAML format: missing metadata or spec',
    ],
    [
      'missing spec',
      `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: checkout
`,
      'Invalid YAML format: missing metadata or spec',
    ],
    [
      'metadata that is not a mapping',
      `kind: Service
metadata: checkout
spec:
  type: external
  resource: 203.0.113.10
  targetPort: 443
`,
      `Field 'metadata' must be an object, got "checkout"`,
    ],
  ])('rejects %s', (_case, yaml, message) => {
    // Act / Assess
    expectValidationError(() => parseServiceYaml(yaml), message);
  });

  it('rejects a multi-document YAML', () => {
    // Prepare
    const yaml = `${REMOTE_YAML}---\n${K8S_TYPE_YAML}`;

    // Act / Assess
    expectValidationError(
      () => parseServiceYaml(yaml),
      'Error parsing YAML: expected one document, found several',
    );
  });

  it('rejects a YAML anchor/alias bomb', () => {
    // Prepare
    const yaml = `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
${REMOTE_YAML}`;

    // Act / Assess
    expectValidationError(
      () => parseServiceYaml(yaml),
      'Error parsing YAML: Excessive alias count indicates a resource exhaustion attack',
    );
  });

  it.each<[string, string, string]>([
    [
      'duplicate keys',
      edit(REMOTE_YAML, 'kind: Service\n', 'kind: Service\nkind: Service\n'),
      'Error parsing YAML: Map keys must be unique at line 3, column 1',
    ],
    [
      'an unclosed flow sequence',
      edit(REMOTE_YAML, '  tags:\n', '  tags: [checkout\n'),
      'Error parsing YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 7, column 1',
    ],
  ])('rejects malformed YAML: %s', (_case, yaml, message) => {
    // Act / Assess
    expectValidationError(() => parseServiceYaml(yaml), message);
  });
});

describe('toServiceSpec', () => {
  it('fills defaultBridge "default-router" and an empty tag list', () => {
    // Prepare
    const body: CreateServiceBody = {
      name: 'vendor',
      type: 'external',
      resource: '203.0.113.10',
      targetPort: 443,
    };

    // Act
    const spec = toServiceSpec(body);

    // Assess
    expect(spec).toStrictEqual({
      name: 'vendor',
      type: 'external',
      resource: '203.0.113.10',
      targetPort: 443,
      servicePort: undefined,
      k8sType: undefined,
      defaultBridge: 'default-router',
      tags: [],
    });
  });

  it('keeps everything the Kubernetes example declares', () => {
    // Act
    const spec = toServiceSpec(parseServiceYaml(KUBERNETES_YAML));

    // Assess
    expect(spec).toStrictEqual({
      name: 'checkout',
      type: 'microservice',
      resource: 'orders/checkout',
      targetPort: 8080,
      servicePort: 80,
      k8sType: 'LoadBalancer',
      defaultBridge: 'default-router',
      tags: ['checkout', 'service.beta.kubernetes.io/aws-load-balancer-type: nlb'],
    });
  });

  it('keeps an upstream router uuid as defaultBridge', () => {
    // Prepare
    const yaml = edit(REMOTE_YAML, 'defaultBridge: default-router', 'defaultBridge: 0f2c9a1e-upstream');

    // Act
    const spec = toServiceSpec(parseServiceYaml(yaml));

    // Assess
    expect(spec.defaultBridge).toBe('0f2c9a1e-upstream');
  });
});

describe('parseCreateServiceBody (POST /api/v3/services JSON)', () => {
  const checkout = {
    name: 'checkout',
    tags: ['checkout', 'service.beta.kubernetes.io/aws-load-balancer-type: nlb'],
    type: 'microservice',
    resource: 'orders/checkout',
    targetPort: 8080,
    servicePort: 80,
    k8sType: 'LoadBalancer',
    defaultBridge: 'default-router',
  };

  it('accepts the seed checkout service', () => {
    // Act
    const body = parseCreateServiceBody(checkout);

    // Assess
    expect(body).toStrictEqual(checkout);
  });

  it.each<[string, Record<string, unknown>, string[]]>([
    ['an unknown field', { colour: 'blue' }, ['colour']],
    ['the assigned serviceEndpoint', { serviceEndpoint: '198.51.100.7' }, ['serviceEndpoint']],
    ['the assigned provisioningStatus', { provisioningStatus: 'ready' }, ['provisioningStatus']],
  ])('ignores %s and reports it (Spec decision 5, warn mode)', (_case, change, unknownFields) => {
    // Act
    const parsed = parseBody(createServiceBody, { ...checkout, ...change });

    // Assess
    expect(parsed).toStrictEqual({ value: checkout, unknownFields });
  });

  it('accepts the numeric string "8080" as port 8080', () => {
    // Act
    const body = parseCreateServiceBody({ ...checkout, targetPort: '8080', servicePort: '80' });

    // Assess
    expect([body.targetPort, body.servicePort]).toEqual([8080, 80]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['targetPort 0', { targetPort: 0 }, `Field 'targetPort' ${PORT_MESSAGE}, got 0`],
    ['targetPort 70000', { targetPort: 70000 }, `Field 'targetPort' ${PORT_MESSAGE}, got 70000`],
    ['targetPort "http"', { targetPort: 'http' }, `Field 'targetPort' must be a number, got "http"`],
    ['targetPort "70000"', { targetPort: '70000' }, `Field 'targetPort' ${PORT_MESSAGE}, got "70000"`],
    ['servicePort 0', { servicePort: 0 }, `Field 'servicePort' ${PORT_MESSAGE}, got 0`],
    ['servicePort 70000', { servicePort: 70000 }, `Field 'servicePort' ${PORT_MESSAGE}, got 70000`],
    ['reserved name', { name: 'nats-server' }, `Field 'name' ${RESERVED_MESSAGE}, got "nats-server"`],
    ['non-DNS name', { name: 'Check_Out' }, `Field 'name' ${DNS_MESSAGE}, got "Check_Out"`],
    [
      'type outside the enum',
      { type: 'http' },
      `Field 'type' is not one of enum values: microservice,agent,k8s,external (got "http")`,
    ],
    [
      'k8sType outside the enum',
      { k8sType: 'Ingress' },
      `Field 'k8sType' is not one of enum values: LoadBalancer,ClusterIP,NodePort (got "Ingress")`,
    ],
    ['tags as a string', { tags: 'checkout' }, `Field 'tags' must be an array, got "checkout"`],
    [
      'assigned bridgePort',
      { bridgePort: 10024 },
      "Field 'bridgePort' is assigned by the controller and cannot be set, got 10024",
    ],
  ])('rejects %s', (_case, change, message) => {
    // Act / Assess
    expectValidationError(() => parseCreateServiceBody({ ...checkout, ...change }), message);
  });

  it.each(['name', 'resource', 'targetPort'])('rejects a body without %s', (field) => {
    // Prepare
    const body: Record<string, unknown> = { ...checkout };
    delete body[field];

    // Act / Assess
    expectValidationError(() => parseCreateServiceBody(body), `Required field '${field}' is missing`);
  });
});

describe('parsePatchServiceBody (PATCH /api/v3/services/{name} JSON, Spec decision 6)', () => {
  it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    ['an empty body', {}, {}],
    ['only tags (replaces the whole list)', { tags: ['payments'] }, { tags: ['payments'] }],
    ['only targetPort', { targetPort: 9090 }, { targetPort: 9090 }],
    ['only resource', { resource: 'orders/checkout-v2' }, { resource: 'orders/checkout-v2' }],
  ])('keeps %s as sent, without defaults', (_case, body, parsed) => {
    // Act / Assess
    expect(parsePatchServiceBody(body)).toStrictEqual(parsed);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'assigned bridgePort',
      { bridgePort: 10025 },
      "Field 'bridgePort' is assigned by the controller and cannot be set, got 10025",
    ],
    ['reserved name', { name: 'kubernetes' }, `Field 'name' ${RESERVED_MESSAGE}, got "kubernetes"`],
    ['targetPort 0', { targetPort: 0 }, `Field 'targetPort' ${PORT_MESSAGE}, got 0`],
    ['servicePort 70000', { servicePort: 70000 }, `Field 'servicePort' ${PORT_MESSAGE}, got 70000`],
    [
      'type outside the enum',
      { type: 'database' },
      `Field 'type' is not one of enum values: microservice,agent,k8s,external (got "database")`,
    ],
  ])('rejects %s', (_case, body, message) => {
    // Act / Assess
    expectValidationError(() => parsePatchServiceBody(body), message);
  });
});
