import type { JournalEntry, JournalStep } from '../contract/journal.js'
import type { NamesEveryOption } from '../contract/option-names.js'
import type {
  AcquireResult,
  Checkpoint,
  ClaimResult,
  CreateForkInput,
  ForkSource,
  Lease,
  MidTurnCheckpointResult,
  ReleaseInput,
  ReleaseResult,
  RewindInput,
  RewindResult,
  SessionPage,
  SessionRecord,
  SessionStore,
  SetSandboxInput,
  TenantSnapshotUsage,
} from '../contract/session-store.js'
import {
  checkAcquireOptions,
  checkCheckpointTarget,
  checkCreateForkInput,
  checkForgottenSnapshots,
  checkJournalRoom,
  checkJournalStep,
  checkLease,
  checkListOptions,
  checkMidTurnCheckpointInput,
  checkpointNotFound,
  checkRecordValues,
  checkReleaseInput,
  checkRenewOptions,
  checkRewindInput,
  checkSandboxState,
  checkSetSandboxInput,
  checkSetStateOptions,
  checkStoreKey,
  checkStoreLimits,
  checkTenantSnapshot,
  checkTtlMs,
  compareListPositions,
  conversationHash,
  decodeListCursor,
  encodeListCursor,
  encodeSnapshotBytes,
  forkJournal,
  forkRestore,
  invalidArgument,
  isAfterListPosition,
  leaseLost,
  newCheckpointId,
  parseJournalEntry,
  parseStoredCheckpoints,
  rejectUnknownOptions,
  rewindBusy,
  type SessionKey,
  type StoreLimits,
  serializeJournalEntry,
  sessionExists,
  sessionHeld,
  storeClosed,
  totalSnapshotUsage,
  utf8Bytes,
  validateTenant,
} from './index.js'
import {
  applyState,
  branchJournal,
  type Entry,
  findRestoreTarget,
  type Holder,
  headOfEntry,
  memoryEntries,
  newRecord,
  prune,
  recordCheckpoint,
  recordTurnEnd,
  touch,
} from './memory-entry.js'
import { isPlainObject } from './shape.js'

/** Options of {@link createMemorySessionStore}. */
export interface MemorySessionStoreOptions {
  /** Idle time after which a session is forgotten, ms; each turn refreshes it. Default 30 days. */
  ttlMs?: number
  /** Most journal steps per session; past it `appendJournal` throws JOURNAL_FULL. Default 1000. */
  maxJournalSteps?: number
  /** Most journal bytes per session (UTF-8 of the stored entries); past it JOURNAL_FULL. Default 1 MiB. */
  maxJournalBytes?: number
  /** The store clock, epoch ms. Default `Date.now`. */
  now?: () => number
}

const OPTION_NAMES = [
  'ttlMs',
  'maxJournalSteps',
  'maxJournalBytes',
  'now',
] as const satisfies readonly (keyof MemorySessionStoreOptions)[]
const optionListComplete: NamesEveryOption<MemorySessionStoreOptions, typeof OPTION_NAMES> = true
void optionListComplete

const copy = (record: SessionRecord | null): SessionRecord | null =>
  record === null ? null : structuredClone(record)

/**
 * A {@link SessionStore} held in this process's memory: the embedded default and the store for unit tests.
 * Same semantics as the Redis store (leases, fencing, single-flight creation, TTL, journal limits), but
 * sessions live only as long as the process and are not shared between processes.
 */
