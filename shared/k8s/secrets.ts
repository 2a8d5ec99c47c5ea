import { config } from '../context.js';
import { NotFoundError } from '../errors.js';
import { coreApi, statusOf } from './client.js';

/**
 * A Secret of the controller namespace, its values decoded from base64 (read only: fogbridge never
 * creates or changes a Secret). 404 is a NotFoundError naming the Secret and the namespace.
 */
export async function readSecret(name: string): Promise<Record<string, string>> {
  const api = await coreApi();
  const namespace = config().controllerNamespace;
  try {
    const secret = await api.readNamespacedSecret({ name, namespace });
    return Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, value]) => [
        key,
        Buffer.from(value, 'base64').toString('utf8'),
      ]),
    );
  } catch (error) {
    if (statusOf(error) === 404)
      throw new NotFoundError(`Secret ${name} not found in namespace ${namespace}`);
    throw error;
  }
}
