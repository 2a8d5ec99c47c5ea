import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../infra/lib/fogbridge-function.js';
import { API_ENTRIES, WORKER_ENTRIES } from '../../infra/lib/routes.js';
import { REQUIRED_CONTEXT } from './support.js';

const FUNCTION_COUNT = Object.keys(API_ENTRIES).length + Object.keys(WORKER_ENTRIES).length;

type Template = {
  Resources: Record<
    string,
    { Type: string; Properties: Record<string, unknown>; Metadata?: Record<string, string> }
  >;
};

const outdir = mkdtempSync(join(tmpdir(), 'fogbridge-cdk-out-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/** Runs the real CLI (cdk.json's app, esbuild bundling, no network) and collects its output. */
function cdk(args: string[]) {
  return run(join(REPO_ROOT, 'node_modules/.bin/cdk'), args, {});
}

function run(
  command: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: REPO_ROOT,
      // No account look-up: nothing here may reach AWS.
      env: { ...process.env, AWS_EC2_METADATA_DISABLED: 'true', CDK_DISABLE_VERSION_CHECK: 'true', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/**
 * Imports each bundle (BUNDLES: id → file URL), then invokes the status bundle and the page bundle
 * (which serves the page's script built beside it) with sample events.
 */
const LOAD_BUNDLES = `
import { readFileSync } from 'node:fs';
const handlers = {};
for (const [id, url] of Object.entries(JSON.parse(process.env.BUNDLES))) {
  handlers[id] = typeof (await import(url)).handler;
}
const { handler } = await import(process.env.STATUS_BUNDLE);
const event = JSON.parse(readFileSync(process.env.STATUS_EVENT, 'utf8'));
const status = await handler(event, { functionName: 'status', awsRequestId: 'synth-test' });
const ui = await (await import(process.env.UI_BUNDLE)).handler(
  JSON.parse(readFileSync(process.env.UI_EVENT, 'utf8')),
  { functionName: 'ui', awsRequestId: 'synth-test' },
);
console.log(JSON.stringify({ handlers, status, ui: { ...ui, body: ui.body.length } }));
`;

function node(script: string, env: Record<string, string>) {
  return run(process.execPath, ['--input-type=module', '-e', script], env);
}

describe('cdk synth (the CLI, with real bundling)', () => {
  it('synthesizes offline, bundles every function as loadable ESM, and the status and page bundles answer', async () => {
    // Prepare
    const context = Object.entries(REQUIRED_CONTEXT).flatMap(([key, value]) => ['-c', `${key}=${value}`]);

    // Act
    const { code, output } = await cdk(['synth', '--quiet', ...context, '--output', outdir]);

    // Assess
    expect(code, output).toBe(0);
    const templateFile = join(outdir, 'Fogbridge.template.json');
    expect(existsSync(templateFile)).toBe(true);
    const template = JSON.parse(readFileSync(templateFile, 'utf8')) as Template;
    const functions = Object.entries(template.Resources).filter(
      ([, r]) => r.Type === 'AWS::Lambda::Function',
    );
    expect(functions).toHaveLength(FUNCTION_COUNT);
    const bundles: Record<string, string> = {};
    for (const [id, fn] of functions) {
      expect(fn.Properties.Handler, id).toBe('index.handler');
      const assetDir = join(outdir, fn.Metadata!['aws:asset:path']!);
      // The map beside the bundle for decoding a stack trace offline, never loaded at run time.
      expect(existsSync(join(assetDir, 'index.mjs.map')), id).toBe(true);
      expect(readFileSync(join(assetDir, 'index.mjs'), 'utf8'), id).not.toContain('sourceMappingURL');
      bundles[id] = pathToFileURL(join(assetDir, 'index.mjs')).href;
    }
    // Load every bundle in a plain Node process, as Lambda would, and call the status handler.
    const statusId = Object.keys(bundles).find((id) => id.startsWith('ApiStatusFunction'))!;
    const loaded = await node(LOAD_BUNDLES, {
      BUNDLES: JSON.stringify(bundles),
      STATUS_BUNDLE: bundles[statusId]!,
      STATUS_EVENT: join(REPO_ROOT, 'events/api-get-status.json'),
      UI_BUNDLE: bundles[Object.keys(bundles).find((id) => id.startsWith('ApiUiFunction'))!]!,
      UI_EVENT: join(REPO_ROOT, 'events/api-get-ui-app.json'),
    });
    expect(loaded.code, loaded.output).toBe(0);
    const result = JSON.parse(loaded.output.trim().split('\n').at(-1)!) as {
      handlers: Record<string, string>;
      status: { statusCode: number; body: string };
      ui: { statusCode: number; headers: Record<string, string>; body: number };
    };
    expect(Object.values(result.handlers)).toEqual(Array(FUNCTION_COUNT).fill('function'));
    expect(result.status.statusCode).toBe(200);
    expect(JSON.parse(result.status.body)).toMatchObject({ status: 'online' });
    // The page's script, bundled with its graph library at deployment (no bundler in the function).
    expect(result.ui.statusCode).toBe(200);
    expect(result.ui.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(result.ui.body).toBeGreaterThan(100_000);
  });

  it('fails with a message naming a missing required context key', async () => {
    // Prepare
    const context = ['-c', `authIssuer=${REQUIRED_CONTEXT.authIssuer}`];

    // Act
    const { code, output } = await cdk(['synth', '--quiet', ...context, '--output', join(outdir, 'missing')]);

    // Assess
    expect(code).not.toBe(0);
    expect(output).toContain('Context key "authAudience" is required');
    expect(output).toContain('-c authAudience=');
  });
});
