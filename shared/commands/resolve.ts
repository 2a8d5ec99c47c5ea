import { config } from '../context.js';
import { deniedAddress, isHost } from '../domain/hosts.js';
import { DEFAULT_ROUTER } from '../domain/placement.js';
import type { ServiceSpec } from '../domain/service.js';
import { ConflictError, ValidationError } from '../errors.js';
import { type AgentRow, getAgentRow, getAgentUuidByName } from '../store/agents.js';
import { getApplication, getMicroservice, getMicroserviceUuidByName } from '../store/applications.js';
import { type DefaultRouterRow, getDefaultRouter } from '../store/routers.js';

/** An agent by uuid or by name. */
export async function findAgent(reference: string): Promise<AgentRow | undefined> {
  const byUuid = await getAgentRow(reference);
  if (byUuid) return byUuid;
  const uuid = await getAgentUuidByName(reference);
  return uuid ? getAgentRow(uuid) : undefined;
}

/** The names a field's siblings have in the body the spec came from (`spec.` in a YAML document). */
function fieldsOf(field: string) {
  const sibling = (name: string) => (field === 'resource' ? name : field.replace('resource', name));
  return { resource: field, type: sibling('type'), defaultBridge: sibling('defaultBridge') };
}

type Resolved = { resource: string; siteKey: string; defaultRouter?: DefaultRouterRow };

/**
 * Checks a spec against the rest of the store and returns the stored form of `resource`
 * (a microservice or agent uuid, or the host string) and the router its connector goes to. Every message
 * names the field and the value.
 */
export async function resolveServiceResource(
  spec: ServiceSpec,
  field = 'resource',
  readDefaultRouter: () => Promise<DefaultRouterRow | undefined> = getDefaultRouter,
): Promise<Resolved> {
  checkControlPlaneFields(spec, field);
  const requireDefaultRouter = async () => {
    const defaultRouter = await readDefaultRouter();
    if (!defaultRouter) {
      throw new ConflictError(
        `Service ${spec.name} needs the default router, and none is registered: create the first agent or PUT /api/v3/router`,
      );
    }
    return defaultRouter;
  };
  if (spec.type === 'k8s' || spec.type === 'external')
    return resolveHostResource(spec, fieldsOf(field), requireDefaultRouter);
  return resolveAgentResource(spec, fieldsOf(field), requireDefaultRouter);
}

type RequireDefaultRouter = () => Promise<DefaultRouterRow>;

/** `k8s` only on a Kubernetes control plane, where every other type needs its Kubernetes Service's fields. */
function checkControlPlaneFields(spec: ServiceSpec, field: string): void {
  const kubernetes = config().controlPlane === 'kubernetes';
  if (spec.type === 'k8s' && !kubernetes) {
    throw new ValidationError(
      `Field '${fieldsOf(field).type}' is "k8s", which is allowed only when the control plane is Kubernetes (CONTROL_PLANE=kubernetes)`,
    );
  }
  if (kubernetes && spec.type !== 'k8s') {
    const prefix = field === 'resource' ? '' : 'spec.';
    if (spec.k8sType === undefined) throw new ValidationError(`Required field '${prefix}k8sType' is missing`);
    if (spec.servicePort === undefined)
      throw new ValidationError(`Required field '${prefix}servicePort' is missing`);
  }
}

/** `k8s` and `external`: a host the hub router dials, through the default router. */
async function resolveHostResource(
  spec: ServiceSpec,
  fields: ReturnType<typeof fieldsOf>,
  requireDefaultRouter: RequireDefaultRouter,
): Promise<Resolved> {
  if (spec.defaultBridge !== DEFAULT_ROUTER) {
    throw new ValidationError(
      `Field '${fields.defaultBridge}' must be ${DEFAULT_ROUTER} for type ${spec.type}, got ${JSON.stringify(spec.defaultBridge)}`,
    );
  }
  if (!isHost(spec.resource)) {
    throw new ValidationError(
      `Field '${fields.resource}' must be a DNS name or an IP address, got ${JSON.stringify(spec.resource)}`,
    );
  }
  const denied = deniedAddress(spec.resource, config().deniedResourceAddresses);
  if (denied) {
    throw new ValidationError(
      `Field '${fields.resource}': the hub router may not dial ${JSON.stringify(spec.resource)} (denied by ${JSON.stringify(denied)} in DENIED_RESOURCE_ADDRESSES)`,
    );
  }
  return {
    resource: spec.resource,
    siteKey: DEFAULT_ROUTER,
    defaultRouter: await requireDefaultRouter(),
  };
}

