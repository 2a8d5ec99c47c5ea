import { config } from '../context.js';
import type { DesiredBridges, RouterConfig } from '../domain/router-config.js';
import {
  applyDesiredToSkrouterd,
  parseSkrouterd,
  type SkrouterdEntry,
  skrouterdAsRouterConfig,
} from '../domain/skrouterd.js';
import { ContentionError, NotFoundError, ReconcileError } from '../errors.js';
import { faultPoint } from '../faults.js';
import { coreApi, statusOf } from './client.js';

export const HUB_CONFIGMAP = 'iofog-router';
export const HUB_CONFIG_KEY = 'skrouterd.json';

export interface HubWriteResult {
  written: boolean;
  entries: SkrouterdEntry[];
  /** The bridge entries in object form, for checks and for the hub-config view. */
  view: RouterConfig;
}

/**
 * Applies the desired hub bridges to the operator's ConfigMap: read, upsert/delete by name keeping
 * every operator entry and the order, replace with the read `resourceVersion` as precondition;
 * a 409 means someone wrote in between, so read again and re-apply. The ConfigMap belongs to the
 * operator: a missing one fails the reconcile, it is never created here.
 */
export async function applyHubConfigMap(desired: DesiredBridges): Promise<HubWriteResult> {
  const api = await coreApi();
  const namespace = config().controllerNamespace;
  for (let attempt = 0; attempt < 10; attempt++) {
    let configMap: Awaited<ReturnType<typeof api.readNamespacedConfigMap>>;
    try {
      faultPoint('k8s:read-configmap');
      configMap = await api.readNamespacedConfigMap({ name: HUB_CONFIGMAP, namespace });
    } catch (error) {
      if (statusOf(error) === 404) {
        throw new ReconcileError(
          `ConfigMap ${HUB_CONFIGMAP} not found in namespace ${namespace}: the operator creates it; install or repair the control plane`,
        );
      }
      throw error;
    }
    const text = configMap.data?.[HUB_CONFIG_KEY];
    if (text === undefined) {
      throw new ReconcileError(
        `ConfigMap ${HUB_CONFIGMAP} in namespace ${namespace} has no key ${HUB_CONFIG_KEY}`,
      );
    }
    let current: SkrouterdEntry[];
    try {
      current = parseSkrouterd(text);
    } catch (error) {
      throw new ReconcileError(`ConfigMap ${HUB_CONFIGMAP}: ${(error as Error).message}`);
    }
    const next = applyDesiredToSkrouterd(current, desired);
    if (JSON.stringify(next) === JSON.stringify(current)) {
      return { written: false, entries: current, view: skrouterdAsRouterConfig(current) };
    }
    try {
      faultPoint('k8s:replace-configmap');
      await api.replaceNamespacedConfigMap({
        name: HUB_CONFIGMAP,
        namespace,
        body: {
          ...configMap,
          // resourceVersion from the read is the precondition: a concurrent writer makes this a 409.
          metadata: { ...configMap.metadata, resourceVersion: configMap.metadata?.resourceVersion },
          data: { ...configMap.data, [HUB_CONFIG_KEY]: JSON.stringify(next, null, 2) },
        },
      });
      return { written: true, entries: next, view: skrouterdAsRouterConfig(next) };
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
    }
  }
  throw new ContentionError(`ConfigMap ${HUB_CONFIGMAP} kept changing under reconcile; will retry`);
}

/** The hub document as it stands in the operator's ConfigMap (the array of pairs). */
export async function readHubConfigMap(): Promise<SkrouterdEntry[]> {
  const api = await coreApi();
  const namespace = config().controllerNamespace;
  try {
    const configMap = await api.readNamespacedConfigMap({ name: HUB_CONFIGMAP, namespace });
    return parseSkrouterd(configMap.data?.[HUB_CONFIG_KEY] ?? '[]');
  } catch (error) {
    if (statusOf(error) === 404) {
      throw new NotFoundError(`ConfigMap ${HUB_CONFIGMAP} not found in namespace ${namespace}`);
    }
    throw error;
  }
}
