import { createSessionManager } from '@sandkeep/core'
import { createMockProvider } from '@sandkeep/testing'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { createRedisSessionStore } from '../src/index.js'
import { deletePrefix, REDIS_URL, randomPrefix } from './helpers.js'

// The `durability` option (issue 30.9) against the local Redis, which has no replica: every WAIT answers 0
// acknowledgements, so each destructive step must be left undone after its write.
const prefix = randomPrefix()
const raw = new Redis(REDIS_URL, { lazyConnect: true })

afterAll(async () => {
  await deletePrefix(raw, prefix)
  await raw.quit()
})

describe('durability', () => {
  it('a restore whose write no replica acknowledged kills nothing and says so', async () => {
    const store = createRedisSessionStore({
      redis: REDIS_URL,
      prefix,
      commandTimeoutMs: 5000,
      durability: { replicas: 1, timeoutMs: 50 },
    })
    const provider = createMockProvider()
    const sessions = createSessionManager({ store, provider, checkpoints: { every: 'turn', keep: 10 } })
    const id = `durable-${Math.random().toString(36).slice(2)}`
    const turn = await sessions.beginTurn(id)
    await turn.sandbox.runCode('x = 1')
    const sandboxId = turn.report!.sandboxId
    const checkpoint = (await turn.end()).checkpoint!
    await expect(sessions.restore(id, { checkpoint: checkpoint.id })).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringMatching(/only 0 of 1 replica/),
    })
    expect(provider.callsOf('kill').map((call) => call.sandboxId)).not.toContain(sandboxId)
    await store.close()
  })

  it('refuses a WAIT timeout the round trip would cut short, and bad shapes', () => {
    for (const durability of [
      { replicas: 1, timeoutMs: 2000 },
      { replicas: 0, timeoutMs: 10 },
      { replicas: 1 },
      { replicas: 1, timeoutMs: 10, surprise: true },
    ]) {
      expect(() => createRedisSessionStore({ redis: REDIS_URL, prefix, durability } as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      )
    }
  })
})
