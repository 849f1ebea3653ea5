import { afterEach, describe, expect, it, test } from 'vitest'
import { SandkeepError } from './errors.js'
import { createMemorySessionStore } from './memory-store.js'
import { sessionStoreConformance } from './test/session-store-conformance.js'

sessionStoreConformance('memory', (settings) => createMemorySessionStore(settings), {
  testApi: { describe, test, expect, afterEach },
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
