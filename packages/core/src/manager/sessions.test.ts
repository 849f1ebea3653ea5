import { describe, expect, it } from 'vitest'
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

  it('gc kills unmapped sandkeep sandboxes and deletes sessions whose sandbox is gone', async () => {
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
    expect(result.deletedSessions).toEqual([{ tenant: 'gc', conversationId: `${id}-2` }])
    expect(provider.sandboxes.has(orphan.id)).toBe(false)
    expect(provider.sandboxes.has(stranger.id)).toBe(true)
    expect(await sessions.getSession(id, { tenant: 'gc' })).not.toBeNull()
  })
})
