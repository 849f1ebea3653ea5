import {
  type AcquireResult,
  type Checkpoint,
  type ClaimResult,
  type CreateForkInput,
  checkAcquireOptions,
  checkCheckpointTarget,
  checkCreateForkInput,
  checkForgottenSnapshots,
  checkJournalStep,
  checkLease,
  checkListOptions,
  checkMidTurnCheckpointInput,
  checkpointNotFound,
  checkReleaseInput,
  checkRenewOptions,
  checkRewindInput,
  checkSandboxState,
  checkSetSandboxInput,
  checkSetStateOptions,
  checkStoreKey,
  checkTenantSnapshot,
  checkTtlMs,
  corruptRecordError,
  decodeListCursor,
  encodeListCursor,
  encodeSnapshotBytes,
  type ForkSource,
  invalidArgument,
  isAfterListPosition,
  type JournalEntry,
  type JournalStep,
  journalFull,
  type Lease,
  leaseLost,
  type MidTurnCheckpointResult,
  parseJournalEntry,
  type ReleaseInput,
  type ReleaseResult,
  type RewindInput,
  type RewindResult,
  rejectUnknownOptions,
  rewindBusy,
  SandkeepError,
  type SessionKey,
  type SessionPage,
  type SessionRecord,
  type SessionStore,
  type SetSandboxInput,
  type StoreLimits,
  sessionExists,
  sessionHeld,
  TENANT_PATTERN,
  type TenantSnapshotUsage,
  totalSnapshotUsage,
  validateTenant,
} from '@sandkeep/core/store'
import type { RedisConnection } from './connection.js'
import {
  clockKey,
  type SessionKeys,
  sessionKeyCache,
  sessionKeys,
  sessionKeysByMember,
  tenantIndexKey,
  tenantLedgerKey,
} from './keys.js'
import { checkOptions, type RedisSessionStoreOptions, type RedisStoreSettings } from './options.js'
import * as commands from './script-commands.js'

export type { RedisClient } from './connection.js'
export type { RedisSessionStoreOptions } from './options.js'

/**
 * A {@link SessionStore} on Redis (standalone, Sentinel or Cluster). Beginning a turn (`acquire`) is one Lua
 * script and one round trip; ending it (`release`) is one script too (on a Cluster, plus the tenant-index
 * touch sent alongside in the same round trip). Leases use the Redis server clock. The factory does no
 * I/O: the client connects on first use.
 */
export function createRedisSessionStore(options: RedisSessionStoreOptions = {}): SessionStore {
  const sessions = new RedisSessions(checkOptions(options))
  return {
    specificationVersion: 'v1',
    storeId: 'redis',
    acquire: (key, acquireOptions) => sessions.acquire(key, acquireOptions),
    renew: (key, lease, renewOptions) => sessions.renew(key, lease, renewOptions),
    claimCreation: (key, lease) => sessions.claimCreation(key, lease),
    setSandbox: (key, lease, input) => sessions.setSandbox(key, lease, input),
    release: (key, lease, input) => sessions.release(key, lease, input),
    releaseHold: (key, lease) => sessions.releaseHold(key, lease),
    setState: (key, state, stateOptions) => sessions.setState(key, state, stateOptions),
    get: (key) => sessions.get(key),
    delete: (key) => sessions.delete(key),
    list: (tenant, listOptions) => sessions.list(tenant, listOptions),
    appendJournal: (key, step, journalOptions) => sessions.appendJournal(key, step, journalOptions),
    readJournal: (key) => sessions.readJournal(key),
    clearJournal: (key) => sessions.clearJournal(key),
    now: () => sessions.now(),
    readCheckpoints: (key) => sessions.readCheckpoints(key),
    rewind: (key, input) => sessions.rewind(key, input),
    checkpoint: (key, lease, input) => sessions.checkpoint(key, lease, input),
    readForkSource: (key, input) => sessions.readForkSource(key, input),
    listTenants: () => sessions.listTenants(),
    noteTenantSnapshot: (tenant, snapshot) => sessions.noteTenantSnapshot(tenant, snapshot),
    forgetTenantSnapshots: (tenant, ids) => sessions.forgetTenantSnapshots(tenant, ids),
    readTenantSnapshotUsage: (tenant) => sessions.readTenantSnapshotUsage(tenant),
    createFork: (key, input) => sessions.createFork(key, input),
    close: () => sessions.connection.close(),
  }
}

