import type { ServiceSite, SitesSummary } from './service-sites.js';
/** The shapes a Service has in fogbridge, independent of where it is stored. */
export const SERVICE_TYPES = ['microservice', 'agent', 'k8s', 'external'] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];

export const K8S_SERVICE_TYPES = ['LoadBalancer', 'ClusterIP', 'NodePort'] as const;
export type K8sServiceType = (typeof K8S_SERVICE_TYPES)[number];

export const PROVISIONING_STATUSES = ['pending', 'ready', 'failed'] as const;
export type ProvisioningStatus = (typeof PROVISIONING_STATUSES)[number];

/** Names the seed reserves for the control plane's own objects. */
export const RESERVED_SERVICE_NAMES = [
  'controller',
  'router',
  'router-internal',
  'docker',
  'podman',
  'kubernetes',
  'nats',
  'nats-headless',
  'nats-server',
] as const;

export const DNS_LABEL = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
/** Kubernetes caps a DNS label (and so a Service name) at 63 characters. */
export const DNS_LABEL_MAX = 63;

/** What a user declares; everything else on a Service is assigned. */
export interface ServiceSpec {
  name: string;
  type: ServiceType;
  resource: string;
  targetPort: number;
  servicePort?: number | undefined;
  k8sType?: K8sServiceType | undefined;
  defaultBridge: string;
  tags: string[];
}

/** The public view of a Service, as the API returns it. */
export interface ServiceView {
  name: string;
  type: ServiceType;
  resource: string;
  targetPort: number;
  servicePort: number | null;
  k8sType: K8sServiceType | null;
  defaultBridge: string;
  bridgePort: number | null;
  serviceEndpoint: string | null;
  tags: string[];
  provisioningStatus: ProvisioningStatus;
  provisioningError: string | null;
  /** Per-site status (on reads): the summary, and on a service's own read its sites not applied. */
  sites?: SitesSummary & { notApplied?: ServiceSite[] };
}
