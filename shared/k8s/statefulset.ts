import { config } from '../context.js';
import { logger } from '../log/logger.js';
import { appsApi, patchAs, statusOf } from './client.js';

/**
 * Rolls a StatefulSet the way `kubectl rollout restart` does: a merge patch of the pod template's
 * `kubectl.kubernetes.io/restartedAt` annotation. A missing StatefulSet is logged, not an error (the
 * operator may not have created it yet; its pods then start from the current ConfigMap anyway).
 */
export async function restartStatefulSet(name: string, now = new Date()): Promise<boolean> {
  const api = await appsApi();
  try {
    await api.patchNamespacedStatefulSet(
      {
        name,
        namespace: config().controllerNamespace,
        body: {
          spec: {
            template: {
              metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': now.toISOString() } },
            },
          },
        },
      },
      await patchAs('merge'),
    );
    return true;
  } catch (error) {
    if (statusOf(error) !== 404) throw error;
    logger.warn('StatefulSet not found; nothing to restart', {
      name,
      namespace: config().controllerNamespace,
    });
    return false;
  }
}
