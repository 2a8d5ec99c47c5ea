import type { ServiceType } from './service.js';

/** skupper router objects, exactly as the Router reads them: ports are strings, no siteId. */
export interface TcpListener {
  name: string;
  port: string;
  address: string;
}

export interface TcpConnector {
  name: string;
  host: string;
  port: string;
  address: string;
  processId: string;
}

export type RouterMode = 'none' | 'edge' | 'interior';

/** Host an edge router uses to reach a process on its own node (host network or the agent itself). */
export const EDGE_LOCAL_HOST = 'edgelet.default.svc.bridge.local';
/** An interior router shares the node's network namespace. */
export const INTERIOR_LOCAL_HOST = '127.0.0.1';

/** What the connector dials, as resolved from the store at reconcile time. */
export type ConnectorBackend =
  | {
      type: 'microservice';
      microserviceUuid: string;
      applicationName: string;
      microserviceName: string;
      hostNetworkMode: boolean;
      routerMode: RouterMode;
    }
  | { type: 'agent'; agentUuid: string; routerMode: RouterMode }
  | { type: 'k8s' | 'external'; resource: string };

export const listenerName = (serviceName: string) => `${serviceName}-listener`;
export const connectorName = (serviceName: string) => `${serviceName}-connector`;

export function buildTcpListener(serviceName: string, bridgePort: number): TcpListener {
  return { name: listenerName(serviceName), port: String(bridgePort), address: serviceName };
}

/** The host a connector dials, by backend type and router mode. */
export function connectorHost(backend: ConnectorBackend): string {
  switch (backend.type) {
    case 'microservice':
      if (backend.routerMode === 'interior') return INTERIOR_LOCAL_HOST;
      return backend.hostNetworkMode
        ? EDGE_LOCAL_HOST
        : `${backend.applicationName}.${backend.microserviceName}`;
    case 'agent':
      return backend.routerMode === 'interior' ? INTERIOR_LOCAL_HOST : EDGE_LOCAL_HOST;
    default:
      return backend.resource;
  }
}

/** The processId a connector carries, by backend type. */
export function connectorProcessId(backend: ConnectorBackend, targetPort: number): string {
  switch (backend.type) {
    case 'microservice':
      return backend.microserviceUuid;
    case 'agent':
      return `${backend.agentUuid}-local-${targetPort}`;
    default:
      return `${backend.resource}-${backend.type}-${targetPort}`;
  }
}

export function buildTcpConnector(
  serviceName: string,
  targetPort: number,
  backend: ConnectorBackend,
): TcpConnector {
  return {
    name: connectorName(serviceName),
    host: connectorHost(backend),
    port: String(targetPort),
    address: serviceName,
    processId: connectorProcessId(backend, targetPort),
  };
}

/** Types whose connector lives on the default router rather than on an agent. */
export function connectorOnDefaultRouter(type: ServiceType): boolean {
  return type === 'k8s' || type === 'external';
}
