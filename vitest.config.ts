import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url))

// Tests run against the TypeScript sources of the workspace packages, so a change is tested without a
// rebuild. The built `exports` maps are checked separately by test/exports.test.ts in a plain Node process.
const alias = [
  { find: /^@sandkeep\/core\/store$/, replacement: source('./packages/core/src/store/index.ts') },
  { find: /^@sandkeep\/core\/provider$/, replacement: source('./packages/core/src/provider.ts') },
  { find: /^@sandkeep\/core$/, replacement: source('./packages/core/src/index.ts') },
  {
    find: /^@sandkeep\/testing\/mock-provider$/,
    replacement: source('./packages/testing/src/mock-provider.ts'),
  },
  { find: /^@sandkeep\/testing$/, replacement: source('./packages/testing/src/index.ts') },
  { find: /^@sandkeep\/redis$/, replacement: source('./packages/redis/src/index.ts') },
  { find: /^@sandkeep\/e2b$/, replacement: source('./packages/e2b/src/index.ts') },
  { find: /^@sandkeep\/local-e2b$/, replacement: source('./packages/local-e2b/src/index.ts') },
  { find: /^@sandkeep\/agent$/, replacement: source('./packages/agent/src/index.ts') },
  { find: /^@sandkeep\/ai-sdk\/harness$/, replacement: source('./packages/ai-sdk/src/harness/index.ts') },
  { find: /^@sandkeep\/ai-sdk$/, replacement: source('./packages/ai-sdk/src/index.ts') },
  { find: /^@sandkeep\/openai-agents$/, replacement: source('./packages/openai-agents/src/index.ts') },
  { find: /^@sandkeep\/mastra$/, replacement: source('./packages/mastra/src/index.ts') },
  { find: /^@sandkeep\/langgraph$/, replacement: source('./packages/langgraph/src/index.ts') },
]

// Where the suite's time goes (docs/benchmarks.md, "Test suite"): an integration file mostly waits on
// sandboxes (processes it spawns, a host's HTTP round trips, leases that lapse), a unit file mostly imports.
// The unit files share one module graph per worker (isolate: false: none stubs globals or modules, and the
// two that fake Date restore it), one worker per core. Integration files run vitest's default (cores - 1
// at a time, so one on 2 cores) after the unit tier (groupOrder): on a loaded 2-core box three at a time was
// slower, not faster. SANDKEEP_TEST_WORKERS sets how many integration files run at once on a quieter one.
const cores = availableParallelism()
const integrationWorkers = Number(process.env.SANDKEEP_TEST_WORKERS) || Math.max(cores - 1, 1)

export default defineConfig({
  test: {
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts'],
          environment: 'node',
          // A last-resort guard, not a speed check: local-e2b's kernel tests push 20 MB through real
          // kernels and took over 20 s each under stress-ng --cpu 4 on a loaded 2-core machine.
          testTimeout: 60_000,
          isolate: false,
          maxWorkers: cores,
          sequence: { groupOrder: 0 },
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
          maxWorkers: integrationWorkers,
          // For the files whose tests run side by side (describe.concurrent, e.g. the CLI demo's replays).
          maxConcurrency: 4,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
})
