/**
 * Domain errors. None of them knows about HTTP: shared/http/errors.ts maps each class to a status code.
 * `name` is part of the public error body `{name, message}`, so every subclass sets it explicitly
 * (minifiers would otherwise mangle constructor names in the bundled Lambda).
 */
export class FogbridgeError extends Error {
  override name = 'FogbridgeError';
}

/** The request is malformed or names a value the controller cannot accept. */
export class ValidationError extends FogbridgeError {
  override name = 'ValidationError';
}

/** The named resource does not exist. */
export class NotFoundError extends FogbridgeError {
  override name = 'NotFoundError';
}

/** The request conflicts with the current state (duplicate name, resource in use). */
export class ConflictError extends FogbridgeError {
  override name = 'ConflictError';
}

/** The request body has a media type the route does not take. */
export class UnsupportedMediaTypeError extends FogbridgeError {
  override name = 'UnsupportedMediaTypeError';
}

/** The request body is larger than the documented limit. */
export class PayloadTooLargeError extends FogbridgeError {
  override name = 'PayloadTooLargeError';
}

/** A conditional write lost a race too many times in a row; the caller may retry. */
export class ContentionError extends FogbridgeError {
  override name = 'ContentionError';
}

/** Reconcile could not reach the desired state; the message becomes provisioningError. */
export class ReconcileError extends FogbridgeError {
  override name = 'ReconcileError';
}

/** A ConfigMap fogbridge writes back into does not exist (the operator creates them, fogbridge never does). */
export class ConfigMapMissingError extends ReconcileError {
  override name = 'ConfigMapMissingError';
}

/** No identity, or one that does not verify (missing, malformed, expired, wrong issuer or key). */
export class AuthenticationError extends FogbridgeError {
  override name = 'AuthenticationError';
}

/** A verified identity without the role the route needs. */
export class ForbiddenError extends FogbridgeError {
  override name = 'ForbiddenError';
}
