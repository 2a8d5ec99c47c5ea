import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { quietSdkVersionWarning } from '../shared/config.js';
import { ApiClient } from '../test/support/client.js';
import { type HubDocument, runBurst } from './scenarios/burst.js';
import { runChurn } from './scenarios/churn.js';
import { runFanOut } from './scenarios/fan-out.js';
import { runScale } from './scenarios/scale.js';
import { runTopology } from './scenarios/topology.js';
import { Observer, RuntimeControl } from './support.js';

/**
 * `npm run bench [-- --quick] [--n 500 --clients 50 --agents 1000 --churn-seconds 30 --scenarios s1,s2,s3]
 *   [--scale-services 10000 --scale-agents 10000 (S4, only when named in --scenarios)]
 *   [--topology-agents 1000,10000 (S5, only when named in --scenarios)]
 *   [--latency dynamodb=4ms,sqs=10ms] [--url http://controller:51121 --token <admin token>]`
 * Runs the scenarios against the embedded runtime (real handlers, dynalite, fauxqs), started in a
 * process of its own for each scenario, from a load generator in another, and prints a table;
 * the full results go to bench/results/<time>.json. `--latency` adds a delay before every DynamoDB and
 * SQS call (a model of AWS's network, not a measurement of it). `--url` runs S1's creates against any
 * controller speaking the v3 API instead, observed through that API alone.
 */
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    n: { type: 'string' },
    clients: { type: 'string' },
    agents: { type: 'string' },
    'scale-services': { type: 'string' },
    'scale-agents': { type: 'string' },
    'topology-agents': { type: 'string' },
    'churn-seconds': { type: 'string' },
    workers: { type: 'string', default: '4' },
    scenarios: { type: 'string', default: 's1,s2,s3' },
    'control-plane': { type: 'string', default: 'remote' },
    // A model of AWS's network: a delay before every DynamoDB / SQS call of the embedded runtime.
    latency: { type: 'string', default: '' },
    // Comparison mode: run S1's creates against any controller speaking the v3 API.
    url: { type: 'string' },
    token: { type: 'string' },
    // internal: run one scenario in this process and write its result to this file
    'child-result': { type: 'string' },
  },
});
const kubernetes = values['control-plane'] === 'kubernetes';
const quick = values.quick;
const settings = {
  n: Number(values.n ?? (quick ? 100 : 500)),
  clients: Number(values.clients ?? (quick ? 10 : 50)),
  agents: Number(values.agents ?? (quick ? 50 : 1000)),
  churnSeconds: Number(values['churn-seconds'] ?? (quick ? 5 : 30)),
  workers: Number(values.workers),
  scaleServices: Number(values['scale-services'] ?? (quick ? 2_000 : 10_000)),
  scaleAgents: Number(values['scale-agents'] ?? (quick ? 1_000 : 10_000)),
  topologyAgents: (values['topology-agents'] ?? (quick ? '50,300' : '1000,10000')).split(',').map(Number),
};
// S2 and S3 are about agents and churn, the same on both control planes: on Kubernetes only S1 runs.
const scenarios = new Set(kubernetes ? ['s1'] : values.scenarios.split(','));

quietSdkVersionWarning();
const results: Record<string, unknown> = {
  settings,
  startedAt: new Date().toISOString(),
  node: process.version,
};

/**
 * Starts the embedded runtime in a process of its own (bench/runtime-process.ts) and runs `work` against
 * it from this one: the API over HTTP, the observer with a store client of its own, the usage counters
 * and sweeps through the runtime's control address.
 */
