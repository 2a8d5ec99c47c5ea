import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { allRoutes } from '../../functions/api/openapi.js';
import { DEPLOY_OPTIONS } from '../../infra/lib/context.js';
import { LOCAL_RUNTIME_SETTINGS } from '../../infra/local/settings.js';
import { SETTINGS, type Setting, type SettingName } from '../../shared/config.js';

/**
 * The parts of docs/ that are generated from the code: the route table (from the route records every
 * route is declared by) and the configuration tables (from `SETTINGS` and the CDK context options).
 * Each lives between `<!-- generated:<name> -->` and `<!-- /generated:<name> -->` in its file; the rest of
 * the file is written by hand. `npm run docs` rewrites them; a unit test fails when one is stale.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

const WHO = {
  public: 'anyone',
  agent: 'an agent (its own EdDSA token)',
  viewer: 'viewer or admin',
  admin: 'admin',
} as const;

/** Every route: method and path, who may call it, what it answers, what it does. */
export function routeTable(): string {
  const rows = allRoutes().map((route) => {
    const answers = Object.keys(route.responses).join(' / ');
    const query = route.query ? ` (query: ${Object.keys(route.query.shape).join(', ')})` : '';
    return `| \`${route.method} ${route.path}\` | ${WHO[route.auth]} | ${answers} | ${cell(route.summary)}${query} |`;
  });
  return ['| route | who may call it | success | what it does |', '| --- | --- | --- | --- |', ...rows].join(
    '\n',
  );
}

const SCOPES = {
  controller: 'every function',
  auth: 'API functions',
  kubernetes: 'workers that call the cluster',
  local: 'local runtime and tools only',
} as const;

/** Every environment variable: default, which functions get it in AWS, its CDK context key, meaning. */
export function settingsTable(): string {
  const settings: [string, Setting][] = [
    ...(Object.entries(SETTINGS) as [SettingName, Setting][]),
    ...Object.entries(LOCAL_RUNTIME_SETTINGS),
  ];
  const rows = settings.map(([name, setting]) => {
    const fallback = setting.default === undefined ? '—' : `\`${setting.default || '(empty)'}\``;
    const deployDefault = setting.context?.deployDefault;
    const context = setting.context
      ? `\`${setting.context.key}\`${setting.context.required ? ' (required)' : ''}${deployDefault ? ` (deployed: \`${deployDefault}\`)` : ''}`
      : '—';
    return `| \`${name}\` | ${cell(fallback)} | ${SCOPES[setting.scope]} | ${context} | ${cell(setting.doc)} |`;
  });
  return [
    '| variable | default | given to (AWS) | CDK context key | meaning |',
    '| --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

/** The CDK context options that shape the stack itself (not handed to the functions). */
export function deployOptionsTable(): string {
  const rows = Object.entries(DEPLOY_OPTIONS).map(([key, schema]) => {
    const parsed = (schema as z.ZodType).safeParse(undefined);
    const fallback = parsed.success && parsed.data !== undefined ? `\`${JSON.stringify(parsed.data)}\`` : '—';
    return `| \`${key}\` | ${cell(fallback)} | ${cell((schema as z.ZodType).description ?? '')} |`;
  });
  return ['| context key | default | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

/** The generated sections, by file. */
export const GENERATED_SECTIONS = [
  { file: 'docs/api.md', name: 'routes', render: routeTable },
  { file: 'docs/configuration.md', name: 'settings', render: settingsTable },
  { file: 'docs/configuration.md', name: 'deploy-options', render: deployOptionsTable },
] as const;

/** A file's text with one generated section replaced by `content`. */
export function withSection(text: string, name: string, content: string): string {
  const begin = `<!-- generated:${name} -->`;
  const end = `<!-- /generated:${name} -->`;
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`no section ${name} (${begin} … ${end})`);
  return `${text.slice(0, from + begin.length)}\n${content}\n${text.slice(to)}`;
}

export function readDoc(file: string): string {
  return readFileSync(`${ROOT}/${file}`, 'utf8');
}

/** Rewrites every generated section (`npm run docs`). */
export function writeGeneratedDocs(): void {
  for (const { file, name, render } of GENERATED_SECTIONS) {
    writeFileSync(`${ROOT}/${file}`, withSection(readDoc(file), name, render()));
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) writeGeneratedDocs();
