import {
  type AcquireResult,
  type ClaimResult,
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
  corruptRecordError,
  DEFAULT_MAX_JOURNAL_BYTES,
  DEFAULT_MAX_JOURNAL_STEPS,
  DEFAULT_SESSION_TTL_MS,
  decodeListCursor,
  encodeListCursor,
  isAfterListPosition,
  type JournalEntry,
  type JournalStep,
  type Lease,
  type ListPosition,
  parseJournalEntry,
  parseRecordFields,
  type ReleaseInput,
  type ReleaseResult,
  SandkeepError,
  type SessionKey,
  type SessionPage,
  type SessionRecord,
  type SessionSandboxState,
  type SessionStore,
  type SetSandboxInput,
  validateInteger,
  validateTenant,
} from '@sandkeep/core'
import { Redis, type RedisOptions } from 'ioredis'
import { IN_MEMORY_PRELUDE, isInMemoryClient } from './in-memory-engine.js'
import { checkPrefix, type SessionKeys, sessionKeys, sessionKeysByMember, tenantIndexKey } from './keys.js'
import { recordFieldMap } from './record-fields.js'
import { loadScripts, type ScriptFile } from './scripts.js'

/**
 * What the store calls on a client, typed structurally so an ioredis 5 or 6 `Redis` (standalone or
 * Sentinel) or `Cluster` fits whichever ioredis the application installed (a nominal `Redis | Cluster` of
 * the store's own ioredis refused another major's client with TS2322). Replies the store reads are
 * `unknown` here and checked where they are read: their shape depends on the protocol (RESP2 or RESP3)
 * and on ioredis 6's `replyMapping`.
 */
export interface RedisClient {
  /**
   * Connection status as ioredis reports it: 'wait', 'connecting', 'connect', 'ready', 'end'... Absent on
   * ioredis-mock, which is always ready and whose Lua engine the store then adapts to.
   */
  readonly status?: string
  /** True on an ioredis `Cluster`; scripts then stay within one hash slot. */
  readonly isCluster?: boolean
  /** Registers a Lua script as a command method of that name (run with EVALSHA, EVAL on NOSCRIPT). */
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void
  /** Connects a client made with `lazyConnect` (or reconnects one that ended). */
  connect(): Promise<unknown>
  /** Listens once for the 'ready' event. */
  once(event: 'ready', listener: () => void): unknown
  /** Stops listening for the 'ready' event. */
  off(event: 'ready', listener: () => void): unknown
  /** DEL. */
  del(...keys: string[]): Promise<number>
  /** ZREM. */
  zrem(key: string, ...members: string[]): Promise<number>
  /** ZREVRANGEBYSCORE with scores: a flat list (RESP2) or [member, score] pairs (RESP3 `replyMapping`). */
  zrevrangebyscore(
    key: string,
    max: string,
    min: string,
    withScores: 'WITHSCORES',
    limit: 'LIMIT',
    offset: number,
    count: number,
  ): Promise<unknown>
  /** LRANGE. */
  lrange(key: string, start: number, stop: number): Promise<unknown>
  /** QUIT: waits for pending replies, then closes. */
  quit(): Promise<unknown>
  /** Closes the connection at once. */
  disconnect(): void
}

