import { SandkeepError } from './errors.js'
import type { JournalEntry, JournalStep } from './journal.js'
import {
  type AcquireResult,
  type ClaimResult,
  type Lease,
  type ReleaseInput,
  type ReleaseResult,
  SESSION_RECORD_SCHEMA_VERSION,
  type SessionPage,
  type SessionRecord,
  type SessionSandboxState,
  type SessionStore,
  type SetSandboxInput,
} from './session-store.js'
import {
  checkHolderId,
  checkJournalStep,
  checkLease,
  checkLeaseMs,
  checkListOptions,
  checkReleaseInput,
  checkSandboxState,
  checkSetSandboxInput,
  checkStoreKey,
  checkTtlMs,
  conversationHash,
  DEFAULT_MAX_JOURNAL_BYTES,
  DEFAULT_MAX_JOURNAL_STEPS,
  DEFAULT_SESSION_TTL_MS,
  decodeListCursor,
  encodeListCursor,
  isAfterListPosition,
  parseJournalEntry,
  serializeJournalEntry,
  utf8Bytes,
} from './session-store-input.js'
import { type SessionKey, validateInteger, validateTenant } from './validation.js'

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

interface Holder {
  expiresAt: number
  token: number
  startedAt: number
}

interface Entry {
  record: SessionRecord | null
  holders: Map<string, Holder>
  /** Last fencing token issued. */
  counter: number
  /** Holder id of the creation claimant. */
  claim: string | null
  /** Earliest `runningFrom` of the turns that released while others still held the session. */
  runFrom: number | null
  journal: string[]
  journalBytes: number
  /** When the whole session expires (idle TTL), store clock. */
  expiresAt: number
  /** Listing score (last activity); `null` while not listed. */
  activity: number | null
  /** Listing tie-breaker, the same hash the Redis store uses. */
  member: string
}

const OPTION_NAMES = ['ttlMs', 'maxJournalSteps', 'maxJournalBytes', 'now']

/**
 * A {@link SessionStore} held in this process's memory: the embedded default and the store for unit tests.
 * Same semantics as the Redis store (leases, fencing, single-flight creation, TTL, journal limits), but
 * sessions live only as long as the process and are not shared between processes.
 */