/** `microservice` and `agent`: the agent behind it must run a router, linked to the service's bridge. */
async function resolveAgentResource(
  spec: ServiceSpec,
  fields: ReturnType<typeof fieldsOf>,
  requireDefaultRouter: RequireDefaultRouter,
): Promise<Resolved> {
  const { agent, stored, what } = await backendAgent(spec, fields.resource);
  if (agent.routerMode === 'none') {
    throw new ValidationError(
      `Field '${fields.resource}': ${what} ${JSON.stringify(agent.name)}, whose router mode is none; a TCP bridge service requires a router on the agent`,
    );
  }
  if (spec.defaultBridge === DEFAULT_ROUTER) {
    return { resource: stored, siteKey: agent.uuid, defaultRouter: await requireDefaultRouter() };
  }
  if (!agent.upstreamRouters.includes(spec.defaultBridge)) {
    throw new ValidationError(
      `Field '${fields.defaultBridge}': ${JSON.stringify(spec.defaultBridge)} is not an upstream router of agent ${JSON.stringify(agent.name)} (upstreams: ${agent.upstreamRouters.join(', ') || 'none'})`,
    );
  }
  const upstream = await getAgentRow(spec.defaultBridge);
  if (upstream?.routerMode !== 'interior') {
    throw new ValidationError(
      `Field '${fields.defaultBridge}': upstream router ${JSON.stringify(spec.defaultBridge)} is not an interior router`,
    );
  }
  return { resource: stored, siteKey: agent.uuid };
}

/** The agent a `microservice` or `agent` service's backend runs on, and the resource as stored. */
async function backendAgent(
  spec: ServiceSpec,
  field: string,
): Promise<{ agent: AgentRow; stored: string; what: string }> {
  if (spec.type === 'microservice') {
    const microservice = await findMicroservice(spec.resource, field);
    const agent = await getAgentRow(microservice.agentUuid);
    if (!agent)
      throw new ValidationError(
        `Field '${field}': the agent of microservice ${JSON.stringify(spec.resource)} no longer exists`,
      );
    return {
      agent,
      stored: microservice.uuid,
      what: `microservice ${JSON.stringify(spec.resource)} runs on agent`,
    };
  }
  const agent = await findAgent(spec.resource);
  if (!agent) throw new ValidationError(`Field '${field}': agent ${JSON.stringify(spec.resource)} not found`);
  return { agent, stored: agent.uuid, what: 'agent' };
}

async function findMicroservice(resource: string, field: string) {
  const slash = resource.indexOf('/');
  if (slash > 0) {
    const application = resource.slice(0, slash);
    const name = resource.slice(slash + 1);
    if (!(await getApplication(application))) {
      throw new ValidationError(`Field '${field}': application ${JSON.stringify(application)} not found`);
    }
    const uuid = await getMicroserviceUuidByName(application, name);
    const microservice = uuid ? await getMicroservice(uuid) : undefined;
    if (!microservice)
      throw new ValidationError(`Field '${field}': microservice ${JSON.stringify(resource)} not found`);
    return microservice;
  }
  const microservice = await getMicroservice(resource);
  if (!microservice) {
    throw new ValidationError(
      `Field '${field}': microservice ${JSON.stringify(resource)} not found (write <application>/<microservice> or a microservice uuid)`,
    );
  }
  return microservice;
}
