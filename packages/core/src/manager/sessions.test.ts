import { describe, expect, it, vi } from 'vitest'
import { createMemorySessionStore } from '../store/memory-store.js'
import { setup } from './manager.test-support.js'

describe('createSessionManager: sessions', () => {
  it('endSession kills and deletes; getSession/listSessions read the store', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {}, { tenant: 't1' })
    expect((await sessions.listSessions({ tenant: 't1' })).sessions.map((s) => s.conversationId)).toEqual([
      id,
    ])
    expect(await sessions.endSession(id, { tenant: 't1' })).toBe(true)
    expect(provider.sandboxes.size).toBe(0)
    expect(await sessions.getSession(id, { tenant: 't1' })).toBeNull()
    expect(await sessions.endSession(id, { tenant: 't1' })).toBe(false)
  })

  it('gc kills unmapped sandkeep sandboxes, keeps sessions whose sandbox is gone, deletes them on request', async () => {
    const { provider, sessions, id } = setup({ createWaitMs: 0, leaseMs: 300 })
    await sessions.withTurn(id, async () => {}, { tenant: 'gc' })
    await sessions.withTurn(`${id}-2`, async () => {}, { tenant: 'gc' })
    const orphan = await provider.create({ metadata: { 'sandkeep.tenant': 'gc' } })
    const stranger = await provider.create({ metadata: { owner: 'someone else' } })
    const gone = (await sessions.getSession(`${id}-2`, { tenant: 'gc' }))?.sandboxId ?? ''
    provider.expire(gone)
    orphan.native.startedAt = new Date(Date.now() - 60_000)
    const dry = await sessions.gc({ tenant: 'gc', dryRun: true })
    expect(dry.killedSandboxes).toEqual([orphan.id])
    expect(provider.sandboxes.has(orphan.id)).toBe(true)
    const result = await sessions.gc({ tenant: 'gc' })
    expect(result.killedSandboxes).toEqual([orphan.id])
    expect(result.keptSessions).toEqual([{ tenant: 'gc', conversationId: `${id}-2` }])
    expect(result.deletedSessions).toEqual([])
    expect(await sessions.getSession(`${id}-2`, { tenant: 'gc' })).not.toBeNull()
    expect(provider.sandboxes.has(orphan.id)).toBe(false)
    expect(provider.sandboxes.has(stranger.id)).toBe(true)
    expect(await sessions.getSession(id, { tenant: 'gc' })).not.toBeNull()
    const deleted = await sessions.gc({ tenant: 'gc', deleteSessions: true })
    expect(deleted).toMatchObject({
      keptSessions: [],
      deletedSessions: [{ tenant: 'gc', conversationId: `${id}-2` }],
    })
    expect(await sessions.getSession(`${id}-2`, { tenant: 'gc' })).toBeNull()
    expect(await sessions.getSession(id, { tenant: 'gc' })).not.toBeNull()
  })

  it('gc refuses unknown or mistyped options before any call', async () => {
    const { provider, sessions } = setup()
    await expect(sessions.gc({ deleteSession: true } as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(sessions.gc({ deleteSessions: 'yes' } as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    expect(provider.calls).toEqual([])
  })

  it("gc ages sandboxes on the store's clock, not this process's", async () => {
    const storeNow = Date.now()
    const { provider, sessions } = setup({ store: createMemorySessionStore({ now: () => storeNow }) })
    const creating = await provider.create({ metadata: { 'sandkeep.tenant': 'clock' } })
    creating.native.startedAt = new Date(storeNow - 1000)
    // This process's clock is two hours ahead; the store's says the sandbox is a second old.
    vi.useFakeTimers({ toFake: ['Date'], now: storeNow + 2 * 3600_000 })
    try {
      expect((await sessions.gc({ tenant: 'clock' })).killedSandboxes).toEqual([])
    } finally {
      vi.useRealTimers()
    }
    expect(provider.sandboxes.has(creating.id)).toBe(true)
  })
})
