import { randomUUID } from 'node:crypto';
import { type IncomingMessage, maxHeaderSize, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { lambdaContext } from './lambda-context.js';

export type HttpHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** One API function: the routes it serves (its route records) and its handler. */
export interface HttpFunction {
  functionName: string;
  routes: readonly { method: string; path: string }[];
  handler: HttpHandler;
}

/** `/api/v3/services/{name}` as a pattern matching one path segment per parameter. */
function pathPattern(path: string): RegExp {
  const segments = path
    .split('/')
    .map((segment) =>
      /^\{[^}]+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    );
  return new RegExp(`^${segments.join('/')}/?$`);
}

/** Bodies past this are refused without buffering them. */
const MAX_REQUEST_BYTES = 1024 * 1024;
/** API Gateway's own cap: past it the connection is closed, as API Gateway closes it. */
const MAX_DRAINED_BYTES = 10 * 1024 * 1024;

/**
 * Adapts a Node HTTP request to an API Gateway HTTP API (payload v2) event, invokes the function whose
 * route records match it, and writes its result back, as API Gateway does in AWS. A path that some
 * function serves under another method goes to that function, whose router answers it.
 */
export function apiGatewayAdapter(functions: HttpFunction[]) {
  const table = functions.flatMap((fn) =>
    fn.routes.map((route) => ({ method: route.method, pattern: pathPattern(route.path), fn })),
  );
  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = requestUrl(request.url ?? '/');
    const onPath = table.filter((entry) => entry.pattern.test(url.pathname));
    const route = (onPath.find((entry) => entry.method === request.method) ?? onPath[0])?.fn;
    if (!route)
      return send(response, 404, {
        name: 'NotFoundError',
        message: `Route ${request.method} ${url.pathname} does not exist`,
      });
    const body = await readBody(request).catch(() => undefined);
    if (body === undefined) {
      if (!request.complete) response.setHeader('connection', 'close');
      return send(response, 413, {
        name: 'PayloadTooLargeError',
        message: `Request body is larger than ${MAX_REQUEST_BYTES} bytes`,
      });
    }
    const event = toEvent(request, url, body);
    try {
      const result = await route.handler(event, lambdaContext(route.functionName));
      response.writeHead(result.statusCode ?? 200, { ...(result.headers ?? {}) } as Record<string, string>);
      response.end(
        result.isBase64Encoded && result.body ? Buffer.from(result.body, 'base64') : (result.body ?? ''),
      );
    } catch {
      send(response, 500, { name: 'InternalError', message: 'Internal error' });
    }
  };
}

/**
 * The request's path as the client sent it (API Gateway routes the raw path: `%2e%2e` and `..` are
 * segments like any other, never resolved against the route above) and its query.
 */
function requestUrl(raw: string): { pathname: string; search: string; searchParams: URLSearchParams } {
  const query = raw.indexOf('?');
  const pathname = query < 0 ? raw : raw.slice(0, query);
  const search = query < 0 ? '' : raw.slice(query);
  return { pathname, search, searchParams: new URLSearchParams(search) };
}

/**
 * What a request Node cannot parse gets, as API Gateway answers one: a JSON error, never an empty body
 * (header fields past Node's limit: 431; anything else malformed: 400).
 */
export function answerMalformedRequests(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable) return socket.destroy();
    const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
    const body = JSON.stringify(
      tooLarge
        ? {
            name: 'RequestHeaderFieldsTooLargeError',
            message: `Request header fields are larger than ${maxHeaderSize} bytes`,
          }
        : { name: 'ValidationError', message: 'Malformed HTTP request' },
    );
    socket.end(
      `HTTP/1.1 ${tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}

function send(response: ServerResponse, statusCode: number, body: unknown) {
  response.writeHead(statusCode, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

/**
 * The request body, or `undefined` when it is over the limit. An oversized body is still read to its
 * end and dropped (up to API Gateway's own 10 MB cap), so the client finishes sending and reads the 413
 * instead of meeting a closed connection.
 */
function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_REQUEST_BYTES) chunks.push(chunk);
      else if (size > MAX_DRAINED_BYTES) {
        request.pause();
        resolve(undefined);
      }
    });
    request.on('end', () => resolve(size <= MAX_REQUEST_BYTES ? Buffer.concat(chunks) : undefined));
    request.on('error', reject);
  });
}

/** Text bodies pass as-is; anything else (multipart, binary) is base64, as API Gateway sends it. */
function isTextual(contentType: string | undefined): boolean {
  if (!contentType) return true;
  return /^(text\/|application\/(.+\+)?json|application\/(x-)?yaml|application\/x-www-form-urlencoded)/i.test(
    contentType,
  );
}

function toEvent(
  request: IncomingMessage,
  url: ReturnType<typeof requestUrl>,
  body: Buffer,
): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[key.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) query[key] = query[key] ? `${query[key]},${value}` : value;
  const textual = isTextual(headers['content-type']);
  const now = new Date();
  const method = request.method ?? 'GET';
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.replace(/^\?/, ''),
    headers,
    queryStringParameters: Object.keys(query).length > 0 ? query : undefined,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method,
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
    },
    body: body.length === 0 ? undefined : textual ? body.toString('utf8') : body.toString('base64'),
    isBase64Encoded: body.length > 0 && !textual,
  };
}
