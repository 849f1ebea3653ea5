// Store conformance area: branching: checkpoints recorded with a turn's release, kept and pruned, refused
// when the mapping moved; rewind (fenced, journal and checkpoints cut back, restore pending); createFork;
// delete and TTL of checkpoints; corrupt checkpoints (needs options.corruptCheckpoints). A store without
// the optional `readCheckpoints`, `rewind` and `createFork` skips the area's tests after checking it has
// none of the three.
import type { JournalStep, SessionKey } from '@sandkeep/core'
import type { Checkpoint, CheckpointSnapshot, ReleaseInput, SessionStore } from '@sandkeep/core/store'
import { defineArea, holder, LEASE, manifestFor, mapping, newKey, sleep } from './context.js'

const CHECKPOINT_ID = /^ck_[A-Za-z0-9_-]{22}$/

type BranchingStore = SessionStore & Required<Pick<SessionStore, 'readCheckpoints' | 'rewind' | 'createFork'>>

/**
 * The store, when it has the branching methods (all three, or none: anything else is a broken store) and
 * `expected` (the `branching` option) does not say to skip them; a store without them that `expected` says
 * has them fails.
 */
function branching(store: SessionStore, expected: boolean | undefined): BranchingStore | undefined {
  const present = [store.readCheckpoints, store.rewind, store.createFork].filter((method) => method)
  if (expected === false) return undefined
  if (present.length === 3) return store as BranchingStore
  if (present.length > 0) {
    throw new Error('a store must have all of readCheckpoints, rewind and createFork, or none of them')
  }
  if (expected) throw new Error('the store has no readCheckpoints, rewind and createFork (options.branching)')
  return undefined
}

const snapshotOf = (turn: number): CheckpointSnapshot => ({
  snapshotId: `snap-${turn}`,
  keeps: { files: true, memory: turn % 2 === 0 },
})

const stepOf = (turn: number): JournalStep => ({ kind: 'command', command: `echo turn-${turn}` })

/** Everything a failed call must leave as it was: the record, the journal and the checkpoints. */
async function sessionState(store: BranchingStore, key: SessionKey) {
  return {
    record: await store.get(key),
    journal: await store.readJournal(key),
    checkpoints: await store.readCheckpoints(key),
  }
}

