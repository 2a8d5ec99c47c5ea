// Test harness: a REAL kube-apiserver, backed by a real (embedded) etcd, on loopback.
//
// The binary is built from published Go modules by the module in ./apiserver (k8s.io/kubernetes'
// kube-apiserver command plus go.etcd.io/etcd/server/v3/embed) and cached per Kubernetes version and
// source hash under `${FOGBRIDGE_CACHE_DIR ?? ~/.cache/fogbridge}/kube-apiserver-<version>/`. The first
// build needs Go and takes a few minutes (about 4.5 min on 2 cores); later runs start in seconds.
//
// Environment:
//   FOGBRIDGE_CACHE_DIR      where built binaries are cached (default ~/.cache/fogbridge)
//   FOGBRIDGE_KUBE_LOG=1     stream the apiserver's log to stderr (it is always kept in <tmp>/apiserver.log)
//   GO                       the go command to build with (default `go` on PATH)
import { spawn } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireLock, cacheRoot, run, sleep } from '../support/go-build.js';
import { exitedWithin, freeServerPort } from '../support/processes.js';

export interface KubeApiserver {
  /** Base URL of the apiserver, e.g. `https://127.0.0.1:40123`. */
  url: string;
  /** Bearer token of user `admin` in group `system:masters`. */
  token: string;
  /** A kubeconfig (server, CA, token) for this apiserver. */
  kubeconfigPath: string;
  /** PEM file of the CA that signed the apiserver's self-signed serving certificate. */
  caFile?: string;
  stop: () => Promise<void>;
}

const HERE = dirname(fileURLToPath(import.meta.url));
const MODULE_DIR = join(HERE, 'apiserver');
const BINARY_NAME = 'kube-apiserver-etcd';
const READY_TIMEOUT_MS = 180_000;
const STOP_GRACE_MS = 15_000;

function log(message: string): void {
  process.stderr.write(`[kube-harness] ${message}\n`);
}

/** The k8s.io/kubernetes version that ./apiserver/go.mod requires, e.g. `v1.34.4`. */
export async function kubernetesVersion(): Promise<string> {
  const goMod = await readFile(join(MODULE_DIR, 'go.mod'), 'utf8');
  const match = /^\s*k8s\.io\/kubernetes\s+(v\S+)/m.exec(goMod);
  if (!match?.[1]) throw new Error(`k8s.io/kubernetes is not required in ${MODULE_DIR}/go.mod`);
  return match[1];
}

/** Hash of everything that determines the binary, so an edited module is rebuilt. */
async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) {
    const path = join(MODULE_DIR, file);
    hash.update(`${file}\0`);
    if (existsSync(path)) hash.update(await readFile(path));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** Builds the apiserver+etcd binary unless a build of the same sources is cached; returns its path. */
export async function ensureKubeApiserverBinary(): Promise<string> {
  const version = await kubernetesVersion();
  const dir = join(cacheRoot(), `kube-apiserver-${version}`);
  const binary = join(dir, BINARY_NAME);
  const stampPath = join(dir, `${BINARY_NAME}.sha256`);
  const hash = await sourceHash();
  const isFresh = async () =>
    existsSync(binary) && (await readFile(stampPath, 'utf8').catch(() => '')).trim() === hash;

  if (await isFresh()) return binary;
  await mkdir(dir, { recursive: true });
  const release = await acquireLock(join(dir, 'build.lock'), 'kube-apiserver');
  try {
    if (await isFresh()) return binary; // built by whoever held the lock
    const goFlags = [process.env.GOFLAGS ?? '', existsSync(join(MODULE_DIR, 'go.sum')) ? '' : '-mod=mod']
      .filter(Boolean)
      .join(' ');
    const ldflags = [
      '-s',
      '-w',
      `-X k8s.io/component-base/version.gitVersion=${version}`,
      `-X k8s.io/component-base/version.gitMajor=${version.replace(/^v(\d+)\..*$/, '$1')}`,
      `-X k8s.io/component-base/version.gitMinor=${version.replace(/^v\d+\.(\d+)\..*$/, '$1')}`,
      '-X k8s.io/component-base/version.gitTreeState=clean',
    ].join(' ');
    const tmpBinary = `${binary}.tmp-${process.pid}`;
    log(`building kube-apiserver ${version} + embedded etcd into ${dir}`);
    log('the first build downloads Go modules and compiles Kubernetes: expect several minutes');
    const started = Date.now();
    const heartbeat = setInterval(
      () => log(`still building (${Math.round((Date.now() - started) / 1000)}s)`),
      30_000,
    );
    try {
      await run(
        process.env.GO ?? 'go',
        ['build', '-buildvcs=false', '-trimpath', '-ldflags', ldflags, '-o', tmpBinary, '.'],
        { cwd: MODULE_DIR, env: { ...process.env, GOFLAGS: goFlags } },
      );
    } finally {
      clearInterval(heartbeat);
    }
    await rename(tmpBinary, binary);
    await writeFile(stampPath, `${hash}\n`);
    log(`built ${binary} in ${Math.round((Date.now() - started) / 1000)}s`);
    return binary;
  } finally {
    await release();
  }
}

/**
 * The CA of kube-apiserver's generated self-signed serving certificate: `<cert-dir>/apiserver.crt` holds
 * the serving certificate followed by the CA certificate. Undefined while the file is not (fully) written.
 */
function generatedCa(bundle: string | undefined): string | undefined {
  const blocks = bundle?.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.length >= 2 ? `${blocks.at(-1)}\n` : undefined;
}

function readyzStatus(url: string, token: string, ca: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      `${url}/readyz`,
      { headers: { authorization: `Bearer ${token}` }, ca, timeout: 5_000 },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', () => resolve(0));
    req.end();
  });
}

