import type { V1ConfigMap } from '@kubernetes/client-node';
import { config } from '../context.js';
import { ConfigMapMissingError, ContentionError } from '../errors.js';
import { faultPoint } from '../faults.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import { coreApi, statusOf } from './client.js';

/**
 * What an edit of a ConfigMap decides from what it read: the new `data` (undefined when nothing needs to
 * change, so nothing is written) and a value for the caller.
 */
export interface ConfigMapEdit<T> {
  data: Record<string, string> | undefined;
  value: T;
}

/**
 * Read, edit, replace with the read `resourceVersion` as precondition; a 409 means someone (the
 * operator, another worker) wrote in between, so read again and edit again. The ConfigMaps fogbridge
 * writes back into belong to the operator: a missing one is a ReconcileError, never created here.
 */
export async function editConfigMap<T>(
  name: string,
  edit: (configMap: V1ConfigMap) => ConfigMapEdit<T>,
  /** Runs before each write is attempted (what must be recorded before the change is visible). */
  beforeWrite?: (value: T) => Promise<void>,
): Promise<{ written: boolean; value: T }> {
  const api = await coreApi();
  const namespace = config().controllerNamespace;
  return retryOnConflict(
    async () => {
      let configMap: V1ConfigMap;
      try {
        faultPoint('k8s:read-configmap');
        configMap = await api.readNamespacedConfigMap({ name, namespace });
      } catch (error) {
        if (statusOf(error) === 404) {
          throw new ConfigMapMissingError(
            `ConfigMap ${name} not found in namespace ${namespace}: the operator creates it; install or repair the control plane`,
          );
        }
        throw error;
      }
      const { data, value } = edit(configMap);
      if (!data) return { written: false, value };
      await beforeWrite?.(value);
      try {
        faultPoint('k8s:replace-configmap');
        await api.replaceNamespacedConfigMap({
          name,
          namespace,
          // resourceVersion from the read is the precondition: a concurrent writer makes this a 409.
          body: { ...configMap, metadata: { ...configMap.metadata }, data },
        });
        return { written: true, value };
      } catch (error) {
        if (statusOf(error) === 409) return CONFLICT;
        throw error;
      }
    },
    {
      times: 10,
      exhausted: () => new ContentionError(`ConfigMap ${name} kept changing under reconcile; will retry`),
    },
  );
}
