import { defineConfig } from 'tsdown'

export default defineConfig({
  entry: ['src/index.ts', 'src/store/index.ts', 'src/test/index.ts', 'src/test/mock-provider.ts'],
  format: 'esm',
  dts: true,
  clean: true,
  platform: 'node',
  fixedExtension: false,
})
