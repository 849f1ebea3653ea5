import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url))

// Tests run against the TypeScript sources of the workspace packages, so a change is tested without a
// rebuild. The built `exports` maps are checked separately by test/exports.test.ts in a plain Node process.
const alias = [
  { find: /^@sandkeep\/core\/store$/, replacement: source('./packages/core/src/store/index.ts') },
  { find: /^@sandkeep\/core\/test$/, replacement: source('./packages/core/src/test/index.ts') },
  {
    find: /^@sandkeep\/core\/test\/mock-provider$/,
    replacement: source('./packages/core/src/test/mock-provider.ts'),
  },
  { find: /^@sandkeep\/core$/, replacement: source('./packages/core/src/index.ts') },
  { find: /^@sandkeep\/redis$/, replacement: source('./packages/redis/src/index.ts') },
  { find: /^@sandkeep\/e2b$/, replacement: source('./packages/e2b/src/index.ts') },
  { find: /^@sandkeep\/local-e2b$/, replacement: source('./packages/local-e2b/src/index.ts') },
  { find: /^@sandkeep\/ai-sdk\/harness$/, replacement: source('./packages/ai-sdk/src/harness/index.ts') },
  { find: /^@sandkeep\/ai-sdk$/, replacement: source('./packages/ai-sdk/src/index.ts') },
]

export default defineConfig({
  test: {
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts'],
          environment: 'node',
          testTimeout: 20_000,
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'examples/*/test/**/*.test.ts'],
          environment: 'node',
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
})
