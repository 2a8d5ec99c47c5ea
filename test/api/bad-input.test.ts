import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { allRoutes } from '../../functions/api/openapi.js';
import { checkoutYaml } from '../fixtures/seed-000.js';
import { CHECKOUT_MICROSERVICE, createAgent, createSeedWorld, fabricSettled } from '../fixtures/world.js';
import { type ApiClient, type ApiResponse, eventually } from '../support/client.js';
import { routersQuiescent } from '../support/quiescent.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';

/**
 * Bad input through real HTTP against the local runtime: every case gets a documented 4xx whose body is
 * exactly `{name, message}`, the message names the field and the offending value, and nothing is written.
 */

type BadRequest =
  | { method: string; path: string; json: unknown }
  | { method: string; path: string; yaml: string; field?: string }
  | { method: string; path: string; raw: string; contentType: string; latin1?: boolean };

interface BadInputCase {
  title: string;
  request: BadRequest;
  expectedStatus: number;
  expectedBody: { name: string; message: string | RegExp };
}

let t: TestRuntime;
let api: ApiClient;

const SERVICES = '/api/v3/services';
const SERVICES_YAML = '/api/v3/services/yaml';
const RESERVED =
  'controller, router, router-internal, docker, podman, kubernetes, nats, nats-headless, nats-server';
const DNS_LABEL_RULE =
  'must be a DNS label \\(\\^\\[a-z0-9\\]\\(\\[a-z0-9-\\]\\*\\[a-z0-9\\]\\)\\?\\$, at most 63 characters\\)';

/** A valid JSON create body; each case breaks one thing. */
const validJson = (overrides: Record<string, unknown> = {}) => ({
  name: 'orders-api',
  type: 'microservice',
  resource: 'orders/checkout',
  targetPort: 8080,
  ...overrides,
});

/** A valid `kind: Service` document; `undefined` drops a key. */
const serviceYaml = (
  spec: Record<string, unknown> = {},
  metadata: Record<string, unknown> = {},
  top: Record<string, unknown> = {},
) =>
  stringify({
    apiVersion: 'iofog.org/v3',
    kind: 'Service',
    metadata: { name: 'orders-api', tags: ['orders-api'], ...metadata },
    spec: {
      type: 'microservice',
      resource: 'orders/checkout',
      targetPort: 8080,
      defaultBridge: 'default-router',
      ...spec,
    },
    ...top,
  });

/** The checkout service as stored, written as a whole YAML document (for YAML PATCH cases). */
const checkoutPatchYaml = (spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}) =>
  serviceYaml(spec, { name: 'checkout', tags: ['checkout'], ...metadata });

const malformedYaml = `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: [orders-api
spec:
  type: microservice
  targetPort: 8080
`;

const duplicateKeyYaml = `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: orders-api
spec:
  type: microservice
  resource: orders/checkout
  targetPort: 8080
  targetPort: 9090
`;

const multiDocumentYaml = `${serviceYaml()}---\n${serviceYaml({}, { name: 'orders-api-2' })}`;

/** Nine levels of ten aliases each: 10^9 strings if expanded. */
const billionLaughsYaml = (() => {
  const levels = 'abcdefghi'.split('');
  const lines = ['apiVersion: iofog.org/v3', 'kind: Service', `lol0: &lol0 "lol"`];
  levels.forEach((_, index) => {
    const refs = Array.from({ length: 10 }, () => `*lol${index}`).join(', ');
    lines.push(`lol${index + 1}: &lol${index + 1} [${refs}]`);
  });
  lines.push(
    'metadata:',
    '  name: lol',
    '  tags: *lol9',
    'spec:',
    '  type: external',
    '  resource: lol.example.com',
    '  targetPort: 8080',
  );
  return `${lines.join('\n')}\n`;
})();

/** A valid document followed by padding: larger than the 64 KiB YAML limit. */
const oversizedYaml = `${serviceYaml({}, { name: 'oversized' })}# ${'x'.repeat(70 * 1024)}\n`;

/** A 3000-character identifier: longer than any store key may be. */
const LONG = 'a'.repeat(3000);
/** A JSON value nested 10,000 arrays deep (sent as text: serializing it would overflow the test's stack). */
const DEEP = `${'['.repeat(10_000)}"x"${']'.repeat(10_000)}`;

const rawJson = (method: string, path: string, raw: string): BadRequest => ({
  method,
  path,
  raw,
  contentType: 'application/json',
});

/** A multipart body written out by hand, so part names and repeats are exactly what a client chose. */
function multipartRequest(method: string, path: string, parts: { name: string; text: string }[]): BadRequest {
  const boundary = 'fogbridge-hostile';
  const raw = [
    ...parts.map(
      (part) =>
        `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"\r\n\r\n${part.text}\r\n`,
    ),
    `--${boundary}--\r\n`,
  ].join('');
  return { method, path, raw, contentType: `multipart/form-data; boundary=${boundary}` };
}

