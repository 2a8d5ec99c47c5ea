import { AMQP_MANAGEMENT_PORT } from './router-site.js';

/**
 * The ports one host listens on must differ: an agent's router and NATS processes bind theirs on the
 * agent's node (an interior router on the host network, the NATS server through port mappings one to
 * one), and the Router listens on 5672 for its own management besides. One rule for every set of ports
 * a host holds: an agent's, the default router's, the NATS hub's.
 */
export interface NamedPort {
  /** The field the port is set by (as the request names it). */
  field: string;
  port: number;
}

/** Why the ports cannot be held together (naming the field and the port), or undefined when they can. */
export function portSetProblem(
  ports: readonly NamedPort[],
  options: { routerManagement?: boolean } = {},
): string | undefined {
  const seen = new Map<number, string>();
  for (const { field, port } of ports) {
    if (options.routerManagement && port === AMQP_MANAGEMENT_PORT) {
      return `Field '${field}' must not be ${AMQP_MANAGEMENT_PORT}, the port the router is managed on, got ${port}`;
    }
    const holder = seen.get(port);
    if (holder !== undefined) {
      return `Field '${field}' must differ from '${holder}' (the same host listens on both), got ${port} for both`;
    }
    seen.set(port, field);
  }
  return undefined;
}
