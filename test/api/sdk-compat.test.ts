import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../support/client.js';
import { type GoStruct, goUnmarshal } from '../support/go-json.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { sdkClient } from '../support/sdk.js';

/**
 * The calls potctl makes through the Go SDK (`github.com/datasance/iofog-go-sdk/v3@v3.6.0`, package
 * `pkg/client`), sent exactly as the SDK puts them on the wire: its request bodies (JSON from its
 * structs' tags, every field `omitempty` unless quoted otherwise), `Content-Type: application/json` even
 * on GET and DELETE, multipart uploads in a file part of type `application/octet-stream`, and its
 * success rule (any 2xx; the body decoded with `encoding/json` into the SDK's structs, so a wrong JSON
 * type fails the call). The bodies below were captured from the SDK's own code.
 */

// pkg/client/types.go:442-451
const ControllerStatus: GoStruct = {
  status: 'string',
  uptimeSec: 'float',
  versions: { struct: { controller: 'string', ecnViewer: 'string' } },
};
// pkg/client/types.go:496-571 (AgentInfo, the fields with a type a JSON value can break)
const AgentInfo: GoStruct = {
  uuid: 'string',
  name: 'string',
  host: 'string',
  location: 'string',
  latitude: 'float',
  longitude: 'float',
  description: 'string',
  diskLimit: 'int',
  memoryLimit: 'int',
  cpuLimit: 'int',
  createdAt: 'string',
  updatedAt: 'string',
  lastActive: 'int',
  daemonStatus: 'string',
  daemonOperatingDuration: 'int',
  memoryUsage: 'float',
  diskUsage: 'float',
  cpuUsage: 'float',
  lastStatusTime: 'int',
  ipAddress: 'string',
  ipAddressExternal: 'string',
  version: 'string',
  isReadyToUpgrade: 'bool',
  isReadyToRollback: 'bool',
  fogTypeId: 'int',
  routerMode: 'string',
  networkRouter: 'string',
  upstreamRouters: { slice: 'string' },
  messagingPort: 'int',
  edgeRouterPort: 'int',
  interRouterPort: 'int',
  tags: { slice: 'string' },
  isSystem: 'bool',
  volumeMounts: { slice: { struct: { name: 'string', uuid: 'string', version: 'int' } } },
  warningMessage: 'string',
};
// pkg/client/types.go:625-627
const ListAgentsResponse: GoStruct = { fogs: { slice: { struct: AgentInfo } } };
// pkg/client/types.go:488-492
const GetAgentProvisionKeyResponse: GoStruct = { key: 'string', caCert: 'string', expirationTime: 'int' };
// pkg/client/types.go:453-458, 515-518 (Router / RouterConfig)
const Router: GoStruct = {
  routerMode: 'string',
  messagingPort: 'int',
  edgeRouterPort: 'int',
  interRouterPort: 'int',
  host: 'string',
};
// pkg/client/types.go:277-280, 314-421 (MicroserviceInfo)
const MicroserviceInfo: GoStruct = {
  uuid: 'string',
  config: 'string',
  name: 'string',
  hostNetworkMode: 'bool',
  isPrivileged: 'bool',
  schedule: 'int',
  logSize: 'int',
  delete: 'bool',
  applicationID: 'int',
  application: 'string',
  catalogItemId: 'int',
  iofogUuid: 'string',
  userId: 'int',
  registryId: 'int',
  ports: { slice: { struct: { internal: 'int', external: 'int', protocol: 'string' } } },
  volumeMappings: { slice: { struct: { hostDestination: 'string', containerDestination: 'string' } } },
  cmd: { slice: 'string' },
  env: { slice: { struct: { key: 'string', value: 'string' } } },
  status: { struct: { status: 'string', startTime: 'int', percentage: 'float' } },
  images: { slice: { struct: { containerImage: 'string', fogTypeId: 'int' } } },
  annotations: 'string',
  memoryLimit: 'int',
};
// pkg/client/types.go:410-416 (no JSON tag on Microservices: matched case-insensitively)
const MicroserviceListResponse: GoStruct = { Microservices: { slice: { struct: MicroserviceInfo } } };
// pkg/client/types.go:50-60, 74-76
const ApplicationInfo: GoStruct = {
  name: 'string',
  description: 'string',
  isActivated: 'bool',
  isSystem: 'bool',
  userId: 'int',
  id: 'int',
  microservices: { slice: { struct: MicroserviceInfo } },
};
const ApplicationListResponse: GoStruct = { applications: { slice: { struct: ApplicationInfo } } };
// pkg/client/types.go:33-36 (what CreateApplicationFromYAML decodes; it then GETs `name`)
const FlowCreateResponse: GoStruct = { id: 'int', name: 'string' };
// pkg/client/types.go:415-417
const MicroserviceCreateResponse: GoStruct = { uuid: 'string' };
// pkg/client/types.go:724-740
const ServiceInfo: GoStruct = {
  tags: { slice: 'string' },
  name: 'string',
  type: 'string',
  resource: 'string',
  targetPort: 'int',
  servicePort: 'int',
  k8sType: 'string',
  bridgePort: 'int',
  defaultBridge: 'string',
  serviceEndpoint: 'string',
  provisioningStatus: 'string',
  provisioningError: 'string',
};