export function createMemorySessionStore(options: MemorySessionStoreOptions = {}): SessionStore {
  const limits = checkStoreLimits('createMemorySessionStore', options, OPTION_NAMES)
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw invalidArgument('now', 'must be a function returning epoch ms.')
  }
  const sessions = new MemorySessions(limits, options.now ?? Date.now)
  const store: SessionStore = {
    specificationVersion: 'v1',
    storeId: 'memory',
    acquire: (key, acquireOptions) => sessions.run(() => sessions.acquire(key, acquireOptions)),
    renew: (key, lease, renewOptions) => sessions.run(() => sessions.renew(key, lease, renewOptions)),
    claimCreation: (key, lease) => sessions.run(() => sessions.claimCreation(key, lease)),
    setSandbox: (key, lease, input) => sessions.run(() => sessions.setSandbox(key, lease, input)),
    release: (key, lease, input) => sessions.run(() => sessions.release(key, lease, input)),
    releaseHold: (key, lease) => sessions.run(() => sessions.releaseHold(key, lease)),
    setState: (key, state, stateOptions) => sessions.run(() => sessions.setState(key, state, stateOptions)),
    get: (key) => sessions.run(() => sessions.get(key)),
    delete: (key) => sessions.run(() => sessions.delete(key)),
    list: (tenant, listOptions) => sessions.run(() => sessions.list(tenant, listOptions)),
    appendJournal: (key, step, journalOptions) =>
      sessions.run(() => sessions.appendJournal(key, step, journalOptions)),
    readJournal: (key) => sessions.run(() => sessions.readJournal(key)),
    clearJournal: (key) => sessions.run(() => sessions.clearJournal(key)),
    now: () => sessions.run(() => sessions.now()),
    readCheckpoints: (key) => sessions.run(() => sessions.readCheckpoints(key)),
    rewind: (key, input) => sessions.run(() => sessions.rewind(key, input)),
    checkpoint: (key, lease, input) => sessions.run(() => sessions.checkpoint(key, lease, input)),
    readForkSource: (key, input) => sessions.run(() => sessions.readForkSource(key, input)),
    listTenants: () => sessions.run(() => sessions.listTenants()),
    noteTenantSnapshot: (tenant, snapshot) =>
      sessions.run(() => sessions.noteTenantSnapshot(tenant, snapshot)),
    forgetTenantSnapshots: (tenant, ids) => sessions.run(() => sessions.forgetTenantSnapshots(tenant, ids)),
    readTenantSnapshotUsage: (tenant) => sessions.run(() => sessions.readTenantSnapshotUsage(tenant)),
    createFork: (key, input) => sessions.run(() => sessions.createFork(key, input)),
    close: async () => sessions.close(),
  }
  memoryEntries.set(store, (key) => sessions.entry(key))
  return store
}

/** Where a memory session is, as a STORE_CORRUPT message names it. */
function memoryLocation(tenant: string, entry: Entry): string {
  return `memory session ${tenant}:${entry.member}`
}

/** The sessions of one memory store and the contract's operations on them (synchronous; wrapped by `run`). */
class MemorySessions {
  private readonly tenants = new Map<string, Map<string, Entry>>()
  /** Each tenant's snapshot ledger: snapshot id → its stored bytes (store/tenant-snapshots.ts). */
  private readonly ledgers = new Map<string, Map<string, string>>()
  private closed = false

  constructor(
    private readonly limits: StoreLimits,
    private readonly clock: () => number,
  ) {}

  /** Runs an operation as the contract's async method: its input errors reject instead of throwing. */
  async run<T>(operation: () => T): Promise<T> {
    return operation()
  }

  /** Refuses a call after close; called once the input is checked, as the Redis store does. */
  private assertOpen(): void {
    if (this.closed) throw storeClosed('memory')
  }

  /**
   * The live entry of a session, dropping it first when its TTL passed. Its record is checked first
   * (STORE_CORRUPT before anything is written), except by the calls that do not use it (`delete`, the
   * journal), as the Redis store's scripts do.
   */
  private find(key: SessionKey, now: number, checkRecord = true): Entry | undefined {
    const sessions = this.tenants.get(key.tenant)
    const entry = sessions?.get(key.conversationId)
    if (entry && entry.expiresAt <= now) {
      sessions!.delete(key.conversationId)
      return undefined
    }
    if (checkRecord && entry?.record) checkRecordValues(entry.record, memoryLocation(key.tenant, entry))
    return entry
  }

  private findOrCreate(key: SessionKey, now: number, checkRecord = true): Entry {
    const existing = this.find(key, now, checkRecord)
    if (existing) return existing
    let sessions = this.tenants.get(key.tenant)
    if (!sessions) {
      sessions = new Map()
      this.tenants.set(key.tenant, sessions)
    }
    const entry: Entry = {
      record: null,
      holders: new Map(),
      counter: 0,
      claim: null,
      hold: null,
      runFrom: null,
      journal: [],
      journalBytes: 0,
      checkpoints: [],
      nodes: new Map(),
      pruned: [],
      sequence: 0,
      expiresAt: now + this.limits.defaultTtlMs,
      activity: null,
      member: conversationHash(key.conversationId),
    }
    sessions.set(key.conversationId, entry)
    return entry
  }

