import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { SandkeepError } from '../contract/errors.js'
import type { Turn } from '../contract/session-manager-types.js'
import type { Checkpoint, SessionStore } from '../contract/session-store.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { setup } from './manager.test-support.js'

// The checkpoint tree as the manager drives it (issue 31): restore to any kept checkpoint of any branch,
// rewind and regenerate that delete nothing, forks from any branch, mid-turn checkpoints, retention.

const checkpoints = { every: 'turn', keep: 10 } as const

/** A turn that sets `x` in the interpreter (journaled) and writes a file saying so. */
async function turnSetting(
  sessions: ReturnType<typeof setup>['sessions'],
  id: string,
  x: number,
): Promise<Checkpoint> {
  const turn = await sessions.beginTurn(id)
  await setX(turn, x)
  const end = await turn.end()
  return end.checkpoint!
}

async function setX(turn: Turn, x: number): Promise<void> {
  await turn.sandbox.runCode(`x = ${x}`)
  await turn.journal.record({ kind: 'code', code: `x = ${x}` })
  await turn.sandbox.writeFile('/home/user/x.txt', String(x))
  await turn.journal.record({ kind: 'file', path: '/home/user/x.txt', content: String(x) })
}

/** What the next turn sees: `x` in memory and in the file, and how it got there. */
async function nextTurnSees(sessions: ReturnType<typeof setup>['sessions'], id: string) {
  const turn = await sessions.beginTurn(id)
  const x = (await turn.sandbox.runCode('x')).text
  const file = await turn.sandbox.readFile('/home/user/x.txt')
  const report = turn.report
  await turn.end()
  return { x, file, report }
}

for (const snapshots of [{}, false] as const) {
  const source = snapshots ? 'snapshot' : 'journal'
  describe(`the checkpoint tree (${source})`, () => {
    it('switching back to the first answer after a regenerate runs on that answer’s state (issue 31, defect 1)', async () => {
      const { sessions, id } = setup({ checkpoints }, { snapshots })
      const one = await turnSetting(sessions, id, 1)
      const two = await turnSetting(sessions, id, 2)
      // Regenerate answer 2: back to turn 1, and a new turn 2 on a second branch.
      await sessions.rewind(id, { toTurn: 1 })
      const twenty = await turnSetting(sessions, id, 20)
      expect(twenty).toMatchObject({ turn: 2, parentId: one.id })
      expect(twenty.id).not.toBe(two.id)
      const tree = await sessions.listCheckpoints(id)
      expect(tree.head).toBe(twenty.id)
      expect(tree.checkpoints.map((c) => c.id)).toEqual([twenty.id, two.id, one.id])
      // The UI's "< 1/2 >" switcher goes back to the first answer 2, and message 3 is sent.
      const restored = await sessions.restore(id, { checkpoint: two.id })
      expect(restored).toMatchObject({ checkpoint: { id: two.id }, source, toTurn: 2, droppedTurns: [] })
      const seen = await nextTurnSees(sessions, id)
      expect(seen).toMatchObject({ x: '2', file: '2' })
      expect(seen.report).toMatchObject({ outcome: 'rewound', restored: { turn: 2, source } })
      // Every branch is still there, and the other one can be switched to again.
      await sessions.restore(id, { checkpoint: twenty.id })
      expect(await nextTurnSees(sessions, id)).toMatchObject({ x: '20', file: '20' })
      expect((await sessions.listCheckpoints(id)).checkpoints).toHaveLength(5)
    })

    it('a rewind deletes nothing: the later checkpoints and their snapshots can be restored again (issue 31, defect 3)', async () => {
      const { sessions, provider, id } = setup({ checkpoints }, { snapshots })
      await turnSetting(sessions, id, 1)
      const two = await turnSetting(sessions, id, 2)
      const three = await turnSetting(sessions, id, 3)
      const deletes = provider.callsOf('deleteSnapshot').length
      await sessions.rewind(id, { toTurn: 0 })
      expect(provider.callsOf('deleteSnapshot')).toHaveLength(deletes)
      expect((await sessions.listCheckpoints(id)).head).toBeNull()
      await sessions.restore(id, { checkpoint: three.id })
      expect(await nextTurnSees(sessions, id)).toMatchObject({ x: '3', file: '3' })
      // rewind toTurn is the head's ancestor at that depth: the head is now turn 3's child.
      await sessions.rewind(id, { toTurn: 2 })
      expect((await sessions.listCheckpoints(id)).head).toBe(two.id)
      expect(await nextTurnSees(sessions, id)).toMatchObject({ x: '2', file: '2' })
    })
  })
}

