import {
  ChurnModel,
  churnMismatches,
  countByKind,
  createFleet,
  runChurn as runChurnClients,
} from '../../test/support/churn.js';
import type { ApiClient } from '../../test/support/client.js';
import { type Observer, sleep } from '../support.js';

/**
 * S3 churn: C clients create, retag, re-port and delete services on names of their own for a fixed time
 * against a fleet (the hub, agents tagged `all`, one token, several tokens, a bare and a near-miss tag,
 * an edge and an interior backend), keeping a model of what the API acknowledged. After convergence the
 * services, the hub, every agent's listeners and every backend's connectors must match the model;
 * mismatches are reported per kind.
 */
export async function runChurn(
  api: ApiClient,
  _observer: Observer,
  settings: { clients: number; churnSeconds: number },
) {
  const fleet = await createFleet(api);
  const model = new ChurnModel();
  await runChurnClients({
    clients: settings.clients,
    seconds: settings.churnSeconds,
    fleet,
    model,
    api: async () => api,
  });

  const settleStarted = Date.now();
  let mismatches = await churnMismatches(api, fleet, model);
  while (mismatches.length > 0 && Date.now() - settleStarted < 300_000) {
    await sleep(200);
    mismatches = await churnMismatches(api, fleet, model);
  }
  const settledMs = Date.now() - settleStarted;
  const byKind = countByKind(mismatches);
  const { counts } = model;
  const result = {
    seconds: settings.churnSeconds,
    operations: { create: counts.create, update: counts.update, delete: counts.delete },
    unexpectedAnswers: model.unexpected,
    finalServices: [...model.settled.values()].filter((intent) => intent !== null).length,
    agents: fleet.agents.length,
    settledMs,
    mismatches: mismatches.length,
    mismatchesByKind: byKind,
    mismatchSamples: mismatches.slice(0, 5).map((mismatch) => mismatch.text),
  };
  console.log('\nS3 churn');
  console.table({
    'clients / seconds': `${settings.clients} / ${settings.churnSeconds}`,
    'creates / updates / deletes': `${counts.create} / ${counts.update} / ${counts.delete}`,
    'unexpected API answers': counts.unexpected,
    'services at the end / agents': `${result.finalServices} / ${fleet.agents.length}`,
    'settled after the last operation (ms)': settledMs,
    'mismatches: services': byKind.service,
    'mismatches: hub': byKind.hub,
    'mismatches: agent listeners': byKind['agent listener'],
    'mismatches: backend connectors': byKind['backend connector'],
  });
  return result;
}