/** A session listed by the tenant index. */
interface Listed {
  record: SessionRecord
  score: number
  member: string
}

/** The contract's operations on Redis: input checks, then one script-commands.ts call per round trip. */
class RedisSessions {
  readonly connection: RedisConnection
  private readonly limits: StoreLimits
  private readonly prefix: string
  private readonly singleSlot: boolean
  private readonly durability: RedisStoreSettings['durability']
  private readonly keysOf: (key: SessionKey) => SessionKeys

  constructor(settings: RedisStoreSettings) {
    this.connection = settings.connection
    this.limits = settings.limits
    this.prefix = settings.prefix
    this.singleSlot = settings.singleSlot
    this.durability = settings.durability
    this.keysOf = sessionKeyCache(settings.prefix)
  }

  /**
   * With `durability`: waits until that many replicas acknowledged this connection's writes (Redis `WAIT`,
   * sent to the node of `key`: a pipeline goes to its keys' node, and the EXISTS gives it that key).
   * @throws SandkeepError STORE_UNAVAILABLE when fewer acknowledged in time
   */
  private async durable(key: string): Promise<void> {
    const durability = this.durability
    if (!durability) return
    const replies = await this.connection.roundTrip('wait for the replicas', key, (redis) =>
      redis.pipeline().exists(key).wait(durability.replicas, durability.timeoutMs).exec(),
    )
    const [error, acknowledged] = replies?.[1] ?? [new Error('no reply'), 0]
    if (error || Number(acknowledged) < durability.replicas) {
      throw new SandkeepError({
        code: 'STORE_UNAVAILABLE',
        message: `The write is on the Redis primary but ${error ? 'WAIT failed' : `only ${Number(acknowledged)} of ${durability.replicas} replica(s) acknowledged it within ${durability.timeoutMs} ms`}; nothing destructive was done after it (the old sandbox and snapshots stay until gc). Check the replicas, then retry.`,
        retryable: true,
      })
    }
  }

  /** The checked key and its session. */
  private session(keyInput: unknown): { key: SessionKey; session: commands.Session } {
    const key = checkStoreKey(keyInput)
    return { key, session: commands.sessionOf(this.keysOf(key), key) }
  }

  /**
   * After an acquire its caller gave up on (no answer in time), queues the removal of its holder on the
   * same client: Redis runs commands of one connection in order, so the removal lands after the acquire if
   * that still runs. Not awaited: the caller already has its error.
   */
  private dropGivenUpHolder(keys: SessionKeys, holderId: string, error: unknown): void {
    if (this.connection.isClosed || !SandkeepError.hasCode(error, 'STORE_UNAVAILABLE')) return
    try {
      commands.dropHolder(this.connection.get(), keys, holderId).catch(() => {})
    } catch {
      // No client to send it on: the acquire was never sent either.
    }
  }

  async acquire(keyInput: unknown, options: unknown): Promise<AcquireResult> {
    const { key, session } = this.session(keyInput)
    const input = checkAcquireOptions(options, this.limits.defaultTtlMs)
    const reply = await this.connection
      .roundTrip('begin the turn', session.keys.record, (redis) =>
        commands.acquire(redis, session, key, input),
      )
      .catch((error: unknown) => {
        this.dropGivenUpHolder(session.keys, input.holderId, error)
        throw error
      })
    if (reply.held) throw sessionHeld(key, reply.retryAfterMs)
    return {
      lease: { holderId: input.holderId, fencingToken: reply.fencingToken, expiresAt: reply.expiresAt },
      record: reply.record,
      create: reply.create,
      holders: reply.holders,
    }
  }

