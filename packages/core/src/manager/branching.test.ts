import { describe, expect, it } from 'vitest'
import { SandkeepError } from '../contract/errors.js'
import type { Turn } from '../contract/session-manager-types.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { snapshotName } from './checkpoints.js'
import { record, setup } from './manager.test-support.js'

const checkpoints = { every: 'turn', keep: 10 } as const

/** One turn that writes `file`, sets `x` in the interpreter and records both in the journal. */
async function work(turn: Turn, file: string, x: number): Promise<void> {
  await turn.sandbox.writeFile(file, `written at x=${x}`)
  await turn.journal.record({ kind: 'file', path: file, content: `written at x=${x}` })
  await turn.sandbox.runCode(`x = ${x}`)
  await turn.journal.record({ kind: 'code', code: `x = ${x}` })
}

async function valueOfX(turn: Turn): Promise<string | null> {
  return (await turn.sandbox.runCode('x')).text
}

describe('checkpoints', () => {
  it('are off by default: no checkpoint on the end report, none listed, no snapshot taken', async () => {
    const { sessions, provider, id } = setup()
    const turn = await sessions.beginTurn(id)
    await work(turn, '/home/user/a.txt', 1)
    const end = await turn.end()
    expect(end.checkpoint).toBeUndefined()
    expect(await turn.checkpointed).toBeUndefined()
    expect(await sessions.listCheckpoints(id)).toEqual({ head: null, checkpoints: [] })
    expect(provider.callsOf('createSnapshot')).toHaveLength(0)
  })

  it('record the turn, a snapshot, the journal length and the manifest at each turn end', async () => {
    const { sessions, provider, id } = setup({ checkpoints })
    const first = await sessions.beginTurn(id)
    await work(first, '/home/user/a.txt', 1)
    const end = await first.end()
    expect(end.checkpoint).toMatchObject({
      turn: 1,
      sandboxId: first.report!.sandboxId,
      journalLength: 2,
      snapshot: { keeps: { files: true, memory: false } },
    })
    expect(end.checkpoint!.manifest?.sandboxId).toBe(first.report!.sandboxId)
    expect(await first.checkpointed).toEqual(end.checkpoint)
    expect(provider.snapshots.has(end.checkpoint!.snapshot!.snapshotId)).toBe(true)
    expect(end.timings.checkpointMs).toBeGreaterThanOrEqual(0)
    const second = await sessions.beginTurn(id)
    await work(second, '/home/user/b.txt', 2)
    await second.end()
    const listed = await sessions.listCheckpoints(id)
    expect(listed.checkpoints.map((c) => [c.turn, c.journalLength])).toEqual([
      [2, 4],
      [1, 2],
    ])
    expect(listed.head).toBe(listed.checkpoints[0]!.id)
    expect(listed.checkpoints[0]!.parentId).toBe(end.checkpoint!.id)
    expect(end.checkpoint!.parentId).toBeNull()
  })

  it('keep only the latest `keep` and delete the pruned ones’ snapshots on the platform', async () => {
    const { sessions, provider, id } = setup({ checkpoints: { every: 'turn', keep: 2 } })
    const taken: string[] = []
    for (let n = 1; n <= 4; n++) {
      const turn = await sessions.beginTurn(id)
      await work(turn, `/home/user/f${n}.txt`, n)
      taken.push((await turn.end()).checkpoint!.snapshot!.snapshotId)
    }
    expect((await sessions.listCheckpoints(id)).checkpoints.map((c) => c.turn)).toEqual([4, 3])
    expect(taken.map((snapshotId) => provider.snapshots.has(snapshotId))).toEqual([false, false, true, true])
  })

  it('are the journal position alone on a provider without snapshots (no provider call)', async () => {
    const { sessions, provider, id } = setup({ checkpoints }, { snapshots: false })
    const turn = await sessions.beginTurn(id)
    await work(turn, '/home/user/a.txt', 1)
    const end = await turn.end()
    expect(end.checkpoint).toMatchObject({ turn: 1, snapshot: null, journalLength: 2 })
    expect(provider.callsOf('createSnapshot')).toHaveLength(0)
  })

  it('of a turn that never used the sandbox stand on the previous checkpoint’s snapshot', async () => {
    const { sessions, id } = setup({ checkpoints })
    const first = await sessions.beginTurn(id)
    await work(first, '/home/user/a.txt', 1)
    const one = (await first.end()).checkpoint!
    const idle = await sessions.beginTurn(id, { lazy: true })
    const two = (await idle.end()).checkpoint!
    expect(two).toMatchObject({ turn: 2, snapshot: one.snapshot, journalLength: 2 })
  })

  it('need a store that keeps them', () => {
    const made = setup()
    const { readCheckpoints: _r, rewind: _w, createFork: _f, ...bare } = made.store
    expect(() => setup({ checkpoints, store: bare as typeof made.store })).toThrow(
      expect.objectContaining({ code: 'CAPABILITY_UNSUPPORTED' }),
    )
  })

  it('refuse bad options before anything runs', () => {
    for (const bad of [{ every: 'hour' }, { every: 'turn', keep: 0 }, { every: 'turn', keep: 1.5 }, 'turn']) {
      expect(() => setup({ checkpoints: bad as never })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      )
    }
  })
})

