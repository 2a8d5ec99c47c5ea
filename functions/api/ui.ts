import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { NotFoundError } from '../../shared/errors.js';
import { httpApi, reply, routesOf } from '../../shared/http/api.js';

const route = routesOf('ui');

/** The page's files and their media types. */
const PAGE_FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
};

/**
 * Where the page's files are: in a deployed bundle, built beside it (infra/lib/page-build.ts writes
 * them at bundling); run from the repository (`npm start`), its sources in functions/ui, the script
 * bundled with its graph library on first request.
 */
const BUNDLED = fileURLToPath(new URL('./ui/', import.meta.url));
const SOURCES = fileURLToPath(new URL('../ui/', import.meta.url));

const cache = new Map<string, Promise<string>>();

/** The options the page's script is bundled with, here and at deployment. */
export const PAGE_SCRIPT_BUILD = { bundle: true, minify: true, format: 'esm', target: 'es2022' } as const;

async function pageFile(name: string): Promise<string> {
  if (existsSync(`${BUNDLED}index.html`)) return readFile(`${BUNDLED}${name}`, 'utf8');
  if (name !== 'app.js') return readFile(`${SOURCES}${name}`, 'utf8');
  // The bundler is a development dependency: named at run time, so a deployed bundle never carries it.
  const bundler = 'esbuild';
  const { build } = (await import(bundler)) as typeof import('esbuild');
  const result = await build({ ...PAGE_SCRIPT_BUILD, entryPoints: [`${SOURCES}app.ts`], write: false });
  return result.outputFiles[0]!.text;
}

/**
 * The page's policy: its own script, style and API only; no inline script or style, no plugin, no form
 * posted elsewhere, never framed (a framed token form could be clickjacked).
 */
const PAGE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function serve(name: string) {
  // Only the page's own files: `constructor` or `__proto__` name no file, whatever an object inherits.
  const type = Object.hasOwn(PAGE_FILES, name) ? PAGE_FILES[name] : undefined;
  if (!type)
    throw new NotFoundError(
      `No page file ${JSON.stringify(name.slice(0, 80))} (the page has ${Object.keys(PAGE_FILES).join(', ')})`,
    );
  if (!cache.has(name)) {
    const loading = pageFile(name);
    cache.set(name, loading);
    loading.catch(() => cache.delete(name));
  }
  return cache
    .get(name)!
    .then((text) =>
      reply.text(type, text, { 'cache-control': 'no-cache', 'content-security-policy': PAGE_POLICY }),
    );
}

const page = z.string().describe('the file');

export const routes = [
  route({
    method: 'GET',
    path: '/ui',
    auth: 'public',
    summary: 'The network page (it asks for a viewer or admin token and reads /api/v3/topology with it)',
    responses: { 200: page },
    produces: ['text/html; charset=utf-8'],
    handler: () => serve('index.html'),
  }),
  route({
    method: 'GET',
    path: '/ui/{file}',
    auth: 'public',
    summary: "One of the network page's files: index.html, app.js, style.css",
    responses: { 200: page },
    produces: Object.values(PAGE_FILES),
    handler: async ({ param }) => serve(param('file')),
  }),
];

export const handler = httpApi(routes);
