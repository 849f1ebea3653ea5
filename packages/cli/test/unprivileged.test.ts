// A developer without root or bubblewrap: `sandkeep demo` as an unprivileged uid. Without a flag it says which
// flag runs it anyway; with `--isolation none` every turn passes (files written through the SDK at
// /home/user are where the code and the commands look), and the run says it is unisolated.
import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, bin, runToEnd } from './helpers.js'

/** nobody: a uid without any privilege on this machine. */
const NOBODY = 65534
const isRoot = process.getuid?.() === 0
const hasSetpriv = spawnSync('setpriv', ['--version']).status === 0
/** Whether nobody can read the built CLI at all: a checkout under a 0700 directory (mktemp -d) hides it. */
const nobodyReachesCheckout =
  isRoot &&
  hasSetpriv &&
  spawnSync('setpriv', [
    `--reuid=${NOBODY}`,
    `--regid=${NOBODY}`,
    '--clear-groups',
    '--',
    '/usr/bin/test',
    '-r',
    bin,
  ]).status === 0

let dir: string
let node: string
beforeAll(() => {
  assertBuilt()
  // This test's Node may live where nobody cannot reach it (root's home): nobody runs a copy.
  dir = mkdtempSync(join(tmpdir(), 'sandkeep-unprivileged-'))
  chmodSync(dir, 0o755)
  node = join(dir, 'node')
  copyFileSync(process.execPath, node)
  chmodSync(node, 0o755)
  chownSync(dir, NOBODY, NOBODY)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function demoAsNobody(args: string[]) {
  return runToEnd(
    'setpriv',
    [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', node, bin, 'demo', ...args],
    {
      env: { PATH: '/usr/bin:/bin', HOME: dir, TMPDIR: dir },
      timeoutMs: 240_000,
      label: `sandkeep demo ${args.join(' ')} as nobody`,
    },
  )
}

describe.skipIf(!nobodyReachesCheckout)(
  'sandkeep demo as an unprivileged user (skipped when not root, without setpriv, or when uid 65534 cannot read this checkout)',
  () => {
    it('without --isolation none: exit 1, and the message names the CLI flag, not a library option', async () => {
      const run = await demoAsNobody([])
      expect(run.code).toBe(1)
      expect(run.stderr).toContain('pass --isolation none')
      expect(run.stderr).toContain(`uid ${NOBODY}`)
      expect(run.stderr).not.toContain("isolation: 'none'")
    }, 60_000)

    it('with --isolation none: all five turns pass, files at /home/user reach code and commands, and it says unisolated', async () => {
      const run = await demoAsNobody(['--isolation', 'none'])
      expect(run.stderr + run.stdout).toMatch(/UNISOLATED/)
      expect(run.stderr).toContain('stands in as /home/user')
      expect(run.stdout).toContain('isolation none')
      expect(run.stdout).toContain('✓ 5/5 turns passed')
      expect(run.code).toBe(0)
    }, 300_000)
  },
)
