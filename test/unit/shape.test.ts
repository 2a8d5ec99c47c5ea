import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The reconcile core stays readable: no file in shared/reconcile over 400 lines (functions in
 * shared/reconcile and shared/commands are held to 60 lines by the linter's
 * noExcessiveLinesPerFunction, .biome.json), no product file cites a document a reader of this
 * repository cannot open, and the product path knows nothing of the embedded runtime or the benchmark.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const filesOf = (folder: string) =>
  readdirSync(`${ROOT}/${folder}`, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => `${folder}/${name}`);

describe('the shape of the product code', () => {
  it.each(filesOf('shared/reconcile'))('%s is at most 400 lines', (file) => {
    // Act
    const lines = readFileSync(`${ROOT}/${file}`, 'utf8').trimEnd().split('\n').length;

    // Assess
    expect(lines).toBeLessThanOrEqual(400);
  });

  it('cites no document from outside the repository', () => {
    // Act
    const citing = ['shared', 'functions', 'infra']
      .flatMap(filesOf)
      .filter((file) =>
        /seed 0\d\d|CONTROL-PLANE|EDGELET-PROTOCOL|REFERENCE-API/.test(
          readFileSync(`${ROOT}/${file}`, 'utf8'),
        ),
      );

    // Assess
    expect(citing).toEqual([]);
  });

  it('imports nothing from infra/ and reads no setting of the embedded runtime or the benchmark', () => {
    // Act
    const leaning = ['shared', 'functions'].flatMap(filesOf).filter((file) => {
      const text = readFileSync(`${ROOT}/${file}`, 'utf8');
      return /from '(\.\.\/)+infra\/|FOGBRIDGE_INJECT_LATENCY|FOGBRIDGE_METER_USAGE|placeholder/.test(text);
    });

    // Assess
    expect(leaning).toEqual([]);
  });
});