describe('restore', () => {
  it('refuses an id of another conversation, another tenant, a made-up one, before any side effect', async () => {
    const { sessions, store, provider, id } = setup({ checkpoints })
    const mine = await turnSetting(sessions, id, 1)
    const other = await turnSetting(sessions, `${id}-other`, 7)
    const tenantTurn = await sessions.beginTurn(id, { tenant: 'acme' })
    await setX(tenantTurn, 9)
    const acme = (await tenantTurn.end()).checkpoint!
    const key = { tenant: 'default', conversationId: id }
    const before = { record: await store.get(key), journal: await store.readJournal(key) }
    const calls = provider.calls.length
    for (const checkpoint of [other.id, acme.id, `ck_${'A'.repeat(22)}`]) {
      const error = await sessions.restore(id, { checkpoint }).catch((e: unknown) => e)
      expect(SandkeepError.hasCode(error, 'CHECKPOINT_NOT_FOUND'), checkpoint).toBe(true)
      expect((error as Error).message).toMatch(/not one of this conversation's checkpoints/)
    }
    for (const checkpoint of ['', 'ck_x', `${mine.id}\u202e`, 42, undefined]) {
      await expect(sessions.restore(id, { checkpoint } as never)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      })
    }
    // Another tenant's checkpoint of the same conversation id is not this tenant's.
    await expect(sessions.restore(id, { checkpoint: mine.id, tenant: 'acme' })).rejects.toMatchObject({
      code: 'CHECKPOINT_NOT_FOUND',
    })
    expect(provider.calls.length).toBe(calls)
    expect({ record: await store.get(key), journal: await store.readJournal(key) }).toEqual(before)
  })

  it('to a pruned checkpoint is CHECKPOINT_NOT_FOUND saying it was pruned; retention keeps the newest and the head', async () => {
    const { sessions, provider, id } = setup({ checkpoints: { every: 'turn', keep: 2 } })
    const one = await turnSetting(sessions, id, 1)
    const two = await turnSetting(sessions, id, 2)
    await sessions.restore(id, { checkpoint: one.id })
    const sibling = await turnSetting(sessions, id, 20)
    // Newest two: the sibling and turn 2; turn 1 is pruned (a bare node both descend from).
    const tree = await sessions.listCheckpoints(id)
    expect(tree.checkpoints.map((c) => c.id)).toEqual([sibling.id, two.id])
    expect(provider.snapshots.has(one.snapshot!.snapshotId)).toBe(false)
    expect(provider.snapshots.has(two.snapshot!.snapshotId)).toBe(true)
    await expect(sessions.restore(id, { checkpoint: one.id })).rejects.toMatchObject({
      code: 'CHECKPOINT_NOT_FOUND',
      message: expect.stringMatching(/pruned/),
    })
    // The pruned ancestor's journal part still serves both branches.
    await sessions.restore(id, { checkpoint: two.id })
    const turn = await sessions.beginTurn(id)
    expect((await turn.journal.list()).map((step) => step.kind)).toEqual(['code', 'file', 'code', 'file'])
    await turn.end()
  })

  it('of two concurrent restores: both succeed, the later one wins, neither says LEASE_LOST (issue 30.11)', async () => {
    const { sessions, id } = setup({ checkpoints })
    const one = await turnSetting(sessions, id, 1)
    const two = await turnSetting(sessions, id, 2)
    const results = await Promise.allSettled([
      sessions.restore(id, { checkpoint: one.id }),
      sessions.restore(id, { checkpoint: two.id }),
    ])
    for (const result of results) expect(result.status).toBe('fulfilled')
    const head = (await sessions.listCheckpoints(id)).head
    expect([one.id, two.id]).toContain(head)
    // Two rewinds to the same turn, as two clicks of "regenerate" would send.
    const rewinds = await Promise.allSettled([
      sessions.rewind(id, { toTurn: 1 }),
      sessions.rewind(id, { toTurn: 1 }),
    ])
    for (const result of rewinds) expect(result.status).toBe('fulfilled')
    expect((await sessions.listCheckpoints(id)).head).toBe(one.id)
  })
})