  async renew(keyInput: unknown, leaseInput: unknown, options: unknown): Promise<Lease> {
    const { key, session } = this.session(keyInput)
    const lease = checkLease(leaseInput)
    const input = checkRenewOptions(options, this.limits.defaultTtlMs)
    const expiresAt = await this.connection.roundTrip('renew the lease', session.keys.lease, (redis) =>
      commands.renew(redis, session, lease, input),
    )
    if (expiresAt === undefined) throw leaseLost(key, 'it lapsed or the holder was removed')
    return { holderId: lease.holderId, fencingToken: lease.fencingToken, expiresAt }
  }

  async claimCreation(keyInput: unknown, leaseInput: unknown): Promise<ClaimResult> {
    const { key, session } = this.session(keyInput)
    const lease = checkLease(leaseInput)
    const claim = await this.connection.roundTrip('check the creation claim', session.keys.record, (redis) =>
      commands.claimCreation(redis, session, key, lease),
    )
    if (!claim) throw leaseLost(key, 'it lapsed while waiting for creation')
    return claim
  }

  async setSandbox(keyInput: unknown, leaseInput: unknown, input: SetSandboxInput): Promise<SessionRecord> {
    const { key, session } = this.session(keyInput)
    const lease = checkLease(leaseInput)
    const checked = checkSetSandboxInput(input, this.limits.defaultTtlMs)
    const reply = await this.connection.roundTrip('write the sandbox mapping', session.keys.record, (redis) =>
      commands.setSandbox(redis, session, { key, lease, input, checked }, this.singleSlot),
    )
    if (reply.written) return reply.record
    const why =
      reply.reason === 'stale-token'
        ? `fencing token ${lease.fencingToken} is older than the mapping's ${reply.mappingToken}`
        : reply.reason === 'mismatch'
          ? 'another holder changed the mapping first'
          : 'it lapsed before the mapping was written'
    throw leaseLost(key, why)
  }

  async release(keyInput: unknown, leaseInput: unknown, input: ReleaseInput): Promise<ReleaseResult> {
    const { key, session } = this.session(keyInput)
    const lease = checkLease(leaseInput)
    const checked = checkReleaseInput(input, this.limits.defaultTtlMs)
    const result = await this.connection.roundTrip('end the turn', session.keys.record, (redis) =>
      commands.release(redis, session, { key, lease, checked }, this.singleSlot),
    )
    if (result.prunedCheckpoints?.length) {
      // The caller deletes the pruned checkpoints' snapshots: only once replicas hold the pruning. If they
      // do not, it is told none were pruned, and gc deletes the snapshots once no checkpoint refers to them.
      await this.durable(session.keys.record).catch(() => {
        result.prunedCheckpoints = []
      })
    }
    return result
  }

  async releaseHold(keyInput: unknown, leaseInput: unknown): Promise<void> {
    const { session } = this.session(keyInput)
    const lease = checkLease(leaseInput)
    await this.connection.roundTrip('end the hold', session.keys.lease, (redis) =>
      commands.releaseHold(redis, session.keys, lease),
    )
  }

  async setState(keyInput: unknown, stateInput: unknown, options: unknown): Promise<SessionRecord | null> {
    const { key, session } = this.session(keyInput)
    const state = checkSandboxState('state', stateInput)
    const { at, ttlMs } = checkSetStateOptions(options, this.limits.defaultTtlMs)
    return this.connection.roundTrip('record the sandbox state', session.keys.record, (redis) =>
      commands.setState(redis, session, key, { state, at, ttlMs }),
    )
  }

  async get(keyInput: unknown): Promise<SessionRecord | null> {
    const { key, session } = this.session(keyInput)
    return this.connection.roundTrip('read the session', session.keys.record, (redis) =>
      commands.readRecord(redis, session, key.tenant, key.conversationId),
    )
  }