let t: TestRuntime;
let api: ApiClient;
let agentUuid: string;
let microserviceUuid: string;

/** A call as the Go SDK makes it (test/support/sdk.ts). */
let sdk: ReturnType<typeof sdkClient>;

beforeAll(async () => {
  t = await startTestRuntime();
  api = t.api;
  sdk = sdkClient(t.runtime);
});

afterAll(async () => {
  await t?.stop();
});

describe('potctl through the Go SDK', () => {
  it('GetStatus: an unauthenticated status with a three-part controller version (GetAllMicroservices needs one)', async () => {
    // Act: client.New sends `Authorization: Bearer` with no token
    const response = await fetch(`${t.runtime.url}/api/v3/status`, {
      headers: { authorization: 'Bearer', 'content-type': 'application/json' },
    });
    const status = (await response.json()) as { versions: { controller: string } };

    // Assess
    expect(response.status).toBe(200);
    goUnmarshal(status, { struct: ControllerStatus });
    const [major, minor, patch] = status.versions.controller.split('-')[0]!.split('.').map(Number);
    expect([major, minor, patch].every(Number.isInteger)).toBe(true);
    expect(major).toBeGreaterThanOrEqual(2);
  });

  it('CreateAgent (first agent of a remote control plane, then an edge agent as potctl deploys it)', async () => {
    // Act: CreateAgentRequest flattens AgentUpdateRequest, AgentConfiguration and RouterConfig
    const hub = (await sdk('POST', '/iofog', {
      json: { name: 'hub', fogType: 0, host: '10.0.0.4' },
      decode: { map: 'any' },
    })) as { uuid: string };
    const edge = (await sdk('POST', '/iofog', {
      json: {
        name: 'agent-1',
        fogType: 0,
        tags: ['t1'],
        upstreamRouters: ['default-router'],
        host: '10.0.0.5',
        routerMode: 'edge',
      },
      decode: { map: 'any' },
    })) as { uuid: string };

    // Assess: the SDK needs the new agent's "uuid" as a string
    expect(typeof hub.uuid).toBe('string');
    expect(typeof edge.uuid).toBe('string');
    agentUuid = edge.uuid;
  });

  it('ListAgents, UpdateAgent (PATCH then GET) and GetAgentProvisionKey decode', async () => {
    // Act
    const list = (await sdk('GET', '/iofog-list', { decode: { struct: ListAgentsResponse } })) as {
      fogs: { name: string }[];
    };
    await sdk('PATCH', `/iofog/${agentUuid}`, { json: { name: 'agent-1', host: '10.0.0.5' } });
    const agent = (await sdk('GET', `/iofog/${agentUuid}`, { decode: { struct: AgentInfo } })) as {
      upstreamRouters: string[];
    };
    await sdk('GET', `/iofog/${agentUuid}/provisioning-key`, {
      decode: { struct: GetAgentProvisionKeyResponse },
    });

    // Assess
    expect(list.fogs.map((fog) => fog.name).sort()).toEqual(['agent-1', 'hub']);
    expect(agent.upstreamRouters).toEqual(['default-router']);
  });

  it('PutDefaultRouter and GetDefaultRouter', async () => {
    // Act
    await sdk('PUT', '/router', {
      json: {
        routerMode: 'interior',
        messagingPort: 5671,
        edgeRouterPort: 45671,
        interRouterPort: 55671,
        host: '10.0.0.4',
      },
    });
    const router = await sdk('GET', '/router', { decode: { struct: Router } });

    // Assess
    expect(router).toMatchObject({ host: '10.0.0.4', messagingPort: 5671 });
  });

  it('DeployApplication: GET (404), CreateApplicationFromYAML, GET by name, StartApplication', async () => {
    // Prepare: apps.DeployApplication marshals this with yaml.v2 (keys sorted, namespace "")
    const yaml = `apiVersion: datasance.com/v3
kind: Application
metadata:
  name: app1
  namespace: ""
spec:
  microservices:
  - agent:
      name: agent-1
    images:
      x86: nginx
    name: ms1
  natsConfig:
    natsAccess: true
`;
    const missing = await api.get('/api/v3/application/app1');

    // Act
    const created = (await sdk('POST', '/application/yaml', {
      multipart: { field: 'application', file: 'application.yaml', yaml },
      decode: { struct: FlowCreateResponse },
    })) as { name: string };
    const application = (await sdk('GET', `/application/${created.name}`, {
      decode: { struct: ApplicationInfo },
    })) as {
      microservices: { name: string; images: unknown[] }[];
    };
    await sdk('PATCH', '/application/app1', { json: { isActivated: true } });
    await sdk('GET', '/application/app1', { decode: { struct: ApplicationInfo } });
    await sdk('GET', '/application', { decode: { struct: ApplicationListResponse } });

    // Assess: "not found" must be a 404, which sends the SDK down the create path
    expect(missing.status).toBe(404);
    expect(created.name).toBe('app1');
    expect(application.microservices.map((ms) => ms.name)).toEqual(['ms1']);
    expect(application.microservices[0]!.images).toEqual([{ containerImage: 'nginx', fogTypeId: 1 }]);
  });

  it('DeployMicroservice: list by application, CreateMicroserviceFromYAML, GET by uuid, then the update path', async () => {
    // Prepare
    const yaml = `apiVersion: datasance.com/v3
kind: Microservice
metadata:
  name: app1/ms2
  namespace: ""
spec:
  agent:
    name: agent-1
  application: app1
  images:
    x86: nginx
`;
    await sdk('GET', '/microservices?application=app1', { decode: { struct: MicroserviceListResponse } });

    // Act
    const created = (await sdk('POST', '/microservices/yaml', {
      multipart: { field: 'microservice', file: 'microservice.yaml', yaml },
      decode: { struct: MicroserviceCreateResponse },
    })) as { uuid: string };
    const microservice = (await sdk('GET', `/microservices/${created.uuid}`, {
      decode: { struct: MicroserviceInfo },
    })) as { name: string; iofogUuid: string };
    await sdk('PATCH', `/microservices/yaml/${created.uuid}`, {
      multipart: {
        field: 'microservice',
        file: 'microservice.yaml',
        yaml: yaml.replace('x86: nginx', 'x86: nginx:1.27'),
      },
    });
    const updated = (await sdk('GET', `/microservices/${created.uuid}`, {
      decode: { struct: MicroserviceInfo },
    })) as {
      images: unknown[];
    };

    // Assess
    expect(microservice).toMatchObject({ name: 'ms2', iofogUuid: agentUuid });
    expect(updated.images).toEqual([{ containerImage: 'nginx:1.27', fogTypeId: 1 }]);
    microserviceUuid = created.uuid;
  });

  it('GetAllMicroservices and GetMicroservicesByApplication decode', async () => {
    // Act
    const all = (await sdk('GET', '/microservices', { decode: { struct: MicroserviceListResponse } })) as {
      microservices: { uuid: string }[];
    };
    const ofApp = (await sdk('GET', '/microservices?application=app1', {
      decode: { struct: MicroserviceListResponse },
    })) as { microservices: { name: string }[] };

    // Assess
    expect(all.microservices.map((ms) => ms.uuid)).toContain(microserviceUuid);
    expect(ofApp.microservices.map((ms) => ms.name).sort()).toEqual(['ms1', 'ms2']);
  });

  it('potctl deploy Service: GET (any error: create), CreateService, then GET and UpdateService with defaultBridgePort', async () => {
    // Prepare
    const missing = await api.get('/api/v3/services/svc1');

    // Act: ServiceCreateRequest (types.go:742-751)
    await sdk('POST', '/services', {
      json: {
        name: 'svc1',
        type: 'microservice',
        resource: 'app1/ms1',
        targetPort: 80,
        defaultBridge: 'default-router',
        tags: ['a'],
      },
    });
    await sdk('GET', '/services/svc1', { decode: { struct: ServiceInfo } });
    // ServiceUpdateRequest (types.go:753-762): DefaultBridge is tagged `defaultBridgePort`
    const update = await fetch(`${t.runtime.url}/api/v3/services/svc1`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${t.runtime.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'svc1',
        type: 'microservice',
        resource: 'app1/ms1',
        targetPort: 81,
        defaultBridgePort: 'default-router',
        tags: ['a', 'b'],
      }),
    });
    const service = (await sdk('GET', '/services/svc1', { decode: { struct: ServiceInfo } })) as {
      targetPort: number;
      tags: string[];
    };

    // Assess
    expect(missing.status).toBe(404);
    expect(update.status).toBe(204);
    expect(update.headers.get('warning')).toBeNull();
    expect(service).toMatchObject({ targetPort: 81, tags: ['a', 'b'] });
  });

  it('CreateServiceFromYaml, UpdateServiceFromYaml, ListServices and DeleteService', async () => {
    // Prepare
    const yaml = (targetPort: number) => `apiVersion: datasance.com/v3
kind: Service
metadata:
  name: svc2
  tags:
  - a
spec:
  type: microservice
  resource: app1/ms2
  targetPort: ${targetPort}
`;

    // Act
    await sdk('POST', '/services/yaml', {
      multipart: { field: 'service', file: 'service.yaml', yaml: yaml(80) },
    });
    await sdk('PATCH', '/services/yaml/svc2', {
      multipart: { field: 'service', file: 'service.yaml', yaml: yaml(8080) },
    });
    const list = (await sdk('GET', '/services', { decode: { slice: { struct: ServiceInfo } } })) as {
      name: string;
      targetPort: number;
    }[];
    await sdk('DELETE', '/services/svc1');
    await sdk('DELETE', '/services/svc2');

    // Assess
    expect(list.map((service) => [service.name, service.targetPort])).toEqual([
      ['svc1', 81],
      ['svc2', 8080],
    ]);
    expect((await api.get('/api/v3/services')).body).toEqual([]);
  });

  it('DeleteMicroservice and DeleteAgent', async () => {
    // Act
    await sdk('DELETE', `/microservices/${microserviceUuid}`);
    await sdk('DELETE', '/application/app1');
    await sdk('DELETE', `/iofog/${agentUuid}`);

    // Assess
    expect((await api.get(`/api/v3/iofog/${agentUuid}`)).status).toBe(404);
  });
});
