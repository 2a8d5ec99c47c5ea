import middy from '@middy/core';
import httpRouterHandler from '@middy/http-router';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { z } from 'zod';
import { verifyAgentToken } from '../auth/agent-tokens.js';
import { requireRole, verifyUserToken } from '../auth/user-tokens.js';
import { firstIssueAsError, type Parsed, parseBody, show } from '../domain/validation.js';
import {
  NotFoundError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../errors.js';
import { logger } from '../log/logger.js';
import { observeOperation } from '../metrics/operations.js';
import { errorToResponse } from './errors.js';
import { multipartField, parseMultipart } from './multipart.js';

export type ApiEvent = APIGatewayProxyEventV2;
export type ApiResult = APIGatewayProxyStructuredResultV2;
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Who may call a route: `public` (status, provisioning by key), `agent` (an Edgelet's EdDSA token), or a
 * user role: `viewer` (read-only) or `admin`.
 */
export type RouteAuth = 'public' | 'agent' | 'viewer' | 'admin';

/** The Lambda functions that serve the API, one per module of functions/api. */
export type ApiFunctionName =
  | 'services'
  | 'agents'
  | 'registry'
  | 'registries'
  | 'certificates'
  | 'nats'
  | 'router'
  | 'status'
  | 'openapi'
  | 'agent-protocol'
  | 'topology'
  | 'ui';

/** A JSON request body: the schema the document shows is the one the body is validated with. */
export interface JsonRequest<T> {
  kind: 'json';
  schema: z.ZodType;
  parse(input: unknown): Parsed<T>;
  example?: unknown;
}

/** A multipart/form-data upload whose field `field` holds a YAML document. */
export interface MultipartRequest<T> {
  kind: 'multipart';
  field: string;
  /** The document's schema (what the YAML must hold). */
  document: z.ZodType;
  parse(text: string): Parsed<T>;
  example?: string;
}

export type RequestBody<T> = JsonRequest<T> | MultipartRequest<T>;

export interface RouteRequest<B> {
  event: ApiEvent;
  /** The validated body (undefined for a route that takes none). */
  body: B;
  /** A path parameter, URL-decoded. */
  param: (name: string) => string;
  /** A query string parameter, if present. */
  query: (name: string) => string | undefined;
  /** The query parameters as the record's `query` schema parsed them (empty without one). */
  queries: Record<string, unknown>;
  /** The agent an `agent` route was authenticated as. */
  agentUuid: string;
}

export interface Reply {
  status: number;
  /** A JSON body; or `text`, sent as it is with its own content type. */
  body?: unknown;
  text?: string;
  headers?: Record<string, string>;
}

/**
 * One route, declared once: the CDK route table, the local runtime's dispatch, the authorizer, the OpenAPI
 * document and the handler's validation all come from this record.
 */
export interface RouteRecord<B = unknown> {
  method: HttpMethod;
  path: string;
  auth: RouteAuth;
  /** The Lambda function that serves it. */
  function: ApiFunctionName;
  summary: string;
  request?: RequestBody<B>;
  /** The query parameters it reads, validated before the handler runs (and documented). */
  query?: z.ZodObject;
  /** Success status → body schema (`null`: no body). */
  responses: Record<number, z.ZodType | null>;
  /** The media types of a success body, when not JSON (the page's files). */
  produces?: readonly string[];
  // A method signature, so records with different bodies fit in one list of RouteRecord<unknown>.
  handler(request: RouteRequest<B>): Promise<Reply>;
}

/** A record whatever its body type: what lists of routes hold. */
export type AnyRouteRecord = RouteRecord<unknown>;

/** Largest request body any route takes (YAML documents and JSON objects are far smaller). */
export const MAX_BODY_BYTES = 256 * 1024;

/** A JSON body validated with `schema`; `before` checks the raw input first, `after` reshapes the value. */
export function jsonRequest<S extends z.ZodType, T = z.output<S>>(
  schema: S,
  hooks: { before?: (input: unknown) => void; after?: (value: z.output<S>) => T; example?: unknown } = {},
): JsonRequest<T> {
  return {
    kind: 'json',
    schema,
    parse: (input) => {
      hooks.before?.(input);
      const { value, unknownFields } = parseBody(schema, input);
      return { value: hooks.after ? hooks.after(value) : (value as T), unknownFields };
    },
    example: hooks.example,
  };
}

export function multipartRequest<T>(request: Omit<MultipartRequest<T>, 'kind'>): MultipartRequest<T> {
  return { kind: 'multipart', ...request };
}

/** The records of one function: `route({...})` fills in the function's name. */
export function routesOf(fn: ApiFunctionName) {
  return <B = undefined>(record: Omit<RouteRecord<B>, 'function'>): RouteRecord<B> => ({
    ...record,
    function: fn,
  });
}

export const reply = {
  json: (status: number, body: unknown): Reply => ({ status, body }),
  ok: (body: unknown): Reply => ({ status: 200, body }),
  created: (body: unknown): Reply => ({ status: 201, body }),
  noContent: (): Reply => ({ status: 204 }),
  text: (contentType: string, text: string, headers: Record<string, string> = {}): Reply => ({
    status: 200,
    text,
    headers: { 'content-type': contentType, ...headers },
  }),
};

export function header(event: ApiEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

/**
 * Longest path or query value taken: every identifier fogbridge issues or accepts is far shorter, and a
 * value this size still fits a store key, so nothing a client sends can make a lookup itself fail.
 */
export const MAX_PARAMETER_LENGTH = 256;

function boundedParameter(kind: 'Path' | 'Query', name: string, value: string): string {
  if (value.length > MAX_PARAMETER_LENGTH) {
    throw new ValidationError(
      `${kind} parameter '${name}' is ${value.length} characters long; at most ${MAX_PARAMETER_LENGTH} are accepted (got ${show(value)})`,
    );
  }
  return value;
}

function pathParameter(event: ApiEvent, name: string): string {
  const raw = event.pathParameters?.[name];
  if (raw === undefined) throw new ValidationError(`Missing path parameter '${name}'`);
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    throw new ValidationError(`Path parameter '${name}' is not valid URL encoding: ${show(raw)}`);
  }
  return boundedParameter('Path', name, decoded);
}

function queryParameter(event: ApiEvent, name: string): string | undefined {
  const value = event.queryStringParameters?.[name];
  return value === undefined ? undefined : boundedParameter('Query', name, value);
}

/** The query parameters a route reads, validated with its schema (a bad value names the parameter). */
function queryParameters(event: ApiEvent, schema: z.ZodObject): Record<string, unknown> {
  const values = Object.fromEntries(
    Object.keys(schema.shape).flatMap((name) => {
      const value = queryParameter(event, name);
      return value === undefined ? [] : [[name, value]];
    }),
  );
  const parsed = schema.safeParse(values);
  if (parsed.success) return parsed.data;
  const issue = firstIssueAsError(parsed.error.issues, values);
  throw new ValidationError(
    issue.message.replace(/^(Required )?[Ff]ield /, (_m, required) =>
      required ? 'Required query parameter ' : 'Query parameter ',
    ),
  );
}

function rawBody(event: ApiEvent): string | undefined {
  if (event.body === undefined || event.body === null || event.body === '') return undefined;
  return event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
}

/** The JSON object a route takes; wrong media type, bad JSON or a non-object are precise 4xx. */
function jsonBody(event: ApiEvent): Record<string, unknown> {
  const text = rawBody(event);
  if (text === undefined) throw new ValidationError('Request body is required (a JSON object)');
  const contentType = header(event, 'content-type') ?? '';
  if (!/^application\/(.+\+)?json\s*(;|$)/i.test(contentType)) {
    throw new UnsupportedMediaTypeError(
      `Content-Type ${JSON.stringify(contentType)} is not supported here; send application/json`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`Request body is not valid JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError('Request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

async function requestBody<B>(event: ApiEvent, request: RequestBody<B> | undefined): Promise<Parsed<B>> {
  if (!request) return { value: undefined as B, unknownFields: [] };
  if (request.kind === 'json') return request.parse(jsonBody(event));
  return request.parse(multipartField(await parseMultipart(event, request.field), request.field));
}

/** At most this many unknown fields are named one by one; the rest are counted. */
const MAX_FIELD_WARNINGS = 20;

/**
 * The `Warning` header of a request that carried fields fogbridge ignored, as Kubernetes words it in its
 * "warn" field-validation mode: one `299 - "unknown field \"x\""` value per field. Field names come from
 * the client, so they are reduced to printable ASCII and cut short before they reach a header.
 */
export function unknownFieldWarnings(fields: readonly string[]): string | undefined {
  if (fields.length === 0) return undefined;
  const quote = (text: string) => `"${text.replace(/["\\]/g, '\\$&')}"`;
  const printable = (field: string) => {
    const ascii = field.replace(/[^\x20-\x7e]/g, '?');
    return ascii.length > 100 ? `${ascii.slice(0, 97)}...` : ascii;
  };
  const values = fields
    .slice(0, MAX_FIELD_WARNINGS)
    .map((field) => `299 - ${quote(`unknown field "${printable(field)}"`)}`);
  if (fields.length > MAX_FIELD_WARNINGS) {
    values.push(`299 - ${quote(`${fields.length - MAX_FIELD_WARNINGS} more unknown fields`)}`);
  }
  return values.join(', ');
}

/** Rejects oversized bodies before anything parses them. */
const bodySizeLimit = (): middy.MiddlewareObj<ApiEvent, ApiResult> => ({
  before: (request) => {
    const body = request.event.body;
    if (typeof body === 'string') {
      const bytes = request.event.isBase64Encoded
        ? Math.floor((body.length * 3) / 4)
        : Buffer.byteLength(body);
      if (bytes > MAX_BODY_BYTES) {
        throw new PayloadTooLargeError(
          `Request body is ${bytes} bytes; the limit is ${MAX_BODY_BYTES} bytes`,
        );
      }
    }
  },
});

/** Maps every error to `{name, message}` with its status; unexpected ones are logged, never echoed. */
const errorMapper = (): middy.MiddlewareObj<ApiEvent, ApiResult> => ({
  onError: (request) => {
    const { statusCode, body, unexpected } = errorToResponse(request.error);
    if (unexpected) {
      logger.error('request failed', {
        route: `${request.event.requestContext?.http?.method} ${request.event.rawPath}`,
        error: request.error as Error,
      });
    }
    request.response = toResult({ status: statusCode, body });
  },
});

/**
 * Every answer's hardening: no content sniffing, and a policy that loads nothing and may not be framed
 * (an API answer is data, never a page); the network page sends its own policy.
 */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
} as const;