async function withRuntime<T>(
  work: (api: ApiClient, observer: Observer, control: RuntimeControl) => Promise<T>,
): Promise<T> {
  const dataDir = mkdtempSync(join(tmpdir(), 'fogbridge-bench-'));
  const kube = kubernetes ? await startKubernetesHub() : undefined;
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(new URL('./runtime-process.ts', import.meta.url)),
      JSON.stringify({
        dataDir,
        workers: settings.workers,
        // S2 runs its sweeps itself, to count what one costs.
        sweepIntervalMs:
          scenarios.has('s2') || scenarios.has('s4') || scenarios.has('s5') ? 3_600_000 : 10_000,
        latency: values.latency ?? '',
        env: {
          LOG_LEVEL: 'ERROR',
          ...kube?.env,
        },
      }),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const ready = await new Promise<{
      url: string;
      adminToken: string;
      dynamodbEndpoint: string;
      controlUrl: string;
    }>((resolve, reject) => {
      let buffered = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const line = buffered.split('\n').find((candidate) => candidate.startsWith('READY '));
        if (line) resolve(JSON.parse(line.slice('READY '.length)));
      });
      void exited.then((code) =>
        reject(new Error(`the runtime process exited (${code}) before it was ready`)),
      );
    });
    return await work(
      new ApiClient(ready.url, ready.adminToken),
      new Observer(ready.dynamodbEndpoint, 'fogbridge'),
      new RuntimeControl(ready.controlUrl),
    );
  } finally {
    child.kill('SIGTERM');
    await exited;
    await kube?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

let kubernetesHub: HubDocument | undefined;

/** Kubernetes mode: the test kube-apiserver (built and cached by the k8s test tier) with the operator's ConfigMap. */
async function startKubernetesHub() {
  const { startKubeApiserver } = await import('../test/k8s/harness.js');
  const { KubeClient } = await import('../test/k8s/http.js');
  const { operatorTemplate } = await import('../test/fixtures/operator-skrouterd.js');
  const kube = await startKubeApiserver();
  const client = new KubeClient({ url: kube.url, token: kube.token, caFile: kube.caFile });
  await client.post('/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'iofog' },
  });
  await client.post('/api/v1/namespaces/iofog/configmaps', {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'iofog-router', namespace: 'iofog' },
    data: { 'skrouterd.json': JSON.stringify(operatorTemplate('iofog')) },
  });
  kubernetesHub = {
    controlPlane: 'kubernetes',
    setUp: async () => undefined,
    listeners: async () => {
      const { body } = await client.get<{ data: Record<string, string> }>(
        '/api/v1/namespaces/iofog/configmaps/iofog-router',
      );
      const entries = JSON.parse(body.data['skrouterd.json']!) as [string, { name: string; port: string }][];
      return Object.fromEntries(
        entries.filter(([type]) => type === 'tcpListener').map(([, listener]) => [listener.name, listener]),
      );
    },
  };
  return {
    env: { CONTROL_PLANE: 'kubernetes', CONTROLLER_NAMESPACE: 'iofog', KUBECONFIG: kube.kubeconfigPath },
    stop: kube.stop,
  };
}

const childResult = values['child-result'];
if (childResult) {
  // A child runs one scenario on a runtime and store of its own.
  const result = await withRuntime(async (api, observer, control) => {
    if (kubernetesHub) {
      const registered = await api.put('/api/v3/router', { host: 'router.example.com' });
      if (registered.status !== 200)
        throw new Error(`PUT /api/v3/router: ${registered.status} ${registered.text}`);
    }
    if (scenarios.has('s1')) return runBurst(api, observer, settings, control, kubernetesHub);
    if (scenarios.has('s2')) return runFanOut(api, observer, settings, control);
    if (scenarios.has('s4')) return runScale(api, observer, settings, control);
    if (scenarios.has('s5')) return runTopology(api, settings, control);
    return runChurn(api, observer, settings);
  });
  writeFileSync(childResult, JSON.stringify(result));
  process.exit(0);
}

if (values.url) {
  // Comparison mode: the same burst against another controller, observed only through its API.
  const { runComparisonBurst } = await import('./scenarios/compare.js');
  const result = await runComparisonBurst(new ApiClient(values.url, values.token), settings);
  mkdirSync('bench/results', { recursive: true });
  const file = join('bench/results', `compare-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ ...results, url: values.url, s1: result }, null, 2));
  console.log(`\nfull results: ${file}`);
  process.exit(result.duplicatePorts > 0 || result.failed > 0 ? 1 : 0);
}

// Each scenario gets a fresh runtime and store, in a process of its own (S2's thousand agents must not
// see S1's services, and one scenario's garbage and warm caches must not time the next).
for (const scenario of ['s1', 's2', 's3', 's4', 's5'].filter((name) => scenarios.has(name))) {
  const out = join(mkdtempSync(join(tmpdir(), 'fogbridge-bench-result-')), 'result.json');
  const args = [
    ...['--n', settings.n, '--clients', settings.clients, '--agents', settings.agents].map(String),
    ...['--scale-services', settings.scaleServices, '--scale-agents', settings.scaleAgents].map(String),
    ...['--topology-agents', settings.topologyAgents.join(',')],
    ...['--churn-seconds', settings.churnSeconds, '--workers', settings.workers].map(String),
    ...['--control-plane', values['control-plane'], '--scenarios', scenario, '--child-result', out],
    ...(values.latency ? ['--latency', values.latency] : []),
  ];
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), ...args], {
      stdio: 'inherit',
    });
    child.once('exit', resolve);
  });
  if (code !== 0) {
    console.error(`scenario ${scenario} failed (exit ${code})`);
    process.exit(1);
  }
  results[scenario] = JSON.parse(readFileSync(out, 'utf8'));
}

mkdirSync('bench/results', { recursive: true });
const file = join('bench/results', `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify(results, null, 2));
console.log(`\nfull results: ${file}`);
// Any lost entry, shared port or model mismatch fails the run (exit 1).
const bad = (result: unknown) => {
  const r = (result ?? {}) as { lost?: number; duplicatePorts?: number; mismatches?: number };
  return (r.lost ?? 0) + (r.duplicatePorts ?? 0) + (r.mismatches ?? 0) > 0;
};
process.exit(bad(results.s1) || bad(results.s3) || bad(results.s4) ? 1 : 0);