  /** The entry and the caller's live holder, or LEASE_LOST saying `why`. */
  private holding(
    key: SessionKey,
    lease: Lease,
    now: number,
    why: string,
    checkRecord = true,
  ): { entry: Entry; holder: Holder } {
    const entry = this.find(key, now, checkRecord)
    if (entry) {
      prune(entry, now)
      const holder = entry.holders.get(lease.holderId)
      if (holder && holder.token === lease.fencingToken) return { entry, holder }
    }
    throw leaseLost(key, why)
  }

  acquire(keyInput: unknown, options: unknown): AcquireResult {
    const key = checkStoreKey(keyInput)
    const { holderId, leaseMs, ttlMs } = checkAcquireOptions(options, this.limits.defaultTtlMs)
    this.assertOpen()
    const now = this.clock()
    const entry = this.findOrCreate(key, now)
    prune(entry, now)
    if (entry.hold !== null && entry.hold !== holderId) {
      throw sessionHeld(key, entry.holders.get(entry.hold)!.expiresAt - now)
    }
    // A new run of overlapping turns: forget the start of a previous one whose last holder never released.
    if (entry.holders.size === 0) entry.runFrom = null
    const fencingToken = Math.max(entry.counter, entry.record?.mappingToken ?? 0) + 1
    entry.counter = fencingToken
    const expiresAt = now + leaseMs
    entry.holders.set(holderId, { expiresAt, token: fencingToken, startedAt: now })
    let create = false
    if (!entry.record?.sandboxId && (entry.claim === null || entry.claim === holderId)) {
      entry.claim = holderId
      create = true
    }
    if (entry.record) {
      entry.record.lastTurnStartedAt = now
      entry.record.updatedAt = now
    }
    // The session must outlive the lease it grants, even with a TTL shorter than the lease.
    entry.expiresAt = now + Math.max(ttlMs, leaseMs)
    return {
      lease: { holderId, fencingToken, expiresAt },
      record: copy(entry.record),
      create,
      holders: entry.holders.size,
    }
  }

  renew(keyInput: unknown, leaseInput: unknown, options: unknown): Lease {
    const key = checkStoreKey(keyInput)
    const lease = checkLease(leaseInput)
    const { leaseMs, ttlMs } = checkRenewOptions(options, this.limits.defaultTtlMs)
    this.assertOpen()
    const now = this.clock()
    // A renewal touches only the lease, as in the Redis store: the record is not read.
    const { entry, holder } = this.holding(key, lease, now, 'it lapsed or the holder was removed', false)
    holder.expiresAt = now + leaseMs
    entry.expiresAt = now + Math.max(ttlMs, leaseMs)
    return { holderId: lease.holderId, fencingToken: lease.fencingToken, expiresAt: holder.expiresAt }
  }

  claimCreation(keyInput: unknown, leaseInput: unknown): ClaimResult {
    const key = checkStoreKey(keyInput)
    const lease = checkLease(leaseInput)
    this.assertOpen()
    const { entry } = this.holding(key, lease, this.clock(), 'it lapsed while waiting for creation')
    if (entry.record?.sandboxId) return { record: copy(entry.record), create: false }
    if (entry.claim === null || entry.claim === lease.holderId) {
      entry.claim = lease.holderId
      return { record: copy(entry.record), create: true }
    }
    return { record: copy(entry.record), create: false }
  }

