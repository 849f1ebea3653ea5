// First-run noise a newcomer should not have to read past: scripts/dev.sh runs any command with the
// toolchain, turns off pnpm's update box and Turborepo's telemetry notice, and keeps colour codes out of
// output that goes to a file or a pipe.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cleanEnv, type RunResult, repositoryRoot, runToEnd } from './helpers.js'

function devSh(args: string[]): Promise<RunResult> {
  // FORCE_COLOR as a terminal session or a CI runner may set it: dev.sh must still not colour a pipe.
  return runToEnd('bash', [join(repositoryRoot, 'scripts/dev.sh'), ...args], {
    env: cleanEnv({ FORCE_COLOR: '1' }),
    timeoutMs: 120_000,
    label: `scripts/dev.sh ${args.join(' ')}`,
  })
}

describe('scripts/dev.sh', () => {
  it('runs an arbitrary command on Node >= 22 with the noise and colour switches set (stdout is a pipe)', async () => {
    const result = await devSh([
      'node',
      '-e',
      'const e = process.env; console.log(JSON.stringify({ major: Number(process.versions.node.split(".")[0]), notifier: e.npm_config_update_notifier, turbo: e.TURBO_TELEMETRY_DISABLED, noColor: e.NO_COLOR, force: e.FORCE_COLOR }))',
    ])
    expect(result.code, result.stderr).toBe(0)
    const seen = JSON.parse(result.stdout.trim()) as Record<string, unknown>
    expect(seen).toEqual({
      major: expect.any(Number),
      notifier: 'false',
      turbo: '1',
      noColor: '1',
      force: '0',
    })
    expect(seen.major as number).toBeGreaterThanOrEqual(22)
  }, 120_000)

  it('vitest run through it writes no colour codes into a pipe', async () => {
    const result = await devSh(['pnpm', 'exec', 'vitest', 'run', 'packages/cli/src/args.test.ts'])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toMatch(/passed/)
    expect(result.stdout + result.stderr).not.toContain('\u001b[')
  }, 120_000)

  it('the test command says up front how long the whole suite takes, as the README does; .npmrc turns off the update box', () => {
    const script = readFileSync(join(repositoryRoot, 'scripts/dev.sh'), 'utf8')
    const runTests = script.slice(script.indexOf('run_tests() {'))
    const said = /the whole suite takes about (\d+) minutes/.exec(runTests)
    expect(said, 'dev.sh names the minutes').not.toBeNull()
    expect(runTests.indexOf(said![0])).toBeLessThan(runTests.indexOf('pnpm test'))
    const readme = readFileSync(join(repositoryRoot, 'README.md'), 'utf8')
    expect(readme).toContain(`bash scripts/dev.sh test    # run the tests, about ${said![1]} minutes`)
    expect(readFileSync(join(repositoryRoot, '.npmrc'), 'utf8')).toMatch(/^update-notifier=false$/m)
  })
})
