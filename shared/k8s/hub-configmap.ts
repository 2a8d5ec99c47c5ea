import { config } from '../context.js';
import type { DesiredBridges, RouterConfig } from '../domain/router-config.js';
import {
  applyDesiredToSkrouterd,
  parseSkrouterd,
  type SkrouterdEntry,
  skrouterdAsRouterConfig,
} from '../domain/skrouterd.js';
import { NotFoundError, ReconcileError } from '../errors.js';
import { coreApi, statusOf } from './client.js';
import { editConfigMap } from './configmaps.js';

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
  const namespace = config().controllerNamespace;
  const { written, value: entries } = await editConfigMap(HUB_CONFIGMAP, (configMap) => {
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
    if (JSON.stringify(next) === JSON.stringify(current)) return { data: undefined, value: current };
    const data = { ...configMap.data, [HUB_CONFIG_KEY]: JSON.stringify(next, null, 2) };
    refuseOversizedConfigMap(data);
    return { data, value: next };
  });
  return { written, entries, view: skrouterdAsRouterConfig(entries) };
}

/**
 * Kubernetes stores a ConfigMap of at most 1 MiB (1,048,576 bytes, metadata included). A hub document
 * that would not fit is refused before anything is written, with the size, rather than sent to be
 * rejected or cut short; the service that pushed it over fails with this as its provisioningError.
 */
export const CONFIGMAP_DATA_LIMIT_BYTES = 1_000_000;

export function refuseOversizedConfigMap(data: Record<string, string>): void {
  const bytes = Object.entries(data).reduce(
    (sum, [key, value]) => sum + Buffer.byteLength(key) + Buffer.byteLength(value),
    0,
  );
  if (bytes > CONFIGMAP_DATA_LIMIT_BYTES) {
    throw new ReconcileError(
      `ConfigMap ${HUB_CONFIGMAP} would hold ${bytes} bytes of data with this service's bridge entries, over the ${CONFIGMAP_DATA_LIMIT_BYTES} fogbridge allows below Kubernetes' 1 MiB ConfigMap limit; nothing was written`,
    );
  }
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
