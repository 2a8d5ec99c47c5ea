import { createPrivateKey, type KeyObject, randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { ApiClient, type ApiResponse } from './client.js';

export type Changes = Record<string, boolean> & { lastUpdated: number };
export interface AgentMicroservice {
  uuid: string;
  name: string;
  config: string;
  isRouter: boolean;
}

/**
 * Behaves as an Edgelet does: provisions with a key, then signs a short-lived EdDSA token with a fresh
 * `jti` for every call, polls the change flags, pulls its microservices and acknowledges.
 */
export class ScriptedAgent {
  private privateKey: KeyObject | undefined;
  uuid = '';

  constructor(private readonly baseUrl: string) {}

  async provision(
    key: string,
  ): Promise<ApiResponse<{ uuid: string; privateKey: string; namespace: string }>> {
    const response = await new ApiClient(this.baseUrl).post<{
      uuid: string;
      privateKey: string;
      namespace: string;
    }>('/api/v3/agent/provision', { type: 1, key });
    if (response.status === 200) {
      this.uuid = response.body.uuid;
      this.privateKey = createPrivateKey({
        key: Buffer.from(response.body.privateKey, 'base64'),
        format: 'der',
        type: 'pkcs8',
      });
    }
    return response;
  }

  /** A token as the agent signs it: EdDSA, sub = its uuid, 60 s life, a fresh jti. */
  async token(overrides: { jti?: string; subject?: string; lifetimeSeconds?: number } = {}): Promise<string> {
    if (!this.privateKey) throw new Error('agent is not provisioned');
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({})
      .setProtectedHeader({ alg: 'EdDSA' })
      .setSubject(overrides.subject ?? this.uuid)
      .setIssuedAt(now)
      .setExpirationTime(now + (overrides.lifetimeSeconds ?? 60))
      .setJti(overrides.jti ?? randomUUID())
      .sign(this.privateKey);
  }

  /** An API client that presents a freshly signed token. */
  async client(): Promise<ApiClient> {
    return new ApiClient(this.baseUrl, await this.token());
  }

  async changes(): Promise<Changes> {
    const response = await (await this.client()).get<Changes>('/api/v3/agent/config/changes');
    if (response.status !== 200) throw new Error(`changes: ${response.status} ${response.text}`);
    return response.body;
  }

  async acknowledge(lastUpdated: number): Promise<number> {
    return (await (await this.client()).patch('/api/v3/agent/config/changes', { lastUpdated })).status;
  }

  async microservices(): Promise<AgentMicroservice[]> {
    const response = await (await this.client()).get<{ microservices: AgentMicroservice[] }>(
      '/api/v3/agent/microservices',
    );
    if (response.status !== 200) throw new Error(`microservices: ${response.status} ${response.text}`);
    return response.body.microservices;
  }

  /** The router config the agent would apply: its router microservice's config, parsed. */
  async routerConfig(): Promise<Record<string, unknown>> {
    const router = (await this.microservices()).find((microservice) => microservice.isRouter);
    if (!router) throw new Error('no router microservice');
    return JSON.parse(router.config) as Record<string, unknown>;
  }

  /** One Edgelet poll cycle: read the flags, pull the router config if it changed, acknowledge. */
  async poll(): Promise<{ changes: Changes; routerConfig?: Record<string, unknown> }> {
    const changes = await this.changes();
    const routerConfig = changes.microserviceConfig ? await this.routerConfig() : undefined;
    await this.acknowledge(changes.lastUpdated);
    return { changes, routerConfig };
  }
}
