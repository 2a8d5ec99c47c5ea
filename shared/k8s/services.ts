import type { V1Service } from '@kubernetes/client-node';
import { config } from '../context.js';
import { type KubernetesServiceManifest, kubernetesServicePatch } from '../domain/kubernetes-service.js';
import { coreApi, patchAs, statusOf } from './client.js';

/**
 * Creates the Service, or updates it with a JSON patch of type, selector, ports and annotations;
 * a Service missing at update time is created again.
 */
export async function applyKubernetesService(manifest: KubernetesServiceManifest): Promise<V1Service> {
  const api = await coreApi();
  const { name, namespace } = manifest.metadata;
  try {
    return await api.patchNamespacedService(
      { name, namespace, body: kubernetesServicePatch(manifest) },
      await patchAs('json'),
    );
  } catch (error) {
    if (statusOf(error) !== 404) throw error;
  }
  try {
    return await api.createNamespacedService({ namespace, body: manifest as V1Service });
  } catch (error) {
    // Created by a concurrent reconcile of the same service between the two calls: patch it.
    if (statusOf(error) !== 409) throw error;
    return api.patchNamespacedService(
      { name, namespace, body: kubernetesServicePatch(manifest) },
      await patchAs('json'),
    );
  }
}

export async function deleteKubernetesService(name: string): Promise<void> {
  const api = await coreApi();
  try {
    await api.deleteNamespacedService({ name, namespace: config().controllerNamespace });
  } catch (error) {
    if (statusOf(error) !== 404) throw error;
  }
}

/**
 * Polls a LoadBalancer Service for its ingress (LOADBALANCER_POLL_ATTEMPTS times,
 * LOADBALANCER_POLL_INTERVAL_MS apart): the ingress IP, else its hostname, else undefined.
 */
export async function awaitLoadBalancerIngress(name: string): Promise<string | undefined> {
  const api = await coreApi();
  const { loadBalancerPollAttempts, loadBalancerPollIntervalMs } = config().kubernetes;
  for (let attempt = 1; attempt <= loadBalancerPollAttempts; attempt++) {
    const service = await api.readNamespacedService({ name, namespace: config().controllerNamespace });
    const ingress = service.status?.loadBalancer?.ingress ?? [];
    const endpoint =
      ingress.find((entry) => entry.ip)?.ip ?? ingress.find((entry) => entry.hostname)?.hostname;
    if (endpoint) return endpoint;
    if (attempt < loadBalancerPollAttempts)
      await new Promise((resolve) => setTimeout(resolve, loadBalancerPollIntervalMs));
  }
  return undefined;
}