const cases: BadInputCase[] = [
  // --- YAML documents: structure -------------------------------------------------------------------
  {
    title: 'malformed YAML (unclosed flow sequence)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: malformedYaml },
    expectedStatus: 400,
    // the parser's reason and where it is: the line holding the unclosed `[` or the line after it
    expectedBody: {
      name: 'ValidationError',
      message: /^Error parsing YAML: Flow sequence .* end with a \] at line [45], column \d+/,
    },
  },
  {
    title: 'YAML with a duplicated key (spec.targetPort twice)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: duplicateKeyYaml },
    expectedStatus: 400,
    // the second `targetPort` is on line 9, column 3
    expectedBody: {
      name: 'ValidationError',
      message: /^Error parsing YAML: Map keys must be unique.* line 9, column 3/,
    },
  },
  {
    title: 'YAML without metadata',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({}, {}, { metadata: undefined }) },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: 'Invalid YAML format: missing metadata or spec' },
  },
  {
    title: 'YAML without spec',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({}, {}, { spec: undefined }) },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: 'Invalid YAML format: missing metadata or spec' },
  },
  {
    title: 'YAML without kind',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({}, {}, { kind: undefined }) },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: 'Invalid YAML format: missing kind field' },
  },
  {
    title: 'YAML whose metadata is a string',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({}, {}, { metadata: 'checkout' }) },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: `Field 'metadata' must be an object, got "checkout"` },
  },
  {
    title: 'YAML upload that is binary, not UTF-8 text',
    request: { method: 'POST', path: SERVICES_YAML, yaml: 'kind: Service\n\u0001\u0002\u0003' },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: 'Error parsing YAML: the document is not UTF-8 text' },
  },
  {
    title: 'YAML with the wrong kind (Deployment)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({}, {}, { kind: 'Deployment' }) },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: /^Invalid kind "?Deployment"?$/ },
  },
  {
    title: 'multi-document YAML',
    request: { method: 'POST', path: SERVICES_YAML, yaml: multiDocumentYaml },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: 'Error parsing YAML: expected one document, found several',
    },
  },
  {
    title: 'alias/anchor bomb (billion laughs)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: billionLaughsYaml },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: /^Error parsing YAML: Excessive alias count/ },
  },
  {
    title: 'YAML without spec.targetPort',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({ targetPort: undefined }) },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: "Required field 'spec.targetPort' is missing" },
  },
  {
    title: 'YAML with spec.bridgePort',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({ bridgePort: 10100 }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'spec.bridgePort' is assigned by the controller and cannot be set, got 10100",
    },
  },

  // --- names ---------------------------------------------------------------------------------------
  {
    title: 'reserved name router (YAML)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({}, { name: 'router' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'metadata.name' is a reserved name (${RESERVED}), got "router"`,
    },
  },
  {
    title: 'reserved name nats (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ name: 'nats' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'name' is a reserved name (${RESERVED}), got "nats"`,
    },
  },
  {
    title: 'invalid name Bad_Name (YAML)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({}, { name: 'Bad_Name' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: new RegExp(`^Field 'metadata\\.name' ${DNS_LABEL_RULE}, got "Bad_Name"$`),
    },
  },
  {
    title: 'invalid name of 64 characters (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ name: 'a'.repeat(64) }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: new RegExp(`^Field 'name' ${DNS_LABEL_RULE}, got "a{64}"$`),
    },
  },
  {
    title: 'invalid name with a leading dash (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ name: '-orders' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: new RegExp(`^Field 'name' ${DNS_LABEL_RULE}, got "-orders"$`),
    },
  },

  // --- ports and enums -----------------------------------------------------------------------------
  {
    title: 'targetPort 0 (YAML)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({ targetPort: 0 }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'spec.targetPort' must be an integer between 1 and 65535, got 0",
    },
  },
  {
    title: 'targetPort 70000 (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ targetPort: 70000 }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'targetPort' must be an integer between 1 and 65535, got 70000",
    },
  },
  {
    title: 'servicePort 70000 (YAML)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({ servicePort: 70000 }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'spec.servicePort' must be an integer between 1 and 65535, got 70000",
    },
  },
  {
    title: 'targetPort that is not a number (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ targetPort: '80a' }) },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: `Field 'targetPort' must be a number, got "80a"` },
  },
  {
    title: 'unknown type udp (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ type: 'udp' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'type' is not one of enum values: microservice,agent,k8s,external (got "udp")`,
    },
  },
  {
    title: 'unknown k8sType (YAML)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({ k8sType: 'ExternalName' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'spec.k8sType' is not one of enum values: LoadBalancer,ClusterIP,NodePort (got "ExternalName")`,
    },
  },

  // --- resources that do not resolve -----------------------------------------------------------------
  {
    title: 'unknown application nope/checkout (YAML)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({ resource: 'nope/checkout' }) },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: `Field 'spec.resource': application "nope" not found` },
  },
  {
    title: 'unknown microservice orders/nope (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ resource: 'orders/nope' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'resource': microservice "orders/nope" not found`,
    },
  },
  {
    title: 'unknown agent ghost (type agent, JSON)',
    request: {
      method: 'POST',
      path: SERVICES,
      json: validJson({ type: 'agent', resource: 'ghost', targetPort: 22 }),
    },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: `Field 'resource': agent "ghost" not found` },
  },
  {
    title: 'agent with router mode none as backend (JSON)',
    request: {
      method: 'POST',
      path: SERVICES,
      json: validJson({ type: 'agent', resource: 'dumb', targetPort: 22 }),
    },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'resource': agent "dumb", whose router mode is none; a TCP bridge service requires a router on the agent`,
    },
  },
  {
    title: 'microservice on an agent with router mode none (YAML)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({ resource: 'orders/legacy' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: /^Field 'spec\.resource': microservice "orders\/legacy" .*"dumb".* router mode is none/,
    },
  },
  {
    title: 'type k8s on a remote control plane (YAML)',
    request: {
      method: 'POST',
      path: SERVICES_YAML,
      yaml: serviceYaml({ type: 'k8s', resource: 'payments.payments.svc.cluster.local' }),
    },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'spec.type' is "k8s", which is allowed only when the control plane is Kubernetes (CONTROL_PLANE=kubernetes)`,
    },
  },
  {
    title: 'external with defaultBridge other than default-router (JSON)',
    request: {
      method: 'POST',
      path: SERVICES,
      json: validJson({
        type: 'external',
        resource: '203.0.113.10',
        targetPort: 443,
        defaultBridge: 'fog-a',
      }),
    },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'defaultBridge' must be default-router for type external, got "fog-a"`,
    },
  },
  {
    title: 'external with a resource that is not a host (JSON)',
    request: {
      method: 'POST',
      path: SERVICES,
      json: validJson({ type: 'external', resource: 'not a host!', targetPort: 443 }),
    },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'resource' must be a DNS name or an IP address, got "not a host!"`,
    },
  },
  {
    title: 'microservice with defaultBridge that is not an upstream of its agent (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ defaultBridge: 'ghost-router' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'defaultBridge': "ghost-router" is not an upstream router of agent "fog-a" (upstreams: default-router)`,
    },
  },

  // --- duplicates ----------------------------------------------------------------------------------
  {
    title: 'duplicate name (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ name: 'checkout' }) },
    expectedStatus: 409,
    expectedBody: { name: 'ConflictError', message: 'Service with name checkout already exists' },
  },
  {
    title: 'duplicate name (YAML, the seed document again)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: checkoutYaml },
    expectedStatus: 409,
    expectedBody: { name: 'ConflictError', message: 'Service with name checkout already exists' },
  },

  // --- JSON bodies ---------------------------------------------------------------------------------
  {
    title: 'bridgePort in the JSON body',
    request: { method: 'POST', path: SERVICES, json: validJson({ bridgePort: 10100 }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'bridgePort' is assigned by the controller and cannot be set, got 10100",
    },
  },
  {
    title: 'invalid JSON body',
    request: {
      method: 'POST',
      path: SERVICES,
      raw: '{"name": "orders-api",',
      contentType: 'application/json',
    },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: /^Request body is not valid JSON: .+/ },
  },
  {
    title: 'empty JSON body',
    request: { method: 'POST', path: SERVICES, raw: '', contentType: 'application/json' },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: 'Request body is required (a JSON object)' },
  },
  {
    title: 'JSON body that is an array',
    request: { method: 'POST', path: SERVICES, json: [validJson()] },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: 'Request body must be a JSON object' },
  },
  {
    title: 'JSON route sent as text/plain',
    request: { method: 'POST', path: SERVICES, raw: JSON.stringify(validJson()), contentType: 'text/plain' },
    expectedStatus: 415,
    expectedBody: {
      name: 'UnsupportedMediaTypeError',
      message: 'Content-Type "text/plain" is not supported here; send application/json',
    },
  },

  // --- multipart uploads ---------------------------------------------------------------------------
  {
    title: 'YAML route sent as application/json',
    request: { method: 'POST', path: SERVICES_YAML, json: { service: serviceYaml() } },
    expectedStatus: 415,
    expectedBody: {
      name: 'UnsupportedMediaTypeError',
      message:
        'Content-Type "application/json" is not supported here; send multipart/form-data (with a boundary) and the YAML in field \'service\'',
    },
  },
  {
    title: 'multipart without the field service (YAML sent as field file)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml(), field: 'file' },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: "Multipart field 'service' is required" },
  },
  {
    title: 'multipart/form-data without a boundary',
    request: { method: 'POST', path: SERVICES_YAML, raw: serviceYaml(), contentType: 'multipart/form-data' },
    expectedStatus: 415,
    expectedBody: { name: 'UnsupportedMediaTypeError', message: /Content-Type "multipart\/form-data"/ },
  },
  {
    title: 'multipart/form-data whose body is not multipart',
    request: {
      method: 'POST',
      path: SERVICES_YAML,
      raw: 'kind: Service\n',
      contentType: 'multipart/form-data; boundary=fogbridge',
    },
    // the media type is the supported one; the body is malformed, so 400, not 415
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: /multipart\/form-data/ },
  },

  // --- updates of the existing service checkout ------------------------------------------------------
  {
    title: 'YAML PATCH whose metadata.name differs from the path name',
    request: { method: 'PATCH', path: `${SERVICES_YAML}/checkout`, yaml: serviceYaml() },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Service name in YAML (orders-api) doesn't match endpoint path (checkout)",
    },
  },
  {
    title: 'YAML PATCH changing the immutable type',
    request: {
      method: 'PATCH',
      path: `${SERVICES_YAML}/checkout`,
      yaml: checkoutPatchYaml({ type: 'agent', resource: 'fog-a' }),
    },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'spec.type' cannot be changed (stored "microservice", got "agent"); delete and recreate the service`,
    },
  },
  {
    title: 'YAML PATCH changing the immutable defaultBridge',
    request: {
      method: 'PATCH',
      path: `${SERVICES_YAML}/checkout`,
      yaml: checkoutPatchYaml({ defaultBridge: 'ghost-router' }),
    },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'spec.defaultBridge' cannot be changed (stored "default-router", got "ghost-router"); delete and recreate the service`,
    },
  },
  {
    title: 'JSON PATCH changing the immutable type',
    request: { method: 'PATCH', path: `${SERVICES}/checkout`, json: { type: 'external' } },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'type' cannot be changed (stored "microservice", got "external"); delete and recreate the service`,
    },
  },
  {
    title: 'JSON PATCH changing the immutable defaultBridge',
    request: { method: 'PATCH', path: `${SERVICES}/checkout`, json: { defaultBridge: 'ghost-router' } },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'defaultBridge' cannot be changed (stored "default-router", got "ghost-router"); delete and recreate the service`,
    },
  },
  {
    title: 'JSON PATCH with a different name',
    request: { method: 'PATCH', path: `${SERVICES}/checkout`, json: { name: 'orders-api' } },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'name' ("orders-api") does not match the service in the path ("checkout"); a service cannot be renamed`,
    },
  },
  {
    title: 'JSON PATCH with targetPort 0',
    request: { method: 'PATCH', path: `${SERVICES}/checkout`, json: { targetPort: 0 } },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'targetPort' must be an integer between 1 and 65535, got 0",
    },
  },
  {
    title: 'JSON PATCH pointing at an unknown microservice',
    request: { method: 'PATCH', path: `${SERVICES}/checkout`, json: { resource: 'orders/nope' } },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'resource': microservice "orders/nope" not found`,
    },
  },
  {
    title: 'JSON PATCH with bridgePort',
    request: { method: 'PATCH', path: `${SERVICES}/checkout`, json: { bridgePort: 10100 } },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'bridgePort' is assigned by the controller and cannot be set, got 10100",
    },
  },
  {
    title: 'JSON PATCH with tags as a string',
    request: { method: 'PATCH', path: `${SERVICES}/checkout`, json: { tags: 'checkout' } },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: `Field 'tags' must be an array, got "checkout"` },
  },
  {
    title: 'JSON PATCH with defaultBridge null',
    request: { method: 'PATCH', path: `${SERVICES}/checkout`, json: { defaultBridge: null } },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: "Field 'defaultBridge' must be a string, got null" },
  },
  {
    title: 'JSON PATCH with a path name that is not valid URL encoding',
    request: { method: 'PATCH', path: `${SERVICES}/%E0%A4%A`, json: { targetPort: 9090 } },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Path parameter 'name' is not valid URL encoding: "%E0%A4%A"`,
    },
  },

  // --- missing services ----------------------------------------------------------------------------
  {
    title: 'GET of a missing service',
    request: { method: 'GET', path: `${SERVICES}/ghost`, json: undefined },
    expectedStatus: 404,
    expectedBody: { name: 'NotFoundError', message: 'Service with name ghost not found' },
  },
  {
    title: 'JSON PATCH of a missing service',
    request: { method: 'PATCH', path: `${SERVICES}/ghost`, json: { targetPort: 9090 } },
    expectedStatus: 404,
    expectedBody: { name: 'NotFoundError', message: 'Service with name ghost not found' },
  },
  {
    title: 'YAML PATCH of a missing service',
    request: { method: 'PATCH', path: `${SERVICES_YAML}/ghost`, yaml: serviceYaml({}, { name: 'ghost' }) },
    expectedStatus: 404,
    expectedBody: { name: 'NotFoundError', message: 'Service with name ghost not found' },
  },
  {
    title: 'DELETE of a missing service',
    request: { method: 'DELETE', path: `${SERVICES}/ghost`, json: undefined },
    expectedStatus: 404,
    expectedBody: { name: 'NotFoundError', message: 'Service with name ghost not found' },
  },
  {
    title: 'reconcile of a missing service',
    request: { method: 'POST', path: `${SERVICES}/ghost/reconcile`, json: undefined },
    expectedStatus: 404,
    expectedBody: { name: 'NotFoundError', message: 'Service with name ghost not found' },
  },

  // --- agents --------------------------------------------------------------------------------------
  {
    title: 'agent create with upstreamRouters naming an unknown agent',
    request: {
      method: 'POST',
      path: '/api/v3/iofog',
      json: { name: 'fog-z', host: '10.0.0.9', upstreamRouters: ['ghost'] },
    },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: `Field 'upstreamRouters': agent "ghost" not found` },
  },
  {
    title: 'agent create with an edge agent as upstream router',
    request: {
      method: 'POST',
      path: '/api/v3/iofog',
      json: { name: 'fog-z', host: '10.0.0.9', upstreamRouters: ['fog-a'] },
    },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'upstreamRouters': agent "fog-a" has router mode edge; an upstream router must be interior`,
    },
  },
  {
    title: 'agent PATCH to router mode none while it backs checkout',
    request: { method: 'PATCH', path: '/api/v3/iofog/fog-a', json: { routerMode: 'none' } },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'routerMode' cannot be "none": agent fog-a backs services checkout, and a TCP bridge service requires a router on the agent`,
    },
  },
  {
    title: 'DELETE of the agent that backs checkout',
    request: { method: 'DELETE', path: '/api/v3/iofog/fog-a', json: undefined },
    expectedStatus: 409,
    expectedBody: {
      name: 'ConflictError',
      message: 'Agent fog-a is used by services checkout; delete them first',
    },
  },
  {
    title: 'DELETE of the microservice that backs checkout',
    request: {
      method: 'DELETE',
      path: `/api/v3/microservices/${CHECKOUT_MICROSERVICE.uuid}`,
      json: undefined,
    },
    expectedStatus: 409,
    expectedBody: {
      name: 'ConflictError',
      message: 'Microservice orders/checkout backs services checkout; delete them first',
    },
  },

  // --- hostile documents and bodies -----------------------------------------------------------------
  {
    title: 'YAML nested 20,000 levels deep',
    request: {
      method: 'POST',
      path: SERVICES_YAML,
      yaml: `kind: Service\nmetadata:\n  name: deep\nspec: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`,
    },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: 'Error parsing YAML: nesting is 20000 levels deep; the limit is 32',
    },
  },
  {
    title: 'YAML upload in Latin-1 (not UTF-8)',
    request: {
      method: 'POST',
      path: SERVICES_YAML,
      raw: [
        '--fogbridge',
        'Content-Disposition: form-data; name="service"; filename="service.yaml"',
        'Content-Type: application/x-yaml',
        '',
        'kind: Service\nmetadata:\n  name: caf\u00e9\n',
        '--fogbridge--',
        '',
      ].join('\r\n'),
      contentType: 'multipart/form-data; boundary=fogbridge',
      latin1: true,
    },
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: 'Error parsing YAML: the document is not UTF-8 text' },
  },
  {
    title: 'unicode in the name (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ name: 'chëckout' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: new RegExp(`^Field 'name' ${DNS_LABEL_RULE}, got "chëckout"$`),
    },
  },
  {
    title: 'a control character in the name (YAML)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({}, { name: 'a\u0007b' }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: new RegExp(`^Field 'metadata.name' ${DNS_LABEL_RULE}, got "a\\\\u0007b"$`),
    },
  },
  {
    title: 'a control character in a tag (JSON)',
    request: { method: 'POST', path: SERVICES, json: validJson({ tags: ['ok', 'bad\u0000tag'] }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'tags.1' must not contain control characters, got "bad\\u0000tag"`,
    },
  },
  {
    title: 'a JSON body over the 256 KiB limit',
    request: {
      method: 'POST',
      path: SERVICES,
      json: validJson({ tags: Array.from({ length: 300 }, () => 'x'.repeat(1000)) }),
    },
    expectedStatus: 413,
    expectedBody: {
      name: 'PayloadTooLargeError',
      message: /^Request body is \d+ bytes; the limit is 262144 bytes$/,
    },
  },

  // --- hostile input: prototype keys, repeated parts, attacker-sized values ---------------------------
  ...['__proto__[]', 'constructor[]', 'toString[]', '__proto__'].map(
    (field): BadInputCase => ({
      title: `multipart part named ${field} (and no service part)`,
      request: multipartRequest('POST', SERVICES_YAML, [{ name: field, text: serviceYaml() }]),
      expectedStatus: 400,
      expectedBody: { name: 'ValidationError', message: "Multipart field 'service' is required" },
    }),
  ),
  {
    title: 'two plain-text service parts',
    request: multipartRequest('POST', SERVICES_YAML, [
      { name: 'service', text: serviceYaml() },
      { name: 'service', text: serviceYaml({}, { name: 'orders-api-2' }) },
    ]),
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Multipart field 'service' must be sent once (it was sent 2 times)",
    },
  },
  {
    title: 'a multipart body of 20 parts',
    request: multipartRequest(
      'POST',
      SERVICES_YAML,
      Array.from({ length: 20 }, (_, i) => ({ name: `part${i}`, text: 'x' })),
    ),
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: 'Request body has more than 8 multipart parts' },
  },
  ...[
    ['GET', `${SERVICES}/${LONG}`, 'Path', 'name'],
    ['DELETE', `${SERVICES}/${LONG}`, 'Path', 'name'],
    ['GET', `/api/v3/iofog/${LONG}`, 'Path', 'uuid'],
    ['GET', `/api/v3/iofog/${LONG}/provisioning-key`, 'Path', 'uuid'],
    ['GET', `/api/v3/microservices/${LONG}`, 'Path', 'uuid'],
    ['GET', `/api/v3/application/${LONG}`, 'Path', 'name'],
    ['GET', `/api/v3/microservices?application=${LONG}`, 'Query', 'application'],
  ].map(
    ([method, path, kind, parameter]): BadInputCase => ({
      title: `${method} ${path!.replace(LONG, '<3000 characters>')}`,
      request: { method: method!, path: path!, json: undefined },
      expectedStatus: 400,
      expectedBody: {
        name: 'ValidationError',
        message: `${kind} parameter '${parameter}' is 3000 characters long; at most 256 are accepted (got "${'a'.repeat(76)}...)`,
      },
    }),
  ),
  ...(['agentName', 'iofogUuid'] as const).map(
    (field): BadInputCase => ({
      title: `microservice ${field} of 3000 characters`,
      request: {
        method: 'POST',
        path: '/api/v3/microservices',
        json: { name: 'long-ref', application: 'orders', [field]: LONG },
      },
      expectedStatus: 400,
      expectedBody: {
        name: 'ValidationError',
        message: `Field '${field}' must be at most 64 characters, got "${'a'.repeat(76)}...`,
      },
    }),
  ),
  {
    title: 'name as a 10,000-deep array',
    request: rawJson(
      'POST',
      SERVICES,
      `{"name":${DEEP},"type":"external","resource":"x.example.com","targetPort":80}`,
    ),
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'name' must be a string, got [[[[[[[[[...]]]]]]]]]",
    },
  },
  {
    title: 'tags as a 10,000-deep array',
    request: rawJson(
      'POST',
      SERVICES,
      `{"name":"x","tags":${DEEP},"type":"external","resource":"x.example.com","targetPort":80}`,
    ),
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'tags.0' must be a string, got [[[[[[[[[...]]]]]]]]]",
    },
  },
  {
    title: 'PATCH with a tag that is a 10,000-deep array',
    request: rawJson('PATCH', `${SERVICES}/checkout`, `{"tags":[${DEEP}]}`),
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'tags.0' must be a string, got [[[[[[[[[...]]]]]]]]]",
    },
  },
  {
    title: 'name as an object',
    request: { method: 'POST', path: SERVICES, json: validJson({ name: { first: 'orders' } }) },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'name' must be a string, got {"first":"orders"}`,
    },
  },
  {
    title: 'targetPort 1e309 (JSON reads it as Infinity)',
    request: rawJson(
      'POST',
      SERVICES,
      '{"name":"x","type":"external","resource":"x.example.com","targetPort":1e309}',
    ),
    expectedStatus: 400,
    expectedBody: { name: 'ValidationError', message: "Field 'targetPort' must be a number, got Infinity" },
  },
  {
    title: 'targetPort .inf (YAML)',
    request: {
      method: 'POST',
      path: SERVICES_YAML,
      yaml: serviceYaml().replace('targetPort: 8080', 'targetPort: .inf'),
    },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: "Field 'spec.targetPort' must be a number, got Infinity",
    },
  },
  ...['.', '...', ':::::', '2852039166', '0xa9fea9fe', '1.2.3'].map(
    (resource): BadInputCase => ({
      title: `external resource ${JSON.stringify(resource)} (not a host)`,
      request: {
        method: 'POST',
        path: SERVICES,
        json: validJson({ type: 'external', resource, defaultBridge: undefined }),
      },
      expectedStatus: 400,
      expectedBody: {
        name: 'ValidationError',
        message: `Field 'resource' must be a DNS name or an IP address, got ${JSON.stringify(resource)}`,
      },
    }),
  ),
  ...[
    ['169.254.169.254', '169.254.0.0/16'],
    ['::ffff:169.254.169.254', '169.254.0.0/16'],
    ['fe80::1', 'fe80::/10'],
    ['fd00:ec2::254', 'fd00:ec2::254/128'],
    ['Metadata.Google.Internal.', 'metadata.google.internal'],
  ].map(
    ([resource, entry]): BadInputCase => ({
      title: `external resource ${resource} (a metadata address)`,
      request: { method: 'POST', path: SERVICES, json: validJson({ type: 'external', resource }) },
      expectedStatus: 400,
      expectedBody: {
        name: 'ValidationError',
        message: `Field 'resource': the hub router may not dial "${resource}" (denied by "${entry}" in DENIED_RESOURCE_ADDRESSES)`,
      },
    }),
  ),
  {
    title: 'agent host [[[]]]',
    request: { method: 'POST', path: '/api/v3/iofog', json: { name: 'brackets', host: '[[[]]]' } },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'host' must be a DNS name or an IP address, got "[[[]]]"`,
    },
  },
  ...['default-router', 'Default-Router'].map(
    (uuid): BadInputCase => ({
      title: `agent uuid ${uuid} (reserved)`,
      request: { method: 'POST', path: '/api/v3/iofog', json: { name: 'impostor', uuid } },
      expectedStatus: 400,
      expectedBody: {
        name: 'ValidationError',
        message: `Field 'uuid' is reserved: default-router names the default router, got "${uuid}"`,
      },
    }),
  ),
  {
    title: "microservice uuid <agent>-router (reserved: the agent's router)",
    request: {
      method: 'POST',
      path: '/api/v3/microservices',
      json: { name: 'impostor', application: 'orders', agentName: 'fog-a', uuid: 'fog-a-router' },
    },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: `Field 'uuid' is reserved: a uuid ending in -router names an agent's router microservice, got "fog-a-router"`,
    },
  },
  ...[
    ['fog\u200ba', 'must not contain invisible or formatting characters (U+200B)', 'fog\\u200ba'],
    ['fog-\u202ea', 'must not contain invisible or formatting characters (U+202E)', 'fog-\\u202ea'],
    [
      'f\u043eg-a',
      'must not mix scripts (Latin and Cyrillic), which lets one name pass for another',
      'f\u043eg-a',
    ],
    ['fo\u0301g', 'must be in Unicode normalization form C (NFC)', 'fo\u0301g'],
  ].map(
    ([name, rule, shown]): BadInputCase => ({
      title: `agent name ${JSON.stringify(name)} (passes for another name)`,
      request: { method: 'POST', path: '/api/v3/iofog', json: { name } },
      expectedStatus: 400,
      expectedBody: { name: 'ValidationError', message: `Field 'name' ${rule}, got "${shown}"` },
    }),
  ),
  ...[
    ['JSON', rawJson('POST', SERVICES, `{"name":"${'x'.repeat(5 * 1024 * 1024)}"}`)],
    [
      'multipart',
      multipartRequest('POST', SERVICES_YAML, [{ name: 'service', text: 'x'.repeat(5 * 1024 * 1024) }]),
    ],
  ].map(
    ([kind, request]): BadInputCase => ({
      title: `a 5 MB ${kind} body (413 after reading it, not a reset connection)`,
      request: request as BadRequest,
      expectedStatus: 413,
      expectedBody: { name: 'PayloadTooLargeError', message: 'Request body is larger than 1048576 bytes' },
    }),
  ),

  // --- last: when this case fails it has written a service, which must not disturb the cases above ----
  {
    title: 'YAML file larger than 64 KiB (valid service first, padding after)',
    request: { method: 'POST', path: SERVICES_YAML, yaml: oversizedYaml },
    expectedStatus: 400,
    expectedBody: {
      name: 'ValidationError',
      message: /^Error parsing YAML: document is larger than 65536 bytes/,
    },
  },
];

