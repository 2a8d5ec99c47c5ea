import type { NatsPorts } from '../../shared/domain/nats-conf.js';
import { createAgent } from '../fixtures/world.js';
import type { ApiClient } from '../support/client.js';
import { freeServerPort } from '../support/processes.js';
import { ScriptedAgent } from '../support/scripted-agent.js';

export type { NatsPorts };

/**
 * An agent whose NATS process the test runs on this machine: created through the API with free ports
 * of its own (its host a loopback address, so servers and leaves dial each other here), small
 * JetStream stores, and provisioned by a scripted Edgelet.
 */
export async function declareNatsAgent(
  api: ApiClient,
  controllerUrl: string,
  agent: { name: string; host: string; mode: 'server' | 'leaf' },
): Promise<{ uuid: string; ports: NatsPorts; edgelet: ScriptedAgent }> {
  const [serverPort, clusterPort, leafPort, mqttPort, httpPort] = await Promise.all(
    Array.from({ length: 5 }, () => freeServerPort()),
  );
  const ports = {
    serverPort: serverPort!,
    clusterPort: clusterPort!,
    leafPort: leafPort!,
    mqttPort: mqttPort!,
    httpPort: httpPort!,
  };
  const uuid = await createAgent(api, {
    name: agent.name,
    host: agent.host,
    natsMode: agent.mode,
    natsServerPort: ports.serverPort,
    natsClusterPort: ports.clusterPort,
    natsLeafPort: ports.leafPort,
    natsMqttPort: ports.mqttPort,
    natsHttpPort: ports.httpPort,
    jsStorageSize: '256m',
    jsMemoryStoreSize: '64m',
  });
  const key = await api.get<{ key: string }>(`/api/v3/iofog/${uuid}/provisioning-key`);
  const edgelet = new ScriptedAgent(controllerUrl);
  await edgelet.provision(key.body.key, 1);
  return { uuid, ports, edgelet };
}
