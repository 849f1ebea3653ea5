// The store's Redis client: the structural `RedisClient` type, the client made from a URL, lazy connect
// with one bounded wait, scripts defined once per client (behind the in-memory engine's prelude for
// ioredis-mock), round trips mapped to SandkeepErrors, and close with its fallback timer cleared.
import { corruptRecordError, SandkeepError, storeClosed } from '@sandkeep/core/store'
import { Redis, type RedisOptions } from 'ioredis'
import { IN_MEMORY_PRELUDE, isInMemoryClient } from './in-memory-engine.js'
import { loadScripts } from './scripts.js'

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
  /** HSET of one field (the tenant snapshot ledger). */
  hset(key: string, field: string, value: string): Promise<number>
  /** HDEL. */
  hdel(key: string, ...fields: string[]): Promise<number>
  /** HVALS. */
  hvals(key: string): Promise<string[]>
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
  /**
   * A pipeline: the store sends `EXISTS key` then `WAIT replicas timeout` in one, so on a Cluster the WAIT
   * goes to that key's node (the `durability` option).
   */
  pipeline(): WaitPipeline
  /** SCAN with MATCH and COUNT (on one node). */
  scan(
    cursor: string,
    match: 'MATCH',
    pattern: string,
    count: 'COUNT',
    hint: number,
  ): Promise<[string, string[]]>
  /** On an ioredis `Cluster`: its nodes of that role (each a client of one node). */
  nodes?(role: 'master'): RedisClient[]
  /** LRANGE. */
  lrange(key: string, start: number, stop: number): Promise<unknown>
  /** QUIT: waits for pending replies, then closes. */
  quit(): Promise<unknown>
  /** Closes the connection at once. */
  disconnect(): void
}

/** The part of an ioredis pipeline the `durability` option uses. */
export interface WaitPipeline {
  exists(key: string): WaitPipeline
  wait(replicas: number, timeoutMs: number): WaitPipeline
  exec(): Promise<Array<[Error | null, unknown]> | null>
}

/** Whether `value` can serve as the store's client (an ioredis client, or ioredis-mock). */
export function isRedisClient(value: unknown): value is RedisClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { defineCommand?: unknown }).defineCommand === 'function' &&
    (typeof (value as { status?: unknown }).status === 'string' || isInMemoryClient(value))
  )
}

const clientsWithScripts = new WeakSet<object>()

/** STORE_UNAVAILABLE: Redis could not do `what`. */
function unavailable(what: string, detail: string, cause?: unknown): SandkeepError {
  return new SandkeepError({
    code: 'STORE_UNAVAILABLE',
    retryable: true,
    cause,
    message: `Redis could not ${what}: ${detail}. Check that Redis is running and reachable (the redis option or REDIS_URL); nothing was assumed about the session.`,
  })
}

/** A failure of a round trip as a SandkeepError: WRONGTYPE is a corrupt key, anything else unavailability. */
function toStoreError(error: unknown, what: string, where: string): SandkeepError {
  if (SandkeepError.isInstance(error)) return error
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 200)
  if (message.includes('WRONGTYPE')) {
    return corruptRecordError(where, 'a key of the session holds the wrong Redis type', undefined, error)
  }
  return unavailable(what, message, error)
}

/** The connection of one store: a URL it owns (made on first use) or a client passed in. */
export class RedisConnection {
  /** True when the store made the client from a URL (and so closes it). */
  readonly owned: boolean
  private client: RedisClient | undefined
  private closed = false
  // Calls that arrive while the client connects share one wait (and one 'ready' listener). It settles with
  // whether the client became ready, so that each caller's error names its own call: a begin that joined
  // an end's wait must not say "could not end the turn".
  private pendingReady: Promise<boolean> | undefined

  constructor(
    private readonly source: string | RedisClient,
    private readonly timeoutMs: number,
    private readonly redisOptions: RedisOptions | undefined,
  ) {
    this.owned = typeof source === 'string'
  }

  /** Whether `close` was called. */
  get isClosed(): boolean {
    return this.closed
  }

  /** The client, made on first use, with the store's scripts defined on it. */
  get(): RedisClient {
    const source = this.source
    this.client ??=
      typeof source === 'string' ? createOwnedClient(source, this.timeoutMs, this.redisOptions) : source
    const client = this.client
    if (!clientsWithScripts.has(client)) {
      const prelude = isInMemoryClient(client) ? IN_MEMORY_PRELUDE : ''
      for (const script of loadScripts().values()) {
        client.defineCommand(script.command, { numberOfKeys: script.numberOfKeys, lua: prelude + script.lua })
      }
      clientsWithScripts.add(client)
    }
    return client
  }

  /** Resolves when the client can take commands; bounded by the timeout. */
  private whenReady(redis: RedisClient, what: string): Promise<void> | undefined {
    if (redis.status === 'ready' || redis.status === undefined) return undefined
    if (redis.status === 'end' && !this.owned) {
      return Promise.reject(unavailable(what, 'the client passed to the store was closed by its owner'))
    }
    if (!this.pendingReady) {
      if (redis.status === 'wait' || redis.status === 'end') redis.connect().catch(() => {})
      this.pendingReady = new Promise<boolean>((resolve) => {
        const onReady = () => {
          clearTimeout(timer)
          this.pendingReady = undefined
          resolve(true)
        }
        const timer = setTimeout(() => {
          redis.off('ready', onReady)
          this.pendingReady = undefined
          resolve(false)
        }, this.timeoutMs)
        redis.once('ready', onReady)
      })
    }
    return this.pendingReady.then((ready) => {
      if (!ready) throw unavailable(what, `no connection within ${this.timeoutMs} ms`)
    })
  }

  /**
   * Runs one round trip with the bounded wait, mapping failures to SandkeepErrors. `what` completes
   * "Redis could not ..."; `where` is the key a WRONGTYPE is reported on.
   */
  async roundTrip<T>(what: string, where: string, run: (redis: RedisClient) => Promise<T>): Promise<T> {
    if (this.closed) throw storeClosed('Redis')
    let timer: NodeJS.Timeout | undefined
    try {
      const redis = this.get()
      const ready = this.whenReady(redis, what)
      if (ready) await ready
      const pending = run(redis)
      // A client the store made has ioredis' own commandTimeout; one passed in may not, so it gets a timer.
      if (this.owned) return await pending
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(unavailable(what, `no answer within ${this.timeoutMs} ms`)),
          this.timeoutMs,
        )
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

  /** Closes the connection if the store owns it; later calls are refused. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (!this.owned || !this.client) return
    const redis = this.client
    this.client = undefined
    // A client that never got a connection has no replies to wait for: quit() would only sit out the timer.
    if (redis.status !== 'ready') {
      redis.disconnect()
      return
    }
    // quit() waits for pending replies; disconnect() is the fallback when Redis is gone. The fallback's
    // timer is cleared once quit() answers: left pending, it kept a CLI alive for timeoutMs after its work.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      redis.quit().catch(() => {}),
      new Promise((resolve) => {
        timer = setTimeout(resolve, this.timeoutMs)
        timer.unref()
      }),
    ])
    clearTimeout(timer)
    redis.disconnect()
  }
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
