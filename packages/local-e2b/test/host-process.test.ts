// The host as its own process, the way an operator runs it: stopped with SIGTERM while nobody reads its
// log any more, and SIGKILLed with sandboxes paused in every fidelity, then started again on the same state.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { afterAll, describe, expect, it } from 'vitest'
import { type HostProcess, startHostProcess, within } from './helpers.js'

const dirs: string[] = []
const hosts: HostProcess[] = []
afterAll(async () => {
  for (const host of hosts) {
    host.child.kill('SIGKILL')
    await host.exited
  }
  for (const dir of dirs) {
    // A host that failed to stop leaves its disk images mounted under the state dir.
    for (const path of mountsUnder(dir)) spawnSync('umount', ['-l', path])
    await rm(dir, { recursive: true, force: true })
  }
})

function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((path) => path.startsWith(`${dir}/`))
}

async function newStateDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sk-host-process-'))
  dirs.push(dir)
  return dir
}

async function startHost(stateDir: string, args: string[] = [], apiKey?: string): Promise<HostProcess> {
  const host = await startHostProcess(stateDir, { args, ...(apiKey ? { apiKey } : {}) })
  hosts.push(host)
  return host
}

/** Every cgroup directory a sandbox can have, on any kind of machine, that exists now. */
export function cgroupDirsOf(sandboxId: string): string[] {
  const roots = ['unified', 'freezer', 'pids', 'memory', 'cpu', '.'].map((name) =>
    join('/sys/fs/cgroup', name),
  )
  return roots.map((root) => join(root, 'sandkeep', sandboxId)).filter((dir) => existsSync(dir))
}

/** True while something is mounted at `path` (the host's mount table). */
function mounted(path: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[4] === path)
}

describe('SIGTERM while the log reader is gone', () => {
  it('still stops every sandbox (thawed, unmounted, cgroups removed) and exits 0', async () => {
    const stateDir = await newStateDir()
    const host = await startHost(stateDir)
    const sandbox = await Sandbox.create(host.opts)
    await sandbox.commands.run('echo kept > /home/user/kept.txt')
    await sandbox.pause()
    const rootDir = join(stateDir, 'sandboxes', sandbox.sandboxId)
    expect(cgroupDirsOf(sandbox.sandboxId).length).toBeGreaterThan(0)
    const diskMounted = mounted(rootDir)
    // Whoever read the host's stderr went away: every write there now fails with EPIPE.
    host.child.stderr.destroy()
    host.child.stdout.destroy()
    host.child.kill('SIGTERM')
    expect(await within(20_000, 'the host stopping', host.exited)).toBe(0)
    expect(cgroupDirsOf(sandbox.sandboxId)).toEqual([])
    if (diskMounted) expect(mounted(rootDir)).toBe(false)
    // The files stay for the next host on this state dir (the same key: sandboxes belong to their key's team).
    const again = await startHost(stateDir, [], host.opts.apiKey)
    const resumed = await Sandbox.connect(sandbox.sandboxId, again.opts)
    expect(await resumed.files.read('/home/user/kept.txt')).toBe('kept\n')
    await resumed.kill()
  }, 60_000)
})

const MODES = ['memory', 'filesystem', 'processes'] as const

describe.each(['v2', 'v1'])('a host SIGKILLed with sandboxes paused (freezer %s)', (freezer) => {
  it('comes back on its state dir with each sandbox usable as its pause mode promises, in seconds, leaking no cgroup', async () => {
    const stateDir = await newStateDir()
    const env = { ...process.env, SANDKEEP_LOCAL_E2B_FREEZER: freezer }
    const host = await startHostProcess(stateDir, { env })
    hosts.push(host)
    const sandboxes: Array<{ id: string; mode: (typeof MODES)[number] | 'mid-pause' }> = []
    for (const mode of MODES) {
      const sandbox = await Sandbox.create({
        ...host.opts,
        metadata: { 'local-e2b/pause-mode': mode, 'local-e2b/volume': '/home/user/volume' },
      })
      await sandbox.commands.run('mkdir volume && echo kept > volume/kept.txt && echo scratch > scratch.txt')
      await sandbox.commands.run('sleep 1000', { background: true, timeoutMs: 0 })
      expect(await sandbox.pause()).toBe(true)
      sandboxes.push({ id: sandbox.sandboxId, mode })
    }
    // One more, killed with its pause under way (whether the pause lands first is up to the race).
    const busy = await Sandbox.create(host.opts)
    await busy.commands.run('mkdir volume && echo kept > volume/kept.txt && echo scratch > scratch.txt')
    await busy.commands.run('sleep 1000', { background: true, timeoutMs: 0 })
    sandboxes.push({ id: busy.sandboxId, mode: 'mid-pause' })
    const pausing = busy.pause().catch(() => false)
    await new Promise((resolve) => setTimeout(resolve, 3))
    host.child.kill('SIGKILL')
    await host.exited
    await pausing

    // The same key: a restarted host keeps each sandbox its owner's (another key gets 404).
    const again = await startHostProcess(stateDir, { env, apiKey: host.opts.apiKey })
    hosts.push(again)
    for (const { id, mode } of sandboxes) {
      const resumed = await within(10_000, `connect (${mode})`, Sandbox.connect(id, again.opts))
      const files = await within(
        10_000,
        `a command (${mode})`,
        resumed.commands.run('cat volume/kept.txt; cat scratch.txt 2>/dev/null; true'),
      )
      // A processes-mode pause wipes all but the volume; the others keep every file.
      expect(files.stdout, mode).toBe(mode === 'processes' ? 'kept\n' : 'kept\nscratch\n')
      const running = (await resumed.commands.list()).map((process) => process.args.join(' '))
      // Memory is lost with the host; only a processes-mode pause starts its recorded processes again.
      if (mode === 'processes')
        expect(
          running.some((args) => args.includes('sleep 1000')),
          mode,
        ).toBe(true)
      else expect(running, mode).toEqual([])
      expect(await within(10_000, `kill (${mode})`, resumed.kill()), mode).toBe(true)
      expect(cgroupDirsOf(id), mode).toEqual([])
    }
    again.child.kill('SIGTERM')
    expect(await again.exited).toBe(0)
  }, 120_000)
})
