import { randomUUID } from 'node:crypto'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterEach, expect, it, vi } from 'vitest'

const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')

/** The code block that follows `<!-- snippet: name ... -->` in the README, as written there. */
function snippet(name: string): string {
  const found = readme.match(new RegExp(`<!-- snippet: ${name}[^>]*-->\\n\`\`\`ts\\n([\\s\\S]*?)\\n\`\`\``))
  if (!found) throw new Error(`README has no snippet "${name}"`)
  return found[1]!
}

let written: string | undefined
afterEach(() => {
  if (written) rmSync(written, { force: true })
  written = undefined
  vi.restoreAllMocks()
})

// Testing without a Redis server: the README's unit-test example runs as printed, on
// ioredis-mock and the mock provider, and prints what its comment says.
it('runs the README snippet that unit-tests a session manager on ioredis-mock', async () => {
  const code = snippet('mock')
  // Written next to this test so its imports resolve as the README's reader's would (package names).
  written = fileURLToPath(new URL(`./.readme-mock-${randomUUID().slice(0, 8)}.ts`, import.meta.url))
  writeFileSync(written, code)
  const printed: unknown[][] = []
  vi.spyOn(console, 'log').mockImplementation((...values: unknown[]) => {
    printed.push(values)
  })
  await import(/* @vite-ignore */ written)
  expect(printed).toEqual([[['created', 'resumed'], 2]])
  expect(code).toContain("// [ 'created', 'resumed' ] 2")
})