  setSandbox(keyInput: unknown, leaseInput: unknown, input: SetSandboxInput): SessionRecord {
    const key = checkStoreKey(keyInput)
    const lease = checkLease(leaseInput)
    const checked = checkSetSandboxInput(input, this.limits.defaultTtlMs)
    this.assertOpen()
    const now = this.clock()
    const { entry, holder } = this.holding(key, lease, now, 'it lapsed before the mapping was written')
    const current = entry.record
    if (current && lease.fencingToken < current.mappingToken) {
      throw leaseLost(key, `fencing token ${lease.fencingToken} is older than ${current.mappingToken}`)
    }
    if ((current?.sandboxId ?? null) !== checked.expectedSandboxId) {
      throw leaseLost(key, 'another holder changed the mapping first')
    }
    const mapping = {
      sandboxId: checked.sandboxId,
      providerId: checked.providerId,
      state: checked.state,
      pausedAt: checked.state === 'paused' ? now : null,
      mappingToken: lease.fencingToken,
      updatedAt: now,
      // The new sandbox is the one a pending rewind or fork asked for.
      restore: null,
    }
    if (current) {
      Object.assign(current, mapping)
      if (input.template !== undefined) current.template = checked.template
    } else {
      entry.record = {
        ...newRecord(key, now, holder.startedAt),
        ...mapping,
        template: checked.template,
      }
    }
    entry.claim = null
    entry.expiresAt = now + checked.ttlMs
    touch(entry, now)
    return copy(entry.record)!
  }

  release(keyInput: unknown, leaseInput: unknown, input: ReleaseInput): ReleaseResult {
    const key = checkStoreKey(keyInput)
    const lease = checkLease(leaseInput)
    const checked = checkReleaseInput(input, this.limits.defaultTtlMs)
    this.assertOpen()
    const now = this.clock()
    const entry = this.find(key, now)
    if (!entry)
      return { last: true, record: null, ...(checked.checkpoint ? { checkpointRefused: true } : {}) }
    // Damaged checkpoints are refused before the turn is written, as a damaged record is.
    if (checked.checkpoint) this.checkpoints(key, entry)
    prune(entry, now)
    const mine = entry.holders.get(lease.holderId)?.token === lease.fencingToken
    const others = entry.holders.size - (mine ? 1 : 0)
    const held = mine && others === 0 && checked.holdIfLast
    if (held) entry.hold = lease.holderId
    else if (mine) entry.holders.delete(lease.holderId)
    if (entry.claim === lease.holderId && (held || !entry.holders.has(lease.holderId))) entry.claim = null
    const last = others === 0
    const runFrom =
      checked.runningFrom === undefined
        ? entry.runFrom
        : Math.min(entry.runFrom ?? checked.runningFrom, checked.runningFrom)
    entry.runFrom = last ? null : runFrom
    if (entry.record) {
      recordTurnEnd(entry.record, checked, { last, runFrom, now, token: lease.fencingToken })
      touch(entry, checked.turnEndedAt)
    }
    entry.expiresAt = now + checked.ttlMs
    const result: ReleaseResult = { last, record: copy(entry.record), ...(held ? { held } : {}) }
    if (checked.checkpoint) {
      const recorded = recordCheckpoint(entry, checked.checkpoint, {
        fencingToken: lease.fencingToken,
        createdAt: checked.turnEndedAt,
        id: newCheckpointId(),
        turn: entry.record?.turnCount ?? 0,
        manifest: entry.record?.manifest ?? null,
        from: 'turn-end',
      })
      if (recorded) {
        result.checkpoint = structuredClone(recorded.checkpoint)
        result.prunedCheckpoints = structuredClone(recorded.pruned)
        result.record = copy(entry.record)
      } else {
        result.checkpointRefused = true
      }
    }
    return result
  }

  checkpoint(keyInput: unknown, leaseInput: unknown, input: unknown): MidTurnCheckpointResult {
    const key = checkStoreKey(keyInput)
    const lease = checkLease(leaseInput)
    const checked = checkMidTurnCheckpointInput(input)
    this.assertOpen()
    const now = this.clock()
    const { entry } = this.holding(key, lease, now, 'it lapsed before the checkpoint was recorded')
    this.checkpoints(key, entry)
    const recorded = recordCheckpoint(entry, checked, {
      fencingToken: lease.fencingToken,
      createdAt: now,
      id: newCheckpointId(),
      turn: (entry.record?.turnCount ?? 0) + 1,
      manifest: checked.manifest,
      from: checked.from,
    })
    if (!recorded) {
      throw leaseLost(key, 'a restore came after this turn began, or the session maps another sandbox')
    }
    entry.record!.updatedAt = now
    return structuredClone({ checkpoint: recorded.checkpoint, pruned: recorded.pruned })
  }

