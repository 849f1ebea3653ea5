// What a schema library would cost core: the bundle a bundler makes of core's root entry alone, and with a
// zod schema of one options type (the manager's `checkpoints`), with `zod` and with `zod/mini`; and the time a
// fresh node process takes to import core's built root, alone and with each zod entry (paired runs,
// alternating, median). Uses the BUILT core (`pnpm --filter @sandkeep/core build`). zod is resolved from
// @sandkeep/ai-sdk, which peers on it; rolldown from tsdown, which builds every package.
// Usage: node bench/option-schema.mjs [--runs 20]
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { gzipSync } from 'node:zlib'

const { values } = parseArgs({ options: { runs: { type: 'string', default: '20' } } })
const runs = Number(values.runs)
const root = fileURLToPath(new URL('..', import.meta.url))
// Where `zod` resolves as a package that peers on it sees it (ESM conditions, for the bundler and node alike).
const aiSdkDir = join(root, 'packages/ai-sdk')
const fromTsdown = createRequire(createRequire(join(root, 'package.json')).resolve('tsdown'))
const { rolldown } = await import(pathToFileURL(fromTsdown.resolve('rolldown')).href)
const coreEntry = join(root, 'packages/core/dist/index.js')

// The `checkpoints` option as a zod schema: what options.ts checks by hand (messages aside: each field would
// need an error function to keep today's wording).
const schema = (entry) => `import * as z from '${entry}'
const integer = (min, max) => z.int().check(z.minimum(min), z.maximum(max))
const tenantLimits = z.optional(z.strictObject({
  snapshots: z.optional(integer(0, 1_000_000_000)),
  maxSnapshotBytes: z.optional(integer(0, Number.MAX_SAFE_INTEGER)),
}))
export const checkpoints = z.optional(z.union([
  z.literal(false),
  z.strictObject({ every: z.literal('turn'), keep: z.optional(integer(1, 1000)), tenantLimits }),
]))
export function checkCheckpoints(value) {
  const parsed = checkpoints.safeParse(value)
  if (!parsed.success) throw new SandkeepError({ code: 'INVALID_ARGUMENT', message: parsed.error.issues[0].message })
  return parsed.data
}
`

async function bundleBytes(dir, name, source) {
  const input = join(dir, `${name}.mjs`)
  await writeFile(input, source)
  const build = await rolldown({ input, logLevel: 'silent', platform: 'node' })
  const { output } = await build.generate({ format: 'esm', minify: true })
  await build.close()
  const code = output.map((chunk) => chunk.code ?? '').join('')
  return { raw: Buffer.byteLength(code), gzip: gzipSync(code).length }
}

async function bundles() {
  const dir = await mkdtemp(join(aiSdkDir, '.option-schema-'))
  try {
    const core = `export * from ${JSON.stringify(coreEntry)}\nimport { SandkeepError } from ${JSON.stringify(coreEntry)}\n`
    const rows = { core: await bundleBytes(dir, 'core', core) }
    rows['core + zod'] = await bundleBytes(dir, 'zod', core + schema('zod'))
    rows['core + zod/mini'] = await bundleBytes(dir, 'mini', core + schema('zod/mini'))
    return rows
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** ms a fresh node process spends importing `specifiers` (measured inside it, from before the first import). */
function importMs(specifiers) {
  const url = (s) => (s.startsWith('/') ? pathToFileURL(s).href : s)
  const imports = specifiers.map((s) => `await import(${JSON.stringify(url(s))})`).join(';')
  const code = `const t = performance.now(); ${imports}; console.log(performance.now() - t)`
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    encoding: 'utf8',
    cwd: aiSdkDir,
  })
  if (child.status !== 0) throw new Error(child.stderr)
  return Number(child.stdout.trim())
}

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

function startup() {
  const variants = {
    core: [coreEntry],
    'core + zod': [coreEntry, 'zod'],
    'core + zod/mini': [coreEntry, 'zod/mini'],
  }
  const names = Object.keys(variants)
  const samples = Object.fromEntries(names.map((name) => [name, []]))
  for (const name of names) importMs(variants[name]) // warm the file cache
  for (let run = 0; run < runs; run++) {
    // Rotating order, so no variant always runs first or last.
    for (let k = 0; k < names.length; k++) {
      const name = names[(run + k) % names.length]
      samples[name].push(importMs(variants[name]))
    }
  }
  return Object.fromEntries(
    names.map((name) => {
      const ratios = samples[name].map((ms, i) => ms / samples.core[i])
      return [name, { medianMs: median(samples[name]), pairedRatio: median(ratios) }]
    }),
  )
}

const sizes = await bundles()
console.log('bundle (rolldown, minified)\traw bytes\tgzip bytes\tgzip vs core')
for (const [name, { raw, gzip }] of Object.entries(sizes))
  console.log(`${name}\t${raw}\t${gzip}\t+${gzip - sizes.core.gzip}`)
const times = startup()
console.log(
  `\nimport in a fresh node (${runs} runs each, rotating)\tmedian ms\tpaired ratio to core (median)`,
)
for (const [name, { medianMs, pairedRatio }] of Object.entries(times))
  console.log(`${name}\t${medianMs.toFixed(1)}\t${pairedRatio.toFixed(2)}`)