function send(request: BadRequest): Promise<ApiResponse<unknown>> {
  if ('yaml' in request) return api.postYaml(request.path, request.yaml, request.method, request.field);
  if ('raw' in request) {
    return api.request(request.method, request.path, {
      body: request.latin1 ? Buffer.from(request.raw, 'latin1') : request.raw,
      headers: { 'content-type': request.contentType },
    });
  }
  return api.request(request.method, request.path, request.json === undefined ? {} : { json: request.json });
}

/** Everything a rejected request must leave untouched. */
/** Until a deleted service is gone from the API and its listener from the hub (cleaned up after the 204). */
function deleted(name: string) {
  return eventually(async () => {
    if ((await api.get(`${SERVICES}/${name}`)).status !== 404) return undefined;
    const hub = await api.get<{ bridges?: { tcpListeners?: Record<string, unknown> } }>(
      '/api/v3/router/hub-config',
    );
    return hub.body.bridges?.tcpListeners?.[`${name}-listener`] ? undefined : true;
  }, `service ${name} and its hub listener to be gone`);
}

type HubBridges = {
  bridges?: { tcpListeners?: Record<string, unknown>; tcpConnectors?: Record<string, unknown> };
};

async function snapshot() {
  const paths = {
    services: SERVICES,
    hubConfig: '/api/v3/router/hub-config',
    agents: '/api/v3/iofog-list',
    microservices: '/api/v3/microservices',
    applications: '/api/v3/application',
    defaultRouter: '/api/v3/router',
    natsHub: '/api/v3/nats/hub',
    cas: '/api/v3/certificates/ca',
    registries: '/api/v3/registries',
  };
  const read = await Promise.all(Object.values(paths).map((path) => api.get(path)));
  expect(read.map((response) => response.status)).toEqual(read.map(() => 200));
  return Object.fromEntries(Object.keys(paths).map((name, index) => [name, read[index]!.body]));
}

