/**
 * The parts of the Kubernetes client library fogbridge uses, in one module that client.ts loads on first
 * use (a dynamic import of this module keeps the bundle's tree-shaking to these names).
 */
export { AppsV1Api, CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
