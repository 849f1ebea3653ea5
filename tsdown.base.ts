import type { UserConfig } from 'tsdown'

/** Build options every package shares; each package's tsdown.config.ts spreads this and adds its entries. */
export const tsdownBase = {
  format: 'esm',
  dts: true,
  clean: true,
  platform: 'node',
  fixedExtension: false,
} satisfies UserConfig