function kubeconfig(url: string, caFile: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '  - name: fogbridge-test',
    '    cluster:',
    `      server: ${url}`,
    `      certificate-authority: ${JSON.stringify(caFile)}`,
    'users:',
    '  - name: admin',
    '    user:',
    `      token: ${JSON.stringify(token)}`,
    'contexts:',
    '  - name: fogbridge-test',
    '    context:',
    '      cluster: fogbridge-test',
    '      user: admin',
    'current-context: fogbridge-test',
    '',
  ].join('\n');
}

async function tail(path: string, lines = 40): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.split('\n').slice(-lines).join('\n');
}

/**
 * Starts kube-apiserver with an embedded etcd on free loopback ports, in a fresh temp dir, and waits
 * until `/readyz` answers 200. Authentication is a static token only (anonymous requests get 401);
 * authorization is RBAC, and the token's user `admin` is in `system:masters`.
 */
export async function startKubeApiserver(): Promise<KubeApiserver> {
  const binary = await ensureKubeApiserverBinary();
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return await startOnce(binary);
    } catch (error) {
      lastError = error;
      // Ports are picked before the server binds them; on a lost race, try again with new ports.
      if (!String(error).includes('address already in use')) throw error;
      log(`port race on attempt ${attempt}, retrying`);
    }
  }
  throw lastError;
}

async function startOnce(binary: string): Promise<KubeApiserver> {
  const dir = await mkdtemp(join(tmpdir(), 'fogbridge-kube-'));
  const certDir = join(dir, 'certs');
  const etcdDir = join(dir, 'etcd');
  const saKey = join(dir, 'sa.key');
  const saPub = join(dir, 'sa.pub');
  const tokenFile = join(dir, 'tokens.csv');
  const caFile = join(dir, 'ca.crt');
  const kubeconfigPath = join(dir, 'kubeconfig');
  const logPath = join(dir, 'apiserver.log');
  await mkdir(certDir);

  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await writeFile(saKey, privateKey.export({ type: 'pkcs1', format: 'pem' }), { mode: 0o600 });
  await writeFile(saPub, publicKey.export({ type: 'spki', format: 'pem' }));
  const token = randomBytes(32).toString('hex');
  await writeFile(tokenFile, `${token},admin,admin,"system:masters"\n`, { mode: 0o600 });

  const [port, etcdClientPort, etcdPeerPort] = [
    await freeServerPort(),
    await freeServerPort(),
    await freeServerPort(),
  ];
  const url = `https://127.0.0.1:${port}`;
  const args = [
    `--etcd-data-dir=${etcdDir}`,
    `--etcd-client-port=${etcdClientPort}`,
    `--etcd-peer-port=${etcdPeerPort}`,
    '--exit-on-stdin-eof',
    '--',
    `--etcd-servers=http://127.0.0.1:${etcdClientPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${port}`,
    `--cert-dir=${certDir}`,
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${saPub}`,
    `--service-account-signing-key-file=${saKey}`,
    // Only an allocation range for ClusterIPs inside the apiserver: no traffic goes there.
    '--service-cluster-ip-range=10.96.0.0/16',
    '--authorization-mode=RBAC',
    `--token-auth-file=${tokenFile}`,
    '--anonymous-auth=false',
    '--allow-privileged=true',
    // No controller-manager runs, so no ServiceAccount objects would ever appear.
    '--disable-admission-plugins=ServiceAccount',
    // The `kubernetes` Service's Endpoints cannot hold a loopback address; nothing needs them here.
    '--endpoint-reconciler-type=none',
    '--profiling=false',
  ];

  const logFile = createWriteStream(logPath);
  const child = spawn(binary, args, { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
  const streamToStderr = process.env.FOGBRIDGE_KUBE_LOG === '1';
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => {
      logFile.write(chunk);
      if (streamToStderr) process.stderr.write(chunk);
    });
  }
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));

  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      process.removeListener('exit', killOnExit);
      if (!exited) {
        child.stdin?.end(); // --exit-on-stdin-eof: graceful shutdown
        child.kill('SIGTERM');
        if (!(await exitedWithin(child, STOP_GRACE_MS))) {
          child.kill('SIGKILL');
          await exitedWithin(child, 5_000);
        }
      }
      await new Promise<void>((resolve) => logFile.end(resolve));
      await rm(dir, { recursive: true, force: true });
    })();
    return stopped;
  };

  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let ca: string | undefined;
    for (;;) {
      const failed = await Promise.race([spawnError, sleep(250).then(() => undefined)]);
      if (failed) throw new Error(`cannot start ${binary}: ${failed.message}`);
      if (exited) throw new Error(`kube-apiserver exited before it was ready:\n${await tail(logPath)}`);
      if (Date.now() > deadline) {
        throw new Error(
          `kube-apiserver not ready within ${READY_TIMEOUT_MS / 1000}s:\n${await tail(logPath)}`,
        );
      }
      if (!ca) {
        ca = generatedCa(await readFile(join(certDir, 'apiserver.crt'), 'utf8').catch(() => undefined));
        if (!ca) continue;
        await writeFile(caFile, ca);
      }
      if ((await readyzStatus(url, token, ca)) === 200) break;
    }
    await writeFile(kubeconfigPath, kubeconfig(url, caFile, token), { mode: 0o600 });
    return { url, token, kubeconfigPath, caFile, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
