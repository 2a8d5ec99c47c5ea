/**
 * Named points where the fault-injection tests make fogbridge fail as a crashed worker, a storm of
 * lost conditional writes or a broken dependency would. Nothing is armed in production: a point costs
 * one Map lookup. Tests arm them in-process through `armFault`.
 */
export type FaultPoint =
  | 'service:start'
  | 'service:after-hub-write'
  | 'service:after-fan-out'
  | 'service:before-status-write'
  | 'router:before-write'
  | 'store:router-config-conflict'
  | 'k8s:read-configmap'
  | 'k8s:replace-configmap';

export class InjectedFault extends Error {
  override name = 'InjectedFault';
}

const armed = new Map<FaultPoint, { remaining: number; make: () => Error; subject?: string }>();

/**
 * Fails the next `times` passes through `point` with the error `make` returns; with `subject`, only
 * passes about that subject (a service name) count, so other work running meanwhile is untouched.
 */
export function armFault(
  point: FaultPoint,
  times: number,
  make: () => Error = () => new InjectedFault(`injected fault at ${point}`),
  subject?: string,
) {
  armed.set(point, { remaining: times, make, subject });
}

export function disarmFaults(): void {
  armed.clear();
}

/** Throws if `point` is armed for this subject (and counts the pass). */
export function faultPoint(point: FaultPoint, subject?: string): void {
  const fault = armed.get(point);
  if (!fault || fault.remaining <= 0) return;
  if (fault.subject !== undefined && fault.subject !== subject) return;
  fault.remaining -= 1;
  throw fault.make();
}

/** True (and counts the pass) if `point` is armed: for faults that change a result instead of throwing. */
export function faultArmed(point: FaultPoint): boolean {
  const fault = armed.get(point);
  if (!fault || fault.remaining <= 0) return false;
  fault.remaining -= 1;
  return true;
}
