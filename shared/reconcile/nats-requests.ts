import { reconcileApplicationNats } from '../commands/nats-applications.js';
import { config } from '../context.js';
import { observeStep } from '../metrics/operations.js';
import type { FogRequest } from '../queue/messages.js';
import {
  askNatsApplicationReconciles,
  askNatsHubReconcile,
  askRouterReconciles,
} from '../queue/publishers.js';
import { listAgentRows } from '../store/agents.js';
import { listAccountRows } from '../store/nats-accounts.js';
import { ensureSystemAccount } from '../store/nats-identities.js';
import { getRouterRequests, markRouterRequestsCompleted } from '../store/router-requests.js';
import { reconcileNatsHub } from './nats-hub.js';

type NatsRequest = Extract<FogRequest, { kind: 'nats-hub' | 'nats-operator' | 'nats-application' }>;

/**
 * The NATS fabric's requests on the fog queue, each under a key of its own: the NATS hub's Kubernetes
 * write-backs, an application's account and users, and what a new operator leaves to re-sign. Skipped
 * when a later run covered the request; every request up to what it read is marked completed after.
 */
export async function reconcileNatsRequest(request: NatsRequest): Promise<void> {
  const requests = await getRouterRequests(request.routerKey);
  if (requests.completed !== undefined && request.seq <= requests.completed) return;
  switch (request.kind) {
    case 'nats-hub':
      await observeStep('fog: nats hub', () => reconcileNatsHub());
      break;
    case 'nats-application':
      await observeStep('fog: nats application', () => reconcileApplicationNats(request.application));
      break;
    case 'nats-operator':
      await observeStep('fog: nats operator', () => followNatsOperator());
      break;
  }
  await markRouterRequestsCompleted(request.routerKey, Math.max(requests.requested ?? 0, request.seq));
}

/**
 * After a new operator: the system account is signed by it, then every application account, every
 * agent's NATS files (the operator's JWT is in them; their system users are reissued) and the
 * Kubernetes JWT bundle are reconciled.
 */
async function followNatsOperator(): Promise<void> {
  await ensureSystemAccount();
  const [accounts, agents] = await Promise.all([listAccountRows(), listAgentRows()]);
  await askNatsApplicationReconciles(accounts.map((account) => account.application));
  await askRouterReconciles(agents.filter((agent) => agent.natsMode !== 'none').map((agent) => agent.uuid));
  if (config().controlPlane === 'kubernetes') await askNatsHubReconcile();
}
