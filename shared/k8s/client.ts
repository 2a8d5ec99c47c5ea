import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { AppsV1Api, ConfigurationOptions, CoreV1Api } from '@kubernetes/client-node';
import { config, perContext } from '../context.js';
import { cachedEksTokenProvider, mintEksToken } from './eks-token.js';

let library: Promise<typeof import('./library.js')> | undefined;

/**
 * The Kubernetes client library, loaded on first use: it is the largest part of any bundle that holds
 * it, and only a Kubernetes control plane calls it, so a remote control plane's cold start never
 * evaluates it.
 */
function kubernetesLibrary() {
  library ??= import('./library.js');
  return library;
}

/** Request options that send a patch as `strategy` (`merge` or `json`). */
export async function patchAs(strategy: 'merge' | 'json'): Promise<ConfigurationOptions> {
  const { PatchStrategy, setHeaderOptions } = await kubernetesLibrary();
  return setHeaderOptions(
    'Content-Type',
    strategy === 'merge' ? PatchStrategy.MergePatch : PatchStrategy.JsonPatch,
  );
}

/** The API client of a kubeconfig file (local runs, tests), built once per context. */
const fromKubeconfig = perContext(async (settings) => {
  const { AppsV1Api, CoreV1Api, KubeConfig } = await kubernetesLibrary();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(settings.kubernetes.kubeconfig!);
  return { core: kubeConfig.makeApiClient(CoreV1Api), apps: kubeConfig.makeApiClient(AppsV1Api) };
});

/** The EKS token of this context's IAM identity, reused below its lifetime. */
const eksToken = perContext((settings) => {
  const credentials = defaultProvider();
  return cachedEksTokenProvider(() =>
    mintEksToken({ clusterName: settings.kubernetes.eksClusterName!, region: settings.region, credentials }),
  );
});

interface Clients {
  core: CoreV1Api;
  apps: AppsV1Api;
}

const eksClient = perContext(() => ({
  current: undefined as { token: string; clients: Clients } | undefined,
}));

/**
 * The Kubernetes core API. With KUBECONFIG (local runs, tests) the file decides everything; in AWS the
 * worker authenticates to EKS with a token minted from its own IAM role, refreshed below its lifetime.
 */
export async function coreApi(): Promise<CoreV1Api> {
  return (await clients()).core;
}

/** The Kubernetes apps API (the operator's `nats` StatefulSet), authenticated as coreApi is. */
export async function appsApi(): Promise<AppsV1Api> {
  return (await clients()).apps;
}

async function clients(): Promise<Clients> {
  const settings = config();
  if (settings.kubernetes.kubeconfig) return fromKubeconfig();
  const { eksClusterName, eksEndpoint, eksCertificateAuthority } = settings.kubernetes;
  if (!eksClusterName || !eksEndpoint || !eksCertificateAuthority) {
    throw new Error(
      'CONTROL_PLANE=kubernetes needs KUBECONFIG, or EKS_CLUSTER_NAME, EKS_CLUSTER_ENDPOINT and EKS_CLUSTER_CA',
    );
  }
  const token = await eksToken()();
  const cached = eksClient();
  if (cached.current?.token !== token) {
    const { AppsV1Api, CoreV1Api, KubeConfig } = await kubernetesLibrary();
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [
        { name: eksClusterName, server: eksEndpoint, caData: eksCertificateAuthority, skipTLSVerify: false },
      ],
      users: [{ name: 'fogbridge', token }],
      contexts: [
        { name: 'eks', cluster: eksClusterName, user: 'fogbridge', namespace: settings.controllerNamespace },
      ],
      currentContext: 'eks',
    });
    cached.current = {
      token,
      clients: { core: kubeConfig.makeApiClient(CoreV1Api), apps: kubeConfig.makeApiClient(AppsV1Api) },
    };
  }
  return cached.current.clients;
}

/** The HTTP status of a client-node error, if it has one. */
export function statusOf(error: unknown): number | undefined {
  const code =
    (error as { code?: unknown; statusCode?: unknown })?.code ??
    (error as { statusCode?: unknown })?.statusCode;
  return typeof code === 'number' ? code : undefined;
}
