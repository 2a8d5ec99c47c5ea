import * as eks from 'aws-cdk-lib/aws-eks';
import type * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';

export interface EksAccessProps {
  clusterName: string;
  endpoint: string;
  certificateAuthority: string;
  /** The only namespace the workers may touch: the hub ConfigMap and the Kubernetes Services live there. */
  namespace: string;
  /** Roles that get an access entry, by construct id. */
  roles: Record<string, iam.IRole>;
}

/** The policy the access entries grant: edit rights (ConfigMaps, Services), scoped to one namespace. */
export const EKS_ACCESS_POLICY = 'AmazonEKSEditPolicy';

/**
 * Lets the worker roles call an existing EKS cluster. The cluster is imported, not created; it must use
 * the `API` or `API_AND_CONFIG_MAP` authentication mode for access entries to take effect. The workers
 * authenticate with a token minted from their own role, so no IAM permission beyond the entry is needed.
 */
export class EksAccess extends Construct {
  readonly cluster: eks.ICluster;
  readonly entries: eks.AccessEntry[] = [];

  constructor(scope: Construct, id: string, props: EksAccessProps) {
    super(scope, id);
    this.cluster = eks.Cluster.fromClusterAttributes(this, 'Cluster', {
      clusterName: props.clusterName,
      clusterEndpoint: props.endpoint,
      clusterCertificateAuthorityData: props.certificateAuthority,
    });
    for (const [name, role] of Object.entries(props.roles)) {
      this.entries.push(
        new eks.AccessEntry(this, `${name}AccessEntry`, {
          cluster: this.cluster,
          principal: role.roleArn,
          accessPolicies: [
            eks.AccessPolicy.fromAccessPolicyName(EKS_ACCESS_POLICY, {
              accessScopeType: eks.AccessScopeType.NAMESPACE,
              namespaces: [props.namespace],
            }),
          ],
        }),
      );
    }
  }
}
