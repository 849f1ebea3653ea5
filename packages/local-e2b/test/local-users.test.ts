// What another local user (here `nobody`, through setpriv) can do to a host on the same machine: read its
// state, or plant files the host would trust.
import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, statSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { afterAll, describe, expect, it } from 'vitest'
import { LocalE2BError, startLocalE2B } from '../src/index.js'
import { startTestHost, stopTestHost } from './helpers.js'

const NOBODY = 65534
const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

/** Runs a shell command as `nobody`; its exit code and output. */
export function asNobody(command: string): { status: number | null; output: string } {
  const result = spawnSync(
    'setpriv',
    [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', '/bin/sh', '-c', command],
    { encoding: 'utf8', timeout: 10_000 },
  )
  return { status: result.status, output: `${result.stdout}${result.stderr}` }
}

describe('the state directory is private to the host', () => {
  it('makes a `mkdir -p` state dir 0700 and its registry 0600: nobody reads tokens, env vars or files', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'sk-users-'))
    dirs.push(stateDir)
    // What `mkdir -p` leaves with the usual umask.
    chmodSync(stateDir, 0o755)
    const warnings: string[] = []
    const t = await startTestHost({ stateDir, logger: (line) => void warnings.push(line) })
    try {
      const secret = `secret-${Date.now()}`
      const sandbox = await Sandbox.create({ ...t.opts, envs: { TENANT_SECRET: secret } })
      await sandbox.files.write('/home/user/notes.txt', secret)
      const registry = join(stateDir, 'registry.json')
      expect(statSync(stateDir).mode & 0o777).toBe(0o700)
      expect(statSync(registry).mode & 0o777).toBe(0o600)
      expect(warnings.join('\n')).toMatch(/readable by other users.*made it 700/)
      const home = join(stateDir, 'sandboxes', sandbox.sandboxId, 'home/user')
      for (const attempt of [
        `cat ${registry}`,
        `ls ${home}`,
        `cat ${home}/notes.txt`,
        `ls ${join(stateDir, 'sandboxes')}`,
      ]) {
        const result = asNobody(attempt)
        expect(result.status, attempt).not.toBe(0)
        expect(result.output, attempt).not.toContain(secret)
      }
      // The host itself still reads and serves everything.
      expect(await sandbox.files.read('/home/user/notes.txt')).toBe(secret)
      await sandbox.kill()
    } finally {
      await stopTestHost(t)
    }
  }, 60_000)

  it('refuses a state dir, or a registry in it, that belongs to another user', async () => {
    const planted = await mkdtemp(join(tmpdir(), 'sk-users-'))
    dirs.push(planted)
    chownSync(planted, NOBODY, NOBODY)
    const attempt = startLocalE2B({ stateDir: planted, logger: () => {} })
    await expect(attempt).rejects.toBeInstanceOf(LocalE2BError)
    await expect(attempt).rejects.toThrow(/belongs to uid 65534/)
    const ownDir = await mkdtemp(join(tmpdir(), 'sk-users-'))
    dirs.push(ownDir)
    mkdirSync(join(ownDir, 'sandboxes'))
    writeFileSync(join(ownDir, 'registry.json'), '{"sandboxes":[]}')
    chownSync(join(ownDir, 'registry.json'), NOBODY, NOBODY)
    await expect(startLocalE2B({ stateDir: ownDir, logger: () => {} })).rejects.toThrow(/belongs to uid 65534/)
  })
})