describe('a turn that lost its lease (issue 30.3)', () => {
  it('cannot append to the journal after a restore: LEASE_LOST, and the next turn never replays its step', async () => {
    let clock = Date.now()
    const store = createMemorySessionStore({ now: () => clock })
    const { sessions, provider, id } = setup({ checkpoints, store })
    await turnSetting(sessions, id, 1)
    const stale = await sessions.beginTurn(id)
    await stale.sandbox.runCode('x = 666')
    // Its lease lapses in the store (a stalled link), and another server restores the session.
    clock += 120_000
    const other = setup({ checkpoints, store, provider }).sessions
    await other.rewind(id, { toTurn: 1 })
    await expect(stale.journal.record({ kind: 'code', code: 'x = 666' })).rejects.toMatchObject({
      code: 'LEASE_LOST',
    })
    await stale.end()
    const next = await other.beginTurn(id)
    expect((await next.journal.list()).map((s) => (s.kind === 'code' ? s.code : s.kind))).toEqual([
      'x = 1',
      'file',
    ])
    expect((await next.sandbox.runCode('x')).text).toBe('1')
    await next.end()
  })
})

describe('fork', () => {
  it('from a checkpoint of a branch that is not the head: that branch’s state and journal', async () => {
    const { sessions, id } = setup({ checkpoints })
    await turnSetting(sessions, id, 1)
    const two = await turnSetting(sessions, id, 2)
    await sessions.rewind(id, { toTurn: 1 })
    await turnSetting(sessions, id, 20)
    const forked = await sessions.fork(id, `${id}-fork`, { checkpoint: two.id })
    expect(forked).toMatchObject({ atTurn: 2, checkpoint: { id: two.id }, source: 'snapshot' })
    const seen = await nextTurnSees(sessions, `${id}-fork`)
    expect(seen).toMatchObject({ x: '2', file: '2', report: { outcome: 'forked' } })
    // The source's head is untouched.
    expect(await nextTurnSees(sessions, id)).toMatchObject({ x: '20' })
    await expect(
      sessions.fork(id, `${id}-bad`, { checkpoint: `ck_${'B'.repeat(22)}` }),
    ).rejects.toMatchObject({ code: 'CHECKPOINT_NOT_FOUND' })
    await expect(sessions.fork(id, `${id}\u202e-spoof`)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
  })
})

describe('turn.checkpoint()', () => {
  it('takes a checkpoint mid-turn that becomes the head; the turn end’s is its child; restorable', async () => {
    const { sessions, id } = setup({ checkpoints })
    const turn = await sessions.beginTurn(id)
    await setX(turn, 1)
    const step = await turn.checkpoint()
    expect(step).toMatchObject({ turn: 1, parentId: null, from: 'mid-turn', journalLength: 2 })
    expect((await sessions.listCheckpoints(id)).head).toBe(step.id)
    await setX(turn, 2)
    const end = (await turn.end()).checkpoint!
    expect(end).toMatchObject({ turn: 1, parentId: step.id, from: 'turn-end', journalLength: 4 })
    await sessions.restore(id, { checkpoint: step.id })
    expect(await nextTurnSees(sessions, id)).toMatchObject({ x: '1', file: '1' })
  })

  it('records the sandbox as it is at the call, not the manifest the turn began from; a restore verifies against it', async () => {
    const { sessions, id } = setup({ checkpoints })
    await turnSetting(sessions, id, 1)
    const turn = await sessions.beginTurn(id)
    const begunFrom = (await sessions.listCheckpoints(id)).checkpoints[0]!.manifest
    await setX(turn, 2)
    const step = await turn.checkpoint()
    const manifest = step.manifest!
    expect(manifest.sandboxId).toBe(turn.sandbox.id)
    expect(manifest).not.toEqual(begunFrom)
    // The file witness is the content written before the call, as a turn end would record it.
    const witness = manifest.filesystem!.witnesses!.find((w) => w.path === '/home/user/x.txt')
    expect(witness!.sha256).toBe(createHash('sha256').update('2').digest('hex'))
    expect(manifest.memory).not.toBeNull()
    await setX(turn, 3)
    await turn.end()
    await sessions.restore(id, { checkpoint: step.id })
    const seen = await nextTurnSees(sessions, id)
    expect(seen).toMatchObject({ x: '2', file: '2' })
    // Probed against the fresh manifest: the snapshot's files are found as recorded.
    expect(seen.report!.survived.filesystem).toBe(true)
  })

  it('past the tenant’s snapshot limit it is journal-only and its result says which limit, as a turn end’s report does', async () => {
    const { sessions, id } = setup({
      checkpoints: { every: 'turn', keep: 10, tenantLimits: { snapshots: 1 } },
    })
    const turn = await sessions.beginTurn(id)
    await setX(turn, 1)
    const first = await turn.checkpoint()
    expect(first.snapshot).not.toBeNull()
    expect(first.journalOnly).toBeUndefined()
    await setX(turn, 2)
    const second = await turn.checkpoint()
    expect(second.snapshot).toBeNull()
    expect(second.journalOnly).toMatchObject({ limit: 'tenant-snapshots' })
    expect(second.journalOnly!.message).toMatch(/snapshot/i)
    // What the store keeps is the checkpoint itself: the report field is not written into the tree.
    const kept = (await sessions.listCheckpoints(id)).checkpoints.find((c) => c.id === second.id)
    expect(kept).not.toHaveProperty('journalOnly')
    await turn.end()
  })

  it('needs the checkpoints option', async () => {
    const { sessions, id } = setup()
    const turn = await sessions.beginTurn(id)
    await expect(turn.checkpoint()).rejects.toMatchObject({ code: 'CAPABILITY_UNSUPPORTED' })
    await turn.end()
  })
})

describe('gc over the tree (issue 30.2)', () => {
  it('without a tenant visits every tenant with sessions, and keeps the snapshots their checkpoints and pending restore use', async () => {
    let clock = Date.now()
    const store = createMemorySessionStore({ now: () => clock })
    const made = setup({ checkpoints, store, onTurnEnd: 'kill', createWaitMs: 0, leaseMs: 300 })
    const { sessions, provider, id } = made
    // Tenant acme's session: its sandbox is killed at each turn end, so acme has no live sandbox.
    const tenant = 'acme'
    const taken: string[] = []
    for (const x of [1, 2]) {
      const turn = await sessions.beginTurn(id, { tenant })
      await setX(turn, x)
      taken.push((await turn.end()).checkpoint!.snapshot!.snapshotId)
    }
    await sessions.rewind(id, { toTurn: 1, tenant })
    clock += 3_600_000
    const result = await sessions.gc()
    expect(result.deletedSnapshots).toEqual([])
    expect(taken.map((snapshotId) => provider.snapshots.has(snapshotId))).toEqual([true, true])
    const next = await sessions.beginTurn(id, { tenant })
    expect(next.report).toMatchObject({ outcome: 'rewound', restored: { source: 'snapshot' } })
    expect(await next.sandbox.readFile('/home/user/x.txt')).toBe('1')
    await next.end()
  })
})

describe('a turn that never used the sandbox after a restore', () => {
  it('stands its checkpoint on the restored checkpoint’s snapshot, not the newest one', async () => {
    const { sessions, id } = setup({ checkpoints })
    const one = await turnSetting(sessions, id, 1)
    await turnSetting(sessions, id, 2)
    await sessions.restore(id, { checkpoint: one.id })
    // The restore's turn makes the sandbox from turn 1's snapshot, and checkpoints it.
    const restored = await turnSetting(sessions, id, 1)
    const idle = await sessions.beginTurn(id, { lazy: true })
    const end = (await idle.end()).checkpoint!
    expect(end).toMatchObject({ parentId: restored.id, snapshot: restored.snapshot })
  })
})

describe('per-tenant checkpoint limits (issue 30.10)', () => {
  it('past the limit a tenant’s checkpoints are journal-only and it is told QUOTA_EXCEEDED; other tenants are not touched', async () => {
    const { sessions, provider, id } = setup({
      checkpoints: { every: 'turn', keep: 10, tenantLimits: { snapshots: 2 } },
    })
    const errors: Array<{ phase: string; error: unknown }> = []
    sessions.on('error', (payload) => errors.push(payload))
    const taken: Array<Checkpoint> = []
    for (const x of [1, 2, 3]) {
      const turn = await sessions.beginTurn(id, { tenant: 'greedy' })
      await setX(turn, x)
      taken.push((await turn.end()).checkpoint!)
    }
    expect(taken.map((c) => c.snapshot !== null)).toEqual([true, true, false])
    expect(errors.map((e) => e.phase)).toEqual(['checkpoint-limit'])
    expect(errors[0]!.error).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      message: expect.stringMatching(/greedy/),
    })
    const victim = await turnSetting(sessions, `${id}-victim`, 5)
    expect(victim.snapshot).not.toBeNull()
    // The journal-only checkpoint still restores its state.
    await sessions.restore(id, { checkpoint: taken[2]!.id, tenant: 'greedy' })
    const next = await sessions.beginTurn(id, { tenant: 'greedy' })
    expect((await next.sandbox.runCode('x')).text).toBe('3')
    await next.end()
    expect(provider.snapshots.size).toBeGreaterThan(0)
  })
})

