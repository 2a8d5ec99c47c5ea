import { z } from 'zod';

/** service-reconcile.fifo: the key is the service name; generation is what the sender saw. */
export const serviceReconcileMessage = z.object({
  name: z.string().min(1),
  generation: z.number().int().nonnegative(),
});
export type ServiceReconcileMessage = z.output<typeof serviceReconcileMessage>;

/**
 * fog-reconcile.fifo: the key is a router (agent uuid or the standalone default router). `seq` is the
 * request number that lets a worker skip requests a later computation already covered. `service`,
 * when set, names a service whose entries the worker re-checks against its row after writing, so
 * an index that lags the table cannot make a reconcile look done.
 */
export const fogReconcileMessage = z.object({
  routerKey: z.string().min(1),
  seq: z.number().int().nonnegative(),
  service: z.string().optional(),
});
export type FogReconcileMessage = z.output<typeof fogReconcileMessage>;
