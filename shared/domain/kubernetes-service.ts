import { tagsToAnnotations } from './annotations.js';
import type { K8sServiceType } from './service.js';

/** The labels and selector settings the controller applies to every Kubernetes Service it owns. */
export interface KubernetesServiceSettings {
  namespace: string;
  controllerName: string;
  appLabel: string;
  /** `datasance.com/component` or `iofog.org/component` (or COMPONENT_LABEL_DOMAIN + `/component`). */
  componentLabelKey: string;
}

export interface KubernetesServiceManifest {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
  };
  spec: {
    type: K8sServiceType;
    selector: Record<string, string>;
    ports: { name: string; port: number; targetPort: number; protocol: 'TCP' }[];
  };
}

export const SERVICE_PORT_NAME = 'iofog-service';

/**
 * The Kubernetes Service in front of the hub router: clients use servicePort, kube-proxy
 * forwards to bridgePort on the router pods, tags become annotations.
 */
export function buildKubernetesService(
  service: {
    name: string;
    tags: readonly string[];
    servicePort: number;
    bridgePort: number;
    k8sType: K8sServiceType;
  },
  settings: KubernetesServiceSettings,
): KubernetesServiceManifest {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: service.name,
      namespace: settings.namespace,
      labels: {
        'app.kubernetes.io/name': settings.appLabel,
        'app.kubernetes.io/component': 'controller',
        'app.kubernetes.io/managed-by': 'controller',
        'app.kubernetes.io/instance': settings.controllerName,
        [settings.componentLabelKey]: 'router',
      },
      annotations: tagsToAnnotations(service.tags),
    },
    spec: {
      type: service.k8sType,
      selector: { [settings.componentLabelKey]: 'router' },
      ports: [
        {
          name: SERVICE_PORT_NAME,
          port: service.servicePort,
          targetPort: service.bridgePort,
          protocol: 'TCP',
        },
      ],
    },
  };
}

/** The JSON patch an update sends: type, selector, ports and the whole annotation map are replaced. */
export function kubernetesServicePatch(manifest: KubernetesServiceManifest) {
  return [
    { op: 'replace', path: '/spec/type', value: manifest.spec.type },
    { op: 'replace', path: '/spec/selector', value: manifest.spec.selector },
    { op: 'replace', path: '/spec/ports', value: manifest.spec.ports },
    { op: 'add', path: '/metadata/annotations', value: manifest.metadata.annotations },
  ];
}
