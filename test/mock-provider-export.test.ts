import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)

// Users of jest or node:test get the mock provider without loading vitest: the subpath is built and imported
// here by a plain Node process.
it('@sandkeep/testing/mock-provider loads and works outside vitest', async () => {
  const script = [
    "import { createMockProvider } from '@sandkeep/testing/mock-provider'",
    'const provider = createMockProvider()',
    'const sandbox = await provider.create({ metadata: {} })',
    "console.log(JSON.stringify([(await sandbox.runCommand('echo hi')).stdout, provider.calls.length]))",
  ].join('\n')
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
  expect(JSON.parse(stdout)).toEqual(['hi\n', 2])
})

// The conformance suites take the runner's functions, so the whole kit loads without vitest too.
it('@sandkeep/testing loads in plain Node without loading vitest', async () => {
  const script = [
    "import { registerHooks } from 'node:module'",
    'const urls = []',
    'registerHooks({ resolve: (specifier, context, next) => { const r = next(specifier, context); urls.push(r.url); return r } })',
    "const kit = await import('@sandkeep/testing')",
    "console.log(JSON.stringify([urls.some((url) => url.includes('/vitest/')), typeof kit.storeConformance.acquire]))",
  ].join('\n')
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
  expect(JSON.parse(stdout)).toEqual([false, 'function'])
})

// The test kit left the runtime package: core declares no test runner and ships no test entry.
it('@sandkeep/core has no vitest peer and no ./test entry (the kit is @sandkeep/testing)', async () => {
  const script = [
    "import { createRequire } from 'node:module'",
    "const manifest = createRequire(import.meta.url)('@sandkeep/core/package.json')",
    "const refused = await import('@sandkeep/core/test').then(() => 'loaded', (error) => error.code)",
    'console.log(JSON.stringify([Object.keys(manifest.peerDependencies ?? {}), refused]))',
  ].join('\n')
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
  expect(JSON.parse(stdout)).toEqual([['@opentelemetry/api'], 'ERR_PACKAGE_PATH_NOT_EXPORTED'])
})
