import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { injectedLatencyFrom } from '../infra/local/settings.js';
import { quietSdkVersionWarning } from '../shared/config.js';
import { ApiClient } from '../test/support/client.js';
import { runBundles } from './bundles.js';
import { type HubDocument, runBurst } from './scenarios/burst.js';
import { runChurn } from './scenarios/churn.js';
import { runFanOut } from './scenarios/fan-out.js';
import { runNatsAccounts } from './scenarios/nats-accounts.js';
import { runOnboarding } from './scenarios/onboarding.js';
import { runScale } from './scenarios/scale.js';
import { runTopology } from './scenarios/topology.js';
import { Observer, type OperationCalls, RuntimeControl } from './support.js';

const HELP = `npm run bench -- [options]

Runs scenarios against the embedded runtime (real handlers, dynalite, fauxqs), each in a process of
its own on fresh data, from a load generator in another process; prints a table per scenario and
writes every figure to bench/results/bench-<time>.json. Exits 1 when a service lost its hub listener,
two services share a port, or the scale scenario finds a mismatch.

Scenarios (--scenarios, default s1,s2,s3):
  s1  burst: --n creates from --clients concurrent clients (500 / 50)
  s2  fan-out: --agents provisioned agents (1000); a tagged service reaching all of them, a tag change,
      and what a drift-check sweep costs
  s3  churn: creates, patches and deletes for --churn-seconds (30), then the stored model is compared
  s4  scale: --scale-services services (10000), then --scale-agents agents (10000) selecting all
  s5  topology: GET /api/v3/topology with --topology-agents agents (1000,10000)
  s6  nats: --nats-apps applications with NATS access (1000), --nats-users users each (0), three NATS
      servers polling as Edgelet does, every --nats-poll-ms (1000; Edgelet's own is 20000): until
      every server's JWT directory holds every account
  s7  onboarding: --onboard-agents agents (1000) created from --onboard-clients clients (20): API
      latency, and agents a second from the first create until every first router config is written
  bundles  every function bundled as deployed: its size, its source map's, and the median time a
      fresh Node process takes to import it (a cold start's share that is ours)

Options:
  --quick                 smaller defaults (100 / 10 creates, 50 agents, 5 s churn, s4 2000 / 1000,
                          s6 100 applications)
  --latency dynamodb=8ms,sqs=15ms
                          wait this long before every DynamoDB / SQS call (a model of the network to
                          AWS); S1 then runs twice, without and with it, and prints both p50s
  --workers N             reconcile workers per queue (4)
  --control-plane remote|kubernetes
                          kubernetes runs S1 against a test kube-apiserver (needs the k8s tier's build)
  --url URL --token T     S1's creates against any controller speaking the v3 API, observed through
                          that API only (the admin token T); with --scenarios s7, S7 against another
                          fogbridge
  --help                  this text

Figures:
  API latency p50 / p99          time from sending a create to its answer, per request
  time to ready                  from a create's answer until the service reads provisioningStatus ready
  hub writes                     writes of the hub router's document (config item or ConfigMap)
  RCU / WCU, calls per service   DynamoDB capacity and calls per created service, all operations together
  calls per <operation>          DynamoDB and SQS calls inside one operation (an API route, a service or
                                 fog reconcile), mean and max; "in sequence" is the longest chain of them
                                 made one after another: the round trips a caller waits for on AWS
  lost hub entries               services whose listener the hub does not hold at the end (must be 0)
  duplicate ports                services sharing a bridge port (must be 0)
`;

let parsed: ReturnType<typeof parseOptions>;
try {
  parsed = parseOptions();
} catch (error) {
  // An unknown option or a missing value: one line, no stack.
  console.error(`bench: ${(error as Error).message} (npm run bench -- --help lists the options)`);
  process.exit(2);
}
const { values } = parsed;
if (values.help) {
  console.log(HELP);
  process.exit(0);
}