  releaseHold(keyInput: unknown, leaseInput: unknown): void {
    const key = checkStoreKey(keyInput)
    const lease = checkLease(leaseInput)
    this.assertOpen()
    const entry = this.find(key, this.clock())
    if (!entry || entry.hold !== lease.holderId) return
    entry.hold = null
    if (entry.holders.get(lease.holderId)?.token === lease.fencingToken) entry.holders.delete(lease.holderId)
  }

  setState(keyInput: unknown, stateInput: unknown, options: unknown): SessionRecord | null {
    const key = checkStoreKey(keyInput)
    const state = checkSandboxState('state', stateInput)
    const { at, ttlMs } = checkSetStateOptions(options, this.limits.defaultTtlMs)
    this.assertOpen()
    const now = this.clock()
    const entry = this.find(key, now)
    if (!entry?.record) return null
    applyState(entry.record, state, at ?? now)
    entry.record.updatedAt = now
    entry.expiresAt = now + ttlMs
    return copy(entry.record)
  }

  get(keyInput: unknown): SessionRecord | null {
    const key = checkStoreKey(keyInput)
    this.assertOpen()
    return copy(this.find(key, this.clock())?.record ?? null)
  }

  delete(keyInput: unknown): boolean {
    const key = checkStoreKey(keyInput)
    this.assertOpen()
    if (!this.find(key, this.clock(), false)) return false
    this.tenants.get(key.tenant)?.delete(key.conversationId)
    return true
  }

  list(tenantInput: unknown, options: unknown): SessionPage {
    const tenant = validateTenant(tenantInput)
    const { limit, cursor } = checkListOptions(options)
    const position = cursor === undefined ? undefined : decodeListCursor(cursor)
    this.assertOpen()
    const now = this.clock()
    const sessions = this.tenants.get(tenant)
    const listed: Array<{ score: number; member: string; record: SessionRecord }> = []
    for (const [conversationId, entry] of sessions ?? []) {
      if (entry.expiresAt <= now) {
        sessions!.delete(conversationId)
        continue
      }
      if (entry.record === null || entry.activity === null) continue
      checkRecordValues(entry.record, memoryLocation(tenant, entry))
      if (position && !isAfterListPosition(entry.activity, entry.member, position)) continue
      listed.push({ score: entry.activity, member: entry.member, record: entry.record })
    }
    listed.sort(compareListPositions)
    const page = listed.slice(0, limit)
    const last = page.at(-1)
    return {
      sessions: page.map((entry) => copy(entry.record)!),
      cursor: listed.length > limit && last ? encodeListCursor(last) : undefined,
    }
  }

  appendJournal(
    keyInput: unknown,
    stepInput: JournalStep,
    options?: { ttlMs?: number; lease?: Lease },
  ): void {
    const key = checkStoreKey(keyInput)
    const step = checkJournalStep(stepInput)
    const ttlMs = checkTtlMs(options?.ttlMs, this.limits.defaultTtlMs)
    const lease = options?.lease === undefined ? undefined : checkLease(options.lease)
    this.assertOpen()
    const now = this.clock()
    const text = serializeJournalEntry(now, step)
    const bytes = utf8Bytes(text)
    if (lease) {
      // Fenced as setSandbox is: a turn that lost its lease (a restore came in between) adds nothing.
      const { entry } = this.holding(key, lease, now, 'it lapsed before the journal step was written', false)
      if (entry.record && lease.fencingToken < entry.record.mappingToken) {
        throw leaseLost(key, `fencing token ${lease.fencingToken} is older than ${entry.record.mappingToken}`)
      }
    }
    const entry = this.findOrCreate(key, now, false)
    const steps = this.headLength(entry) + entry.journal.length
    checkJournalRoom(key, { steps, bytes: entry.journalBytes }, bytes, this.limits)
    entry.journal.push(text)
    entry.journalBytes += bytes
    entry.expiresAt = now + ttlMs
  }

  readJournal(keyInput: unknown): JournalEntry[] {
    const key = checkStoreKey(keyInput)
    this.assertOpen()
    const entry = this.find(key, this.clock(), false)
    if (!entry) return []
    return [...branchJournal(entry, headOfEntry(entry)), ...entry.journal].map((text) =>
      parseJournalEntry(text, 'memory journal'),
    )
  }

