import { defineConfig } from 'tsdown'
import { tsdownBase } from '../../tsdown.base.ts'

export default defineConfig({
  ...tsdownBase,
  entry: ['src/index.ts', 'src/store/index.ts', 'src/test/index.ts', 'src/test/mock-provider.ts'],
})