describe('rewind', () => {
  it('starts the next turn from the checkpoint’s snapshot: later files gone, memory rebuilt, old sandbox killed', async () => {
    const { sessions, provider, id } = setup({ checkpoints })
    const first = await sessions.beginTurn(id)
    await work(first, '/home/user/a.txt', 1)
    await first.end()
    const second = await sessions.beginTurn(id)
    await work(second, '/home/user/b.txt', 2)
    const oldSandbox = second.report!.sandboxId
    await second.end()

    const rewound = await sessions.rewind(id, { toTurn: 1 })
    expect(rewound).toMatchObject({
      toTurn: 1,
      source: 'snapshot',
      droppedTurns: [],
      killedSandboxId: oldSandbox,
    })
    expect(provider.callsOf('kill').map((c) => c.sandboxId)).toContain(oldSandbox)
    const session = await sessions.getSession(id)
    expect(session).toMatchObject({ turnCount: 1, sandboxId: null, restore: { kind: 'rewound', turn: 1 } })

    const third = await sessions.beginTurn(id)
    expect(third.report).toMatchObject({
      outcome: 'rewound',
      restored: { kind: 'rewound', turn: 1, source: 'snapshot' },
      survived: { filesystem: true, memory: false },
    })
    expect(third.report!.sandboxId).not.toBe(oldSandbox)
    expect(await third.sandbox.exists('/home/user/a.txt')).toBe(true)
    expect(await third.sandbox.exists('/home/user/b.txt')).toBe(false)
    expect(await valueOfX(third)).toBe('1')
    expect((await third.journal.list()).length).toBe(2)
    const end = await third.end()
    expect(end.checkpoint?.turn).toBe(2)
    expect((await sessions.getSession(id))?.restore).toBeNull()
  })

  it('to turn 0 starts over with a fresh sandbox and an empty journal', async () => {
    const { sessions, id } = setup({ checkpoints })
    const first = await sessions.beginTurn(id)
    await work(first, '/home/user/a.txt', 1)
    await first.end()
    expect(await sessions.rewind(id, { toTurn: 0 })).toMatchObject({ source: 'journal', checkpoint: null })
    const next = await sessions.beginTurn(id)
    expect(next.report).toMatchObject({ outcome: 'rewound', restored: { turn: 0, source: 'journal' } })
    expect(await next.sandbox.exists('/home/user/a.txt')).toBe(false)
    expect(await next.journal.list()).toEqual([])
    await next.end()
  })

  it('replays the journal up to the checkpoint on a provider without snapshots', async () => {
    const { sessions, id } = setup({ checkpoints }, { snapshots: false })
    const first = await sessions.beginTurn(id)
    await work(first, '/home/user/a.txt', 1)
    await first.end()
    const second = await sessions.beginTurn(id)
    await work(second, '/home/user/b.txt', 2)
    await second.end()
    expect((await sessions.rewind(id, { toTurn: 1 })).source).toBe('journal')
    const third = await sessions.beginTurn(id)
    expect(third.report).toMatchObject({
      outcome: 'rewound',
      restored: { source: 'journal', turn: 1 },
      rehydratedSteps: 2,
    })
    expect(await third.sandbox.readFile('/home/user/a.txt')).toBe('written at x=1')
    expect(await third.sandbox.exists('/home/user/b.txt')).toBe(false)
    expect(await valueOfX(third)).toBe('1')
    await third.end()
  })

  it('falls back to the journal and says stateLost when the platform lost the snapshot', async () => {
    const { sessions, provider, id } = setup({ checkpoints })
    const errors = record(sessions, 'error')
    const first = await sessions.beginTurn(id)
    await work(first, '/home/user/a.txt', 1)
    const snapshotId = (await first.end()).checkpoint!.snapshot!.snapshotId
    await sessions.rewind(id, { toTurn: 1 })
    provider.expireSnapshot(snapshotId)
    const next = await sessions.beginTurn(id)
    expect(next.report).toMatchObject({
      outcome: 'rewound',
      stateLost: true,
      restored: { source: 'journal', snapshotId, snapshotLost: true },
    })
    expect(await next.sandbox.readFile('/home/user/a.txt')).toBe('written at x=1')
    expect(await valueOfX(next)).toBe('1')
    expect(errors.map((e) => e.phase)).toContain('restore-snapshot')
    await next.end()
  })

  it('to a turn without a checkpoint fails with a clear error and changes nothing', async () => {
    const { sessions, provider, store, id } = setup({ checkpoints: { every: 'turn', keep: 1 } })
    for (let n = 1; n <= 2; n++) {
      const turn = await sessions.beginTurn(id)
      await work(turn, `/home/user/f${n}.txt`, n)
      await turn.end()
    }
    const key = { tenant: 'default', conversationId: id }
    const before = {
      record: await store.get(key),
      journal: await store.readJournal(key),
      checkpoints: await store.readCheckpoints!(key),
    }
    const calls = provider.calls.length
    const cases: Array<[number, string, RegExp]> = [
      [1, 'CHECKPOINT_NOT_FOUND', /pruned/],
      [3, 'CHECKPOINT_NOT_FOUND', /turn\(s\) so far/],
      [-1, 'INVALID_ARGUMENT', /toTurn/],
      [1.5, 'INVALID_ARGUMENT', /toTurn/],
    ]
    for (const [toTurn, code, message] of cases) {
      const error = await sessions.rewind(id, { toTurn }).catch((e: unknown) => e)
      expect(SandkeepError.hasCode(error, code as never), `toTurn ${toTurn}`).toBe(true)
      expect((error as Error).message).toMatch(message)
    }
    await expect(sessions.rewind('no-such-conversation', { toTurn: 0 })).rejects.toMatchObject({
      code: 'CHECKPOINT_NOT_FOUND',
    })
    await expect(sessions.rewind(id, { toTurn: 1, extra: true } as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(sessions.rewind('', { toTurn: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(provider.calls.length).toBe(calls)
    expect({
      record: await store.get(key),
      journal: await store.readJournal(key),
      checkpoints: await store.readCheckpoints!(key),
    }).toEqual(before)
  })

  it('while a turn of the session runs is refused with SESSION_BUSY, and works once it ended', async () => {
    const { sessions, store, id } = setup({ checkpoints })
    const first = await sessions.beginTurn(id)
    await work(first, '/home/user/a.txt', 1)
    await first.end()
    const running = await sessions.beginTurn(id)
    const before = await store.get({ tenant: 'default', conversationId: id })
    await expect(sessions.rewind(id, { toTurn: 1 })).rejects.toMatchObject({
      code: 'SESSION_BUSY',
      message: expect.stringMatching(/turn of this conversation is running/),
    })
    expect(await store.get({ tenant: 'default', conversationId: id })).toEqual(before)
    await running.end()
    await expect(sessions.rewind(id, { toTurn: 1 })).resolves.toMatchObject({ toTurn: 1 })
  })

  it('fences out a turn that lost its lease before it: its checkpoint is refused and its snapshot deleted', async () => {
    let clock = Date.now()
    const store = createMemorySessionStore({ now: () => clock })
    const { sessions, provider, id } = setup({ checkpoints, store })
    const first = await sessions.beginTurn(id)
    await work(first, '/home/user/a.txt', 1)
    await first.end()
    const stale = await sessions.beginTurn(id)
    await work(stale, '/home/user/late.txt', 2)
    // Its lease lapses in the store (a stalled process), so the rewind finds the session free.
    clock += 120_000
    const other = setup({ checkpoints, store, provider }).sessions
    await other.rewind(id, { toTurn: 0 })
    const end = await stale.end()
    expect(end.checkpoint).toBeUndefined()
    expect(provider.callsOf('createSnapshot')).toHaveLength(2)
    // The stale turn's snapshot is deleted; turn 1's stays with its checkpoint (a restore deletes nothing).
    expect(provider.snapshots.size).toBe(1)
    const tree = await sessions.listCheckpoints(id)
    expect(tree.head).toBeNull()
    expect(tree.checkpoints.map((c) => c.turn)).toEqual([1])
    expect(provider.snapshots.has(tree.checkpoints[0]!.snapshot!.snapshotId)).toBe(true)
    // Discarded with the rewind: not a turn of the rewound conversation.
    expect(await store.get({ tenant: 'default', conversationId: id })).toMatchObject({
      restore: { turn: 0 },
      sandboxId: null,
      turnCount: 0,
    })
  })

  it('waits for another manager’s turn that ends meanwhile', async () => {
    const made = setup({ checkpoints, createWaitMs: 5000 })
    const other = setup({ checkpoints, store: made.store, provider: made.provider }).sessions
    const first = await made.sessions.beginTurn(made.id)
    await work(first, '/home/user/a.txt', 1)
    await first.end()
    const running = await other.beginTurn(made.id)
    const rewinding = made.sessions.rewind(made.id, { toTurn: 0 })
    setTimeout(() => void running.end(), 50)
    await expect(rewinding).resolves.toMatchObject({ toTurn: 0 })
  })
})

describe('fork', () => {
  it('starts a new session from the checkpoint with its own sandbox and journal; the source goes on', async () => {
    const { sessions, id } = setup({ checkpoints })
    const first = await sessions.beginTurn(id)
    await work(first, '/home/user/a.txt', 1)
    await first.end()
    const second = await sessions.beginTurn(id)
    await work(second, '/home/user/b.txt', 2)
    const sourceSandbox = second.report!.sandboxId
    await second.end()

    const forked = await sessions.fork(id, `${id}-b`, { atTurn: 1 })
    expect(forked).toMatchObject({ conversationId: `${id}-b`, atTurn: 1, source: 'snapshot' })
    expect(forked.record).toMatchObject({ turnCount: 1, sandboxId: null, restore: { kind: 'forked' } })
    const branch = await sessions.beginTurn(`${id}-b`)
    expect(branch.report).toMatchObject({
      outcome: 'forked',
      restored: { kind: 'forked', turn: 1, source: 'snapshot', fromConversationId: id },
    })
    expect(branch.report!.sandboxId).not.toBe(sourceSandbox)
    expect(await branch.sandbox.exists('/home/user/a.txt')).toBe(true)
    expect(await branch.sandbox.exists('/home/user/b.txt')).toBe(false)
    expect(await valueOfX(branch)).toBe('1')
    await branch.sandbox.runCode('x = 100')
    await branch.journal.record({ kind: 'code', code: 'x = 100' })
    expect((await branch.journal.list()).length).toBe(3)
    await branch.end()

    const source = await sessions.beginTurn(id)
    expect(source.report).toMatchObject({ outcome: 'resumed', sandboxId: sourceSandbox })
    expect(await source.sandbox.exists('/home/user/b.txt')).toBe(true)
    expect(await valueOfX(source)).toBe('2')
    expect((await source.journal.list()).length).toBe(4)
    await source.end()
  })

  it('takes the latest checkpoint when atTurn is left out', async () => {
    const { sessions, id } = setup({ checkpoints })
    for (let n = 1; n <= 2; n++) {
      const turn = await sessions.beginTurn(id)
      await work(turn, `/home/user/f${n}.txt`, n)
      await turn.end()
    }
    expect((await sessions.fork(id, `${id}-latest`)).atTurn).toBe(2)
  })

  it('onto an existing conversation is refused and leaves it untouched', async () => {
    const { sessions, store, id } = setup({ checkpoints })
    for (const conversation of [id, `${id}-other`]) {
      const turn = await sessions.beginTurn(conversation)
      await work(turn, '/home/user/a.txt', 1)
      await turn.end()
    }
    const key = { tenant: 'default', conversationId: `${id}-other` }
    const before = { record: await store.get(key), journal: await store.readJournal(key) }
    await expect(sessions.fork(id, `${id}-other`)).rejects.toMatchObject({ code: 'SESSION_EXISTS' })
    expect({ record: await store.get(key), journal: await store.readJournal(key) }).toEqual(before)
    await expect(sessions.fork(id, id)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(sessions.fork(id, `${id}-x`, { atTurn: 7 })).rejects.toMatchObject({
      code: 'CHECKPOINT_NOT_FOUND',
    })
    expect(await store.get({ tenant: 'default', conversationId: `${id}-x` })).toBeNull()
  })
})

describe('snapshots are deleted', () => {
  it('with the session', async () => {
    const { sessions, provider, id } = setup({ checkpoints })
    const turn = await sessions.beginTurn(id)
    await work(turn, '/home/user/a.txt', 1)
    const snapshotId = (await turn.end()).checkpoint!.snapshot!.snapshotId
    await sessions.endSession(id)
    expect(provider.snapshots.has(snapshotId)).toBe(false)
  })

  it('by gc when no checkpoint refers to them, once past the grace period', async () => {
    const { sessions, provider, id } = setup({ checkpoints, createWaitMs: 0, leaseMs: 300 })
    const turn = await sessions.beginTurn(id)
    await work(turn, '/home/user/a.txt', 1)
    // A snapshot a crashed turn end took and never recorded, and one a turn end is taking right now.
    const key = { tenant: 'default', conversationId: id }
    const sandboxId = turn.report!.sandboxId
    const old = await provider.createSnapshot!(sandboxId, { name: snapshotName(key, Date.now() - 60_000) })
    const fresh = await provider.createSnapshot!(sandboxId, { name: snapshotName(key, Date.now() + 60_000) })
    const kept = (await turn.end()).checkpoint!.snapshot!.snapshotId
    const result = await sessions.gc()
    expect(result.deletedSnapshots).toEqual([old.snapshotId])
    expect([kept, old.snapshotId, fresh.snapshotId].map((s) => provider.snapshots.has(s))).toEqual([
      true,
      false,
      true,
    ])
  })
})