  /** Journal entries on the head's path (those before the open end). */
  private headLength(entry: Entry): number {
    const head = headOfEntry(entry)
    return head === null ? 0 : (entry.nodes.get(head)?.journalLength ?? 0)
  }

  clearJournal(keyInput: unknown): void {
    const key = checkStoreKey(keyInput)
    this.assertOpen()
    const entry = this.find(key, this.clock(), false)
    if (!entry) return
    // The steps since the head go; the head's branch is shared with its checkpoints and stays.
    const head = headOfEntry(entry)
    entry.journal = []
    entry.journalBytes = head === null ? 0 : (entry.nodes.get(head)?.pathBytes ?? 0)
  }

  /** The checked checkpoints of an entry (STORE_CORRUPT, naming the session, when one is damaged). */
  private checkpoints(key: SessionKey, entry: Entry): Checkpoint[] {
    return parseStoredCheckpoints(entry.checkpoints, `${memoryLocation(key.tenant, entry)} checkpoints`)
  }

  readCheckpoints(keyInput: unknown): Checkpoint[] {
    const key = checkStoreKey(keyInput)
    this.assertOpen()
    const entry = this.find(key, this.clock(), false)
    return entry ? this.checkpoints(key, entry) : []
  }

  rewind(keyInput: unknown, input: RewindInput): RewindResult {
    const key = checkStoreKey(keyInput)
    const checked = checkRewindInput(input, this.limits.defaultTtlMs)
    this.assertOpen()
    const now = this.clock()
    const entry = this.find(key, now)
    const checkpoints = entry ? this.checkpoints(key, entry) : []
    if (entry) prune(entry, now)
    if (entry && entry.holders.size > 0) {
      const longest = Math.max(...[...entry.holders.values()].map((holder) => holder.expiresAt))
      throw rewindBusy(key, longest - now)
    }
    const record = entry?.record ?? null
    if ((record?.sandboxId ?? null) !== checked.expectedSandboxId) {
      throw leaseLost(key, 'another holder changed the mapping first')
    }
    const where =
      checked.checkpoint !== undefined ? { checkpoint: checked.checkpoint } : { toTurn: checked.toTurn }
    // Without a record no turn ever ended: there is nothing to go back to, not even the root.
    const target = entry && record ? findRestoreTarget(entry, where) : 'missing'
    if (!entry || !record || target === 'missing' || target === 'pruned') {
      throw checkpointNotFound(
        key,
        checked.checkpoint ? { checkpoint: checked.checkpoint } : { toTurn: checked.toTurn ?? 0 },
        { pruned: target === 'pruned', kept: checkpoints.length, depth: record?.turnCount ?? 0 },
      )
    }
    // A token of its own, as acquire issues one: a turn that began before and lost its lease is fenced off.
    const token = Math.max(entry.counter, record.mappingToken) + 1
    entry.counter = token
    // The steps since the old head are left behind (a turn end checkpoints them); the head's branch is
    // the target's path, shared in the tree.
    entry.journal = []
    entry.journalBytes = target === null ? 0 : (entry.nodes.get(target.id)?.pathBytes ?? 0)
    Object.assign(record, {
      turnCount: target?.turn ?? 0,
      manifest: target?.manifest ?? null,
      sandboxId: null,
      state: 'unknown',
      pausedAt: null,
      head: target?.id ?? null,
      restore: {
        kind: 'rewound',
        turn: target?.turn ?? 0,
        checkpointId: target?.id ?? null,
        snapshot: target?.snapshot ?? null,
        fromSandboxId: record.sandboxId,
        at: now,
      },
      mappingToken: token,
      updatedAt: now,
    } satisfies Partial<SessionRecord>)
    entry.expiresAt = now + checked.ttlMs
    return { record: copy(record)!, checkpoint: structuredClone(target), dropped: [] }
  }