function toResult(answer: Reply): ApiResult {
  const headers = { ...SECURITY_HEADERS, ...answer.headers };
  if (answer.text !== undefined) return { statusCode: answer.status, headers, body: answer.text };
  if (answer.body === undefined) return { statusCode: answer.status, headers };
  return {
    statusCode: answer.status,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(answer.body),
  };
}

/**
 * Authentication first (nothing is read for a caller without the right), then the body, then the work;
 * all of it measured as the route's operation (an agent token's checks are store calls its caller
 * waits for too).
 */
function serve<B>(record: RouteRecord<B>) {
  return (event: ApiEvent): Promise<ApiResult> =>
    observeOperation(`${record.method} ${record.path}`, async () => {
      const authorization = header(event, 'authorization');
      let agentUuid = '';
      if (record.auth === 'agent') {
        agentUuid = await verifyAgentToken(authorization);
      } else if (record.auth !== 'public') {
        requireRole(await verifyUserToken(authorization), record.auth);
      }
      const { value: body, unknownFields } = await requestBody(event, record.request);
      const queries = record.query ? queryParameters(event, record.query) : {};
      const answer = await record.handler({
        event,
        body,
        param: (name) => pathParameter(event, name),
        query: (name) => queryParameter(event, name),
        queries,
        agentUuid,
      });
      const warning = unknownFieldWarnings(unknownFields);
      return toResult(warning ? { ...answer, headers: { ...answer.headers, warning } } : answer);
    });
}

/** A Lambda handler serving `routes` behind the shared middleware stack. */
export function httpApi(routes: readonly AnyRouteRecord[]) {
  return middy<ApiEvent, ApiResult, Error, Context>()
    .use(bodySizeLimit())
    .use(errorMapper())
    .handler(
      httpRouterHandler<ApiEvent, ApiResult>({
        routes: routes.map((record) => ({
          method: record.method,
          path: record.path,
          handler: serve(record),
        })),
        notFoundResponse: ({ method, path }) => {
          throw new NotFoundError(`Route ${method} ${path} does not exist`);
        },
      }) as unknown as (event: ApiEvent, context: Context) => Promise<ApiResult>,
    );
}
