// The one vitest preset: every workspace's vitest.config.ts calls toolplaneVitestConfig.
import { defineConfig, type ViteUserConfig } from 'vitest/config';
import { defaultServerConditions } from 'vite';
import path from 'node:path';

const conditions = ['@toolplane/source', ...defaultServerConditions];

export interface ToolplaneVitestOptions {
  /** Start (or reuse) real NATS and MongoDB-protocol servers for this workspace's tests. */
  readonly infra?: boolean;
}

export function toolplaneVitestConfig(options: ToolplaneVitestOptions = {}): ViteUserConfig {
  return defineConfig({
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: conditions } },
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      environment: 'node',
      passWithNoTests: true,
      testTimeout: 30_000,
      hookTimeout: 120_000,
      globalSetup: options.infra ? [path.join(import.meta.dirname, 'packages/testing/src/global-setup.ts')] : [],
      // The JSON report feeds the suite's closing line (infra/ci/run-tests.mjs).
      reporters: ['default', ['json', { outputFile: path.join(import.meta.dirname, '.local/test-results', `${path.basename(process.cwd())}.json`) }]],
    },
  });
}