beforeAll(async () => {
  t = await startTestRuntime();
  api = t.api;
  await createSeedWorld(api, { checkoutService: true });
  await createAgent(api, { name: 'dumb', routerMode: 'none' });
  const legacyMicroservice = await api.post('/api/v3/microservices', {
    name: 'legacy',
    application: 'orders',
    agentName: 'dumb',
  });
  expect(legacyMicroservice.status).toBe(201);
  // Every case starts from a ready checkout service whose listener is on the hub, and agents whose
  // fabric (certificates, NATS files) is made, so nothing moves between a case's snapshots.
  await checkoutReady();
  await fabricSettled(api);
});

function checkoutReady() {
  return eventually(async () => {
    const service = await api.get<{ provisioningStatus: string }>(`${SERVICES}/checkout`);
    const hub = await api.get<{ bridges?: { tcpListeners?: object } }>('/api/v3/router/hub-config');
    return service.body.provisioningStatus === 'ready' &&
      'checkout-listener' in (hub.body.bridges?.tcpListeners ?? {})
      ? true
      : undefined;
  }, 'the checkout service to be ready on the hub');
}

afterAll(async () => {
  await t?.stop();
});

describe('bad input is rejected with a documented 4xx, a precise message, and no writes', () => {
  it('has a table of at least 30 cases', () => {
    // Assess
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases)('$title', async ({ request, expectedStatus, expectedBody }) => {
    // Prepare
    const before = await snapshot();

    // Act
    const response = await send(request);

    // Assess (soft, so that a wrong answer still reports whether anything was written)
    expect.soft({ status: response.status, body: response.body }).toEqual({
      status: expectedStatus,
      body: {
        name: expectedBody.name,
        message:
          typeof expectedBody.message === 'string'
            ? expectedBody.message
            : expect.stringMatching(expectedBody.message),
      },
    });
    expect.soft(response.text).not.toMatch(/stack/i);
    expect(await snapshot()).toEqual(before);
  });
});

/**
 * Spec decision 5: an unknown field is accepted, ignored and reported in a `Warning` header, as
 * Kubernetes does in its "warn" field-validation mode. The request does exactly what it would without
 * the field.
 */
describe('unknown fields are accepted, ignored and warned about', () => {
  const warning = (...fields: string[]) =>
    fields.map((field) => `299 - "unknown field \\"${field}\\""`).join(', ');

  it.each<{ title: string; request: BadRequest; without: BadRequest; fields: string[] }>([
    {
      title: 'YAML with tags under spec instead of metadata',
      request: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml({ tags: ['orders-api'] }) },
      without: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml() },
      fields: ['spec.tags'],
    },
    {
      title: 'an unknown JSON field foo',
      request: { method: 'POST', path: SERVICES, json: validJson({ foo: 1 }) },
      without: { method: 'POST', path: SERVICES, json: validJson() },
      fields: ['foo'],
    },
    {
      title: 'an unknown field at the top of a YAML document, and one under metadata',
      request: {
        method: 'POST',
        path: SERVICES_YAML,
        yaml: serviceYaml({}, { labels: { app: 'x' } }, { status: { phase: 'ready' } }),
      },
      without: { method: 'POST', path: SERVICES_YAML, yaml: serviceYaml() },
      fields: ['metadata.labels', 'status'],
    },
  ])(
    '$title: 201, a Warning per field, and the service as if the field were absent',
    async ({ request, without, fields }) => {
      // Prepare
      const before = await snapshot();

      // Act
      const withField = await send(request);
      const created = await api.get(`${SERVICES}/orders-api`);
      expect((await api.delete(`${SERVICES}/orders-api`)).status).toBe(204);
      await deleted('orders-api');
      const plain = await send(without);
      const expected = await api.get(`${SERVICES}/orders-api`);
      expect((await api.delete(`${SERVICES}/orders-api`)).status).toBe(204);
      await deleted('orders-api');

      // Assess
      expect(withField.status).toBe(201);
      expect(withField.headers.get('warning')).toBe(warning(...fields));
      expect(plain.headers.get('warning')).toBeNull();
      const comparable = (view: unknown) => ({
        ...(view as object),
        bridgePort: 0,
        provisioningStatus: '',
        serviceEndpoint: '',
        sites: {},
      });
      expect(comparable(created.body)).toEqual(comparable(expected.body));
      expect(await snapshot()).toEqual(before);
    },
  );

  it('PATCH with an unknown field changes only the known ones, with a Warning', async () => {
    // Prepare
    const before = (await api.get<Record<string, unknown>>(`${SERVICES}/checkout`)).body;

    // Act
    const response = await api.patch(`${SERVICES}/checkout`, { tags: ['checkout', 'shop'], colour: 'blue' });
    const after = (await api.get<Record<string, unknown>>(`${SERVICES}/checkout`)).body;
    await api.patch(`${SERVICES}/checkout`, { tags: before.tags });

    // Assess
    expect(response.status).toBe(204);
    expect(response.headers.get('warning')).toBe(warning('colour'));
    // Status (its reconcile's and its sites') moves on its own; the spec is what the request set.
    expect({ ...after, provisioningStatus: before.provisioningStatus, sites: before.sites }).toEqual({
      ...before,
      tags: ['checkout', 'shop'],
    });
  });
});