  readForkSource(keyInput: unknown, input: unknown): ForkSource {
    const key = checkStoreKey(keyInput)
    if (!isPlainObject(input)) throw invalidArgument('readForkSource input', 'must be an object.')
    rejectUnknownOptions('readForkSource input', input, ['checkpoint', 'toTurn'])
    const where = checkCheckpointTarget(input, true)
    this.assertOpen()
    const entry = this.find(key, this.clock())
    const checkpoints = entry ? this.checkpoints(key, entry) : []
    const record = entry?.record ?? null
    let target: ReturnType<typeof findRestoreTarget> = 'missing'
    if (entry && record) {
      const head = headOfEntry(entry)
      target =
        'checkpoint' in where || 'toTurn' in where
          ? findRestoreTarget(entry, where as { checkpoint: string | null })
          : head === null
            ? null
            : findRestoreTarget(entry, { checkpoint: head })
    }
    if (!entry || !record || target === 'missing' || target === 'pruned') {
      const asked = 'checkpoint' in where && where.checkpoint ? { checkpoint: where.checkpoint } : null
      throw checkpointNotFound(
        key,
        asked ?? { toTurn: 'toTurn' in where ? where.toTurn : (record?.turnCount ?? 0) },
        {
          pruned: target === 'pruned',
          kept: checkpoints.length,
        },
      )
    }
    const journal = branchJournal(entry, target?.id ?? null).map(
      (text) => parseJournalEntry(text, 'memory journal').step,
    )
    return { record: copy(record)!, checkpoint: structuredClone(target), journal }
  }

  createFork(keyInput: unknown, input: CreateForkInput): SessionRecord {
    const key = checkStoreKey(keyInput)
    const checked = checkCreateForkInput(input, this.limits.defaultTtlMs)
    this.assertOpen()
    const now = this.clock()
    const existing = this.find(key, now)
    if (existing) prune(existing, now)
    if (existing && (existing.record !== null || existing.holders.size > 0)) throw sessionExists(key)
    const journal = forkJournal(key, checked.journal, now, this.limits)
    const entry = this.findOrCreate(key, now)
    entry.record = {
      ...newRecord(key, now, now),
      lastTurnStartedAt: null,
      providerId: checked.providerId,
      template: checked.template,
      turnCount: checked.checkpoint.turn,
      state: 'unknown',
      manifest: checked.checkpoint.manifest,
      restore: forkRestore(checked, now),
    }
    entry.journal = journal.entries
    entry.journalBytes = journal.bytes
    entry.checkpoints = []
    entry.nodes = new Map()
    entry.pruned = []
    entry.record.head = null
    entry.expiresAt = now + checked.ttlMs
    touch(entry, now)
    return copy(entry.record)!
  }

  listTenants(): string[] {
    this.assertOpen()
    const now = this.clock()
    return [...this.tenants]
      .filter(([, sessions]) => [...sessions.values()].some((entry) => entry.expiresAt > now))
      .map(([tenant]) => tenant)
  }

  noteTenantSnapshot(tenantInput: unknown, snapshotInput: unknown): void {
    this.assertOpen()
    const { tenant, snapshot } = checkTenantSnapshot(tenantInput, snapshotInput)
    const ledger = this.ledgers.get(tenant) ?? new Map<string, string>()
    this.ledgers.set(tenant, ledger)
    ledger.set(snapshot.snapshotId, encodeSnapshotBytes(snapshot.bytes))
  }

  forgetTenantSnapshots(tenantInput: unknown, idsInput: unknown): void {
    this.assertOpen()
    const { tenant, snapshotIds } = checkForgottenSnapshots(tenantInput, idsInput)
    const ledger = this.ledgers.get(tenant)
    for (const id of snapshotIds) ledger?.delete(id)
    if (ledger?.size === 0) this.ledgers.delete(tenant)
  }

  readTenantSnapshotUsage(tenantInput: unknown): TenantSnapshotUsage {
    this.assertOpen()
    const tenant = validateTenant(tenantInput)
    return totalSnapshotUsage(this.ledgers.get(tenant)?.values() ?? [])
  }

  /** The stored entry of a session as it is, unchecked (for {@link memoryEntries}). */
  entry(key: SessionKey): Entry | undefined {
    return this.tenants.get(key.tenant)?.get(key.conversationId)
  }

  now(): number {
    this.assertOpen()
    return this.clock()
  }

  close(): void {
    this.closed = true
    this.tenants.clear()
  }
}