  async delete(keyInput: unknown): Promise<boolean> {
    const { session } = this.session(keyInput)
    const { keys } = session
    const [deleted] = await this.connection.roundTrip('delete the session', keys.record, (redis) =>
      Promise.all([
        redis.del(keys.record, keys.lease, keys.journal, keys.checkpoints),
        redis.zrem(keys.index, keys.member),
      ]),
    )
    if (deleted > 0) await this.durable(keys.record)
    return deleted > 0
  }

  async list(tenantInput: unknown, options: unknown): Promise<SessionPage> {
    const tenant = validateTenant(tenantInput)
    const { limit, cursor } = checkListOptions(options)
    const position = cursor === undefined ? undefined : decodeListCursor(cursor)
    const index = tenantIndexKey(this.prefix, tenant)
    const found: Listed[] = []
    const batch = Math.min(limit + 1, 200)
    let offset = 0
    for (;;) {
      const entries = await this.connection.roundTrip('list sessions', index, async (redis) =>
        scoredMembers(
          await redis.zrevrangebyscore(
            index,
            position ? String(position.score) : '+inf',
            '-inf',
            'WITHSCORES',
            'LIMIT',
            offset,
            batch,
          ),
          index,
        ),
      )
      offset += entries.length
      const candidates = entries.filter(
        ({ member, score }) => !position || isAfterListPosition(Number(score), member, position),
      )
      offset -= await this.readListed(tenant, candidates, found)
      if (found.length > limit || entries.length < batch) break
    }
    const page = found.slice(0, limit)
    const last = page.at(-1)
    return {
      sessions: page.map((entry) => entry.record),
      cursor: found.length > limit && last ? encodeListCursor(last) : undefined,
    }
  }

  /**
   * Reads the records of listed `candidates` into `found`, and drops the index entries whose session
   * expired or was deleted; answers how many entries it dropped.
   */
  private async readListed(
    tenant: string,
    candidates: Array<{ member: string; score: string }>,
    found: Listed[],
  ): Promise<number> {
    const index = tenantIndexKey(this.prefix, tenant)
    const sessions = candidates.map(({ member }) => ({
      keys: sessionKeysByMember(this.prefix, tenant, member),
      key: undefined,
      expected: { tenant },
    }))
    const records = await this.connection.roundTrip('read listed sessions', index, (redis) =>
      Promise.all(sessions.map((session) => commands.readRecord(redis, session, tenant, ''))),
    )
    const gone: string[] = []
    for (const [i, record] of records.entries()) {
      const { member, score } = candidates[i]!
      if (!record) {
        gone.push(member, score)
        continue
      }
      const { keys } = sessions[i]!
      if (member !== sessionKeys(this.prefix, { tenant, conversationId: record.conversationId }).member) {
        throw corruptRecordError(keys.record, 'it names another conversation than its key')
      }
      found.push({ record, score: Number(score), member })
    }
    if (gone.length === 0) return 0
    return this.connection.roundTrip('clean the session index', index, (redis) =>
      commands.indexPrune(redis, index, gone),
    )
  }

  async appendJournal(
    keyInput: unknown,
    stepInput: JournalStep,
    options?: { ttlMs?: number; lease?: Lease },
  ): Promise<void> {
    const { key, session } = this.session(keyInput)
    const step = checkJournalStep(stepInput)
    const ttlMs = checkTtlMs(options?.ttlMs, this.limits.defaultTtlMs)
    const lease = options?.lease === undefined ? undefined : checkLease(options.lease)
    const refused = await this.connection.roundTrip(
      'record the journal step',
      session.keys.journal,
      (redis) => commands.appendJournal(redis, session, step, { ...this.limits, ttlMs }, lease),
    )
    if (refused && 'full' in refused) throw journalFull(key, refused.full, this.limits)
    if (refused) throw leaseLost(key, refused.lost)
  }

