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
