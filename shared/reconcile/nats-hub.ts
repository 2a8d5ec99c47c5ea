import { config } from '../context.js';
import { agentServerRoutes, mergeOperatorRoutes, operatorAgentRoutes } from '../domain/nats-conf.js';
import { ConfigMapMissingError, ReconcileError } from '../errors.js';
import { editConfigMap } from '../k8s/configmaps.js';
import { restartStatefulSet } from '../k8s/statefulset.js';
import { logger } from '../log/logger.js';
import {
  clearNatsHubRestart,
  getNatsHubRestartOwed,
  listNatsServers,
  oweNatsHubRestart,
} from '../store/nats.js';
import { listAccountRows } from '../store/nats-accounts.js';
import { systemAccountJwt } from '../store/nats-identities.js';

export const NATS_CONFIG_MAP = 'iofog-nats-config';
export const NATS_JWT_BUNDLE = 'iofog-nats-jwt-bundle';
export const NATS_STATEFUL_SET = 'nats';

/**
 * The Kubernetes write-backs of the NATS fabric, one reconcile keyed
 * `nats-hub` so two workers never interleave them: the operator's `iofog-nats-config` keeps its own
 * `nats-headless` routes and gets every agent server's; a removed agent route restarts the `nats`
 * StatefulSet so its pods drop it; `iofog-nats-jwt-bundle` holds every account fogbridge signs. Each
 * write is a read, compare and replace on the read `resourceVersion`. A ConfigMap the operator has not
 * created yet is waited for (the sweeper re-checks), never created.
 */
export async function reconcileNatsHub(): Promise<void> {
  if (config().controlPlane !== 'kubernetes') return;
  await whenPresent(NATS_CONFIG_MAP, syncClusterRoutes);
  const owed = await getNatsHubRestartOwed();
  if (owed) {
    await restartStatefulSet(NATS_STATEFUL_SET);
    await clearNatsHubRestart(owed);
  }
  await whenPresent(NATS_JWT_BUNDLE, syncJwtBundle);
}

async function whenPresent(name: string, sync: () => Promise<void>): Promise<void> {
  try {
    await sync();
  } catch (error) {
    if (!(error instanceof ConfigMapMissingError)) throw error;
    logger.warn('NATS write-back waits for the operator', { configMap: name, reason: error.message });
  }
}

/** Every `nats-headless` route stays; the agent servers' routes are exactly the fleet's servers. */
async function syncClusterRoutes(): Promise<void> {
  const servers = await listNatsServers();
  const agentRoutes = agentServerRoutes(servers);
  await editConfigMap(
    NATS_CONFIG_MAP,
    (configMap) => {
      const serverConf = configMap.data?.['server.conf'];
      if (serverConf === undefined) {
        throw new ReconcileError(`ConfigMap ${NATS_CONFIG_MAP} has no server.conf: the operator writes it`);
      }
      const next = mergeOperatorRoutes(serverConf, agentRoutes);
      const removed = operatorAgentRoutes(serverConf).filter((route) => !agentRoutes.includes(route));
      return {
        data: next === serverConf ? undefined : { ...configMap.data, 'server.conf': next },
        value: removed,
      };
    },
    async (removed) => {
      // Owed before the write lands: once written, the ConfigMap no longer shows what was removed.
      if (removed.length > 0) await oweNatsHubRestart();
    },
  );
}

/**
 * The bundle gains (or updates) every account's `<public key>.jwt`: the system account and every
 * application account (a disabled one too, so running servers drop it); keys it holds besides stay (a
 * full resolver never deletes an account, and the operator may keep its own).
 */
async function syncJwtBundle(): Promise<void> {
  const [system, applications] = await Promise.all([systemAccountJwt(), listAccountRows()]);
  const accounts = [system, ...applications];
  await editConfigMap(NATS_JWT_BUNDLE, (configMap) => {
    const data = { ...configMap.data };
    for (const account of accounts) data[`${account.publicKey}.jwt`] = account.jwt;
    const same = accounts.every((account) => configMap.data?.[`${account.publicKey}.jwt`] === account.jwt);
    return { data: same ? undefined : data, value: undefined };
  });
}
