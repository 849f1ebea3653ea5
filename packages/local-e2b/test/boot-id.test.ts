// /proc/sys/kernel/random/boot_id as a VM shows it: new at every boot of the sandbox (create, a cold boot
// after a filesystem-only pause, a sandbox from a snapshot, a fork, a host restart), the same across a memory
// pause, and never the host's. E2B's own tests tell a cold boot from a resume by it.
import { readFileSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { restartHost, useTestHost } from './helpers.js'

const HOST_BOOT_ID = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()

async function bootId(sandbox: Sandbox): Promise<string> {
  return (await sandbox.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout.trim()
}

describe('boot_id', () => {
  const t = useTestHost({ templateOptions: { 'root-box': { user: 'root' } } })

  it('is the sandbox boot’s own: kept by a memory pause, new after a cold boot and a host restart', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const other = await Sandbox.create(t.opts)
    const first = await bootId(sandbox)
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(first).not.toBe(HOST_BOOT_ID)
    expect(await bootId(other)).not.toBe(first)
    // Stable while the sandbox stays up, as one boot's id is.
    expect(await bootId(sandbox)).toBe(first)

    await sandbox.pause()
    const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect(await bootId(resumed)).toBe(first)

    await resumed.pause({ keepMemory: false })
    const rebooted = await Sandbox.connect(sandbox.sandboxId, t.opts)
    const second = await bootId(rebooted)
    expect(second).not.toBe(first)
    expect(second).not.toBe(HOST_BOOT_ID)

    await restartHost(t)
    const back = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect([first, second, HOST_BOOT_ID]).not.toContain(await bootId(back))
    await back.kill()
    await Sandbox.kill(other.sandboxId, t.opts)
  })

  it('is new in a sandbox made from a snapshot and in each fork', async () => {
    const source = await Sandbox.create(t.opts)
    const sourceId = await bootId(source)
    const snapshot = await source.createSnapshot()
    const fromSnapshot = await Sandbox.create(snapshot.snapshotId, t.opts)
    const forks = (await source.fork({ count: 2, timeoutMs: 60_000 })).filter(
      (result): result is Sandbox => result instanceof Sandbox,
    )
    expect(forks).toHaveLength(2)
    const ids = [sourceId, await bootId(fromSnapshot), ...(await Promise.all(forks.map(bootId)))]
    expect(new Set([...ids, HOST_BOOT_ID]).size).toBe(ids.length + 1)
    // The source goes on in the same boot.
    expect(await bootId(source)).toBe(sourceId)
    for (const sandbox of [source, fromSnapshot, ...forks]) await sandbox.kill()
    await Sandbox.deleteSnapshot(snapshot.snapshotId, t.opts)
  })

  it('cannot be changed from inside, not even by root', async () => {
    const sandbox = await Sandbox.create('root-box', t.opts)
    const before = await bootId(sandbox)
    for (const attempt of [
      'echo 00000000-0000-4000-8000-000000000000 > /proc/sys/kernel/random/boot_id',
      'umount /proc/sys/kernel/random/boot_id',
      'umount -l /proc/sys/kernel/random/boot_id',
      'mount -o remount,rw /proc/sys/kernel/random/boot_id',
      'chmod 666 /proc/sys/kernel/random/boot_id',
    ]) {
      const result = await sandbox.commands.run(attempt).catch((error: { exitCode?: number }) => error)
      expect(result.exitCode, attempt).not.toBe(0)
    }
    expect(await bootId(sandbox)).toBe(before)
    // The rest of /proc/sys/kernel/random is the kernel's own: a fresh uuid at every read.
    const uuids = await sandbox.commands.run('cat /proc/sys/kernel/random/uuid /proc/sys/kernel/random/uuid')
    const [one, two] = uuids.stdout.trim().split('\n')
    expect(one).not.toBe(two)
    await sandbox.kill()
  })
})
