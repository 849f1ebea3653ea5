import { defineConfig } from 'tsdown'

export default defineConfig({
  // The interpreter is its own entry: the host loads it with a dynamic import (./interpreter/index.js).
  entry: ['src/index.ts', 'src/bin.ts', 'src/interpreter/index.ts'],
  format: 'esm',
  dts: true,
  clean: true,
  platform: 'node',
  fixedExtension: false,
})
