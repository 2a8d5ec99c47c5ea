import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { config } from '../config.js';
import { cachedEksTokenProvider, mintEksToken } from './eks-token.js';

let fromFile: CoreV1Api | undefined;
let eksToken: (() => Promise<string>) | undefined;
let eksClient: { token: string; api: CoreV1Api } | undefined;

/**
 * The Kubernetes core API. With KUBECONFIG (local runs, tests) the file decides everything; in AWS the
 * worker authenticates to EKS with a token minted from its own IAM role, refreshed below its lifetime.
 */
export async function coreApi(): Promise<CoreV1Api> {
  const settings = config().kubernetes;
  if (settings.kubeconfig) {
    if (!fromFile) {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(settings.kubeconfig);
      fromFile = kubeConfig.makeApiClient(CoreV1Api);
    }
    return fromFile;
  }
  const { eksClusterName, eksEndpoint, eksCertificateAuthority } = settings;
  if (!eksClusterName || !eksEndpoint || !eksCertificateAuthority) {
    throw new Error(
      'CONTROL_PLANE=kubernetes needs KUBECONFIG, or EKS_CLUSTER_NAME, EKS_CLUSTER_ENDPOINT and EKS_CLUSTER_CA',
    );
  }
  const credentials = defaultProvider();
  eksToken ??= cachedEksTokenProvider(() =>
    mintEksToken({ clusterName: eksClusterName, region: config().region, credentials }),
  );
  const token = await eksToken();
  if (eksClient?.token !== token) {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [
        { name: eksClusterName, server: eksEndpoint, caData: eksCertificateAuthority, skipTLSVerify: false },
      ],
      users: [{ name: 'fogbridge', token }],
      contexts: [
        { name: 'eks', cluster: eksClusterName, user: 'fogbridge', namespace: config().controllerNamespace },
      ],
      currentContext: 'eks',
    });
    eksClient = { token, api: kubeConfig.makeApiClient(CoreV1Api) };
  }
  return eksClient.api;
}

/** The HTTP status of a client-node error, if it has one. */
export function statusOf(error: unknown): number | undefined {
  const code =
    (error as { code?: unknown; statusCode?: unknown })?.code ??
    (error as { statusCode?: unknown })?.statusCode;
  return typeof code === 'number' ? code : undefined;
}
