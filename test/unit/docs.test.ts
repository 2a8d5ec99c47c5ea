import { describe, expect, it } from 'vitest';
import { allRoutes } from '../../functions/api/openapi.js';
import { SETTINGS } from '../../shared/config.js';
import { GENERATED_SECTIONS, readDoc, withSection } from '../support/reference-docs.js';

/**
 * docs/api.md and docs/configuration.md carry sections generated from the code (the route records,
 * `SETTINGS`, the CDK context options): each must be what `npm run docs` would write now, so a route
 * or a setting added without its documentation fails here.
 */

/** A table as Markdown means it, whatever the padding a formatter added. */
const normalized = (text: string) =>
  text
    .split('\n')
    .map((line) =>
      line
        .trim()
        .replace(/\s*\|\s*/g, '|')
        .replace(/\|-{3,}(?=\|)/g, '|---'),
    )
    .join('\n');

describe('generated documentation', () => {
  it.each(GENERATED_SECTIONS.map((section) => [`${section.file} (${section.name})`, section] as const))(
    '%s is current (run npm run docs when this fails)',
    (_title, { file, name, render }) => {
      // Prepare
      const text = readDoc(file);

      // Act
      const current = withSection(text, name, render());

      // Assess
      expect(normalized(text)).toBe(normalized(current));
    },
  );

  it('lists every route and every setting', () => {
    // Act
    const api = readDoc('docs/api.md');
    const configuration = readDoc('docs/configuration.md');

    // Assess
    for (const route of allRoutes()) expect(api).toContain(`\`${route.method} ${route.path}\``);
    for (const name of Object.keys(SETTINGS)) expect(configuration).toContain(`\`${name}\``);
  });
});
