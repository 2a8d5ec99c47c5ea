import { config } from '../context.js';
import { buildKubernetesService } from '../domain/kubernetes-service.js';
import { ReconcileError } from '../errors.js';
import { applyKubernetesService, awaitLoadBalancerIngress } from '../k8s/services.js';
import { replaceServiceRow, type ServiceRow } from '../store/services.js';
import type { Work } from './service-work.js';

/** The Kubernetes Service a service gets on a Kubernetes control plane, in front of the hub router. */

/** On a Kubernetes control plane every type but k8s gets a Kubernetes Service in front of the hub. */
export function needsKubernetesService(row: ServiceRow): boolean {
  return config().controlPlane === 'kubernetes' && row.type !== 'k8s';
}

/**
 * Creates or patches the Kubernetes Service; for a LoadBalancer, waits for its ingress and records it as
 * serviceEndpoint. No ingress after the poll is a failure the user sees, not a silent `ready`.
 */
export async function convergeKubernetesService(work: Work): Promise<string | undefined> {
  const { row } = work;
  const settings = config();
  if (row.servicePort === undefined || row.k8sType === undefined || row.bridgePort === null) {
    return `Service ${row.name} needs servicePort and k8sType on a Kubernetes control plane`;
  }
  await applyKubernetesService(
    buildKubernetesService(
      {
        name: row.name,
        tags: row.tags,
        servicePort: row.servicePort,
        bridgePort: row.bridgePort,
        k8sType: row.k8sType,
      },
      {
        namespace: settings.controllerNamespace,
        controllerName: settings.controllerName,
        appLabel: settings.appLabel,
        componentLabelKey: settings.componentLabelKey,
      },
    ),
  );
  if (row.k8sType !== 'LoadBalancer') return undefined;
  const endpoint = await awaitLoadBalancerIngress(row.name);
  if (!endpoint) {
    const { loadBalancerPollAttempts, loadBalancerPollIntervalMs } = settings.kubernetes;
    return `LoadBalancer Service ${row.name} has no ingress address after ${loadBalancerPollAttempts} checks ${loadBalancerPollIntervalMs / 1000} s apart; check the cloud load balancer controller, then POST /api/v3/services/${row.name}/reconcile`;
  }
  if (endpoint === row.serviceEndpoint) return undefined;
  const next = { ...row, serviceEndpoint: endpoint };
  if (!(await replaceServiceRow(next, row.generation))) {
    throw new ReconcileError(`Service ${row.name} changed during reconcile; retrying`);
  }
  work.row = next;
  return undefined;
}
