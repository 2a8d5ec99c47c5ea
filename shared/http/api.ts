import middy from '@middy/core';
import httpRouterHandler, { type Route } from '@middy/http-router';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { verifyAgentToken } from '../auth/agent-tokens.js';
import { requireRole, verifyUserToken } from '../auth/user-tokens.js';
import {
  AuthenticationError,
  NotFoundError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../errors.js';
import { logger } from '../log/logger.js';
import { errorToResponse } from './errors.js';

export type ApiEvent = APIGatewayProxyEventV2;
export type ApiResult = APIGatewayProxyStructuredResultV2;
/**
 * Who may call a route: `public` (status, provisioning by key), `agent` (an Edgelet's EdDSA token), or
 * a user role. Without `auth`, GET routes need `viewer` and every other method `admin`.
 */
export type RouteAuth = 'public' | 'agent' | 'viewer' | 'admin';
export type ApiRoute = Route<ApiEvent, ApiResult> & { auth?: RouteAuth };

/** Largest request body any route takes (YAML documents and JSON objects are far smaller). */
export const MAX_BODY_BYTES = 256 * 1024;

export function json(statusCode: number, body: unknown): ApiResult {
  return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

export function noContent(): ApiResult {
  return { statusCode: 204 };
}

export function header(event: ApiEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

export function pathParameter(event: ApiEvent, name: string): string {
  const raw = event.pathParameters?.[name];
  if (raw === undefined) throw new ValidationError(`Missing path parameter '${name}'`);
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new ValidationError(`Path parameter '${name}' is not valid URL encoding: ${JSON.stringify(raw)}`);
  }
}

function rawBody(event: ApiEvent): string | undefined {
  if (event.body === undefined || event.body === null || event.body === '') return undefined;
  return event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
}

/** The JSON object a route takes; wrong media type, bad JSON or a non-object are precise 4xx. */
export function jsonBody(event: ApiEvent): Record<string, unknown> {
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
    request.response = json(statusCode, body);
  },
});

/** The agent uuid an agent route was authenticated as. */
export function authenticatedAgent(event: ApiEvent): string {
  const uuid = (event.requestContext as { authorizer?: { lambda?: { agentUuid?: string } } }).authorizer
    ?.lambda?.agentUuid;
  if (!uuid) throw new AuthenticationError('authorization failed');
  return uuid;
}

function withAuth(route: ApiRoute): ApiRoute {
  const auth = route.auth ?? (route.method === 'GET' ? 'viewer' : 'admin');
  if (auth === 'public') return route;
  const inner = route.handler as (event: ApiEvent, context: Context) => Promise<ApiResult>;
  return {
    ...route,
    handler: async (event: ApiEvent, context: Context) => {
      const authorization = header(event, 'authorization');
      if (auth === 'agent') {
        const agentUuid = await verifyAgentToken(authorization);
        (event.requestContext as { authorizer?: unknown }).authorizer = { lambda: { agentUuid } };
      } else {
        const identity = await verifyUserToken(authorization);
        requireRole(identity, auth === 'admin' ? 'POST' : 'GET');
      }
      return inner(event, context);
    },
  };
}

/** A Lambda handler serving `routes` behind the shared middleware stack. */
export function httpApi(routes: ApiRoute[]) {
  return middy<ApiEvent, ApiResult, Error, Context>()
    .use(bodySizeLimit())
    .use(errorMapper())
    .handler(
      httpRouterHandler<ApiEvent, ApiResult>({
        routes: routes.map(withAuth),
        notFoundResponse: ({ method, path }) => {
          throw new NotFoundError(`Route ${method} ${path} does not exist`);
        },
      }) as unknown as (event: ApiEvent, context: Context) => Promise<ApiResult>,
    );
}
