import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)

// Users of jest or node:test get the mock provider without loading vitest (which the conformance suites in
// `@sandkeep/core/test` need): the subpath is built and imported here by a plain Node process.
it('@sandkeep/core/test/mock-provider loads and works outside vitest', async () => {
  const script = [
    "import { createMockProvider } from '@sandkeep/core/test/mock-provider'",
    'const provider = createMockProvider()',
    'const sandbox = await provider.create({ metadata: {} })',
    "console.log(JSON.stringify([(await sandbox.runCommand('echo hi')).stdout, provider.calls.length]))",
  ].join('\n')
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
  expect(JSON.parse(stdout)).toEqual(['hi\n', 2])
})