export const branchingConformance = defineArea(
  'branching (checkpoints, rewind, fork)',
  ({ test, expect, open, createSession, expectCode, leases, options, withinLease }) => {
    /**
     * Runs `turns` turns on `key` mapped to `sandboxId` (the first one creates it), each recording one
     * journal step and releasing with a manifest and, unless `without` names the turn, a checkpoint.
     */
    const runTurns = async (
      store: BranchingStore,
      key: SessionKey,
      turns: number,
      settings: { sandboxId?: string; keep?: number; without?: number[] } = {},
    ) => {
      const sandboxId = settings.sandboxId ?? 'sbx-1'
      const checkpoints: Checkpoint[] = []
      for (let turn = 1; turn <= turns; turn += 1) {
        const lease =
          turn === 1
            ? (await createSession(store, key, sandboxId)).lease
            : (await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })).lease
        await store.appendJournal(key, stepOf(turn))
        const input: ReleaseInput = { turnEndedAt: Date.now(), manifest: manifestFor(sandboxId, `v${turn}`) }
        if (!settings.without?.includes(turn)) {
          input.checkpoint = { sandboxId, snapshot: snapshotOf(turn), keep: settings.keep ?? 10 }
        }
        const released = await store.release(key, lease, input)
        if (released.checkpoint) checkpoints.push(released.checkpoint)
      }
      return checkpoints
    }

    const supported = (store: SessionStore) => branching(store, options.branching)

    const begin = async (store: SessionStore, key: SessionKey, leaseMs: number = LEASE.long) =>
      (await store.acquire(key, { holderId: holder(), leaseMs })).lease

    test('a store has all three branching methods or none', async () => {
      // Throws, failing the test, for a store with one or two of them.
      supported(await open())
    })

    test('records a checkpoint with the turn, the time, the journal length and the manifest it left', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      const { lease } = await createSession(store, key, 'sbx-1')
      await store.appendJournal(key, stepOf(1))
      await store.appendJournal(key, stepOf(2))
      const manifest = manifestFor('sbx-1')
      const turnEndedAt = Date.now()
      const released = await store.release(key, lease, {
        turnEndedAt,
        manifest,
        checkpoint: { sandboxId: 'sbx-1', snapshot: snapshotOf(1), keep: 5 },
      })
      const expected: Checkpoint = {
        id: released.checkpoint!.id,
        parentId: null,
        turn: 1,
        createdAt: turnEndedAt,
        sandboxId: 'sbx-1',
        snapshot: snapshotOf(1),
        journalLength: 2,
        manifest,
        from: 'turn-end',
        journalBytes: released.checkpoint!.journalBytes!,
      }
      expect(released.checkpoint).toEqual(expected)
      expect(expected.id).toMatch(CHECKPOINT_ID)
      expect(expected.journalBytes).toBeGreaterThan(0)
      expect(released.record?.head).toBe(expected.id)
      expect(released.checkpointRefused).toBeUndefined()
      expect(released.prunedCheckpoints ?? []).toEqual([])
      expect(released.record?.restore).toBeNull()
      expect(await store.readCheckpoints(key)).toEqual([expected])
      // A journal-position-only checkpoint: no snapshot.
      const next = await begin(store, key)
      const second = await store.release(key, next, {
        turnEndedAt: Date.now(),
        checkpoint: { sandboxId: 'sbx-1', snapshot: null, keep: 5 },
      })
      expect(second.checkpoint).toMatchObject({
        turn: 2,
        snapshot: null,
        journalLength: 2,
        manifest,
        parentId: expected.id,
      })
      expect(second.checkpoint!.id === expected.id).toBe(false)
      expect((await store.readCheckpoints(key)).map((checkpoint) => checkpoint.turn)).toEqual([1, 2])
      expect(await store.readCheckpoints(newKey())).toEqual([])
    })

    test('keeps the newest `keep` checkpoints and returns the pruned ones, oldest first', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      const recorded = await runTurns(store, key, 3, { keep: 3 })
      const lease = await begin(store, key)
      const released = await store.release(key, lease, {
        turnEndedAt: Date.now(),
        checkpoint: { sandboxId: 'sbx-1', snapshot: snapshotOf(4), keep: 2 },
      })
      expect(released.checkpoint?.turn).toBe(4)
      expect(released.prunedCheckpoints).toEqual(recorded.slice(0, 2))
      const kept = await store.readCheckpoints(key)
      expect(kept).toEqual([recorded[2], released.checkpoint])
    })

    test('refuses a checkpoint when the mapping changed or a higher token mapped, and still ends the turn', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      const { lease: first } = await createSession(store, key, 'sbx-1')
      const second = await begin(store, key)
      // The record maps another sandbox than the one the snapshot is of.
      const moved = await store.release(key, first, {
        turnEndedAt: Date.now(),
        checkpoint: { sandboxId: 'sbx-other', snapshot: snapshotOf(1), keep: 5 },
      })
      expect(moved.checkpointRefused).toBe(true)
      expect(moved.checkpoint).toBeUndefined()
      expect(moved.record?.turnCount).toBe(1)
      // A later holder mapped (here: the same sandbox again) with a higher token than the releasing turn's.
      const third = await begin(store, key)
      await store.setSandbox(key, third, mapping('sbx-1', 'sbx-1'))
      const stale = await store.release(key, second, {
        turnEndedAt: Date.now(),
        checkpoint: { sandboxId: 'sbx-1', snapshot: snapshotOf(2), keep: 5 },
      })
      expect(stale.checkpointRefused).toBe(true)
      expect(stale.record?.turnCount).toBe(2)
      expect(await store.readCheckpoints(key)).toEqual([])
      const current = await store.release(key, third, {
        turnEndedAt: Date.now(),
        checkpoint: { sandboxId: 'sbx-1', snapshot: null, keep: 5 },
      })
      expect(current.checkpoint?.turn).toBe(3)
    })

    test('rewinds to turn k: journal and its byte count cut back, later checkpoints dropped, restore pending', async () => {
      // Three entries fit the byte limit, four do not: only a journal whose byte count was cut back with
      // it takes a new entry after the rewind.
      const entryBytes = new TextEncoder().encode(
        `{"recordedAt":${Date.now()},"step":${JSON.stringify(stepOf(1))}}`,
      ).byteLength
      const store = supported(await open({ maxJournalBytes: 3 * entryBytes + 5 }))
      if (!store) return
      const key = newKey()
      const recorded = await runTurns(store, key, 3)
      const before = await store.get(key)
      const rewound = await store.rewind(key, { toTurn: 2, expectedSandboxId: 'sbx-1' })
      expect(rewound.checkpoint).toEqual(recorded[1])
      // Nothing is deleted: turn 3 stays on its branch.
      expect(rewound.dropped).toEqual([])
      const record = rewound.record
      expect(record).toMatchObject({
        sandboxId: null,
        turnCount: 2,
        state: 'unknown',
        pausedAt: null,
        manifest: recorded[1]!.manifest,
      })
      // The rewind took a token of its own, above every one issued before it.
      expect(record.mappingToken).toBeGreaterThan(before!.mappingToken)
      expect(record.restore).toMatchObject({
        kind: 'rewound',
        turn: 2,
        checkpointId: recorded[1]!.id,
        snapshot: snapshotOf(2),
        fromSandboxId: 'sbx-1',
      })
      expect(record.head).toBe(recorded[1]!.id)
      expect(record.restore?.at).toBeGreaterThan(Date.now() - 60_000)
      expect(record.restore?.fromConversationId).toBeUndefined()
      expect(await store.get(key)).toEqual(record)
      expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([stepOf(1), stepOf(2)])
      expect(await store.readCheckpoints(key)).toEqual(recorded)
      await store.appendJournal(key, stepOf(3))
      await expectCode(store.appendJournal(key, stepOf(4)), 'JOURNAL_FULL')
      // The next turn creates the sandbox; its mapping carries the restore out and clears it.
      const next = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      expect(next.create).toBe(true)
      expect(next.lease.fencingToken).toBeGreaterThan(record.mappingToken)
      expect(next.record?.restore).toEqual(record.restore)
      const mapped = await store.setSandbox(key, next.lease, mapping('sbx-2', null))
      expect(mapped.restore).toBeNull()
      expect(mapped.turnCount).toBe(2)
      expect((await store.get(key))?.restore).toBeNull()
      // Its checkpoint follows the kept ones.
      const released = await store.release(key, next.lease, {
        turnEndedAt: Date.now(),
        checkpoint: { sandboxId: 'sbx-2', snapshot: null, keep: 10 },
      })
      // A sibling of the old turn 3: same depth, same parent.
      expect(released.checkpoint).toMatchObject({ turn: 3, journalLength: 3, parentId: recorded[1]!.id })
      expect(await store.readCheckpoints(key)).toEqual([...recorded, released.checkpoint])
    })

    test('rewinds to turn 0: empty journal, no checkpoints, no manifest, fresh restore', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      const recorded = await runTurns(store, key, 2)
      const rewound = await store.rewind(key, { toTurn: 0, expectedSandboxId: 'sbx-1' })
      expect(rewound.checkpoint).toBeNull()
      expect(rewound.dropped).toEqual([])
      expect(rewound.record.head).toBeNull()
      expect(rewound.record).toMatchObject({
        sandboxId: null,
        turnCount: 0,
        manifest: null,
        state: 'unknown',
      })
      expect(rewound.record.restore).toMatchObject({
        kind: 'rewound',
        turn: 0,
        snapshot: null,
        fromSandboxId: 'sbx-1',
      })
      expect(await store.readJournal(key)).toEqual([])
      expect(await store.readCheckpoints(key)).toEqual(recorded)
      // Rewinding again needs the mapping it left: none.
      const again = await store.rewind(key, { toTurn: 0, expectedSandboxId: null })
      expect(again.record.restore).toMatchObject({ turn: 0, fromSandboxId: null })
      expect(again.record.mappingToken).toBeGreaterThan(rewound.record.mappingToken)
      await store.appendJournal(key, stepOf(1))
      expect(await store.readJournal(key)).toHaveLength(1)
    })

    test('refuses a rewind to a turn without a checkpoint or a bad turn, and writes nothing', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      // Turn 1 is pruned by keep 2, turn 4 never took one: turns 2 and 3 are kept.
      await runTurns(store, key, 4, { keep: 2, without: [4] })
      const before = await sessionState(store, key)
      expect(before.checkpoints.map((checkpoint) => checkpoint.turn)).toEqual([2, 3])
      for (const toTurn of [1, 4, 9, 1e9]) {
        const error = await expectCode(
          store.rewind(key, { toTurn, expectedSandboxId: 'sbx-1' }),
          'CHECKPOINT_NOT_FOUND',
        )
        expect(error.message).toMatch(
          toTurn === 1 ? /pruned/ : toTurn === 4 ? /kept on the path/ : /4 turn\(s\) so far/,
        )
      }
      for (const bad of [
        { toTurn: -1, expectedSandboxId: 'sbx-1' },
        { toTurn: 1.5, expectedSandboxId: 'sbx-1' },
        { toTurn: '2', expectedSandboxId: 'sbx-1' },
        { toTurn: 1e9 + 1, expectedSandboxId: 'sbx-1' },
        { toTurn: 2 },
        { toTurn: 2, expectedSandboxId: '' },
        { toTurn: 2, expectedSandboxId: 'sbx-1', surprise: true },
        { checkpoint: 'ck_short', expectedSandboxId: 'sbx-1' },
        { checkpoint: `ck_${'a'.repeat(21)}\u202e`, expectedSandboxId: 'sbx-1' },
        { checkpoint: 7, expectedSandboxId: 'sbx-1' },
        null,
      ]) {
        await expectCode(store.rewind(key, bad as never), 'INVALID_ARGUMENT')
      }
      await expectCode(
        store.rewind({ tenant: key.tenant } as never, { toTurn: 0, expectedSandboxId: null }),
        'INVALID_ARGUMENT',
      )
      // A session that never had a record has no turn to go back to.
      await expectCode(store.rewind(newKey(), { toTurn: 0, expectedSandboxId: null }), 'CHECKPOINT_NOT_FOUND')
      expect(await sessionState(store, key)).toEqual(before)
      // No token was taken either: the next turn gets the one after the last turn's.
      const next = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      expect(next.lease.fencingToken).toBe(before.record!.mappingToken + 4)
    })

    test('refuses a rewind while a turn holds the session (SESSION_BUSY) or the mapping moved (LEASE_LOST)', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      await runTurns(store, key, 2)
      const turn = await begin(store, key)
      const before = await sessionState(store, key)
      const busy = await expectCode(
        store.rewind(key, { toTurn: 1, expectedSandboxId: 'sbx-1' }),
        'SESSION_BUSY',
      )
      expect(busy.retryable).toBe(true)
      expect(busy.retryAfterMs).toBeGreaterThan(0)
      expect(busy.retryAfterMs).toBeLessThanOrEqual(LEASE.long)
      expect(await sessionState(store, key)).toEqual(before)
      // A turn end that holds the session while it pauses the sandbox is a turn too.
      const held = await store.release(key, turn, { turnEndedAt: Date.now(), holdIfLast: true })
      if (held.held) {
        await expectCode(store.rewind(key, { toTurn: 1, expectedSandboxId: 'sbx-1' }), 'SESSION_BUSY')
        await store.releaseHold?.(key, turn)
      }
      const idle = await sessionState(store, key)
      // The mapping the caller saw is not the one mapped now.
      await expectCode(store.rewind(key, { toTurn: 1, expectedSandboxId: 'sbx-other' }), 'LEASE_LOST')
      await expectCode(store.rewind(key, { toTurn: 0, expectedSandboxId: null }), 'LEASE_LOST')
      expect(await sessionState(store, key)).toEqual(idle)
    })

    test('fences off a turn whose lease lapsed before the rewind: no mapping, no checkpoint after it', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      await runTurns(store, key, 2)
      const slow = await begin(store, key, leases.short)
      await sleep(leases.lapseWait)
      const rewound = await store.rewind(key, { toTurn: 1, expectedSandboxId: 'sbx-1' })
      expect(rewound.record.mappingToken).toBeGreaterThan(slow.fencingToken)
      await expectCode(store.setSandbox(key, slow, mapping('sbx-late', null)), 'LEASE_LOST')
      const late = await store.release(key, slow, {
        turnEndedAt: Date.now(),
        stateIfLast: 'paused',
        checkpoint: { sandboxId: 'sbx-1', snapshot: snapshotOf(9), keep: 10 },
      })
      expect(late.checkpointRefused).toBe(true)
      expect((await store.readCheckpoints(key)).map((checkpoint) => checkpoint.turn)).toEqual([1, 2])
      // The discarded turn is not a turn of the rewound conversation, and the sandbox it paused is not its.
      expect(await store.get(key)).toMatchObject({
        restore: { kind: 'rewound', turn: 1 },
        turnCount: 1,
        state: 'unknown',
      })
    })

    test('forks a checkpoint into a new session: record, journal, restore, listed, no checkpoints', async () => {
      const store = supported(await open())
      if (!store) return
      const source = newKey()
      const recorded = await runTurns(store, source, 3)
      const sourceBefore = await sessionState(store, source)
      const fork = newKey(undefined, source.tenant)
      const checkpoint = recorded[1]!
      const journal = sourceBefore.journal.slice(0, checkpoint.journalLength).map((entry) => entry.step)
      const record = await store.createFork(fork, {
        fromConversationId: source.conversationId,
        fromSandboxId: 'sbx-1',
        checkpoint,
        journal,
        providerId: 'test-provider',
        template: 'base',
      })
      expect(record).toMatchObject({
        tenant: fork.tenant,
        conversationId: fork.conversationId,
        sandboxId: null,
        providerId: 'test-provider',
        template: 'base',
        turnCount: 2,
        state: 'unknown',
        manifest: checkpoint.manifest,
        mappingToken: 0,
      })
      expect(record.restore).toMatchObject({
        kind: 'forked',
        turn: 2,
        checkpointId: checkpoint.id,
        snapshot: checkpoint.snapshot,
        fromSandboxId: 'sbx-1',
        fromConversationId: source.conversationId,
      })
      expect(record.restore?.at).toBeGreaterThan(Date.now() - 60_000)
      expect(await store.get(fork)).toEqual(record)
      expect((await store.readJournal(fork)).map((entry) => entry.step)).toEqual(journal)
      expect(await store.readCheckpoints(fork)).toEqual([])
      const listed = (await store.list(fork.tenant)).sessions.map((listed) => listed.conversationId)
      expect(listed).toContain(fork.conversationId)
      expect(await sessionState(store, source)).toEqual(sourceBefore)
      // Its first turn creates the sandbox; the mapping clears the restore.
      const first = await store.acquire(fork, { holderId: holder(), leaseMs: LEASE.long })
      expect(first.create).toBe(true)
      expect(first.record?.restore).toMatchObject({ kind: 'forked' })
      const mapped = await store.setSandbox(fork, first.lease, mapping('sbx-fork', null))
      expect(mapped.restore).toBeNull()
      expect(mapped.turnCount).toBe(2)
      // From turn 0, without a snapshot or a provider.
      const empty = newKey(undefined, source.tenant)
      const blank = await store.createFork(empty, {
        fromConversationId: source.conversationId,
        fromSandboxId: null,
        checkpoint: { turn: 0, snapshot: null, manifest: null },
        journal: [],
        providerId: null,
        template: null,
      })
      expect(blank).toMatchObject({ turnCount: 0, manifest: null, providerId: null, template: null })
      expect(blank.restore).toMatchObject({ kind: 'forked', turn: 0, snapshot: null, fromSandboxId: null })
      expect(await store.readJournal(empty)).toEqual([])
    })

    test('refuses a fork onto an existing session (SESSION_EXISTS) or past the journal limits, writing nothing', async () => {
      const store = supported(await open({ maxJournalSteps: 2 }))
      if (!store) return
      const existing = newKey()
      await runTurns(store, existing, 2)
      const fork = (journal: JournalStep[] = []) => ({
        fromConversationId: 'source',
        fromSandboxId: null,
        checkpoint: { turn: 1, snapshot: null, manifest: null },
        journal,
        providerId: 'p',
        template: null,
      })
      const before = await sessionState(store, existing)
      await expectCode(store.createFork(existing, fork()), 'SESSION_EXISTS')
      expect(await sessionState(store, existing)).toEqual(before)
      // A turn under way with no record yet (its sandbox is being created) is a session too.
      const creating = newKey()
      await begin(store, creating)
      await expectCode(store.createFork(creating, fork()), 'SESSION_EXISTS')
      expect(await store.get(creating)).toBeNull()
      const full = newKey()
      await expectCode(store.createFork(full, fork([stepOf(1), stepOf(2), stepOf(3)])), 'JOURNAL_FULL')
      expect(await sessionState(store, full)).toEqual({ record: null, journal: [], checkpoints: [] })
      for (const bad of [
        null,
        { ...fork(), fromConversationId: '' },
        { ...fork(), fromSandboxId: 'a\nb' },
        { ...fork(), checkpoint: { turn: -1, snapshot: null, manifest: null } },
        { ...fork(), checkpoint: { turn: 1, snapshot: { snapshotId: '' }, manifest: null } },
        { ...fork(), checkpoint: { turn: 1, snapshot: null, manifest: { writtenAt: 'x' } } },
        { ...fork(), journal: [{ kind: 'command', command: '' }] },
        { ...fork(), journal: 'steps' },
        { ...fork(), providerId: '' },
        { ...fork(), surprise: 1 },
      ]) {
        await expectCode(store.createFork(full, bad as never), 'INVALID_ARGUMENT')
      }
      expect(await sessionState(store, full)).toEqual({ record: null, journal: [], checkpoints: [] })
    })

    test('refuses a bad checkpoint input of release with INVALID_ARGUMENT before writing', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      const { lease } = await createSession(store, key, 'sbx-1')
      const before = await sessionState(store, key)
      const good = { sandboxId: 'sbx-1', snapshot: null, keep: 3 }
      for (const checkpoint of [
        null,
        { ...good, sandboxId: '' },
        { ...good, keep: 0 },
        { ...good, keep: 1001 },
        { ...good, keep: 2.5 },
        { ...good, snapshot: { snapshotId: 'snap', keeps: { files: 'yes', memory: false } } },
        { ...good, snapshot: { snapshotId: 's\n', keeps: { files: true, memory: false } } },
        { ...good, snapshot: { snapshotId: 'x'.repeat(257), keeps: { files: true, memory: false } } },
        { ...good, snapshot: { snapshotId: 'snap' } },
        { ...good, surprise: true },
      ]) {
        await expectCode(
          store.release(key, lease, { turnEndedAt: Date.now(), checkpoint } as never),
          'INVALID_ARGUMENT',
        )
      }
      expect(await sessionState(store, key)).toEqual(before)
    })

    test('delete removes the checkpoints: a new session of the same id has none', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      await runTurns(store, key, 2)
      expect(await store.delete(key)).toBe(true)
      expect(await store.readCheckpoints(key)).toEqual([])
      await createSession(store, key, 'sbx-again')
      expect(await store.readCheckpoints(key)).toEqual([])
    })

    test('keeps checkpoints as long as the session, and forgets them with it', async () => {
      const store = supported(await open({ ttlMs: 1_500 }))
      if (!store) return
      const key = newKey()
      await runTurns(store, key, 1)
      for (let index = 0; index < 2; index += 1) {
        // Each turn must come within the 1.5 s TTL the previous release started.
        const lease = await withinLease(async () => {
          await sleep(900)
          return begin(store, key)
        }, 1_500)
        await store.release(key, lease, { turnEndedAt: Date.now() })
      }
      expect((await store.readCheckpoints(key)).map((checkpoint) => checkpoint.turn)).toEqual([1])
      await sleep(2_000)
      expect(await store.get(key)).toBeNull()
      expect(await store.readCheckpoints(key)).toEqual([])
    })

    // The checkpoint tree (issue 31): siblings, restores by id, retention over branches, forks of any branch.
    const restoreTo = (
      store: BranchingStore,
      key: SessionKey,
      checkpoint: string | null,
      sandboxId: string | null,
    ) => store.rewind(key, { checkpoint, expectedSandboxId: sandboxId })

    /** A turn on `key` after a restore: maps `sandboxId`, journals `step`, checkpoints. */
    const turnAfterRestore = async (
      store: BranchingStore,
      key: SessionKey,
      sandboxId: string,
      step: JournalStep,
    ) => {
      const { lease } = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      await store.setSandbox(key, lease, mapping(sandboxId, null))
      await store.appendJournal(key, step, { lease })
      const released = await store.release(key, lease, {
        turnEndedAt: Date.now(),
        manifest: manifestFor(sandboxId, sandboxId),
        checkpoint: { sandboxId, snapshot: snapshotOf(7), keep: 10 },
      })
      return released.checkpoint!
    }

    test('tree: restores to a sibling branch, with that branch’s journal; nothing is deleted', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      const [one, two] = await runTurns(store, key, 2)
      await restoreTo(store, key, one!.id, 'sbx-1')
      const sibling = await turnAfterRestore(store, key, 'sbx-2', {
        kind: 'command',
        command: 'echo sibling',
      })
      expect(sibling).toMatchObject({ turn: 2, parentId: one!.id, journalLength: 2 })
      const restored = await restoreTo(store, key, two!.id, 'sbx-2')
      expect(restored.checkpoint).toEqual(two)
      expect(restored.record).toMatchObject({ head: two!.id, turnCount: 2, sandboxId: null })
      expect(restored.record.restore).toMatchObject({ checkpointId: two!.id, snapshot: two!.snapshot })
      expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([stepOf(1), stepOf(2)])
      expect((await store.readCheckpoints(key)).map((c) => c.id)).toEqual([one!.id, two!.id, sibling.id])
      await restoreTo(store, key, sibling.id, null)
      expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([
        stepOf(1),
        { kind: 'command', command: 'echo sibling' },
      ])
      // The root: an empty branch.
      await restoreTo(store, key, null, null)
      expect(await store.readJournal(key)).toEqual([])
      expect((await store.get(key))?.head).toBeNull()
    })

    test('tree: prunes the oldest across branches, keeps the head and the journal parts kept ones need', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      const [one, two] = await runTurns(store, key, 2, { keep: 2 })
      await restoreTo(store, key, one!.id, 'sbx-1')
      const { lease } = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      await store.setSandbox(key, lease, mapping('sbx-2', null))
      await store.appendJournal(key, stepOf(3), { lease })
      const released = await store.release(key, lease, {
        turnEndedAt: Date.now(),
        checkpoint: { sandboxId: 'sbx-2', snapshot: snapshotOf(3), keep: 2 },
      })
      // Newest two: the sibling and turn 2; turn 1 (their common parent) is pruned but its part stays.
      expect(released.prunedCheckpoints).toEqual([one])
      expect((await store.readCheckpoints(key)).map((c) => c.id)).toEqual([two!.id, released.checkpoint!.id])
      expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([stepOf(1), stepOf(3)])
      const pruned = await expectCode(restoreTo(store, key, one!.id, 'sbx-2'), 'CHECKPOINT_NOT_FOUND')
      expect(pruned.message).toMatch(/pruned/)
      await restoreTo(store, key, two!.id, 'sbx-2')
      expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([stepOf(1), stepOf(2)])
    })

    test('tree: a long branch past keep still reads its whole journal, from the head and from a restored node', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      const recorded = await runTurns(store, key, 8, { keep: 2 })
      const steps = recorded.map((_, index) => stepOf(index + 1))
      expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual(steps)
      expect((await store.readCheckpoints(key)).map((c) => c.turn)).toEqual([7, 8])
      await restoreTo(store, key, recorded[6]!.id, 'sbx-1')
      expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual(steps.slice(0, 7))
      for (const pruned of recorded.slice(0, 6)) {
        const error = await expectCode(restoreTo(store, key, pruned.id, null), 'CHECKPOINT_NOT_FOUND')
        expect(error.message).toMatch(/pruned/)
      }
    })

    test('tree: refuses ids of another conversation or tenant, and made-up ones, writing nothing', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      const other = newKey()
      const elsewhere = newKey(key.conversationId, `${key.tenant}-b`)
      await runTurns(store, key, 1)
      const [theirs] = await runTurns(store, other, 1)
      const [foreign] = await runTurns(store, elsewhere, 1)
      const before = await sessionState(store, key)
      for (const id of [theirs!.id, foreign!.id, `ck_${'Z'.repeat(22)}`]) {
        const error = await expectCode(restoreTo(store, key, id, 'sbx-1'), 'CHECKPOINT_NOT_FOUND')
        expect(error.message).toMatch(/not one of this conversation's checkpoints/)
        if (store.readForkSource)
          await expectCode(store.readForkSource(key, { checkpoint: id }), 'CHECKPOINT_NOT_FOUND')
      }
      expect(await sessionState(store, key)).toEqual(before)
    })

    test('tree: a restore racing another process’s turn is refused while it runs, and fences it after it lapsed', async () => {
      const store = supported(await open())
      if (!store) return
      const key = newKey()
      const [one] = await runTurns(store, key, 2)
      const running = await begin(store, key)
      await expectCode(restoreTo(store, key, one!.id, 'sbx-1'), 'SESSION_BUSY')
      const slow = await begin(store, key, leases.short)
      await store.release(key, running, { turnEndedAt: Date.now() })
      await sleep(leases.lapseWait)
      await restoreTo(store, key, one!.id, 'sbx-1')
      // The lapsed turn can neither journal nor checkpoint into the restored session.
      await expectCode(store.appendJournal(key, stepOf(9), { lease: slow }), 'LEASE_LOST')
      if (store.checkpoint) {
        await expectCode(
          store.checkpoint(key, slow, { sandboxId: 'sbx-1', snapshot: null, keep: 10, manifest: null }),
          'LEASE_LOST',
        )
      }
      expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([stepOf(1)])
    })

    test('tree: a fork reads a non-head branch’s checkpoint and journal together', async () => {
      const store = supported(await open())
      if (!store) return
      if (!store.readForkSource) return
      const key = newKey()
      const [one, two] = await runTurns(store, key, 2)
      await restoreTo(store, key, one!.id, 'sbx-1')
      await turnAfterRestore(store, key, 'sbx-2', { kind: 'command', command: 'echo sibling' })
      const source = await store.readForkSource(key, { checkpoint: two!.id })
      expect(source.checkpoint).toEqual(two)
      expect(source.journal).toEqual([stepOf(1), stepOf(2)])
      const head = await store.readForkSource(key, {})
      expect(head.journal).toEqual([stepOf(1), { kind: 'command', command: 'echo sibling' }])
      expect((await store.readForkSource(key, { checkpoint: null })).journal).toEqual([])
    })

    test('tree: a mid-turn checkpoint is the head’s child and the new head, fenced by the lease', async () => {
      const store = supported(await open())
      if (!store) return
      if (!store.checkpoint) return
      const key = newKey()
      const [one] = await runTurns(store, key, 1)
      const lease = await begin(store, key)
      await store.appendJournal(key, stepOf(2), { lease })
      const step = await store.checkpoint(key, lease, {
        sandboxId: 'sbx-1',
        snapshot: snapshotOf(2),
        keep: 10,
        manifest: null,
      })
      expect(step.checkpoint).toMatchObject({
        parentId: one!.id,
        turn: 2,
        from: 'mid-turn',
        journalLength: 2,
      })
      expect((await store.get(key))?.head).toBe(step.checkpoint.id)
      const end = await store.release(key, lease, {
        turnEndedAt: Date.now(),
        checkpoint: { sandboxId: 'sbx-1', snapshot: null, keep: 10 },
      })
      expect(end.checkpoint).toMatchObject({ parentId: step.checkpoint.id, turn: 2, from: 'turn-end' })
    })

    test('tree: listTenants names every tenant with sessions', async () => {
      const store = supported(await open())
      if (!store?.listTenants) return
      const key = newKey(undefined, `t${Math.random().toString(36).slice(2, 10)}`)
      await runTurns(store, key, 1)
      expect(await store.listTenants()).toContain(key.tenant)
    })

    const { corruptCheckpoints } = options
    if (corruptCheckpoints) {
      test('refuses damaged checkpoints with STORE_CORRUPT naming them, and leaves the session as is', async () => {
        const store = supported(await open())
        if (!store) return
        const key = newKey()
        await runTurns(store, key, 2)
        const lease = await begin(store, key)
        const damage = await corruptCheckpoints(store, key)
        const calls: Array<[string, () => Promise<unknown>]> = [
          ['readCheckpoints', () => store.readCheckpoints(key)],
          // Refused as corrupt before anything else (here the turn `lease` holds would make it busy).
          ['rewind to 1', () => store.rewind(key, { toTurn: 1, expectedSandboxId: 'sbx-1' })],
          ['rewind to 0', () => store.rewind(key, { toTurn: 0, expectedSandboxId: 'sbx-1' })],
          [
            'release with a checkpoint',
            () =>
              store.release(key, lease, {
                turnEndedAt: Date.now(),
                checkpoint: { sandboxId: 'sbx-1', snapshot: null, keep: 10 },
              }),
          ],
        ]
        for (const [method, call] of calls) {
          const error = await expectCode(call(), 'STORE_CORRUPT')
          expect(error.message, method).toContain(damage.location)
          expect(await damage.isUntouched(), `${method} changed the session`).toBe(true)
        }
        expect(await store.delete(key)).toBe(true)
        expect(await store.readCheckpoints(key)).toEqual([])
      })
    }
  },
)