/** Options of {@link createRedisSessionStore}. */
export interface RedisSessionStoreOptions {
  /**
   * A Redis URL (`redis://`, `rediss://`), or an ioredis 5 or 6 `Redis` (standalone or Sentinel) or
   * `Cluster` you own (RESP2 or RESP3), or an ioredis-mock client for tests without a Redis server.
   * Default `process.env.REDIS_URL`, else `redis://127.0.0.1:6379`. A client you pass is never closed by
   * the store; one the store creates from a URL is closed by `close()`.
   */
  redis?: string | RedisClient
  /** Key prefix, 1 to 64 characters from `A-Z a-z 0-9 . _ : -`. Default `'sandkeep'`. */
  prefix?: string
  /** Idle time after which a session expires, ms; each turn refreshes it. Default 30 days. */
  ttlMs?: number
  /** Most journal steps per session; past it `appendJournal` throws JOURNAL_FULL. Default 1000. */
  maxJournalSteps?: number
  /** Most journal bytes per session (UTF-8 of the stored entries). Default 1 MiB. */
  maxJournalBytes?: number
  /**
   * Longest wait for Redis per round trip (connecting included), ms; past it the call throws
   * STORE_UNAVAILABLE. Default 2000.
   */
  commandTimeoutMs?: number
  /**
   * Extra ioredis options for the client the store creates from a URL (TLS, Sentinel, username...). They
   * override the store's defaults, which make an unreachable Redis fail fast instead of queueing.
   */
  redisOptions?: RedisOptions
  /**
   * Whether every script must stay within one hash slot. Default: true for an ioredis `Cluster`, false
   * otherwise. On one node the end of a turn touches the tenant index in the same script (one command);
   * on a Cluster the index lives in another slot and is touched by a second command sent alongside. Set
   * it to true behind a proxy that enforces Cluster slot rules (CROSSSLOT) for a standalone client.
   */
  cluster?: boolean
}

const OPTION_NAMES = [
  'redis',
  'prefix',
  'ttlMs',
  'maxJournalSteps',
  'maxJournalBytes',
  'commandTimeoutMs',
  'redisOptions',
  'cluster',
]

type ScriptArgument = string | number
type ScriptReply = Array<string | number | Array<string | null>>
type ScriptCommand = (...args: ScriptArgument[]) => Promise<ScriptReply>

const clientsWithScripts = new WeakSet<object>()

function isRedisClient(value: unknown): value is RedisClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { defineCommand?: unknown }).defineCommand === 'function' &&
    (typeof (value as { status?: unknown }).status === 'string' || isInMemoryClient(value))
  )
}

function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}

/**
 * A {@link SessionStore} on Redis (standalone, Sentinel or Cluster). Beginning a turn (`acquire`) is one Lua
 * script and one round trip; ending it (`release`) is one script too (on a Cluster, plus the tenant-index
 * touch sent alongside in the same round trip). Leases use the Redis server clock. The factory does no
 * I/O: the client connects on first use.
 */
