import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import type { ScriptedAgent } from './scripted-agent.js';

export interface TlsFiles {
  ca: string;
  cert: string;
  key: string;
}

export type HandshakeResult = { ok: true; clientSubject: string } | { ok: false; error: string };

/** Opens a TLS connection as skrouterd would on a link: mutual authentication, the server's name checked. */
export async function handshake(
  server: TlsFiles,
  client: TlsFiles,
  servername: string,
): Promise<HandshakeResult> {
  const listener = tls.createServer({ ...server, requestCert: true, rejectUnauthorized: true }, (socket) =>
    socket.end(),
  );
  const peers: string[] = [];
  listener.on('secureConnection', (socket) => peers.push(String(socket.getPeerCertificate().subject?.CN)));
  listener.on('tlsClientError', () => undefined);
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const { port } = listener.address() as AddressInfo;
  try {
    return await new Promise((resolve) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername, ...client });
      socket.once('secureConnect', () => {
        // The server may still refuse the client's certificate after the client is done: wait for its verdict.
        socket.once('data', () => undefined);
        socket.once('end', () =>
          resolve(peers.length > 0 ? { ok: true, clientSubject: peers[0]! } : { ok: false, error: 'closed' }),
        );
        socket.once('error', (error) =>
          resolve({ ok: false, error: (error as NodeJS.ErrnoException).code ?? error.message }),
        );
      });
      socket.once('error', (error) =>
        resolve({ ok: false, error: (error as NodeJS.ErrnoException).code ?? error.message }),
      );
    });
  } finally {
    listener.close();
  }
}

type Profile = { caCertFile?: string; certFile?: string; privateKeyFile?: string };
type RunningConfig = {
  sslProfiles?: Record<string, Profile>;
  listeners?: Record<string, { sslProfile?: string; port?: number }>;
  connectors?: Record<string, { sslProfile?: string; host?: string; port?: string }>;
};

/**
 * The files a running Router uses for `profileName`: the profile as the config it started with names
 * it, each path read through the router container's volume mappings from what the agent has written
 * on its node now (the Router reloads its TLS files; it does not reload its profiles).
 */
export function heldFiles(agent: ScriptedAgent, profileName: string): TlsFiles {
  const running = agent.runningRouter;
  if (!running) throw new Error(`agent ${agent.uuid} runs no router`);
  const profile = (running.config as RunningConfig).sslProfiles?.[profileName];
  if (!profile) throw new Error(`agent ${agent.uuid}'s running router has no profile ${profileName}`);
  const file = (path: string | undefined) => {
    const content = path ? agent.containerFile(running.item, path) : undefined;
    if (content === undefined) throw new Error(`agent ${agent.uuid} holds no file ${path}`);
    return content;
  };
  return { ca: file(profile.caCertFile), cert: file(profile.certFile), key: file(profile.privateKeyFile) };
}

/**
 * A handshake over the link `dialer` runs to `listener`, each side with what it runs now: the
 * listener's `listenerName` listener and the dialer's `connectorName` connector, as their running
 * Routers started with them, and the files each agent holds.
 */
export function heldLinkHandshake(
  listener: ScriptedAgent,
  listenerName: string,
  dialer: ScriptedAgent,
  connectorName: string,
): Promise<HandshakeResult> {
  const listening = (listener.runningRouter?.config as RunningConfig | undefined)?.listeners?.[listenerName];
  const connector = (dialer.runningRouter?.config as RunningConfig | undefined)?.connectors?.[connectorName];
  if (!listening?.sslProfile) throw new Error(`${listener.uuid} runs no listener ${listenerName}`);
  if (!connector?.sslProfile || !connector.host)
    throw new Error(`${dialer.uuid} runs no connector ${connectorName}`);
  return handshake(
    heldFiles(listener, listening.sslProfile),
    heldFiles(dialer, connector.sslProfile),
    connector.host,
  );
}
