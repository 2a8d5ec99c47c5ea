import { copyFile, mkdir, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import type { ParsedMicroservice, ScriptedAgent } from '../support/scripted-agent.js';
import { type NatsServerProcess, startNatsServer } from './harness.js';

/**
 * An agent's NATS container as Edgelet runs it and as the Datasance NATS image (`Datasance/nats-server`,
 * `cmd/pot-nats/main.go`) behaves inside it, over a real nats-server:
 * - Edgelet creates the container from the NATS microservice item, with every `volumeMount` mapping's
 *   files at their container paths (here: under a folder of its own), and recreates it when the item
 *   says `rebuild` or its image, environment or ports change;
 * - at start the image copies the JWT mount (`NATS_JWT_MOUNT_DIR`) into the resolver's directory
 *   (`NATS_JWT_DIR`: every `*.jwt` copied, the others removed), then starts nats-server;
 * - when mounted files change (Edgelet rewrites a mount whose version went up) it reacts by what
 *   changed: the JWT mount is copied again and, a moment later, every account JWT in the resolver's
 *   directory is pushed to the running server on `$SYS.REQ.CLAIMS.UPDATE` with the system user's creds
 *   (`NATS_SYS_USER_CRED_PATH`); a server reloads (SIGHUP) on any change; a leaf reloads on
 *   certificate changes and restarts its process on config, creds or account changes (a JWT change
 *   alone is pushed, nothing more).
 * `starts` counts the nats-server processes started: a change applied without one keeps it.
 */
export class NatsContainer {
  private server: NatsServerProcess | undefined;
  private item: ParsedMicroservice | undefined;
  private files = new Map<string, string>();
  private generation = 0;
  starts = 0;
  /** What each `apply` did (`started`, `recreated`, `restarted`, `reloaded`, `pushed`), and each failed claims push. */
  readonly history: string[] = [];

  constructor(
    private readonly binary: string,
    private readonly edgelet: ScriptedAgent,
    private readonly root: string,
    private readonly ports: { serverPort: number; httpPort: number },
  ) {}

  get process(): NatsServerProcess {
    if (!this.server) throw new Error('the NATS container is not running');
    return this.server;
  }

  private env(name: string): string {
    const value = this.item?.env.find((entry) => entry.key === name)?.value;
    if (value === undefined) throw new Error(`the NATS microservice has no ${name}`);
    return value;
  }

  private get folder(): string {
    return join(this.root, `container-${this.generation}`);
  }

  /** A container path inside the container's folder. */
  private at(path: string): string {
    return join(this.folder, path);
  }

  /** The config with container paths mapped into the container's folder (what a file system would do). */
  private inFolder(text: string): string {
    return text.replace(
      /(["\s])(\/etc\/nats\/|\/home\/runner\/)/g,
      (_match, before: string, path: string) => `${before}${this.folder}${path}`,
    );
  }

  /** Edgelet's sync after a changes tick: create, recreate or update the container from what it holds. */
  async apply(): Promise<string> {
    const item = this.edgelet.microservices.find((microservice) => microservice.isNats);
    if (!item) throw new Error('the agent runs no NATS microservice');
    const files = this.edgelet.containerFiles(item);
    const outcome = !this.item
      ? await this.create(item, files, 'started')
      : item.rebuild || containerDiffers(this.item, item)
        ? await this.create(item, files, 'recreated')
        : await this.update(files);
    this.history.push(outcome);
    return outcome;
  }

  private async create(item: ParsedMicroservice, files: Map<string, string>, outcome: string) {
    await this.server?.stop();
    this.generation += 1;
    this.item = item;
    this.files = new Map(files);
    for (const [path, content] of files) await this.write(path, content);
    await this.syncJwtDirectory();
    for (const dir of ['/home/runner/data', '/home/runner/run'])
      await mkdir(this.at(dir), { recursive: true });
    await this.startServer();
    return outcome;
  }

  private async write(path: string, content: string): Promise<void> {
    await mkdir(dirname(this.at(path)), { recursive: true });
    await writeFile(this.at(path), path.endsWith('server.conf') ? this.inFolder(content) : content);
  }

  private async startServer(): Promise<void> {
    this.server = await startNatsServer(
      this.binary,
      this.at(this.env('NATS_CONF')),
      this.ports.httpPort,
      join(this.folder, `nats-${this.starts}.log`),
    );
    this.starts += 1;
  }

  /** The files Edgelet rewrote, then what the image does about them. */
  private async update(files: Map<string, string>): Promise<string> {
    const changed = [...new Set([...files.keys(), ...this.files.keys()])].filter(
      (path) => files.get(path) !== this.files.get(path),
    );
    if (changed.length === 0) return '';
    for (const path of changed) {
      const content = files.get(path);
      if (content === undefined) await unlink(this.at(path)).catch(() => undefined);
      else await this.write(path, content);
    }
    this.files = new Map(files);
    const under = (dir: string) => changed.some((path) => path.startsWith(`${dir}/`));
    const jwt = under(this.env('NATS_JWT_MOUNT_DIR'));
    const config = changed.includes(this.env('NATS_CONF'));
    const creds = under(this.env('NATS_CREDS_DIR'));
    const certificates = under(this.env('NATS_TLS_DIR'));
    if (jwt) await this.syncJwtDirectory();
    let outcome = '';
    if (this.env('NATS_SERVER_MODE') !== 'leaf' || certificates) {
      this.process.reload();
      outcome = 'reloaded';
    } else if (config || creds) {
      await this.server?.stop();
      await this.startServer();
      outcome = 'restarted';
    }
    if (jwt) {
      await this.pushAccounts();
      outcome = outcome ? `${outcome}+pushed` : 'pushed';
    }
    return outcome;
  }

  /** `jwtcopy.SyncMountToJWT`: the resolver's directory mirrors the mount's `*.jwt` files. */
  private async syncJwtDirectory(): Promise<void> {
    const mount = this.at(this.env('NATS_JWT_MOUNT_DIR'));
    const directory = this.at(this.env('NATS_JWT_DIR'));
    await mkdir(directory, { recursive: true });
    const wanted = (await readdir(mount).catch(() => [] as string[])).filter((file) => file.endsWith('.jwt'));
    if (wanted.length === 0) return;
    for (const file of wanted) await copyFile(join(mount, file), join(directory, file));
    for (const file of await readdir(directory)) {
      if (file.endsWith('.jwt') && !wanted.includes(file)) await unlink(join(directory, file));
    }
  }

  /**
   * `claimspush.PushAccountJWTs`: each account JWT of the resolver's directory, as the system user. As
   * there, a failure is logged and passed over: a server it cannot reach is left as it is, an account
   * whose update fails does not keep the next ones from theirs, and nothing is tried again.
   */
  private async pushAccounts(): Promise<void> {
    const creds = await readFile(this.at(this.env('NATS_SYS_USER_CRED_PATH')));
    const connection = await connect({
      servers: `127.0.0.1:${this.ports.serverPort}`,
      authenticator: credsAuthenticator(creds),
      reconnect: false,
    }).catch((error: Error) => {
      this.history.push(`push failed: ${error.message}`);
      return undefined;
    });
    if (!connection) return;
    try {
      const directory = this.at(this.env('NATS_JWT_DIR'));
      for (const file of (await readdir(directory)).filter((name) => name.endsWith('.jwt'))) {
        await connection
          .request('$SYS.REQ.CLAIMS.UPDATE', await readFile(join(directory, file)), { timeout: 10_000 })
          .catch((error: Error) => this.history.push(`push of ${file} failed: ${error.message}`));
      }
    } finally {
      await connection.close();
    }
  }

  async stop(): Promise<void> {
    await this.server?.stop();
    this.server = undefined;
    await rm(this.root, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** What Edgelet compares to decide a container must be recreated: image, environment, ports. */
function containerDiffers(running: ParsedMicroservice, next: ParsedMicroservice): boolean {
  const spec = (item: ParsedMicroservice) => JSON.stringify([item.imageId, item.env, item.portMappings]);
  return spec(running) !== spec(next);
}