  async readJournal(keyInput: unknown): Promise<JournalEntry[]> {
    const { session } = this.session(keyInput)
    const where = session.keys.journal
    const entries = await this.connection.roundTrip('read the journal', where, (redis) =>
      commands.readJournal(redis, session),
    )
    return entries.map((text) => parseJournalEntry(text, where))
  }

  async readForkSource(keyInput: unknown, input: unknown): Promise<ForkSource> {
    const { key, session } = this.session(keyInput)
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      throw invalidArgument('readForkSource input', 'must be an object.')
    rejectUnknownOptions('readForkSource input', input, ['checkpoint', 'toTurn'])
    const target = checkCheckpointTarget(input as Record<string, unknown>, true)
    const reply = await this.connection.roundTrip('read the fork source', session.keys.record, (redis) =>
      commands.readForkSource(redis, session, key, target),
    )
    if (reply.status === 'missing') {
      const asked =
        'checkpoint' in target && target.checkpoint
          ? { checkpoint: target.checkpoint }
          : { toTurn: 'toTurn' in target ? target.toTurn : reply.depth }
      throw checkpointNotFound(key, asked, { pruned: reply.pruned, kept: reply.kept, depth: reply.depth })
    }
    const where = session.keys.journal
    return {
      record: reply.record,
      checkpoint: reply.checkpoint,
      journal: reply.entries.map((text) => parseJournalEntry(text, where).step),
    }
  }

  async checkpoint(keyInput: unknown, leaseInput: unknown, input: unknown): Promise<MidTurnCheckpointResult> {
    const { key, session } = this.session(keyInput)
    const lease = checkLease(leaseInput)
    const checked = checkMidTurnCheckpointInput(input)
    const reply = await this.connection.roundTrip('record the checkpoint', session.keys.record, (redis) =>
      commands.checkpoint(redis, session, { key, lease, input: checked }),
    )
    if (reply.status === 'lost') throw leaseLost(key, reply.why)
    await this.durable(session.keys.record)
    return { checkpoint: reply.checkpoint, pruned: reply.pruned }
  }

  async readCheckpoints(keyInput: unknown): Promise<Checkpoint[]> {
    const { session } = this.session(keyInput)
    return this.connection.roundTrip('read the checkpoints', session.keys.checkpoints, (redis) =>
      commands.readCheckpoints(redis, session),
    )
  }

  async rewind(keyInput: unknown, input: RewindInput): Promise<RewindResult> {
    const { key, session } = this.session(keyInput)
    const checked = checkRewindInput(input, this.limits.defaultTtlMs)
    const reply = await this.connection.roundTrip('rewind the session', session.keys.record, (redis) =>
      commands.rewind(redis, session, { key, checked }),
    )
    if (reply.status === 'busy') throw rewindBusy(key, reply.retryAfterMs)
    if (reply.status === 'mismatch') throw leaseLost(key, 'another holder changed the mapping first')
    if (reply.status === 'missing') {
      const target = checked.checkpoint ? { checkpoint: checked.checkpoint } : { toTurn: checked.toTurn ?? 0 }
      throw checkpointNotFound(key, target, { pruned: reply.pruned, kept: reply.kept, depth: reply.depth })
    }
    // The caller kills the old sandbox once this returns: with `durability`, only once replicas hold it.
    await this.durable(session.keys.record)
    const { record, checkpoint } = reply
    return { record, checkpoint, dropped: [] }
  }

  async createFork(keyInput: unknown, input: CreateForkInput): Promise<SessionRecord> {
    const { key, session } = this.session(keyInput)
    const checked = checkCreateForkInput(input, this.limits.defaultTtlMs)
    const reply = await this.connection.roundTrip('create the fork', session.keys.record, (redis) =>
      commands.createFork(redis, session, { key, checked, limits: this.limits }, this.singleSlot),
    )
    if (reply.status === 'exists') throw sessionExists(key)
    if (reply.status === 'full') throw journalFull(key, reply.used, this.limits)
    return reply.record
  }

