import { randomUUID } from 'node:crypto'
import type { SessionKey, SessionStore } from '@sandkeep/core'
import type { Redis } from 'ioredis'
import { afterEach, describe, expect, test } from 'vitest'
import { sessionKeys } from '../src/keys.js'

/** The shared local Redis the integration tests use. */
export const REDIS_URL = process.env.SANDKEEP_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/**
 * The conformance kit's test functions with its cases side by side (the integration project runs four at a
 * time, areas as well as cases): each case has its own stores and keys, and most of a case's time is a lease lapse or a TTL waited
 * out, during which the others run.
 */
export const concurrentCases = { describe: describe.concurrent, test: test.concurrent, expect, afterEach }

/** A prefix of its own for each test run, so runs never see each other's keys. */
export function randomPrefix(): string {
  return `sandkeep-test-${randomUUID().slice(0, 8)}`
}

/** Deletes every key under `prefix` (SCAN, never KEYS) on one node. */
export async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500)
    cursor = next
    for (const key of keys) await redis.del(key)
  } while (cursor !== '0')
}

/**
 * A corruptField hook for the conformance suite: writes the value's text into one field of the record hash,
 * then checks that neither the record nor the lease hash changes afterwards.
 */
export function corruptFieldWith(raw: () => Redis | import('ioredis').Cluster, prefix: string) {
  return async (_store: SessionStore, key: SessionKey, field: string, value: string | number) => {
    const keys = sessionKeys(prefix, key)
    await raw().hset(keys.record, field, String(value))
    const snapshot = async () =>
      JSON.stringify([await raw().hgetall(keys.record), await raw().hgetall(keys.lease)])
    const damaged = await snapshot()
    return { location: keys.record, isUntouched: async () => (await snapshot()) === damaged }
  }
}

/** A corruptRecord hook for the conformance suite: overwrites a counter of the record with text. */
export function corruptWith(raw: () => Redis | import('ioredis').Cluster, prefix: string) {
  return async (_store: SessionStore, key: SessionKey) => {
    const keys = sessionKeys(prefix, key)
    const before = await raw().hgetall(keys.record)
    const damaged = { ...before, turnCount: 'three, I think' }
    await raw().hset(keys.record, 'turnCount', damaged.turnCount)
    return {
      location: keys.record,
      isUntouched: async () => JSON.stringify(await raw().hgetall(keys.record)) === JSON.stringify(damaged),
    }
  }
}

/**
 * A corruptCheckpoints hook for the conformance suite: overwrites the first field of turn 1's checkpoint with
 * text no script writes, then checks that none of the session's keys changes afterwards.
 */
export function corruptCheckpointsWith(raw: () => Redis | import('ioredis').Cluster, prefix: string) {
  return async (_store: SessionStore, key: SessionKey) => {
    const keys = sessionKeys(prefix, key)
    // The first checkpoint node's first field becomes text no script writes.
    const fields = await raw().hkeys(keys.checkpoints)
    const node = fields.find((field) => /^ck_[\w-]{22}$/.test(field))
    if (!node) throw new Error('no checkpoint node to damage')
    await raw().hset(keys.checkpoints, node, 'one turn ago')
    const snapshot = async () =>
      JSON.stringify([
        await raw().hgetall(keys.record),
        await raw().hgetall(keys.lease),
        await raw().lrange(keys.journal, 0, -1),
        // Sorted: a hash past the listpack limits iterates in an order a read's rehash step may change.
        Object.entries(await raw().hgetall(keys.checkpoints)).sort(([a], [b]) => a.localeCompare(b)),
      ])
    const damaged = await snapshot()
    return { location: keys.checkpoints, isUntouched: async () => (await snapshot()) === damaged }
  }
}
