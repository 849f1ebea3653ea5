import { sessionStoreConformance } from '@sandkeep/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisSessionStore, sessionKeys } from '../src/index.js'
import {
  concurrentCases,
  corruptCheckpointsWith,
  corruptFieldWith,
  corruptWith,
  randomPrefix,
} from './helpers.js'
import { SENTINEL_MASTER_NAME, startSentinel, type TestSentinel } from './redis-servers.js'

// The whole contract through Redis Sentinel: the store's own client, made from a URL plus ioredis' Sentinel
// options, finds the master by asking the Sentinel (the URL's host and port are not used).
const prefix = randomPrefix()
let sentinel: TestSentinel
let raw: Redis

const sentinelOptions = () => ({
  sentinels: [{ host: '127.0.0.1', port: sentinel.sentinelPort }],
  name: SENTINEL_MASTER_NAME,
})

beforeAll(async () => {
  sentinel = await startSentinel()
  raw = new Redis({ ...sentinelOptions(), lazyConnect: true })
}, 60_000)

afterAll(async () => {
  await raw?.quit().catch(() => {})
  await sentinel?.stop()
})

sessionStoreConformance(
  'redis (Sentinel, through ioredis options)',
  (settings) =>
    createRedisSessionStore({
      redis: 'redis://127.0.0.1:1',
      redisOptions: sentinelOptions(),
      prefix,
      commandTimeoutMs: 10_000,
      ...settings,
    }),
  {
    corruptRecord: corruptWith(() => raw, prefix),
    corruptField: corruptFieldWith(() => raw, prefix),
    corruptCheckpoints: corruptCheckpointsWith(() => raw, prefix),
    branching: true,
    testApi: concurrentCases,
  },
)

describe('Redis Sentinel', () => {
  it('writes to the master the Sentinel names', async () => {
    const store = createRedisSessionStore({
      redis: 'redis://127.0.0.1:1',
      redisOptions: sentinelOptions(),
      prefix,
    })
    const key = { tenant: 'sentinel', conversationId: 'where does it go' }
    const begun = await store.acquire(key, { holderId: 'h', leaseMs: 60_000 })
    await store.setSandbox(key, begun.lease, { sandboxId: 'sbx-s', expectedSandboxId: null, providerId: 'p' })
    await store.release(key, begun.lease, { turnEndedAt: Date.now() })
    const master = new Redis({ host: '127.0.0.1', port: sentinel.masterPort })
    try {
      expect(await master.hget(sessionKeys(prefix, key).record, 'sandboxId')).toBe('sbx-s')
    } finally {
      master.disconnect()
      await store.close()
    }
  })
})
