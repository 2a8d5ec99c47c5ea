import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // This file lives in test/; the project root is one level up.
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Each API suite runs a whole local runtime; two at a time fit this machine's two cores.
    maxWorkers: 2,
    testTimeout: 180_000,
    hookTimeout: 120_000,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'ERROR' },
  },
});