describe('hostile multipart bodies on every upload route', () => {
  const uploads = allRoutes().filter((route) => route.request?.kind === 'multipart');

  it('covers every multipart route there is', () => {
    // Assess: services, applications, microservices and NATS rules, each created and replaced from
    // YAML, and CAs and certificates created from it
    expect(uploads.map((route) => `${route.method} ${route.path}`).sort()).toEqual([
      'PATCH /api/v3/microservices/yaml/{uuid}',
      'PATCH /api/v3/nats/account-rules/yaml/{ruleName}',
      'PATCH /api/v3/nats/user-rules/yaml/{ruleName}',
      'PATCH /api/v3/services/yaml/{name}',
      'POST /api/v3/application/yaml',
      'POST /api/v3/certificates/yaml',
      'POST /api/v3/microservices/yaml',
      'POST /api/v3/nats/account-rules/yaml',
      'POST /api/v3/nats/user-rules/yaml',
      'POST /api/v3/services/yaml',
      'PUT /api/v3/application/yaml/{name}',
    ]);
  });

  it('answers each prototype-key part with a 400, writes nothing, and the runtime keeps answering', async () => {
    // Prepare (the suites above may have left the checkout service converging)
    await checkoutReady();
    const before = await snapshot();
    const answers: string[] = [];

    // Act
    for (const route of uploads) {
      const path = route.path.replace(/\{[^}]+\}/g, 'checkout');
      for (const name of ['__proto__[]', 'constructor[]', 'toString[]', 'hasOwnProperty[]', '__proto__']) {
        const response = await send(multipartRequest(route.method, path, [{ name, text: 'kind: x' }]));
        answers.push(
          `${route.method} ${route.path} ${name}: ${response.status} ${JSON.stringify(response.body)}`,
        );
      }
    }
    const status = await api.get<{ status: string }>('/api/v3/status');

    // Assess
    expect(answers).toEqual(
      uploads.flatMap((route) =>
        ['__proto__[]', 'constructor[]', 'toString[]', 'hasOwnProperty[]', '__proto__'].map(
          (name) =>
            `${route.method} ${route.path} ${name}: 400 ${JSON.stringify({
              name: 'ValidationError',
              message: `Multipart field '${(route.request as { field: string }).field}' is required`,
            })}`,
        ),
      ),
    );
    expect({ status: status.status, body: status.body.status }).toEqual({ status: 200, body: 'online' });
    expect(await snapshot()).toEqual(before);
  });
});

