import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SerializingProxy {
  endpoint: string;
  close(): Promise<void>;
}

/**
 * An HTTP proxy on a free loopback port that forwards to `target` one request at a time, in arrival
 * order. Clients still send concurrently (so the product's read-then-conditional-write races are
 * exercised exactly as before); the server behind simply processes each request whole before the next.
 *
 * Why: moto_server runs every request on its own thread and evaluates a DynamoDB ConditionExpression
 * and then stores the item without a lock (moto 5.2.5 `Table.put_item`: `get_item` → condition →
 * `self.items[...] = item`). Two concurrent conditional writes to one item can therefore both succeed,
 * which DynamoDB never allows: each single-item write is atomic. Serializing the requests gives moto
 * the per-request atomicity the product relies on, without weakening any assertion.
 */
export async function startSerializingProxy(target: string): Promise<SerializingProxy> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let tail: Promise<void> = Promise.resolve();

  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      const forward = () =>
        new Promise<void>((done) => {
          const proxied = request(
            {
              host: upstream.hostname,
              port: upstream.port,
              method: incoming.method,
              path: incoming.url,
              headers: incoming.headers,
              agent,
            },
            (response) => {
              outgoing.writeHead(response.statusCode ?? 502, response.headers);
              response.pipe(outgoing);
              response.once('end', () => done());
              response.once('error', () => done());
            },
          );
          proxied.once('error', (error) => {
            if (!outgoing.headersSent) outgoing.writeHead(502, { 'content-type': 'text/plain' });
            outgoing.end(String(error));
            done();
          });
          proxied.end(body);
        });
      tail = tail.then(forward);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
      agent.destroy();
    },
  };
}
