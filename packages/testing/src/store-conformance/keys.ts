// Store conformance area: session keys: tenants kept apart, hostile conversation ids stored exactly.
import { randomUUID } from 'node:crypto'
import { defineArea, LEASE, mapping, newKey, tenant } from './context.js'

/** Registers the keys area of the SessionStore conformance suite. */
export const keysConformance = defineArea('keys', ({ test, expect, open, createSession, expectCode }) => {
  test('keeps the same conversation id under two tenants as two sessions', async () => {
    const store = await open()
    const conversationId = `shared-${randomUUID()}`
    const one = newKey(conversationId)
    const two = newKey(conversationId)
    await createSession(store, one, 'sbx-one')
    const second = await store.acquire(two, { holderId: 'h', leaseMs: LEASE.long })
    expect(second.create).toBe(true)
    expect(second.record).toBeNull()
    await store.setSandbox(two, second.lease, mapping('sbx-two'))
    expect((await store.get(one))?.sandboxId).toBe('sbx-one')
    expect((await store.get(two))?.sandboxId).toBe('sbx-two')
    expect((await store.get(two))?.tenant).toBe(two.tenant)
    await store.appendJournal(one, { kind: 'command', command: 'echo one' })
    expect(await store.readJournal(two)).toEqual([])
    expect(await store.delete(one)).toBe(true)
    expect((await store.get(two))?.sandboxId).toBe('sbx-two')
    expect((await store.list(one.tenant)).sessions).toEqual([])
    expect((await store.list(two.tenant)).sessions.map((r) => r.sandboxId)).toEqual(['sbx-two'])
  })

  test('stores and finds hostile conversation ids exactly', async () => {
    const store = await open()
    const sharedTenant = tenant()
    const long = '会話🧪'.repeat(64).slice(0, 160)
    const hostile = [
      'a:b',
      '{x}',
      '*',
      '{x}:lease',
      'a:b:*:{',
      '?[abc]\\',
      '"quoted" \'single\'',
      long,
      `${'é'.repeat(255)}x`, // 511 bytes
      '🦊'.repeat(128), // 512 bytes exactly
    ]
    expect(new TextEncoder().encode(hostile.at(-1)!).byteLength).toBe(512)
    for (const [index, conversationId] of hostile.entries()) {
      const key = newKey(conversationId, sharedTenant)
      await createSession(store, key, `sbx-${index}`)
      await store.appendJournal(key, { kind: 'code', code: `x = ${index}` })
    }
    for (const [index, conversationId] of hostile.entries()) {
      const key = newKey(conversationId, sharedTenant)
      const record = await store.get(key)
      expect(record?.conversationId).toBe(conversationId)
      expect(record?.sandboxId).toBe(`sbx-${index}`)
      expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([
        { kind: 'code', code: `x = ${index}` },
      ])
    }
    // Near-misses are other sessions.
    expect(await store.get(newKey('a:b ', sharedTenant))).toBeNull()
    expect(await store.get(newKey('{x', sharedTenant))).toBeNull()
    const listed = await store.list(sharedTenant, { limit: 1000 })
    expect(listed.sessions.map((r) => r.conversationId).sort()).toEqual([...hostile].sort())
    await expectCode(store.get(newKey('🦊'.repeat(128) + 'x', sharedTenant)), 'INVALID_ARGUMENT')
  })
})
