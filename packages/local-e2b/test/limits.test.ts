// Per-sandbox limits keep one sandbox from starving the others: a sandbox past one of its limits gets the
// kernel's answer (EAGAIN on fork, an OOM kill of its own process, ENOSPC), while a second sandbox and the
// host keep working. Small limits keep each test short; every loop inside a sandbox is bounded.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { beforeAll, describe, expect, it } from 'vitest'
import { PAUSE_MODE_METADATA_KEY } from '../src/index.js'
import { commandResult, forkPastPidsScript, type TestHost, useTestHost } from './helpers.js'

const MiB = 1024 * 1024

const run = (sandbox: Sandbox, command: string, timeoutMs = 60_000) =>
  commandResult(sandbox, command, { timeoutMs })

/**
 * The sandbox's limits as the kernel holds them, read on the host: from the cgroup v1 hierarchies on a hybrid
 * machine (this one), from its cgroup v2 directory otherwise.
 */
function kernelLimits(t: TestHost, sandboxId: string) {
  const pid = t.host.getSandbox(sandboxId)?.hostPids[0]
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n')
  const v1 = (controller: string) =>
    lines.find((line) => line.split(':')[1]?.split(',').includes(controller))?.split(':')[2]
  const read = (root: string, path: string | undefined, file: string) =>
    readFileSync(join(root, path ?? '/', file), 'utf8').trim()
  if (v1('memory') !== undefined) {
    return {
      pids: read('/sys/fs/cgroup/pids', v1('pids'), 'pids.max'),
      memory: read('/sys/fs/cgroup/memory', v1('memory'), 'memory.limit_in_bytes'),
      cpu: `shares ${read('/sys/fs/cgroup/cpu', v1('cpu'), 'cpu.shares')}`,
      oomKills: Number(
        /oom_kill (\d+)/.exec(read('/sys/fs/cgroup/memory', v1('memory'), 'memory.oom_control'))?.[1],
      ),
    }
  }
  const path = lines.find((line) => line.startsWith('0::'))?.slice(3)
  const root = readFileSync('/proc/self/mountinfo', 'utf8').includes(' /sys/fs/cgroup/unified ')
    ? '/sys/fs/cgroup/unified'
    : '/sys/fs/cgroup'
  return {
    pids: read(root, path, 'pids.max'),
    memory: read(root, path, 'memory.max'),
    cpu: `weight ${read(root, path, 'cpu.weight')}`,
    oomKills: Number(/oom_kill (\d+)/.exec(read(root, path, 'memory.events'))?.[1]),
  }
}

describe('per-sandbox limits', () => {
  const t = useTestHost({
    limits: { pids: 64, memoryBytes: 64 * MiB, diskBytes: 16 * MiB, tmpfsBytes: 8 * MiB, cpuWeight: 50 },
  })
  let bystander: Sandbox
  beforeAll(async () => {
    bystander = await Sandbox.create(t.opts)
  })

  /** The other sandbox and the host still answer. */
  async function othersStillWork(): Promise<void> {
    expect((await bystander.commands.run('echo alive')).stdout).toBe('alive\n')
    const fresh = await Sandbox.create(t.opts)
    expect((await fresh.commands.run('echo fresh')).stdout).toBe('fresh\n')
    await fresh.kill()
  }

  it('sets the limits on the cgroup (pids, memory, cpu weight)', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const limits = kernelLimits(t, sandbox.sandboxId)
    expect(limits.pids).toBe('64')
    expect(limits.memory).toBe(String(64 * MiB))
    // Weight 50 is half of an equal share: cpu.shares 512 of v1's 1024.
    expect(['shares 512', 'weight 50']).toContain(limits.cpu)
    await sandbox.kill()
  })

  it('a fork past pids.max fails with EAGAIN', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const script = forkPastPidsScript(500, 64)
    const result = await run(sandbox, `python3 -c '${script}'`)
    expect(result.stdout).toBe('EAGAIN True\n')
    expect((await sandbox.commands.run('echo recovered')).stdout).toBe('recovered\n')
    await othersStillWork()
    await sandbox.kill()
  })

  it('a process past memory.max is OOM-killed; the sandbox goes on', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const result = await run(sandbox, `python3 -c 'b = b"x" * (256 * 1024 * 1024); print(len(b))'`)
    // envd reports a process ended by a signal as exit -1 (as E2B does); the cgroup counts the OOM kill.
    expect(result).toMatchObject({ exitCode: -1, stdout: '' })
    expect(kernelLimits(t, sandbox.sandboxId).oomKills).toBeGreaterThanOrEqual(1)
    expect((await sandbox.commands.run('echo recovered')).stdout).toBe('recovered\n')
    await othersStillWork()
    await sandbox.kill()
  })

  it('a write past the disk size fails with ENOSPC, in home and /tmp, and in the tmpfs /var/tmp and /dev/shm', async () => {
    const sandbox = await Sandbox.create(t.opts)
    for (const dir of ['/home/user', '/tmp', '/var/tmp', '/dev/shm']) {
      const result = await run(sandbox, `dd if=/dev/zero of=${dir}/fill bs=1M count=64`)
      expect(result.exitCode, dir).not.toBe(0)
      expect(result.stderr, dir).toMatch(/No space left on device/)
      await sandbox.commands.run(`rm ${dir}/fill`)
    }
    // The home and /tmp share one 16 MiB disk; the others are 8 MiB each.
    const sizes = await sandbox.commands.run('df -k --output=size /home/user /var/tmp /dev/shm | tail -n +2')
    const [home, varTmp, shm] = sizes.stdout.trim().split(/\s+/).map(Number)
    expect(home).toBeLessThanOrEqual(16 * 1024)
    expect(varTmp).toBe(8 * 1024)
    expect(shm).toBe(8 * 1024)
    expect((await sandbox.commands.run('echo ok > /home/user/after && cat /home/user/after')).stdout).toBe(
      'ok\n',
    )
    await othersStillWork()
    await sandbox.kill()
  })

  it('home keeps its files and its size through a filesystem-only pause (cold boot) and a host restart', async () => {
    const sandbox = await Sandbox.create({ ...t.opts, metadata: { [PAUSE_MODE_METADATA_KEY]: 'filesystem' } })
    await sandbox.files.write('/home/user/kept.txt', 'kept')
    await sandbox.pause()
    const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect(t.host.getSandbox(sandbox.sandboxId)?.pauses.at(-1)?.coldBoot).toBe(true)
    expect((await resumed.commands.run('cat kept.txt')).stdout).toBe('kept')
    await t.host.faults.restart()
    const restarted = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect((await restarted.commands.run('cat kept.txt')).stdout).toBe('kept')
    const full = await run(restarted, 'dd if=/dev/zero of=fill bs=1M count=64')
    expect(full.stderr).toMatch(/No space left on device/)
    await restarted.kill()
  })
})