function parseOptions() {
  return parseArgs({
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      quick: { type: 'boolean', default: false },
      n: { type: 'string' },
      clients: { type: 'string' },
      agents: { type: 'string' },
      'scale-services': { type: 'string' },
      'scale-agents': { type: 'string' },
      'topology-agents': { type: 'string' },
      'onboard-agents': { type: 'string' },
      'onboard-clients': { type: 'string' },
      'nats-apps': { type: 'string' },
      'nats-users': { type: 'string' },
      'nats-poll-ms': { type: 'string' },
      'churn-seconds': { type: 'string' },
      workers: { type: 'string', default: '4' },
      scenarios: { type: 'string', default: 's1,s2,s3' },
      'control-plane': { type: 'string', default: 'remote' },
      latency: { type: 'string', default: '' },
      url: { type: 'string' },
      token: { type: 'string' },
      // internal: run one scenario in this process and write its result to this file
      'child-result': { type: 'string' },
    },
  });
}

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
  natsApps: Number(values['nats-apps'] ?? (quick ? 100 : 1000)),
  natsUsers: Number(values['nats-users'] ?? 0),
  natsPollMs: Number(values['nats-poll-ms'] ?? 1000),
  onboardAgents: Number(values['onboard-agents'] ?? (quick ? 100 : 1000)),
  onboardClients: Number(values['onboard-clients'] ?? 20),
};
// S2 and S3 are about agents and churn, the same on both control planes: on Kubernetes only S1 runs.
const scenarios = new Set(kubernetes ? ['s1'] : values.scenarios.split(','));
checkOptions();

/** Option values the scenarios cannot run with: one line naming the option and the value, exit 2. */
function checkOptions(): void {
  const refuse = (message: string): never => {
    console.error(`bench: ${message} (npm run bench -- --help lists the options)`);
    process.exit(2);
  };
  const counts = {
    n: settings.n,
    clients: settings.clients,
    agents: settings.agents,
    workers: settings.workers,
  };
  const more = {
    'churn-seconds': settings.churnSeconds,
    'scale-services': settings.scaleServices,
    'scale-agents': settings.scaleAgents,
    'nats-apps': settings.natsApps,
    'nats-poll-ms': settings.natsPollMs,
    'onboard-agents': settings.onboardAgents,
    'onboard-clients': settings.onboardClients,
  };
  for (const [option, value] of Object.entries({ ...counts, ...more })) {
    if (!Number.isInteger(value) || value < 1)
      refuse(
        `--${option} must be a whole number above 0, got ${JSON.stringify(values[option as keyof typeof values])}`,
      );
  }
  if (!Number.isInteger(settings.natsUsers) || settings.natsUsers < 0)
    refuse(`--nats-users must be a whole number, got ${JSON.stringify(values['nats-users'])}`);
  if (settings.topologyAgents.some((count) => !Number.isInteger(count) || count < 1))
    refuse(
      `--topology-agents must be whole numbers above 0 separated by commas, got ${JSON.stringify(values['topology-agents'])}`,
    );
  const unknown = values.scenarios
    .split(',')
    .filter((name) => !['s1', 's2', 's3', 's4', 's5', 's6', 's7', 'bundles'].includes(name));
  if (unknown.length > 0)
    refuse(`--scenarios: unknown scenario ${JSON.stringify(unknown[0])} (s1 to s7, bundles)`);
  if (!['remote', 'kubernetes'].includes(values['control-plane']))
    refuse(`--control-plane must be remote or kubernetes, got ${JSON.stringify(values['control-plane'])}`);
  try {
    injectedLatencyFrom({ FOGBRIDGE_INJECT_LATENCY: values.latency });
  } catch {
    refuse(`--latency must look like dynamodb=8ms,sqs=15ms, got ${JSON.stringify(values.latency)}`);
  }
  if (values.url && !values.token) refuse('--url needs --token (an admin token of that controller)');
}

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
    if (scenarios.has('s6')) return runNatsAccounts(api, observer, settings, control);
    if (scenarios.has('s7'))
      return runOnboarding(
        api,
        { onboardAgents: settings.onboardAgents, clients: settings.onboardClients },
        control,
      );
    return runChurn(api, observer, settings);
  });
  writeFileSync(childResult, JSON.stringify(result));
  process.exit(0);
}

