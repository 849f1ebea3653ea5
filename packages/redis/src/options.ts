// The options of createRedisSessionStore, checked before any I/O, and what the store runs on from them.
import { checkStoreLimits, invalidArgument, type StoreLimits, validateInteger } from '@sandkeep/core/store'
import type { RedisOptions } from 'ioredis'
import { isRedisClient, type RedisClient, RedisConnection } from './connection.js'
import { checkPrefix } from './keys.js'

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
  /**
   * Wait for replicas before the session manager's destructive steps. With `{ replicas, timeoutMs }`, the
   * writes that precede a destructive step (a restore or rewind before the old sandbox is killed, a turn end
   * or mid-turn checkpoint that pruned checkpoints before their snapshots are deleted, a session's delete
   * before its sandbox and snapshots go) are followed by Redis `WAIT replicas timeoutMs` on the same
   * connection (on a Cluster, on the session's node); fewer acknowledgements than `replicas` throws
   * STORE_UNAVAILABLE, and the caller leaves the sandbox and snapshots alone (gc removes them later, once
   * no session refers to them). `WAIT` narrows what an asynchronous failover can lose, not to nothing: a
   * write acknowledged by a replica that is not the one promoted can still be lost (see the README).
   * `timeoutMs` must be below `commandTimeoutMs`. Default: no waiting.
   */
  durability?: { replicas: number; timeoutMs: number }
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
  'durability',
]

/** What the store runs on, from its checked options. */
export interface RedisStoreSettings {
  limits: StoreLimits
  prefix: string
  /** On a Cluster each script stays in one slot, so the tenant index cannot share a script with a session. */
  singleSlot: boolean
  /** Replicas to wait for before destructive steps; `null`: none. */
  durability: { replicas: number; timeoutMs: number } | null
  connection: RedisConnection
}

export function checkOptions(options: RedisSessionStoreOptions): RedisStoreSettings {
  const limits = checkStoreLimits('createRedisSessionStore', options, OPTION_NAMES)
  const source = options.redis ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
  if (typeof source === 'string' ? !/^rediss?:\/\//.test(source) : !isRedisClient(source)) {
    throw invalidArgument(
      'redis',
      'must be a redis:// or rediss:// URL, or an ioredis Redis or Cluster client.',
    )
  }
  const prefix = checkPrefix(options.prefix ?? 'sandkeep')
  const timeoutMs =
    options.commandTimeoutMs === undefined
      ? 2000
      : validateInteger('commandTimeoutMs', options.commandTimeoutMs, 1, 600_000)
  const { redisOptions, cluster } = options
  if (redisOptions !== undefined && (typeof redisOptions !== 'object' || redisOptions === null)) {
    throw invalidArgument('redisOptions', 'must be an object of ioredis options.')
  }
  if (cluster !== undefined && typeof cluster !== 'boolean') {
    throw invalidArgument('cluster', 'must be true or false.')
  }
  return {
    limits,
    prefix,
    durability: checkDurability(options.durability, timeoutMs),
    singleSlot: cluster ?? (typeof source !== 'string' && source.isCluster === true),
    connection: new RedisConnection(source, timeoutMs, redisOptions),
  }
}

function checkDurability(
  value: RedisSessionStoreOptions['durability'],
  commandTimeoutMs: number,
): RedisStoreSettings['durability'] {
  if (value === undefined) return null
  if (typeof value !== 'object' || value === null) {
    throw invalidArgument('durability', 'must be { replicas, timeoutMs }.')
  }
  const unknown = Object.keys(value).find((name) => name !== 'replicas' && name !== 'timeoutMs')
  if (unknown !== undefined) throw invalidArgument('durability', `has an unknown option "${unknown}".`)
  const replicas = validateInteger('durability.replicas', value.replicas, 1, 100)
  const timeoutMs = validateInteger('durability.timeoutMs', value.timeoutMs, 1, 600_000)
  if (timeoutMs >= commandTimeoutMs) {
    throw invalidArgument(
      'durability.timeoutMs',
      `must be below commandTimeoutMs (${commandTimeoutMs}), or the round trip gives up before WAIT answers.`,
    )
  }
  return { replicas, timeoutMs }
}
