// Core's folders are layers: contract/ (what every part agrees on) below store/ and telemetry/, the
// assessment engine on contract/ and store/ only (never the manager's types), the manager on all of them.
// Read from the sources: a relative import that crosses into a folder its layer may not use fails here.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const src = dirname(fileURLToPath(import.meta.url))

/** The folders each folder's (non-test) sources may import from, besides its own. */
const ALLOWED: Record<string, readonly string[]> = {
  contract: ['telemetry/api.ts'],
  store: ['contract'],
  telemetry: ['contract'],
  assessment: ['contract', 'store'],
}

const IMPORT = /\b(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g

/** `from → to` for each relative import of a source file (not a test) under `src`, as paths below it. */
function imports(): Array<{ from: string; to: string }> {
  const found: Array<{ from: string; to: string }> = []
  for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
    const name = entry.name
    if (!entry.isFile() || !name.endsWith('.ts') || name.includes('.test') || name.includes('test-support')) {
      continue
    }
    const file = join(entry.parentPath, name)
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = normalize(join(dirname(file), specifier!)).replace(/\.js$/, '.ts')
      found.push({ from: relative(src, file), to: relative(src, target) })
    }
  }
  return found
}

/** The imports that cross from a layer into a folder it may not use. */
function violations(edges: Array<{ from: string; to: string }>): string[] {
  return edges
    .filter(({ from, to }) => {
      const folder = from.split('/')[0]!
      const allowed = ALLOWED[folder]
      if (!allowed || !from.includes('/') || to.split('/')[0] === folder) return false
      return !allowed.some((entry) => to === entry || to.startsWith(`${entry}/`))
    })
    .map(({ from, to }) => `${from} → ${to}`)
}

describe("core's layers", () => {
  it('finds a layer that reaches above itself', () => {
    expect(
      violations([
        { from: 'assessment/fidelity.ts', to: 'manager/scope.ts' },
        { from: 'assessment/fidelity.ts', to: 'contract/errors.ts' },
        { from: 'contract/report.ts', to: 'telemetry/tracer.ts' },
        { from: 'manager/assess.ts', to: 'assessment/fidelity.ts' },
      ]),
    ).toEqual(['assessment/fidelity.ts → manager/scope.ts', 'contract/report.ts → telemetry/tracer.ts'])
  })

  it('has none in the sources: the assessment engine and the contracts never import the manager', () => {
    const edges = imports()
    expect(edges.some(({ from }) => from.startsWith('assessment/'))).toBe(true)
    expect(violations(edges)).toEqual([])
  })
})