if (values.url) {
  // Comparison mode: the same burst against another controller, observed only through its API.
  if (scenarios.has('s7')) {
    // Onboarding against another fogbridge (an earlier release, say), through its API only.
    const onboarded = await runOnboarding(new ApiClient(values.url, values.token), {
      onboardAgents: settings.onboardAgents,
      clients: settings.onboardClients,
    });
    mkdirSync('bench/results', { recursive: true });
    const file = join('bench/results', `compare-s7-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify({ url: values.url, s7: onboarded }, null, 2));
    console.log(`\nfull results: ${file}`);
    process.exit(0);
  }
  const { runComparisonBurst } = await import('./scenarios/compare.js');
  const result = await runComparisonBurst(new ApiClient(values.url, values.token), settings);
  mkdirSync('bench/results', { recursive: true });
  const file = join('bench/results', `compare-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ ...results, url: values.url, s1: result }, null, 2));
  console.log(`\nfull results: ${file}`);
  process.exit(result.duplicatePorts > 0 || result.failed > 0 ? 1 : 0);
}

// Each scenario gets a fresh runtime and store, in a process of its own (S2's thousand agents must not
// see S1's services, and one scenario's garbage and warm caches must not time the next). With a latency
// model S1 runs first without it, so the two p50s come from the same machine minutes apart.
const runs = ['s1', 's2', 's3', 's4', 's5', 's6', 's7']
  .filter((name) => scenarios.has(name))
  .flatMap((scenario) =>
    scenario === 's1' && values.latency
      ? [
          { key: 's1WithoutLatency', scenario, latency: '' },
          { key: scenario, scenario, latency: values.latency },
        ]
      : [{ key: scenario, scenario, latency: values.latency }],
  );
for (const { key, scenario, latency } of runs) {
  const out = join(mkdtempSync(join(tmpdir(), 'fogbridge-bench-result-')), 'result.json');
  const args = [
    ...['--n', settings.n, '--clients', settings.clients, '--agents', settings.agents].map(String),
    ...['--scale-services', settings.scaleServices, '--scale-agents', settings.scaleAgents].map(String),
    ...['--topology-agents', settings.topologyAgents.join(',')],
    ...['--nats-apps', settings.natsApps, '--nats-users', settings.natsUsers].map(String),
    ...['--nats-poll-ms', settings.natsPollMs].map(String),
    ...['--onboard-agents', settings.onboardAgents, '--onboard-clients', settings.onboardClients].map(String),
    ...['--churn-seconds', settings.churnSeconds, '--workers', settings.workers].map(String),
    ...['--control-plane', values['control-plane'], '--scenarios', scenario, '--child-result', out],
    ...(latency ? ['--latency', latency] : []),
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
  results[key] = JSON.parse(readFileSync(out, 'utf8'));
}
if (results.s1WithoutLatency) printLatencyModel();
// No runtime needed: the bundles are built and imported from here.
if (scenarios.has('bundles')) results.bundles = await runBundles();

/** S1 without and with the latency model: what the model adds to a create's p50, and why. */
function printLatencyModel(): void {
  type Burst = { apiLatencyMs: { p50: number }; callsPerOperation: Record<string, OperationCalls> };
  const without = results.s1WithoutLatency as Burst;
  const withModel = results.s1 as Burst;
  const create = withModel.callsPerOperation['create service'];
  results.latencyModel = {
    latency: values.latency,
    p50WithoutMs: without.apiLatencyMs.p50,
    p50WithMs: withModel.apiLatencyMs.p50,
    addedMs: withModel.apiLatencyMs.p50 - without.apiLatencyMs.p50,
    createCallsInSequence: create?.sequentialMax,
  };
  console.log(`\nS1 with the latency model ${values.latency}`);
  console.table({
    'create p50 without / with (ms)': `${without.apiLatencyMs.p50} / ${withModel.apiLatencyMs.p50}`,
    'added by the model (ms)': withModel.apiLatencyMs.p50 - without.apiLatencyMs.p50,
    'longest chain of a create (calls in sequence, mean / max)': `${create?.sequentialMean} / ${create?.sequentialMax}`,
  });
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
