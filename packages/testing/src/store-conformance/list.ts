// Store conformance area: list: most recent first, paging, what is not listed.
import { defineArea, holder, LEASE, newKey, tenant } from './context.js'

/** Registers the list area of the SessionStore conformance suite. */
export const listConformance = defineArea('list', ({ test, expect, open, createSession }) => {
  test('lists a tenant’s sessions most recently active first, paged without gaps or repeats', async () => {
    const store = await open()
    const listTenant = tenant()
    const base = Date.now() + 60_000
    const ids = ['s0', 's1', 's2', 's3', 's4']
    for (const id of ids) {
      const { lease } = await createSession(store, newKey(id, listTenant), `sbx-${id}`)
      await store.release(newKey(id, listTenant), lease, { turnEndedAt: base })
    }
    // A later turn on s1, then on s3: they become the most recent.
    for (const [offset, id] of [
      [1_000, 's1'],
      [2_000, 's3'],
    ] as const) {
      const key = newKey(id, listTenant)
      const acquired = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      await store.release(key, acquired.lease, { turnEndedAt: base + offset })
    }
    // Sessions in another tenant stay out.
    await createSession(store, newKey('s9'))

    const all = await store.list(listTenant)
    expect(all.cursor).toBeUndefined()
    expect(all.sessions.map((r) => r.conversationId).slice(0, 2)).toEqual(['s3', 's1'])
    expect(all.sessions.map((r) => r.conversationId).sort()).toEqual(ids)

    const seen: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await store.list(listTenant, { limit: 2, cursor })
      expect(page.sessions.length).toBeLessThanOrEqual(2)
      seen.push(...page.sessions.map((r) => r.conversationId))
      cursor = page.cursor
      pages += 1
    } while (cursor !== undefined && pages < 10)
    expect(pages).toBe(3)
    expect(seen).toEqual(all.sessions.map((r) => r.conversationId))

    expect(await store.list(tenant())).toEqual({ sessions: [] })
  })

  test('does not list a session that has no sandbox yet, or one deleted', async () => {
    const store = await open()
    const listTenant = tenant()
    const pending = await store.acquire(newKey('pending', listTenant), {
      holderId: 'h',
      leaseMs: LEASE.long,
    })
    await store.release(newKey('pending', listTenant), pending.lease, { turnEndedAt: Date.now() })
    await createSession(store, newKey('kept', listTenant))
    await createSession(store, newKey('gone', listTenant))
    await store.delete(newKey('gone', listTenant))
    const page = await store.list(listTenant)
    expect(page.sessions.map((r) => r.conversationId)).toEqual(['kept'])
  })
})