export function createMemorySessionStore(options: MemorySessionStoreOptions = {}): SessionStore {
  if (typeof options !== 'object' || options === null) {
    throw new SandkeepError({ code: 'INVALID_ARGUMENT', message: 'options must be an object.' })
  }
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.includes(name)) {
      throw new SandkeepError({
        code: 'INVALID_ARGUMENT',
        message: `createMemorySessionStore got an unknown option "${name}"; allowed: ${OPTION_NAMES.join(', ')}.`,
      })
    }
  }
  const defaultTtlMs = checkTtlMs(options.ttlMs, DEFAULT_SESSION_TTL_MS)
  const maxJournalSteps =
    options.maxJournalSteps === undefined
      ? DEFAULT_MAX_JOURNAL_STEPS
      : validateInteger('maxJournalSteps', options.maxJournalSteps, 1, 1_000_000)
  const maxJournalBytes =
    options.maxJournalBytes === undefined
      ? DEFAULT_MAX_JOURNAL_BYTES
      : validateInteger('maxJournalBytes', options.maxJournalBytes, 1, 512 * 1024 * 1024)
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new SandkeepError({
      code: 'INVALID_ARGUMENT',
      message: 'now must be a function returning epoch ms.',
    })
  }
  const clock = options.now ?? Date.now

  const tenants = new Map<string, Map<string, Entry>>()
  let closed = false

  const assertOpen = () => {
    if (closed) {
      throw new SandkeepError({
        code: 'STORE_UNAVAILABLE',
        message: 'This memory session store was closed; create a new one.',
      })
    }
  }

  /** The live entry of a session, dropping it first when its TTL passed. */
  const find = (key: SessionKey, now: number): Entry | undefined => {
    const sessions = tenants.get(key.tenant)
    const entry = sessions?.get(key.conversationId)
    if (entry && entry.expiresAt <= now) {
      sessions!.delete(key.conversationId)
      return undefined
    }
    return entry
  }

  const findOrCreate = (key: SessionKey, now: number): Entry => {
    const existing = find(key, now)
    if (existing) return existing
    let sessions = tenants.get(key.tenant)
    if (!sessions) {
      sessions = new Map()
      tenants.set(key.tenant, sessions)
    }
    const entry: Entry = {
      record: null,
      holders: new Map(),
      counter: 0,
      claim: null,
      runFrom: null,
      journal: [],
      journalBytes: 0,
      expiresAt: now + defaultTtlMs,
      activity: null,
      member: conversationHash(key.conversationId),
    }
    sessions.set(key.conversationId, entry)
    return entry
  }

  /** Drops lapsed holders and a claim whose holder lapsed; what Redis's scripts do on every call. */
  const prune = (entry: Entry, now: number) => {
    for (const [id, holder] of entry.holders) if (holder.expiresAt <= now) entry.holders.delete(id)
    if (entry.claim !== null && !entry.holders.has(entry.claim)) entry.claim = null
  }

  const liveHolder = (entry: Entry | undefined, lease: Lease, now: number): Holder | undefined => {
    if (!entry) return undefined
    prune(entry, now)
    const holder = entry.holders.get(lease.holderId)
    return holder && holder.token === lease.fencingToken ? holder : undefined
  }

  const leaseLost = (key: SessionKey, why: string) =>
    new SandkeepError({
      code: 'LEASE_LOST',
      message: `The lease on this session is no longer valid (${why}); end the turn and begin a new one.`,
      tenant: key.tenant,
      conversationId: key.conversationId,
    })

  const touch = (entry: Entry, score: number) => {
    entry.activity = entry.activity === null ? score : Math.max(entry.activity, score)
  }

  const copy = (record: SessionRecord | null): SessionRecord | null =>
    record === null ? null : structuredClone(record)

  return {
    specificationVersion: 'v1',
    storeId: 'memory',

    async acquire(keyInput, acquireOptions): Promise<AcquireResult> {
      const key = checkStoreKey(keyInput)
      const holderId = checkHolderId(acquireOptions?.holderId)
      const leaseMs = checkLeaseMs(acquireOptions?.leaseMs)
      const ttlMs = checkTtlMs(acquireOptions?.ttlMs, defaultTtlMs)
      assertOpen()
      const now = clock()
      const entry = findOrCreate(key, now)
      prune(entry, now)
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
    },

    async renew(keyInput, leaseInput, renewOptions): Promise<Lease> {
      const key = checkStoreKey(keyInput)
      const lease = checkLease(leaseInput)
      const leaseMs = checkLeaseMs(renewOptions?.leaseMs)
      const ttlMs = checkTtlMs(renewOptions?.ttlMs, defaultTtlMs)
      assertOpen()
      const now = clock()
      const entry = find(key, now)
      const holder = liveHolder(entry, lease, now)
      if (!entry || !holder) throw leaseLost(key, 'it lapsed or the holder was removed')
      holder.expiresAt = now + leaseMs
      entry.expiresAt = now + Math.max(ttlMs, leaseMs)
      return { holderId: lease.holderId, fencingToken: lease.fencingToken, expiresAt: holder.expiresAt }
    },

    async claimCreation(keyInput, leaseInput): Promise<ClaimResult> {
      const key = checkStoreKey(keyInput)
      const lease = checkLease(leaseInput)
      assertOpen()
      const now = clock()
      const entry = find(key, now)
      if (!entry || !liveHolder(entry, lease, now))
        throw leaseLost(key, 'it lapsed while waiting for creation')
      if (entry.record?.sandboxId) return { record: copy(entry.record), create: false }
      if (entry.claim === null || entry.claim === lease.holderId) {
        entry.claim = lease.holderId
        return { record: copy(entry.record), create: true }
      }
      return { record: copy(entry.record), create: false }
    },

    async setSandbox(keyInput, leaseInput, input: SetSandboxInput): Promise<SessionRecord> {
      const key = checkStoreKey(keyInput)
      const lease = checkLease(leaseInput)
      const checked = checkSetSandboxInput(input, defaultTtlMs)
      assertOpen()
      const now = clock()
      const entry = find(key, now)
      const holder = liveHolder(entry, lease, now)
      if (!entry || !holder) throw leaseLost(key, 'it lapsed before the mapping was written')
      const current = entry.record
      if (current && lease.fencingToken < current.mappingToken) {
        throw leaseLost(key, `fencing token ${lease.fencingToken} is older than ${current.mappingToken}`)
      }
      if ((current?.sandboxId ?? null) !== checked.expectedSandboxId) {
        throw leaseLost(key, 'another holder changed the mapping first')
      }
      const pausedAt = checked.state === 'paused' ? now : null
      if (current) {
        current.sandboxId = checked.sandboxId
        current.providerId = checked.providerId
        if (input.template !== undefined) current.template = checked.template
        current.state = checked.state
        current.pausedAt = pausedAt
        current.mappingToken = lease.fencingToken
        current.updatedAt = now
      } else {
        entry.record = {
          schemaVersion: SESSION_RECORD_SCHEMA_VERSION,
          tenant: key.tenant,
          conversationId: key.conversationId,
          sandboxId: checked.sandboxId,
          providerId: checked.providerId,
          template: checked.template,
          createdAt: now,
          updatedAt: now,
          lastTurnStartedAt: holder.startedAt,
          lastTurnEndedAt: null,
          turnCount: 0,
          runningSeconds: 0,
          pausedSeconds: 0,
          state: checked.state,
          pausedAt,
          mappingToken: lease.fencingToken,
          manifest: null,
        }
      }
      entry.claim = null
      entry.expiresAt = now + checked.ttlMs
      touch(entry, now)
      return copy(entry.record)!
    },

    async release(keyInput, leaseInput, input: ReleaseInput): Promise<ReleaseResult> {
      const key = checkStoreKey(keyInput)
      const lease = checkLease(leaseInput)
      const checked = checkReleaseInput(input, defaultTtlMs)
      assertOpen()
      const now = clock()
      const entry = find(key, now)
      if (!entry) return { last: true, record: null }
      prune(entry, now)
      if (entry.holders.get(lease.holderId)?.token === lease.fencingToken)
        entry.holders.delete(lease.holderId)
      if (entry.claim === lease.holderId && !entry.holders.has(lease.holderId)) entry.claim = null
      const last = entry.holders.size === 0
      const record = entry.record
      const runFrom =
        checked.runningFrom === undefined
          ? entry.runFrom
          : Math.min(entry.runFrom ?? checked.runningFrom, checked.runningFrom)
      entry.runFrom = last ? null : runFrom
      if (record) {
        // A manifest describes one sandbox: a holder whose sandbox was re-mapped meanwhile must not
        // replace the manifest of the new one.
        // A manifest conditional on the turn count is stale once another turn ended since this one began.
        const current =
          checked.manifestIfTurnCount === undefined || checked.manifestIfTurnCount === record.turnCount
        if (
          checked.manifest === null ||
          (current && checked.manifest !== undefined && checked.manifest.sandboxId === record.sandboxId)
        ) {
          record.manifest = checked.manifest
        }
        record.lastTurnEndedAt = Math.max(record.lastTurnEndedAt ?? 0, checked.turnEndedAt)
        record.turnCount += 1
        record.runningSeconds += checked.runningSeconds
        // The sandbox ran from the first of the overlapping turns' starts to the last one's end.
        if (last && runFrom !== null)
          record.runningSeconds += Math.max(0, checked.turnEndedAt - runFrom) / 1000
        record.pausedSeconds += checked.pausedSeconds
        if (last && checked.stateIfLast !== undefined) applyState(record, checked.stateIfLast, now)
        record.updatedAt = now
        touch(entry, checked.turnEndedAt)
      }
      entry.expiresAt = now + checked.ttlMs
      return { last, record: copy(record) }
    },

    async setState(keyInput, stateInput, stateOptions): Promise<SessionRecord | null> {
      const key = checkStoreKey(keyInput)
      const state = checkSandboxState('state', stateInput)
      const at =
        stateOptions?.at === undefined ? undefined : validateInteger('at', stateOptions.at, 0, 8.64e15)
      const ttlMs = checkTtlMs(stateOptions?.ttlMs, defaultTtlMs)
      assertOpen()
      const now = clock()
      const entry = find(key, now)
      if (!entry?.record) return null
      applyState(entry.record, state, at ?? now)
      entry.record.updatedAt = now
      entry.expiresAt = now + ttlMs
      return copy(entry.record)
    },

    async get(keyInput): Promise<SessionRecord | null> {
      const key = checkStoreKey(keyInput)
      assertOpen()
      return copy(find(key, clock())?.record ?? null)
    },

    async delete(keyInput): Promise<boolean> {
      const key = checkStoreKey(keyInput)
      assertOpen()
      const entry = find(key, clock())
      if (!entry) return false
      tenants.get(key.tenant)?.delete(key.conversationId)
      return true
    },

    async list(tenantInput, listOptions): Promise<SessionPage> {
      const tenant = validateTenant(tenantInput)
      const { limit, cursor } = checkListOptions(listOptions)
      const position = cursor === undefined ? undefined : decodeListCursor(cursor)
      assertOpen()
      const now = clock()
      const sessions = tenants.get(tenant)
      const listed: Entry[] = []
      for (const [conversationId, entry] of sessions ?? []) {
        if (entry.expiresAt <= now) {
          sessions!.delete(conversationId)
          continue
        }
        if (entry.record === null || entry.activity === null) continue
        if (position && !isAfterListPosition(entry.activity, entry.member, position)) continue
        listed.push(entry)
      }
      listed.sort((a, b) =>
        a.activity !== b.activity ? b.activity! - a.activity! : a.member < b.member ? 1 : -1,
      )
      const page = listed.slice(0, limit)
      const lastEntry = page.at(-1)
      return {
        sessions: page.map((entry) => copy(entry.record)!),
        cursor:
          listed.length > limit && lastEntry
            ? encodeListCursor({ score: lastEntry.activity!, member: lastEntry.member })
            : undefined,
      }
    },

    async appendJournal(keyInput, stepInput: JournalStep, journalOptions): Promise<void> {
      const key = checkStoreKey(keyInput)
      const step = checkJournalStep(stepInput)
      const ttlMs = checkTtlMs(journalOptions?.ttlMs, defaultTtlMs)
      assertOpen()
      const now = clock()
      const text = serializeJournalEntry(now, step)
      const bytes = utf8Bytes(text)
      const entry = findOrCreate(key, now)
      if (entry.journal.length + 1 > maxJournalSteps || entry.journalBytes + bytes > maxJournalBytes) {
        throw new SandkeepError({
          code: 'JOURNAL_FULL',
          message: `The journal of this session is full (${entry.journal.length} steps, ${entry.journalBytes} bytes; limits ${maxJournalSteps} steps, ${maxJournalBytes} bytes). The step was not recorded; clear the journal or raise the limits.`,
          tenant: key.tenant,
          conversationId: key.conversationId,
        })
      }
      entry.journal.push(text)
      entry.journalBytes += bytes
      entry.expiresAt = now + ttlMs
    },

    async readJournal(keyInput): Promise<JournalEntry[]> {
      const key = checkStoreKey(keyInput)
      assertOpen()
      const entry = find(key, clock())
      return (entry?.journal ?? []).map((text) => parseJournalEntry(text, 'memory journal'))
    },

    async clearJournal(keyInput): Promise<void> {
      const key = checkStoreKey(keyInput)
      assertOpen()
      const entry = find(key, clock())
      if (!entry) return
      entry.journal = []
      entry.journalBytes = 0
    },

    async close(): Promise<void> {
      closed = true
      tenants.clear()
    },
  }
}

/** Records a sandbox state: `pausedAt` is set on pause and cleared when running again. */
function applyState(record: SessionRecord, state: SessionSandboxState, at: number): void {
  record.state = state
  if (state === 'paused') record.pausedAt = at
  else if (state === 'running') record.pausedAt = null
}
