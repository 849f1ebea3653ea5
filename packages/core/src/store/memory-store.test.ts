import { isDeepStrictEqual } from 'node:util'
import type { CorruptibleRecordField } from '@sandkeep/testing'
import { sessionStoreConformance } from '@sandkeep/testing'
import { afterEach, describe, expect, it, test } from 'vitest'
import { SandkeepError } from '../contract/errors.js'
import type { SessionStore } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import { memoryEntries } from './memory-entry.js'
import { createMemorySessionStore } from './memory-store.js'

/** Damages the raw record of a memory session (as a bug would) and snapshots the whole entry after it. */
function damageMemoryRecord(store: SessionStore, key: SessionKey, damage: (record: object) => void) {
  const entry = memoryEntries.get(store)?.(key)
  if (!entry?.record) throw new Error('no memory record to damage')
  damage(entry.record)
  const snapshot = () => structuredClone({ ...entry, holders: [...entry.holders] })
  const damaged = snapshot()
  return Promise.resolve({
    location: `memory session ${key.tenant}:${entry.member}`,
    isUntouched: async () => isDeepStrictEqual(snapshot(), damaged),
  })
}

// The cases run side by side (each its own stores and keys): most of their time is lease lapses and TTLs
// waited out in real time.
sessionStoreConformance('memory', (settings) => createMemorySessionStore(settings), {
  testApi: { describe: describe.concurrent, test: test.concurrent, expect, afterEach },
  corruptRecord: (store, key) =>
    damageMemoryRecord(store, key, (record) => Object.assign(record, { turnCount: 'three, I think' })),
  corruptField: (store, key, field: CorruptibleRecordField, value) =>
    damageMemoryRecord(store, key, (record) => Object.assign(record, { [field]: value })),
  branching: true,
  corruptCheckpoints: (store, key) => {
    const checkpoint = memoryEntries.get(store)?.(key)?.checkpoints[0]
    if (!checkpoint) throw new Error('no memory checkpoint to damage')
    Object.assign(checkpoint, { journalLength: -1 })
    return damageMemoryRecord(store, key, () => {})
  },
})

describe('createMemorySessionStore', () => {
  it('rejects unknown and malformed options', () => {
    expect(() => createMemorySessionStore({ ttl: 5 } as never)).toThrow(/unknown option "ttl"/)
    for (const options of [{ ttlMs: 0 }, { maxJournalSteps: -1 }, { maxJournalBytes: 1.5 }, { now: 5 }]) {
      let caught: unknown
      try {
        createMemorySessionStore(options as never)
      } catch (error) {
        caught = error
      }
      expect(SandkeepError.hasCode(caught, 'INVALID_ARGUMENT')).toBe(true)
    }
  })

  it('uses the injected clock for leases and TTL', async () => {
    let now = 1_000_000
    const store = createMemorySessionStore({ now: () => now, ttlMs: 10_000 })
    const key = { tenant: 'default', conversationId: 'c' }
    const first = await store.acquire(key, { holderId: 'a', leaseMs: 100 })
    expect(first.lease.expiresAt).toBe(1_000_100)
    now += 100
    const second = await store.acquire(key, { holderId: 'b', leaseMs: 100 })
    expect(second.holders).toBe(1)
    expect(second.create).toBe(true)
    await store.setSandbox(key, second.lease, { sandboxId: 's', expectedSandboxId: null, providerId: 'p' })
    now += 9_999
    expect((await store.get(key))?.sandboxId).toBe('s')
    now += 10_001
    expect(await store.get(key)).toBeNull()
  })

  it('hands out copies: changing a returned record does not change the store', async () => {
    const store = createMemorySessionStore()
    const key = { tenant: 'default', conversationId: 'c' }
    const { lease } = await store.acquire(key, { holderId: 'a', leaseMs: 1000 })
    const record = await store.setSandbox(key, lease, {
      sandboxId: 's',
      expectedSandboxId: null,
      providerId: 'p',
    })
    record.sandboxId = 'changed'
    expect((await store.get(key))?.sandboxId).toBe('s')
  })
})