  /**
   * The tenants with a listing index under this prefix: SCAN for `<prefix>:{<tenant>}:index` on the node
   * (every primary of a Cluster), bounded by the keys' count.
   */
  async listTenants(): Promise<string[]> {
    const pattern = `${this.prefix}:{*}:index`
    const tenants = new Set<string>()
    await this.connection.roundTrip('list the tenants', pattern, async (redis) => {
      const nodes = redis.isCluster && typeof redis.nodes === 'function' ? redis.nodes('master') : [redis]
      for (const node of nodes) {
        let cursor = '0'
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
          for (const key of keys) {
            const tenant = key.slice(this.prefix.length + 2, -'}:index'.length)
            if (TENANT_PATTERN.test(tenant)) tenants.add(tenant)
          }
          cursor = String(next)
        } while (cursor !== '0')
      }
    })
    return [...tenants]
  }

  /** One HSET on the tenant's ledger hash. */
  async noteTenantSnapshot(tenantInput: unknown, snapshotInput: unknown): Promise<void> {
    const { tenant, snapshot } = checkTenantSnapshot(tenantInput, snapshotInput)
    const key = tenantLedgerKey(this.prefix, tenant)
    await this.connection.roundTrip('note a tenant snapshot', key, (redis) =>
      redis.hset(key, snapshot.snapshotId, encodeSnapshotBytes(snapshot.bytes)),
    )
  }

  /** One HDEL on the tenant's ledger hash. */
  async forgetTenantSnapshots(tenantInput: unknown, idsInput: unknown): Promise<void> {
    const { tenant, snapshotIds } = checkForgottenSnapshots(tenantInput, idsInput)
    if (snapshotIds.length === 0) return
    const key = tenantLedgerKey(this.prefix, tenant)
    await this.connection.roundTrip('forget tenant snapshots', key, (redis) =>
      redis.hdel(key, ...snapshotIds),
    )
  }

  /** One HVALS on the tenant's ledger hash, totalled here. */
  async readTenantSnapshotUsage(tenantInput: unknown): Promise<TenantSnapshotUsage> {
    const tenant = validateTenant(tenantInput)
    const key = tenantLedgerKey(this.prefix, tenant)
    const values = await this.connection.roundTrip('read the tenant snapshots', key, (redis) =>
      redis.hvals(key),
    )
    return totalSnapshotUsage(values)
  }

  async now(): Promise<number> {
    const key = clockKey(this.prefix)
    const now = await this.connection.roundTrip('read the store clock', key, (redis) =>
      commands.clock(redis, key),
    )
    if (now === undefined) {
      throw new SandkeepError({
        code: 'STORE_UNAVAILABLE',
        message: 'Redis answered the store clock (TIME) with something that is not a time; check the server.',
      })
    }
    return now
  }

  async clearJournal(keyInput: unknown): Promise<void> {
    const { session } = this.session(keyInput)
    await this.connection.roundTrip('clear the journal', session.keys.journal, (redis) =>
      commands.clearJournal(redis, session),
    )
  }
}

/**
 * Members and scores of a ZRANGE-family reply WITHSCORES: a flat [member, score, ...] list (RESP2, and
 * RESP3 with ioredis 6's default `replyMapping: 'legacy'`) or [member, score] pairs (RESP3 with
 * `replyMapping: 'resp3'`, where a score may arrive as a number).
 */
function scoredMembers(reply: unknown, where: string): Array<{ member: string; score: string }> {
  if (!Array.isArray(reply)) throw corruptRecordError(where, 'the tenant index did not answer a list')
  const entries: Array<{ member: string; score: string }> = []
  if (reply.length > 0 && Array.isArray(reply[0])) {
    for (const pair of reply as unknown[][]) entries.push({ member: String(pair[0]), score: String(pair[1]) })
    return entries
  }
  for (let i = 0; i + 1 < reply.length; i += 2) {
    entries.push({ member: String(reply[i]), score: String(reply[i + 1]) })
  }
  return entries
}
