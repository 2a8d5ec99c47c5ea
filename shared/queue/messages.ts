import { z } from 'zod';

/** service-reconcile.fifo: the key is the service name; generation is what the sender saw. */
export const serviceReconcileMessage = z.object({
  name: z.string().min(1),
  generation: z.number().int().nonnegative(),
});
export type ServiceReconcileMessage = z.output<typeof serviceReconcileMessage>;

/**
 * fog-reconcile.fifo: the key is a router (agent uuid or the standalone default router). `seq` is the
 * request number that lets a worker skip requests a later computation already covered (0 for a service
 * fan-out, which is never skipped). `service`, when set, names the one service whose entries the worker
 * converges on that router; `raise` says the service's distribution-set listener changed, so an agent
 * selecting it is told even though nothing under its own router changed.
 */
export const fogReconcileMessage = z.object({
  routerKey: z.string().min(1),
  seq: z.number().int().nonnegative(),
  service: z.string().optional(),
  raise: z.boolean().optional(),
  // The agent's name and tags when the sender knew them: only hints for the worker's batch read (its
  // certificate keys are named after the name, its token index entries after the tags); the worker
  // still reads the agent and works from what it reads.
  agentName: z.string().optional(),
  agentTags: z.array(z.string()).optional(),
});
export type FogReconcileMessage = z.output<typeof fogReconcileMessage>;

/** The router key the NATS hub's requests are grouped under (its write-backs on Kubernetes). */
export const NATS_HUB_KEY = 'nats-hub';

/** The key the NATS operator's requests are grouped under (what a rotation leaves to re-sign). */
export const NATS_OPERATOR_KEY = 'nats-operator';

/** An application's NATS account and users are reconciled under this key. */
export const natsApplicationKey = (application: string) => `nats-app:${application}`;
const NATS_APPLICATION_PREFIX = 'nats-app:';

/** Whether a fog queue key is an agent's router (not the default router, nor a NATS singleton or account). */
export function isAgentRouterKey(routerKey: string, defaultRouter: string): boolean {
  return (
    routerKey !== defaultRouter &&
    routerKey !== NATS_HUB_KEY &&
    routerKey !== NATS_OPERATOR_KEY &&
    !routerKey.startsWith(NATS_APPLICATION_PREFIX)
  );
}

/**
 * What a fog reconcile is asked to do, read from its message: converge one service's entries on one
 * router (a service's fan-out), compute a whole router and its agent's own part (an agent change, a CA
 * import, a re-drive), rewrite the NATS hub's Kubernetes write-backs, converge an application's NATS
 * account and users, or carry a new NATS operator through the fabric. The message on the queue stays
 * as it is; each kind has its own entry function.
 */
export type FogRequest =
  | { kind: 'service-entries'; routerKey: string; service: string; raise: boolean }
  | { kind: 'router'; routerKey: string; seq: number; agentName?: string; agentTags?: string[] }
  | { kind: 'nats-hub'; routerKey: typeof NATS_HUB_KEY; seq: number }
  | { kind: 'nats-operator'; routerKey: typeof NATS_OPERATOR_KEY; seq: number }
  | { kind: 'nats-application'; routerKey: string; application: string; seq: number };

export function fogRequestOf(message: FogReconcileMessage): FogRequest {
  if (message.service !== undefined) {
    return {
      kind: 'service-entries',
      routerKey: message.routerKey,
      service: message.service,
      raise: message.raise === true,
    };
  }
  if (message.routerKey === NATS_HUB_KEY)
    return { kind: 'nats-hub', routerKey: NATS_HUB_KEY, seq: message.seq };
  if (message.routerKey === NATS_OPERATOR_KEY)
    return { kind: 'nats-operator', routerKey: NATS_OPERATOR_KEY, seq: message.seq };
  if (message.routerKey.startsWith(NATS_APPLICATION_PREFIX)) {
    return {
      kind: 'nats-application',
      routerKey: message.routerKey,
      application: message.routerKey.slice(NATS_APPLICATION_PREFIX.length),
      seq: message.seq,
    };
  }
  return {
    kind: 'router',
    routerKey: message.routerKey,
    seq: message.seq,
    ...(message.agentName !== undefined ? { agentName: message.agentName } : {}),
    ...(message.agentTags !== undefined ? { agentTags: message.agentTags } : {}),
  };
}

/** A fog-reconcile.fifo message, validated and read as the request it carries. */
export const fogRequest = fogReconcileMessage.transform(fogRequestOf);