export function createRedisSessionStore(options: RedisSessionStoreOptions = {}): SessionStore {
  if (typeof options !== 'object' || options === null) throw invalid('options must be an object.')
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.includes(name)) {
      throw invalid(
        `createRedisSessionStore got an unknown option "${name}"; allowed: ${OPTION_NAMES.join(', ')}.`,
      )
    }
  }
  const source = options.redis ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
  if (typeof source === 'string') {
    if (!/^rediss?:\/\//.test(source)) {
      throw invalid('redis must be a redis:// or rediss:// URL, or an ioredis Redis or Cluster client.')
    }
  } else if (!isRedisClient(source)) {
    throw invalid('redis must be a redis:// or rediss:// URL, or an ioredis Redis or Cluster client.')
  }
  const prefix = checkPrefix(options.prefix ?? 'sandkeep')
  const defaultTtlMs = checkTtlMs(options.ttlMs, DEFAULT_SESSION_TTL_MS)
  const maxJournalSteps =
    options.maxJournalSteps === undefined
      ? DEFAULT_MAX_JOURNAL_STEPS
      : validateInteger('maxJournalSteps', options.maxJournalSteps, 1, 1_000_000)
  const maxJournalBytes =
    options.maxJournalBytes === undefined
      ? DEFAULT_MAX_JOURNAL_BYTES
      : validateInteger('maxJournalBytes', options.maxJournalBytes, 1, 512 * 1024 * 1024)
  const timeoutMs =
    options.commandTimeoutMs === undefined
      ? 2000
      : validateInteger('commandTimeoutMs', options.commandTimeoutMs, 1, 600_000)
  if (
    options.redisOptions !== undefined &&
    (typeof options.redisOptions !== 'object' || options.redisOptions === null)
  ) {
    throw invalid('redisOptions must be an object of ioredis options.')
  }

  if (options.cluster !== undefined && typeof options.cluster !== 'boolean') {
    throw invalid('cluster must be true or false.')
  }

  let client: RedisClient | undefined
  // On a Cluster each script stays in one slot, so the tenant index cannot share a script with a session.
  const singleSlot =
    options.cluster ?? (typeof source !== 'string' && (source as { isCluster?: boolean }).isCluster === true)
  const owned = typeof source === 'string'
  let closed = false

  const getClient = (): RedisClient => {
    client ??=
      typeof source === 'string' ? createOwnedClient(source, timeoutMs, options.redisOptions) : source
    if (!clientsWithScripts.has(client)) {
      const prelude = isInMemoryClient(client) ? IN_MEMORY_PRELUDE : ''
      for (const script of loadScripts().values()) {
        client.defineCommand(script.command, { numberOfKeys: script.numberOfKeys, lua: prelude + script.lua })
      }
      clientsWithScripts.add(client)
    }
    return client
  }

  const unavailable = (what: string, detail: string, cause?: unknown) =>
    new SandkeepError({
      code: 'STORE_UNAVAILABLE',
      retryable: true,
      cause,
      message: `Redis could not ${what}: ${detail}. Check that Redis is running and reachable (the redis option or REDIS_URL); nothing was assumed about the session.`,
    })

  const toStoreError = (error: unknown, what: string, where: string): SandkeepError => {
    if (SandkeepError.isInstance(error)) return error
    const message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 200)
    if (message.includes('WRONGTYPE')) {
      return corruptRecordError(where, 'a key of the session holds the wrong Redis type', undefined, error)
    }
    return unavailable(what, message, error)
  }

  // Calls that arrive while the client connects share one wait (and one 'ready' listener). It settles with
  // whether the client became ready, so that each caller's error names its own call: a begin that joined an
  // end's wait must not say "could not end the turn".
  let pendingReady: Promise<boolean> | undefined

  /** Resolves when the client can take commands; bounded by the timeout. */
  const whenReady = (redis: RedisClient, what: string): Promise<void> | undefined => {
    if (redis.status === 'ready' || redis.status === undefined) return undefined
    if (redis.status === 'end' && !owned) {
      return Promise.reject(unavailable(what, 'the client passed to the store was closed by its owner'))
    }
    if (!pendingReady) {
      if (redis.status === 'wait' || redis.status === 'end') redis.connect().catch(() => {})
      pendingReady = new Promise<boolean>((resolve) => {
        const onReady = () => {
          clearTimeout(timer)
          pendingReady = undefined
          resolve(true)
        }
        const timer = setTimeout(() => {
          redis.off('ready', onReady)
          pendingReady = undefined
          resolve(false)
        }, timeoutMs)
        redis.once('ready', onReady)
      })
    }
    return pendingReady.then((ready) => {
      if (!ready) throw unavailable(what, `no connection within ${timeoutMs} ms`)
    })
  }

  /** Runs one round trip with the bounded wait, mapping failures to SandkeepErrors. */
  const roundTrip = async <T>(
    what: string,
    where: string,
    run: (redis: RedisClient) => Promise<T>,
  ): Promise<T> => {
    if (closed) {
      throw new SandkeepError({
        code: 'STORE_UNAVAILABLE',
        message: 'This Redis session store was closed; create a new one.',
      })
    }
    let timer: NodeJS.Timeout | undefined
    try {
      const redis = getClient()
      const ready = whenReady(redis, what)
      if (ready) await ready
      const pending = run(redis)
      // A client the store made has ioredis' own commandTimeout; one passed in may not, so it gets a timer.
      if (owned) return await pending
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(unavailable(what, `no answer within ${timeoutMs} ms`)), timeoutMs)
      })
      // If the timeout wins, the command's own rejection must not go unhandled.
      pending.catch(() => {})
      return await Promise.race([pending, timeout])
    } catch (error) {
      throw toStoreError(error, what, where)
    } finally {
      clearTimeout(timer)
    }
  }

  // Conversation hashes of recent keys: a turn's begin and end hash the same id.
  const recentKeys = new Map<string, SessionKeys>()

  const script = (redis: RedisClient, file: ScriptFile, ...args: ScriptArgument[]): Promise<ScriptReply> => {
    const command = (redis as unknown as Record<string, ScriptCommand>)[loadScripts().get(file)!.command]!
    return command.call(redis, ...args)
  }

  const keysOf = (key: SessionKey): SessionKeys => {
    const id = `${key.tenant}\u0000${key.conversationId}`
    let keys = recentKeys.get(id)
    if (!keys) {
      if (recentKeys.size >= 10_000) recentKeys.clear()
      keys = sessionKeys(prefix, key)
      recentKeys.set(id, keys)
    }
    return keys
  }

  const refuseCorrupt = (reply: ScriptReply, keys: SessionKeys, key: SessionKey | undefined): void => {
    if (reply[0] !== 'corrupt') return
    const names = [keys.record, keys.lease, keys.journal]
    const where = names[Number(reply[1]) - 1] ?? keys.record
    throw corruptRecordError(where, 'it does not parse, has an unknown schemaVersion or the wrong type', key)
  }

  /** A record from a script's positional reply (empty = no record). */
  const recordOf = (
    values: unknown,
    keys: SessionKeys,
    expected: { tenant: string; conversationId?: string },
  ) =>
    Array.isArray(values) && values.length > 0
      ? parseRecordFields(recordFieldMap(values), keys.record, expected)
      : null

  const leaseLost = (key: SessionKey, why: string) =>
    new SandkeepError({
      code: 'LEASE_LOST',
      message: `The lease on this session is no longer valid (${why}); end the turn and begin a new one.`,
      tenant: key.tenant,
      conversationId: key.conversationId,
    })

  /**
   * After an acquire its caller gave up on (no answer in time), queues the removal of its holder on the same
   * client: Redis runs commands of one connection in order, so the removal lands after the acquire if that
   * still runs. Not awaited: the caller already has its error.
   */
  const dropGivenUpHolder = (keys: SessionKeys, holderId: string, error: unknown) => {
    if (closed || !SandkeepError.hasCode(error, 'STORE_UNAVAILABLE')) return
    try {
      script(getClient(), 'drop-holder-1', keys.lease, holderId).catch(() => {})
    } catch {
      // No client to send it on: the acquire was never sent either.
    }
  }

  /** Index touch sent alongside a session write (another slot, so its own command). */
  const touchIndex = (redis: RedisClient, keys: SessionKeys, score: number) =>
    script(redis, 'index-touch-1', keys.index, keys.member, Math.trunc(score))

  return {
    specificationVersion: 'v1',
    storeId: 'redis',

    async acquire(keyInput, acquireOptions): Promise<AcquireResult> {
      const key = checkStoreKey(keyInput)
      const holderId = checkHolderId(acquireOptions?.holderId)
      const leaseMs = checkLeaseMs(acquireOptions?.leaseMs)
      const ttlMs = checkTtlMs(acquireOptions?.ttlMs, defaultTtlMs)
      const keys = keysOf(key)
      const reply = await roundTrip('begin the turn', keys.record, (redis) =>
        script(
          redis,
          'acquire-3',
          keys.record,
          keys.lease,
          keys.journal,
          key.tenant,
          key.conversationId,
          holderId,
          leaseMs,
          ttlMs,
        ),
      ).catch((error: unknown) => {
        dropGivenUpHolder(keys, holderId, error)
        throw error
      })
      refuseCorrupt(reply, keys, key)
      return {
        lease: { holderId, fencingToken: Number(reply[4]), expiresAt: Number(reply[5]) },
        record: recordOf(reply[1], keys, key),
        create: reply[2] === 1,
        holders: Number(reply[3]),
      }
    },

    async renew(keyInput, leaseInput, renewOptions): Promise<Lease> {
      const key = checkStoreKey(keyInput)
      const lease = checkLease(leaseInput)
      const leaseMs = checkLeaseMs(renewOptions?.leaseMs)
      const ttlMs = checkTtlMs(renewOptions?.ttlMs, defaultTtlMs)
      const keys = keysOf(key)
      const reply = await roundTrip('renew the lease', keys.lease, (redis) =>
        script(
          redis,
          'renew-3',
          keys.record,
          keys.lease,
          keys.journal,
          lease.holderId,
          lease.fencingToken,
          leaseMs,
          ttlMs,
        ),
      )
      refuseCorrupt(reply, keys, key)
      if (reply[0] !== 'ok') throw leaseLost(key, 'it lapsed or the holder was removed')
      return { holderId: lease.holderId, fencingToken: lease.fencingToken, expiresAt: Number(reply[1]) }
    },

    async claimCreation(keyInput, leaseInput): Promise<ClaimResult> {
      const key = checkStoreKey(keyInput)
      const lease = checkLease(leaseInput)
      const keys = keysOf(key)
      const reply = await roundTrip('check the creation claim', keys.record, (redis) =>
        script(
          redis,
          'claim-creation-2',
          keys.record,
          keys.lease,
          key.tenant,
          key.conversationId,
          lease.holderId,
          lease.fencingToken,
        ),
      )
      refuseCorrupt(reply, keys, key)
      if (reply[0] !== 'ok') throw leaseLost(key, 'it lapsed while waiting for creation')
      return { record: recordOf(reply[1], keys, key), create: reply[2] === 1 }
    },

    async setSandbox(keyInput, leaseInput, input: SetSandboxInput): Promise<SessionRecord> {
      const key = checkStoreKey(keyInput)
      const lease = checkLease(leaseInput)
      const checked = checkSetSandboxInput(input, defaultTtlMs)
      const keys = keysOf(key)
      const setArguments: ScriptArgument[] = [
        key.tenant,
        key.conversationId,
        lease.holderId,
        lease.fencingToken,
        checked.sandboxId,
        checked.expectedSandboxId ?? '',
        checked.providerId,
        input.template === undefined ? 'keep' : checked.template === null ? 'null' : 'set',
        checked.template ?? '',
        checked.state,
        checked.ttlMs,
      ]
      const reply = await roundTrip('write the sandbox mapping', keys.record, async (redis) => {
        if (!singleSlot) {
          return script(
            redis,
            'set-sandbox-4',
            keys.record,
            keys.lease,
            keys.journal,
            keys.index,
            ...setArguments,
            keys.member,
          )
        }
        const [written] = await Promise.all([
          script(redis, 'set-sandbox-3', keys.record, keys.lease, keys.journal, ...setArguments),
          touchIndex(redis, keys, Date.now()),
        ])
        return written
      })
      refuseCorrupt(reply, keys, key)
      if (reply[0] === 'lost') {
        const why =
          reply[1] === 'stale-token'
            ? `fencing token ${lease.fencingToken} is older than the mapping's ${reply[2]}`
            : reply[1] === 'mismatch'
              ? 'another holder changed the mapping first'
              : 'it lapsed before the mapping was written'
        throw leaseLost(key, why)
      }
      return recordOf(reply[1], keys, key)!
    },

    async release(keyInput, leaseInput, input: ReleaseInput): Promise<ReleaseResult> {
      const key = checkStoreKey(keyInput)
      const lease = checkLease(leaseInput)
      const checked = checkReleaseInput(input, defaultTtlMs)
      const keys = keysOf(key)
      const manifest =
        checked.manifest === undefined
          ? ''
          : checked.manifest === null
            ? 'null'
            : JSON.stringify(checked.manifest)
      const releaseArguments: ScriptArgument[] = [
        key.tenant,
        key.conversationId,
        lease.holderId,
        lease.fencingToken,
        manifest,
        checked.manifest ? checked.manifest.sandboxId : '',
        checked.turnEndedAt,
        String(checked.runningSeconds),
        String(checked.pausedSeconds),
        checked.stateIfLast ?? '',
        checked.ttlMs,
        checked.manifestIfTurnCount ?? '',
        checked.runningFrom ?? '',
      ]
      const reply = await roundTrip('end the turn', keys.record, async (redis) => {
        if (!singleSlot) {
          return script(
            redis,
            'release-4',
            keys.record,
            keys.lease,
            keys.journal,
            keys.index,
            ...releaseArguments,
            keys.member,
            checked.turnEndedAt,
          )
        }
        // Cluster: the index is in another slot, so it is touched by its own command, sent alongside.
        const [released] = await Promise.all([
          script(redis, 'release-3', keys.record, keys.lease, keys.journal, ...releaseArguments),
          touchIndex(redis, keys, checked.turnEndedAt),
        ])
        return released
      })
      refuseCorrupt(reply, keys, key)
      return { last: reply[1] === 1, record: recordOf(reply[2], keys, key) }
    },

    async setState(keyInput, stateInput: SessionSandboxState, stateOptions): Promise<SessionRecord | null> {
      const key = checkStoreKey(keyInput)
      const state = checkSandboxState('state', stateInput)
      const at = stateOptions?.at === undefined ? '' : validateInteger('at', stateOptions.at, 0, 8.64e15)
      const ttlMs = checkTtlMs(stateOptions?.ttlMs, defaultTtlMs)
      const keys = keysOf(key)
      const reply = await roundTrip('record the sandbox state', keys.record, (redis) =>
        script(
          redis,
          'set-state-3',
          keys.record,
          keys.lease,
          keys.journal,
          key.tenant,
          key.conversationId,
          state,
          at,
          ttlMs,
        ),
      )
      refuseCorrupt(reply, keys, key)
      return reply[0] === 'ok' ? recordOf(reply[1], keys, key) : null
    },

    async get(keyInput): Promise<SessionRecord | null> {
      const key = checkStoreKey(keyInput)
      const keys = keysOf(key)
      const reply = await roundTrip('read the session', keys.record, (redis) =>
        script(redis, 'read-record-1', keys.record, key.tenant, key.conversationId),
      )
      refuseCorrupt(reply, keys, key)
      return reply[0] === 'ok' ? recordOf(reply[1], keys, key) : null
    },

    async delete(keyInput): Promise<boolean> {
      const key = checkStoreKey(keyInput)
      const keys = keysOf(key)
      const [deleted] = await roundTrip('delete the session', keys.record, (redis) =>
        Promise.all([redis.del(keys.record, keys.lease, keys.journal), redis.zrem(keys.index, keys.member)]),
      )
      return deleted > 0
    },

    async list(tenantInput, listOptions): Promise<SessionPage> {
      const tenant = validateTenant(tenantInput)
      const { limit, cursor } = checkListOptions(listOptions)
      const position: ListPosition | undefined = cursor === undefined ? undefined : decodeListCursor(cursor)
      const index = tenantIndexKey(prefix, tenant)
      const found: Array<{ record: SessionRecord; score: number; member: string }> = []
      const batch = Math.min(limit + 1, 200)
      let offset = 0
      for (;;) {
        const entries = await roundTrip('list sessions', index, async (redis) =>
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
        const candidates: Array<{ member: string; score: string }> = []
        for (const { member, score } of entries) {
          if (!position || isAfterListPosition(Number(score), member, position))
            candidates.push({ member, score })
        }
        const replies = await roundTrip('read listed sessions', index, (redis) =>
          Promise.all(
            candidates.map(({ member }) =>
              script(redis, 'read-record-1', sessionKeysByMember(prefix, tenant, member).record, tenant, ''),
            ),
          ),
        )
        const gone: string[] = []
        for (const [i, reply] of replies.entries()) {
          const { member, score } = candidates[i]!
          const keys = sessionKeysByMember(prefix, tenant, member)
          refuseCorrupt(reply, keys, undefined)
          if (reply[0] !== 'ok') {
            gone.push(member, score)
            continue
          }
          const record = recordOf(reply[1], keys, { tenant })!
          if (keys.member !== sessionKeys(prefix, { tenant, conversationId: record.conversationId }).member) {
            throw corruptRecordError(keys.record, 'it names another conversation than its key')
          }
          found.push({ record, score: Number(score), member })
        }
        if (gone.length > 0) {
          // Index entries whose session expired or was deleted are dropped as they are met.
          const removed = await roundTrip('clean the session index', index, (redis) =>
            script(redis, 'index-prune-1', index, ...gone),
          )
          offset -= Number(removed)
        }
        if (found.length > limit || entries.length < batch) break
      }
      const page = found.slice(0, limit)
      const last = page.at(-1)
      return {
        sessions: page.map((entry) => entry.record),
        cursor:
          found.length > limit && last
            ? encodeListCursor({ score: last.score, member: last.member })
            : undefined,
      }
    },

    async appendJournal(keyInput, stepInput: JournalStep, journalOptions): Promise<void> {
      const key = checkStoreKey(keyInput)
      const step = checkJournalStep(stepInput)
      const ttlMs = checkTtlMs(journalOptions?.ttlMs, defaultTtlMs)
      const keys = keysOf(key)
      const reply = await roundTrip('record the journal step', keys.journal, (redis) =>
        script(
          redis,
          'append-journal-3',
          keys.record,
          keys.lease,
          keys.journal,
          JSON.stringify(step),
          maxJournalSteps,
          maxJournalBytes,
          ttlMs,
        ),
      )
      refuseCorrupt(reply, keys, key)
      if (reply[0] === 'full') {
        throw new SandkeepError({
          code: 'JOURNAL_FULL',
          message: `The journal of this session is full (${reply[1]} steps, ${reply[2]} bytes; limits ${maxJournalSteps} steps, ${maxJournalBytes} bytes). The step was not recorded; clear the journal or raise the limits.`,
          tenant: key.tenant,
          conversationId: key.conversationId,
        })
      }
    },

    async readJournal(keyInput): Promise<JournalEntry[]> {
      const key = checkStoreKey(keyInput)
      const keys = keysOf(key)
      const entries = await roundTrip('read the journal', keys.journal, (redis) =>
        redis.lrange(keys.journal, 0, -1),
      )
      if (!Array.isArray(entries)) throw corruptRecordError(keys.journal, 'LRANGE did not answer a list', key)
      return entries.map((text) => parseJournalEntry(String(text), keys.journal))
    },

    async clearJournal(keyInput): Promise<void> {
      const key = checkStoreKey(keyInput)
      const keys = keysOf(key)
      const reply = await roundTrip('clear the journal', keys.journal, (redis) =>
        script(redis, 'clear-journal-2', keys.lease, keys.journal),
      )
      if (reply[0] === 'corrupt') throw corruptRecordError(keys.lease, 'it holds the wrong Redis type', key)
    },

    async close(): Promise<void> {
      if (closed) return
      closed = true
      if (!owned || !client) return
      const redis = client
      client = undefined
      // quit() waits for pending replies; disconnect() is the fallback when Redis is gone. The fallback's
      // timer is cleared once quit() answers: left pending, it kept a CLI alive for timeoutMs after its work.
      let timer: NodeJS.Timeout | undefined
      // A client that never got a connection has no replies to wait for: quit() would only sit out the timer.
      if (redis.status !== 'ready') {
        redis.disconnect()
        return
      }
      await Promise.race([
        redis.quit().catch(() => {}),
        new Promise((resolve) => {
          timer = setTimeout(resolve, timeoutMs)
          timer.unref()
        }),
      ])
      clearTimeout(timer)
      redis.disconnect()
    },
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

function createOwnedClient(url: string, timeoutMs: number, extra: RedisOptions | undefined): Redis {
  const redis = new Redis(url, {
    lazyConnect: true,
    // A command sent while disconnected fails at once instead of waiting in an unbounded queue and
    // running later, when its caller has already been told STORE_UNAVAILABLE.
    enableOfflineQueue: false,
    // A command in flight when the link dropped may have run; replaying it could count a turn twice.
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    // Off: with many turns in flight, auto-pipelining gathers each tick's commands into one write, so the
    // client and Redis take turns (one batch each) instead of working at the same time. Measured with 50
    // turns in flight on 2 vCPUs (bench/turns.mjs), plain writes gave 1.4-1.8x the cycles per second.
    enableAutoPipelining: false,
    retryStrategy: (times) => Math.min(50 * 2 ** times, 1000),
    ...extra,
  })
  // Connection errors surface as STORE_UNAVAILABLE on the calls; without a listener ioredis logs them.
  redis.on('error', () => {})
  return redis
}