describe('per-tenant checkpoint bytes, the ledger, a full platform quota (issue 30.10)', () => {
  /** A turn that writes `bytes` bytes to a file of its own, journaled. */
  async function turnWriting(
    sessions: ReturnType<typeof setup>['sessions'],
    id: string,
    n: number,
    tenant: string,
  ) {
    const turn = await sessions.beginTurn(id, { tenant })
    const content = String(n).repeat(1000)
    await turn.sandbox.writeFile(`/home/user/big-${n}.txt`, content)
    await turn.journal.record({ kind: 'file', path: `/home/user/big-${n}.txt`, content })
    return turn.end()
  }

  it('past maxSnapshotBytes the snapshot that passed it is deleted and the checkpoint is journal-only; the report says which limit', async () => {
    const { sessions, provider, store, id } = setup({
      checkpoints: { every: 'turn', keep: 10, tenantLimits: { maxSnapshotBytes: 2500 } },
    })
    const errors: Array<{ phase: string; error: unknown }> = []
    sessions.on('error', (payload) => errors.push(payload))
    const first = await turnWriting(sessions, id, 1, 'heavy')
    expect(first.checkpoint!.snapshot).not.toBeNull()
    expect(first.journalOnly).toBeUndefined()
    const used = await store.readTenantSnapshotUsage!('heavy')
    expect(used).toMatchObject({ snapshots: 1, unknownBytes: 0 })
    expect(used.bytes).toBeGreaterThanOrEqual(1000)
    // The second snapshot holds both files: past 2500 bytes with the first one.
    const second = await turnWriting(sessions, id, 2, 'heavy')
    expect(second.checkpoint!.snapshot).toBeNull()
    expect(second.journalOnly).toMatchObject({
      limit: 'tenant-snapshot-bytes',
      message: expect.stringMatching(/Tenant 'heavy'.*maxSnapshotBytes.*without a snapshot/),
    })
    expect(errors.map((e) => [e.phase, (e.error as SandkeepError).code])).toEqual([
      ['checkpoint-limit', 'QUOTA_EXCEEDED'],
    ])
    expect(provider.snapshots.size).toBe(1)
    expect(await store.readTenantSnapshotUsage!('heavy')).toEqual(used)
    // Another tenant is not touched.
    expect((await turnWriting(sessions, `${id}-light`, 1, 'light')).checkpoint!.snapshot).not.toBeNull()
    // The journal-only checkpoint still restores its state.
    await sessions.restore(id, { checkpoint: second.checkpoint!.id, tenant: 'heavy' })
    const next = await sessions.beginTurn(id, { tenant: 'heavy' })
    expect(await next.sandbox.readFile('/home/user/big-2.txt')).toBe('2'.repeat(1000))
    await next.end()
  })

  it('reads the tenant’s usage once per turn end, whatever its number of sessions (no read per session)', async () => {
    const inner = createMemorySessionStore()
    const counts = { usage: 0, list: 0, readCheckpoints: 0 }
    const store: SessionStore = {
      ...inner,
      list: (...args) => {
        counts.list += 1
        return inner.list(...args)
      },
      readCheckpoints: (...args) => {
        counts.readCheckpoints += 1
        return inner.readCheckpoints!(...args)
      },
      readTenantSnapshotUsage: (tenant) => {
        counts.usage += 1
        return inner.readTenantSnapshotUsage!(tenant)
      },
    }
    const { sessions, id } = setup({
      store,
      checkpoints: { every: 'turn', keep: 10, tenantLimits: { snapshots: 100 } },
    })
    for (const n of [1, 2, 3, 4]) await turnWriting(sessions, `${id}-${n}`, n, 'many')
    Object.assign(counts, { usage: 0, list: 0, readCheckpoints: 0 })
    const end = await turnWriting(sessions, `${id}-1`, 5, 'many')
    expect(end.checkpoint!.snapshot).not.toBeNull()
    expect(counts).toMatchObject({ usage: 1, list: 0 })
    expect(counts.readCheckpoints).toBeLessThanOrEqual(1)
    expect(await inner.readTenantSnapshotUsage!('many')).toMatchObject({ snapshots: 5 })
  })

  it('the ledger forgets the snapshots pruning and endSession delete', async () => {
    const { sessions, store, provider, id } = setup({
      checkpoints: { every: 'turn', keep: 1, tenantLimits: { snapshots: 2 } },
    })
    for (const n of [1, 2, 3, 4]) {
      const end = await turnWriting(sessions, id, n, 'pruned')
      // keep 1: each turn end prunes the one before, so the tenant never reaches its 2 snapshots.
      expect(end.checkpoint!.snapshot).not.toBeNull()
    }
    expect(await store.readTenantSnapshotUsage!('pruned')).toMatchObject({ snapshots: 1 })
    expect(provider.snapshots.size).toBe(1)
    await sessions.endSession(id, { tenant: 'pruned' })
    expect(await store.readTenantSnapshotUsage!('pruned')).toEqual({
      snapshots: 0,
      bytes: 0,
      unknownBytes: 0,
    })
  })

  it('refuses bad limits, and maxSnapshotBytes on a store without the ledger, before any side effect', () => {
    const make =
      (tenantLimits: unknown, store = createMemorySessionStore()) =>
      () =>
        setup({ store, checkpoints: { every: 'turn', keep: 10, tenantLimits } as never })
    for (const bad of [{ maxSnapshotBytes: -1 }, { maxSnapshotBytes: 1.5 }, { bytes: 10 }, 'lots']) {
      expect(make(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    }
    const {
      noteTenantSnapshot: _n,
      forgetTenantSnapshots: _f,
      readTenantSnapshotUsage: _r,
      ...withoutLedger
    } = createMemorySessionStore()
    expect(make({ maxSnapshotBytes: 1000 }, withoutLedger as SessionStore)).toThrow(
      expect.objectContaining({ code: 'CAPABILITY_UNSUPPORTED', message: expect.stringMatching(/ledger/) }),
    )
    // The count limit alone works without the ledger (counted from the sessions' checkpoints).
    expect(make({ snapshots: 3 }, withoutLedger as SessionStore)).not.toThrow()
  })

  it('on a store without the ledger the count limit still holds, counted from the tenant’s sessions', async () => {
    const {
      noteTenantSnapshot: _n,
      forgetTenantSnapshots: _f,
      readTenantSnapshotUsage: _r,
      ...withoutLedger
    } = createMemorySessionStore()
    const { sessions, id } = setup({
      store: withoutLedger as SessionStore,
      checkpoints: { every: 'turn', keep: 10, tenantLimits: { snapshots: 2 } },
    })
    const ends = []
    for (const n of [1, 2, 3]) ends.push(await turnWriting(sessions, `${id}-${n % 2}`, n, 'old-store'))
    expect(ends.map((e) => e.checkpoint!.snapshot !== null)).toEqual([true, true, false])
    expect(ends[2]!.journalOnly).toMatchObject({ limit: 'tenant-snapshots' })
  })

  it('a usage the store cannot read is reported and the snapshot is still taken (the turn end never throws)', async () => {
    const inner = createMemorySessionStore()
    const store: SessionStore = {
      ...inner,
      readTenantSnapshotUsage: async () => {
        throw new SandkeepError({ code: 'STORE_UNAVAILABLE', message: 'down for the test' })
      },
    }
    const { sessions, id } = setup({
      store,
      checkpoints: { every: 'turn', keep: 10, tenantLimits: { snapshots: 1 } },
    })
    const errors: string[] = []
    sessions.on('error', (payload) => errors.push(payload.phase))
    const end = await turnWriting(sessions, id, 1, 'unread')
    expect(end.checkpoint!.snapshot).not.toBeNull()
    expect(end.journalOnly).toBeUndefined()
    expect(errors).toContain('checkpoint-limit')
  })

  it('a full platform quota makes the checkpoint journal-only at once: one createSnapshot, not retried, and says so', async () => {
    const { sessions, provider, id } = setup({ checkpoints })
    provider.failNext('createSnapshot', 'QUOTA_EXCEEDED', { message: 'snapshot quota exceeded' })
    const end = await turnWriting(sessions, id, 1, 'victim')
    expect(provider.callsOf('createSnapshot')).toHaveLength(1)
    expect(end.checkpoint!.snapshot).toBeNull()
    expect(end.journalOnly).toMatchObject({
      limit: 'platform-quota',
      message: expect.stringMatching(/shared by every tenant of this API key.*not retried/),
    })
  })
})
