// What another local user (here `nobody`, through setpriv) can do to a host on the same machine: read its
// state, or plant files the host would trust.
import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Sandbox } from 'e2b'
import { afterAll, describe, expect, it } from 'vitest'
import { LocalE2BError, startLocalE2B } from '../src/index.js'
import { startHostProcess, startTestHost, stopTestHost } from './helpers.js'

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
    await expect(startLocalE2B({ stateDir: ownDir, logger: () => {} })).rejects.toThrow(
      /belongs to uid 65534/,
    )
  })
})

/** Files under `dir` (relative paths), recursively. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = join(prefix, entry.name)
    if (entry.isDirectory()) return filesUnder(dir, path)
    return [path]
  })
}

/** A directory like /tmp (world-writable, sticky) to be a host's TMPDIR. */
async function scratchTmp(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sk-users-tmp-'))
  dirs.push(dir)
  chmodSync(dir, 0o1777)
  return dir
}

/** Starts the bin with `tmp` as its TMPDIR, runs one command in a new sandbox, stops it. */
async function runOnceWithTmpdir(tmp: string): Promise<void> {
  const host = await startHostProcess(join(tmp, 'state'), { env: { ...process.env, TMPDIR: tmp } })
  try {
    const sandbox = await Sandbox.create(host.opts)
    expect((await sandbox.commands.run('echo hi')).stdout).toBe('hi\n')
    await sandbox.kill()
  } finally {
    host.child.kill('SIGTERM')
    await host.exited
  }
}

describe('the launcher the host runs as root', () => {
  it('is never a file another user planted where the host caches it', async () => {
    // Where does the host cache its launcher under a TMPDIR? Ask a host, as an attacker would.
    const clean = await scratchTmp()
    await runOnceWithTmpdir(clean)
    const launchers = filesUnder(clean).filter((path) => /sandkeep-enter-[0-9a-f]+$/.test(path))
    expect(launchers.length).toBe(1)
    const launcher = launchers[0] as string
    // nobody plants the same path in another TMPDIR before a host starts there.
    const attacked = await scratchTmp()
    const ran = join(attacked, 'planted-ran')
    const plant = asNobody(
      `mkdir -p ${join(attacked, dirname(launcher))} && printf '#!/bin/sh\\nid -u > ${ran}\\nexit 126\\n' > ${join(attacked, launcher)} && chmod 755 ${join(attacked, launcher)}`,
    )
    expect(plant.status, plant.output).toBe(0)
    await runOnceWithTmpdir(attacked)
    expect(existsSync(ran)).toBe(false)
  }, 60_000)
})