describe('multipart boundaries RFC 2046 allows', () => {
  it.each([
    ['bare', '----=_Part_0_1.2', 'multipart/form-data; boundary=----=_Part_0_1.2'],
    ['quoted, with a space and a colon', "it's a: (test)", `multipart/form-data; boundary="it's a: (test)"`],
  ])('%s boundary %s: the upload is read and the service created', async (_kind, boundary, contentType) => {
    // Prepare
    const name = `boundary-${_kind === 'bare' ? 'bare' : 'quoted'}`;
    const yaml = serviceYaml({ type: 'external', resource: `${name}.example.com` }, { name, tags: [] });
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="service"; filename="s.yaml"\r\n\r\n${yaml}\r\n--${boundary}--\r\n`;

    // Act
    const created = await api.request<{ name: string }>('POST', SERVICES_YAML, {
      body,
      headers: { 'content-type': contentType },
    });
    const removed = await api.delete(`${SERVICES}/${name}`);

    // Assess
    expect({ status: created.status, name: created.body.name }).toEqual({ status: 201, name });
    expect(removed.status).toBe(204);
  });
});

/**
 * The fabric routes (certificate authorities, the default router and the NATS hub, agents with router
 * and NATS settings, microservices and applications), as an attacker and a careless client would call
 * them: every case a precise 4xx naming the field and the value, nothing written, and the runtime
 * answering afterwards. `{hub}` and `{checkout}` stand for the hub's uuid and orders/checkout's.
 */
describe('hostile input on the fabric routes', () => {
  const HOST_RULE = 'must be a DNS name or an IP address';
  const NOT_SUBDOMAIN =
    'must be a DNS subdomain (labels of at most 63 lowercase letters, digits and dashes, joined by dots; at most 253 characters)';
  const LONG_LABEL = `${'a'.repeat(64)}.io`;
  const ca = (overrides: Record<string, unknown>) => ({
    name: 'probe-ca',
    type: 'self-signed',
    subject: 'probe',
    expiration: 12,
    ...overrides,
  });
  const placed = (text: string, values: Record<string, string>) =>
    text.replace(/\{(hub|checkout)\}/g, (_match, key: string) => values[key]!);

  const fabricCases: {
    title: string;
    method: string;
    path: string;
    json: unknown;
    status: number;
    message: string;
  }[] = [
    ...['[[[]]]', '..', ':::', '-', LONG_LABEL].flatMap((host) => [
      {
        title: `PUT /router with host ${JSON.stringify(host.slice(0, 20))}`,
        method: 'PUT',
        path: '/api/v3/router',
        json: { host },
        status: 400,
        message: `Field 'host' ${HOST_RULE}, got ${JSON.stringify(host)}`,
      },
      {
        title: `PUT /nats/hub with host ${JSON.stringify(host.slice(0, 20))}`,
        method: 'PUT',
        path: '/api/v3/nats/hub',
        json: { host },
        status: 400,
        message: `Field 'host' ${HOST_RULE}, got ${JSON.stringify(host)}`,
      },
    ]),
    {
      title: 'an agent host with an IPv6 zone (no certificate can name it)',
      method: 'POST',
      path: '/api/v3/iofog',
      json: { name: 'zoned', host: 'fe80::1%a.b:c-d' },
      status: 400,
      message: `Field 'host' ${HOST_RULE}, got "fe80::1%a.b:c-d"`,
    },
    {
      title: 'an interior agent whose inter-router port is its edge port',
      method: 'POST',
      path: '/api/v3/iofog',
      json: { name: 'clash', host: '10.1.0.1', routerMode: 'interior', interRouterPort: 45671 },
      status: 400,
      message:
        "Field 'interRouterPort' must differ from 'edgeRouterPort' (the same host listens on both), got 45671 for both",
    },
    {
      title: 'an agent whose messaging port is its edge port',
      method: 'POST',
      path: '/api/v3/iofog',
      json: { name: 'clash', host: '10.1.0.1', routerMode: 'interior', messagingPort: 45671 },
      status: 400,
      message:
        "Field 'messagingPort' must differ from 'edgeRouterPort' (the same host listens on both), got 45671 for both",
    },
    {
      title: "an agent whose messaging port is the router's management port",
      method: 'POST',
      path: '/api/v3/iofog',
      json: { name: 'clash', host: '10.1.0.1', messagingPort: 5672 },
      status: 400,
      message: "Field 'messagingPort' must not be 5672, the port the router is managed on, got 5672",
    },
    {
      title: 'an agent whose five NATS ports are all 4222',
      method: 'POST',
      path: '/api/v3/iofog',
      json: {
        name: 'clash',
        host: '10.1.0.1',
        natsServerPort: 4222,
        natsClusterPort: 4222,
        natsLeafPort: 4222,
        natsMqttPort: 4222,
        natsHttpPort: 4222,
      },
      status: 400,
      message:
        "Field 'natsClusterPort' must differ from 'natsServerPort' (the same host listens on both), got 4222 for both",
    },
    {
      title: "a PATCH putting fog-a's NATS server on its router's messaging port",
      method: 'PATCH',
      path: '/api/v3/iofog/fog-a',
      json: { natsServerPort: 5671 },
      status: 400,
      message:
        "Field 'natsServerPort' must differ from 'messagingPort' (the same host listens on both), got 5671 for both",
    },
    {
      title: "PUT /router with the messaging port on the router's management port",
      method: 'PUT',
      path: '/api/v3/router',
      json: { host: 'hub.example.com', messagingPort: 5672 },
      status: 400,
      message: "Field 'messagingPort' must not be 5672, the port the router is managed on, got 5672",
    },
    {
      title: 'PUT /router with the inter-router port on the edge port',
      method: 'PUT',
      path: '/api/v3/router',
      json: { host: 'hub.example.com', interRouterPort: 45671 },
      status: 400,
      message:
        "Field 'edgeRouterPort' must differ from 'interRouterPort' (the same host listens on both), got 45671 for both",
    },
    {
      title: 'a CA named probe..ca (an empty label)',
      method: 'POST',
      path: '/api/v3/certificates/ca',
      json: ca({ name: 'probe..ca' }),
      status: 400,
      message: `Field 'name' ${NOT_SUBDOMAIN}, got "probe..ca"`,
    },
    {
      title: 'a CA name with a 64-character label',
      method: 'POST',
      path: '/api/v3/certificates/ca',
      json: ca({ name: `${'a'.repeat(64)}.ca` }),
      status: 400,
      message: `Field 'name' ${NOT_SUBDOMAIN}, got "${'a'.repeat(64)}.ca"`,
    },
    ...[
      ['a newline', 'probe\nca', 'must not contain invisible or formatting characters (U+000A)'],
      ['a NUL', 'probe\u0000', 'must not contain invisible or formatting characters (U+0000)'],
      [
        'a right-to-left override',
        'probe\u202eac',
        'must not contain invisible or formatting characters (U+202E)',
      ],
      ['a lone space', ' ', 'must not be blank'],
    ].map(([what, subject, rule]) => ({
      title: `a CA subject with ${what}`,
      method: 'POST',
      path: '/api/v3/certificates/ca',
      json: ca({ subject }),
      status: 400,
      // Messages show what cannot be seen as an escape.
      message: `Field 'subject' ${rule}, got ${JSON.stringify(subject).replace('\u202e', '\\u202e')}`,
    })),
    ...[1000, 86_399_999].map((expiration) => ({
      title: `a CA expiration of ${expiration} (neither months nor a day of milliseconds)`,
      method: 'POST',
      path: '/api/v3/certificates/ca',
      json: ca({ expiration }),
      status: 400,
      message: `Field 'expiration' must be whole months from 1 to 999, or milliseconds from 86400000 (one day) to 3153600000000 (about a century), got ${expiration}`,
    })),
    {
      title: "an agent named like another agent's uuid",
      method: 'POST',
      path: '/api/v3/iofog',
      json: { name: '{hub}', host: '10.1.0.2' },
      status: 400,
      message: `Field 'name': "{hub}" is the uuid of agent "hub"; a name must not pass for another agent's uuid`,
    },
    {
      title: 'an agent with the uuid default-nats-hub',
      method: 'POST',
      path: '/api/v3/iofog',
      json: { name: 'hubby', uuid: 'default-nats-hub', host: '10.1.0.2' },
      status: 400,
      message: `Field 'uuid' is reserved: default-nats-hub names the NATS hub, got "default-nats-hub"`,
    },
    {
      title: "a microservice with the uuid of an agent's NATS microservice",
      method: 'POST',
      path: '/api/v3/microservices',
      json: { uuid: 'fog-a-nats', name: 'sneaky', application: 'orders', agentName: 'fog-a' },
      status: 400,
      message: `Field 'uuid' is reserved: a uuid ending in -nats names an agent's NATS microservice, got "fog-a-nats"`,
    },
    {
      title: 'a microservice whose agentName and iofogUuid name two agents',
      method: 'POST',
      path: '/api/v3/microservices',
      json: { name: 'split', application: 'orders', agentName: 'fog-a', iofogUuid: '{hub}' },
      status: 400,
      message: `Fields 'agentName' ("fog-a") and 'iofogUuid' ("{hub}") name different agents; send one`,
    },
    {
      title: 'upstream routers on an agent with router mode none',
      method: 'POST',
      path: '/api/v3/iofog',
      json: { name: 'routerless', routerMode: 'none', upstreamRouters: ['default-router'] },
      status: 400,
      message: `Field 'upstreamRouters': an agent with router mode none has no router to link, got ["default-router"]`,
    },
    {
      title: "moving checkout's microservice to an agent with router mode none",
      method: 'PATCH',
      path: '/api/v3/microservices/{checkout}',
      json: { agentName: 'dumb' },
      status: 400,
      message:
        "Field 'agentName': agent dumb has router mode none, and microservice orders/checkout backs services checkout, whose connector needs a router on its agent",
    },
    {
      title: 'deleting the application whose microservice backs checkout',
      method: 'DELETE',
      path: '/api/v3/application/orders',
      json: undefined,
      status: 409,
      message: 'Microservice orders/checkout backs services checkout; delete them first',
    },
    {
      title: 'a registry id with a leading zero',
      method: 'DELETE',
      path: '/api/v3/registries/011',
      json: undefined,
      status: 400,
      message: `Path parameter 'id' must be a registry id (a whole number from 1, without leading zeros), got "011"`,
    },
  ];

  let values: Record<string, string>;
  beforeAll(async () => {
    const agents = (await api.get<{ fogs: { uuid: string; name: string }[] }>('/api/v3/iofog-list')).body
      .fogs;
    // What the cases above changed and put back has converged before the first snapshot here.
    await eventually(async () => {
      const services = (await api.get<{ provisioningStatus: string }[]>(SERVICES)).body;
      return services.every((service) => service.provisioningStatus !== 'pending') ? true : undefined;
    }, 'every service reconciled');
    // A service deleted above is gone from the list before its reconcile has removed it from the hub.
    await eventually(async () => {
      const names = new Set(
        (await api.get<{ name: string }[]>(SERVICES)).body.map((service) => service.name),
      );
      const hub = (await api.get<HubBridges>('/api/v3/router/hub-config')).body;
      const entries = [
        ...Object.keys(hub.bridges?.tcpListeners ?? {}),
        ...Object.keys(hub.bridges?.tcpConnectors ?? {}),
      ];
      return entries.every((entry) => names.has(entry.replace(/-(listener|connector)$/, '')))
        ? true
        : undefined;
    }, 'no hub entry of a deleted service');
    await routersQuiescent(
      t,
      agents.map((agent) => agent.uuid),
    );
    values = {
      hub: agents.find((agent) => agent.name === 'hub')!.uuid,
      checkout: CHECKOUT_MICROSERVICE.uuid,
    };
  });

  it.each(fabricCases)('$title: $status', async ({ method, path, json, status, message }) => {
    // Prepare
    const before = await snapshot();

    // Act
    const response = await api.request(
      method,
      placed(path, values),
      json === undefined ? {} : { json: JSON.parse(placed(JSON.stringify(json), values)) },
    );

    // Assess
    expect({ status: response.status, body: response.body }).toEqual({
      status,
      body: { name: expect.any(String), message: placed(message, values) },
    });
    expect(await snapshot()).toEqual(before);
    expect((await api.get('/api/v3/status')).status).toBe(200);
  });

  it('an interior router linking back to one that links to it (A → B → A): 400, nothing written', async () => {
    // Prepare: ring-a under the hub, ring-b under ring-a
    const ringA = await createAgent(api, { name: 'ring-a', host: '10.2.0.1', routerMode: 'interior' });
    await createAgent(api, {
      name: 'ring-b',
      host: '10.2.0.2',
      routerMode: 'interior',
      upstreamRouters: ['ring-a'],
    });
    await fabricSettled(api);
    const before = await snapshot();

    // Act
    const response = await api.patch(`/api/v3/iofog/${ringA}`, { upstreamRouters: ['ring-b'] });

    // Assess
    expect({ status: response.status, body: response.body }).toEqual({
      status: 400,
      body: {
        name: 'ValidationError',
        message:
          'Field \'upstreamRouters\': agent "ring-b" already links to this agent (ring-b → this agent); links between routers must not form a cycle',
      },
    });
    expect(await snapshot()).toEqual(before);
  });

  it('replacing the application YAML with checkout on an agent without a router: 400, nothing written', async () => {
    // Prepare
    const before = await snapshot();
    const document = stringify({
      apiVersion: 'iofog.org/v3',
      kind: 'Application',
      metadata: { name: 'orders' },
      spec: {
        microservices: [
          {
            name: 'checkout',
            agent: { name: 'dumb' },
            images: { x86: 'ghcr.io/example/checkout:1', registry: 1 },
          },
          {
            name: 'legacy',
            agent: { name: 'dumb' },
            images: { x86: 'ghcr.io/example/legacy:1', registry: 1 },
          },
        ],
      },
    });

    // Act
    const response = await api.postYaml('/api/v3/application/yaml/orders', document, 'PUT', 'application');

    // Assess
    expect({ status: response.status, body: response.body }).toEqual({
      status: 400,
      body: {
        name: 'ValidationError',
        message:
          "Field 'spec.microservices.0.agent.name': agent dumb has router mode none, and microservice orders/checkout backs services checkout, whose connector needs a router on its agent",
      },
    });
    expect(await snapshot()).toEqual(before);
  });

  it('a recursive YAML alias in a microservice config: 400, nothing written', async () => {
    // Prepare
    const before = await snapshot();
    const document = [
      'apiVersion: iofog.org/v3',
      'kind: Microservice',
      'metadata:',
      '  name: looping',
      'spec:',
      '  application: orders',
      '  agent:',
      '    name: fog-a',
      '  images:',
      '    x86: ghcr.io/example/looping:1',
      '  config: &a {x: *a}',
      '',
    ].join('\n');

    // Act
    const response = await api.postYaml('/api/v3/microservices/yaml', document, 'POST', 'microservice');

    // Assess
    expect({ status: response.status, body: response.body }).toEqual({
      status: 400,
      body: {
        name: 'ValidationError',
        message: 'Error parsing YAML: an alias refers to a node that contains it; a document must be a tree',
      },
    });
    expect(await snapshot()).toEqual(before);
  });

  it.each(['%2e%2e', '..', '%2E.'])(
    'a dot segment %s for a CA name reaches no other route (sent as written, as curl --path-as-is does)',
    async (segment) => {
      // Act
      const answer = await new Promise<{ status: number; body: unknown }>((resolve, reject) => {
        const base = new URL(t.runtime.url);
        const request = httpRequest(
          {
            host: base.hostname,
            port: base.port,
            // A path given apart from a URL goes out byte for byte.
            path: `/api/v3/certificates/ca/${segment}`,
            headers: { authorization: `Bearer ${t.runtime.adminToken}` },
          },
          (response) => {
            let text = '';
            response.on('data', (chunk: Buffer) => {
              text += chunk.toString();
            });
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
          },
        );
        request.on('error', reject);
        request.end();
      });

      // Assess
      const name = decodeURIComponent(segment);
      expect(answer).toEqual({
        status: 404,
        body: { name: 'NotFoundError', message: `CA with name ${name} not found` },
      });
    },
  );

  it('a 100 KB Authorization header: 431 with a JSON body, and the runtime answers afterwards', async () => {
    // Act
    const response = await fetch(`${t.runtime.url}/api/v3/services`, {
      headers: { authorization: `Bearer ${'x'.repeat(100 * 1024)}` },
    });

    // Assess
    expect(response.status).toBe(431);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({
      name: 'RequestHeaderFieldsTooLargeError',
      message: 'Request header fields are larger than 16384 bytes',
    });
    expect((await api.get('/api/v3/status')).status).toBe(200);
  });
});

describe('error messages quote at most 80 characters of a value', () => {
  const value = 'a'.repeat(250);
  it.each([
    `/api/v3/services/${value}`,
    `/api/v3/iofog/${value}`,
    `/api/v3/certificates/${value}`,
    `/api/v3/certificates/ca/${value}`,
  ])('GET %s', async (path) => {
    // Act
    const response = await api.get<{ name: string; message: string }>(path);

    // Assess: the 250 characters are cut to 77 and an ellipsis
    expect(response.status).toBe(404);
    expect(response.body.message).toContain(`${'a'.repeat(77)}...`);
    expect(response.body.message).not.toContain('a'.repeat(78));
  });
});
