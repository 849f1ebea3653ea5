import { defineConfig } from 'tsdown'
import { tsdownBase } from '../../tsdown.base.ts'

export default defineConfig({
  ...tsdownBase,
  // The harness provider is its own entry, so the main one never names @ai-sdk/harness (an optional peer).
  entry: { index: 'src/index.ts', 'harness/index': 'src/harness/index.ts' },
})
