// Per-tenant checkpoint limits on the real stack (issue 30.10): Redis under a random prefix, a local-e2b host
// driven by the unmodified E2B SDK. A tenant past its snapshot bytes (as the host reports each snapshot's
// size) gets journal-only checkpoints and is told so, without touching another tenant; a host whose snapshot
// quota (shared by every tenant of the API key) is full makes the checkpoint journal-only at once, with one
// snapshot request and no retry as from a rate limit.
import { createSessionManager, type SandboxProvider, type Turn } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { conversation, useRig } from './helpers/sessions.js'

const KiB = 1024

/** A turn that writes `kib` KiB of random bytes (content no other snapshot shares) and a journaled cell. */
async function heavyTurn(turn: Turn, n: number, kib: number): Promise<void> {
  const written = await turn.sandbox.runCommand(
    `head -c ${kib * KiB} /dev/urandom > /home/user/random-${n}.bin`,
  )
  expect(written.exitCode).toBe(0)
  await turn.sandbox.runCode(`x = ${n}`)
  await turn.journal.record({ kind: 'code', code: `x = ${n}` })
}

describe('tenant snapshot bytes on Redis and local-e2b', () => {
  const rig = useRig(
    { pauseMode: 'memory' },
    { checkpoints: { every: 'turn', keep: 10, tenantLimits: { maxSnapshotBytes: 600 * KiB } } },
  )

  it('past maxSnapshotBytes the checkpoint is journal-only, the snapshot that passed it deleted, and the tenant told', async () => {
    const { sessions, store, host } = rig()
    const tenant = `${rig().tenant}-heavy`
    const id = conversation()
    const errors: Array<{ phase: string; error: unknown }> = []
    sessions.on('error', (payload) => errors.push(payload))
    const first = await sessions.beginTurn(id, { tenant })
    await heavyTurn(first, 1, 400)
    const one = await first.end()
    expect(one.checkpoint!.snapshot).not.toBeNull()
    expect(one.journalOnly).toBeUndefined()
    // The ledger holds what the host says the snapshot added to its disk.
    const created = host.events.list({ type: 'snapshot-create' })
    const reported = created.find((e) => e.detail.snapshotId === one.checkpoint!.snapshot!.snapshotId)
    expect(await store.readTenantSnapshotUsage!(tenant)).toEqual({
      snapshots: 1,
      bytes: reported!.detail.bytes,
      unknownBytes: 0,
    })

    const second = await sessions.beginTurn(id, { tenant })
    await heavyTurn(second, 2, 400)
    const two = await second.end()
    expect(two.checkpoint!.snapshot).toBeNull()
    expect(two.journalOnly).toMatchObject({
      limit: 'tenant-snapshot-bytes',
      message: expect.stringContaining(`Tenant '${tenant}'`),
    })
    expect(errors).toContainEqual(
      expect.objectContaining({
        phase: 'checkpoint-limit',
        error: expect.objectContaining({ code: 'QUOTA_EXCEEDED' }),
      }),
    )
    // The snapshot that passed the limit is gone from the host; the ledger is as it was.
    const passed = host.events.list({ type: 'snapshot-create' }).at(-1)!.detail.snapshotId
    expect(passed).not.toBe(one.checkpoint!.snapshot!.snapshotId)
    const listed = await sessions.provider.listSnapshots!({ namePrefix: 'sandkeep-' })
    const ids = listed.snapshots.map((s) => s.snapshotId)
    expect(ids).toContain(one.checkpoint!.snapshot!.snapshotId)
    expect(ids).not.toContain(passed)
    expect((await store.readTenantSnapshotUsage!(tenant)).snapshots).toBe(1)

    // Another tenant of the same manager is not touched by this one's limit.
    const other = await sessions.beginTurn(conversation(), { tenant: rig().tenant })
    await heavyTurn(other, 1, 100)
    expect((await other.end()).checkpoint!.snapshot).not.toBeNull()

    // The journal-only checkpoint restores its state from the journal.
    await sessions.restore(id, { checkpoint: two.checkpoint!.id, tenant })
    const next = await sessions.beginTurn(id, { tenant })
    expect((await next.sandbox.runCode('x')).text).toBe('2')
    await next.end()
    await sessions.endSession(id, { tenant })
    expect((await store.readTenantSnapshotUsage!(tenant)).snapshots).toBe(0)
  })
})

describe('a full host snapshot quota on Redis and local-e2b', () => {
  const rig = useRig({ pauseMode: 'memory', maxSnapshots: 1 }, { checkpoints: { every: 'turn', keep: 10 } })

  it('one tenant holding the quota leaves the other’s checkpoint journal-only at once: one request, not retried', async () => {
    const { sessions, store } = rig()
    let snapshotCalls = 0
    const provider = sessions.provider
    const counting: SandboxProvider = Object.create(provider, {
      createSnapshot: {
        value: (...args: Parameters<NonNullable<SandboxProvider['createSnapshot']>>) => {
          snapshotCalls += 1
          return provider.createSnapshot!(...args)
        },
      },
    })
    const counted = createSessionManager({
      store,
      provider: counting,
      checkpoints: { every: 'turn', keep: 10 },
    })
    try {
      const holder = await counted.beginTurn(conversation(), { tenant: `${rig().tenant}-holder` })
      await heavyTurn(holder, 1, 16)
      expect((await holder.end()).checkpoint!.snapshot).not.toBeNull()
      snapshotCalls = 0
      const victimId = conversation()
      const victim = await counted.beginTurn(victimId, { tenant: rig().tenant })
      await heavyTurn(victim, 1, 16)
      const end = await victim.end()
      expect(snapshotCalls).toBe(1)
      expect(end.checkpoint!.snapshot).toBeNull()
      expect(end.journalOnly).toMatchObject({
        limit: 'platform-quota',
        message: expect.stringMatching(/shared by every tenant of this API key/),
      })
      expect(end.error).toMatchObject({ code: 'QUOTA_EXCEEDED' })
    } finally {
      await counted.close({ keepStore: true })
    }
  })
})

describe('a 429 quota answer on Redis and local-e2b', () => {
  const rig = useRig({ pauseMode: 'memory' }, { checkpoints: { every: 'turn', keep: 10 } })

  it('a 429 that says the quota is full (with Retry-After) is one request and a journal-only checkpoint, not a retry loop', async () => {
    const { sessions, host } = rig()
    const id = conversation()
    const turn = await sessions.beginTurn(id, { tenant: rig().tenant })
    await heavyTurn(turn, 1, 16)
    const before = host.events.list({ type: 'fault-trigger' }).length
    host.faults.failNext('snapshot', {
      count: 10,
      status: 429,
      body: { code: 429, message: 'snapshot limit reached' },
      headers: { 'retry-after': '1' },
      sandboxId: turn.report!.sandboxId,
    })
    try {
      const end = await turn.end()
      expect(host.events.list({ type: 'fault-trigger' }).length - before).toBe(1)
      expect(end.checkpoint!.snapshot).toBeNull()
      expect(end.journalOnly).toMatchObject({ limit: 'platform-quota' })
    } finally {
      host.faults.clear()
    }
  })
})
