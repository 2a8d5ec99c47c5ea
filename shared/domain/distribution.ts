/**
 * Service distribution: which Edgelet agents get a local tcpListener for which services.
 * One rule in both directions (service → agents and agent → services): an agent tag selects services
 * only in the exact form `<prefix>: <token>`; a service tag is a distribution token only when it holds
 * neither ':' nor '=' (those are Kubernetes annotations).
 */
export const DISTRIBUTION_ALL = 'all';

/** The tokens of a service's tags that take part in distribution. */
export function serviceDistributionTokens(serviceTags: readonly string[]): string[] {
  return unique(
    serviceTags.filter((tag) => !tag.includes(':') && !tag.includes('=')).map((tag) => tag.trim()),
  ).filter((token) => token !== '');
}

/** The tokens an agent's tags select, `all` included. */
export function agentDistributionTokens(agentTags: readonly string[], prefix: string): string[] {
  const form = `${prefix}: `;
  return unique(
    agentTags.filter((tag) => tag.startsWith(form)).map((tag) => tag.slice(tag.indexOf(':') + 1).trim()),
  ).filter((token) => token !== '');
}

/**
 * The tokens an agent is indexed under (the distribution-token index service fan-outs search): the ones
 * its tags select, none when it runs no router.
 */
export function agentIndexTokens(
  agent: { routerMode: string; tags: readonly string[] },
  prefix: string,
): string[] {
  return agent.routerMode === 'none' ? [] : agentDistributionTokens(agent.tags, prefix);
}

/** The agent tag that selects services carrying `token`. */
export function agentTagForToken(token: string, prefix: string): string {
  return `${prefix}: ${token}`;
}

/** Agent tags that look like distribution tags but select nothing (users type these). */
export function nearMissDistributionTags(agentTags: readonly string[], prefix: string): string[] {
  return agentTags.filter((tag) => tag.startsWith(prefix) && !tag.startsWith(`${prefix}: `));
}

export function agentSelectsService(agentTokens: readonly string[], serviceTags: readonly string[]): boolean {
  if (agentTokens.includes(DISTRIBUTION_ALL)) return true;
  const serviceTokens = serviceDistributionTokens(serviceTags);
  return agentTokens.some((token) => serviceTokens.includes(token));
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
