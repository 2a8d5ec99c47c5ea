import {
  AuthenticationError,
  ConflictError,
  ContentionError,
  ForbiddenError,
  NotFoundError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../errors.js';

export interface ErrorBody {
  name: string;
  message: string;
}

const statusByClass: [new (...args: never[]) => Error, number][] = [
  [ValidationError, 400],
  [AuthenticationError, 401],
  [ForbiddenError, 403],
  [NotFoundError, 404],
  [ConflictError, 409],
  [PayloadTooLargeError, 413],
  [UnsupportedMediaTypeError, 415],
  [ContentionError, 503],
];

/**
 * The one place that turns an error into a status code and a `{name, message}` body. Domain errors
 * carry their own message; errors from middy's parsers (http-errors with `expose`) keep theirs; anything
 * else is a 500 whose details stay in the log, never in the response.
 */
/** Longest value a message quotes (values come from clients: names, paths, hosts). */
const QUOTED_CHARACTERS = 80;
/** The punctuation a quoted value may carry around it in a message (quotes, brackets, a comma). */
const QUOTE_MARKS = 8;

/**
 * A message as answered: any run of characters without a space longer than a quoted value and its
 * punctuation (a name or path a client sent, put in the message whole) is cut to 77 and `...`,
 * wherever the message came from; values already shortened for a message (see `show`) stay as they are.
 */
export function clipQuotedValues(message: string): string {
  return message.replace(
    new RegExp(`\\S{${QUOTED_CHARACTERS + QUOTE_MARKS + 1},}`, 'gu'),
    (run) => `${[...run].slice(0, QUOTED_CHARACTERS - 3).join('')}...`,
  );
}

export function errorToResponse(error: unknown): {
  statusCode: number;
  body: ErrorBody;
  unexpected: boolean;
} {
  for (const [errorClass, statusCode] of statusByClass) {
    if (error instanceof errorClass) {
      return {
        statusCode,
        body: { name: error.name, message: clipQuotedValues(error.message) },
        unexpected: false,
      };
    }
  }
  const httpError = error as { statusCode?: number; expose?: boolean; message?: string };
  if (
    typeof httpError?.statusCode === 'number' &&
    httpError.statusCode >= 400 &&
    httpError.statusCode < 500
  ) {
    return {
      statusCode: httpError.statusCode,
      body: {
        name: nameForStatus(httpError.statusCode),
        message: clipQuotedValues(httpError.message ?? 'Bad request'),
      },
      unexpected: false,
    };
  }
  return { statusCode: 500, body: { name: 'InternalError', message: 'Internal error' }, unexpected: true };
}

function nameForStatus(statusCode: number): string {
  switch (statusCode) {
    case 404:
      return 'NotFoundError';
    case 405:
      return 'MethodNotAllowedError';
    case 413:
      return 'PayloadTooLargeError';
    case 415:
      return 'UnsupportedMediaTypeError';
    default:
      return 'ValidationError';
  }
}
