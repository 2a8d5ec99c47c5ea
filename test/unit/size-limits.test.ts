import { describe, expect, it } from 'vitest';
import { CONFIGMAP_DATA_LIMIT_BYTES, refuseOversizedConfigMap } from '../../shared/k8s/hub-configmap.js';

describe("the hub ConfigMap's size guard", () => {
  it('lets a document up to the limit through', () => {
    // Act / Assess
    expect(() =>
      refuseOversizedConfigMap({ 'skrouterd.json': 'x'.repeat(CONFIGMAP_DATA_LIMIT_BYTES - 14) }),
    ).not.toThrow();
  });

  it('refuses one byte more, with the size and the limit, before anything is written', () => {
    // Act / Assess
    expect(() =>
      refuseOversizedConfigMap({ 'skrouterd.json': 'x'.repeat(CONFIGMAP_DATA_LIMIT_BYTES - 13) }),
    ).toThrow(
      "ConfigMap iofog-router would hold 1000001 bytes of data with this service's bridge entries, over the 1000000 fogbridge allows below Kubernetes' 1 MiB ConfigMap limit; nothing was written",
    );
  });
});
