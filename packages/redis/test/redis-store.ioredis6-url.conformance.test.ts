import { sessionStoreConformance } from '@sandkeep/testing'
import { Redis } from 'ioredis'
import { afterAll, expect, it, vi } from 'vitest'
import { createRedisSessionStore } from '../src/index.js'
import {
  concurrentCases,
  corruptCheckpointsWith,
  corruptFieldWith,
  corruptWith,
  deletePrefix,
  REDIS_URL,
  randomPrefix,
} from './helpers.js'

// An application that installed only ioredis 6 gets a store whose own client (made
// from a URL, with the store's fail-fast options) is an ioredis 6 client, RESP3 by default. Here 'ioredis'
// resolves to ioredis 6 for the store and for this file.
vi.mock('ioredis', async () => await import('ioredis6'))

const prefix = randomPrefix()
const raw = new Redis(REDIS_URL, { lazyConnect: true })

afterAll(async () => {
  await deletePrefix(raw, prefix)
  await raw.quit()
})

it("builds the store's own client from ioredis 6", async () => {
  const { default: ioredis6 } = await import('ioredis6/package.json', { with: { type: 'json' } })
  expect(ioredis6.version).toMatch(/^6\./)
  expect(Redis).toBe((await import('ioredis6')).Redis)
  const connectionName = `sandkeep-${prefix}`
  const store = createRedisSessionStore({ redis: REDIS_URL, prefix, redisOptions: { connectionName } })
  await store.get({ tenant: 't', conversationId: 'c' })
  const clients = String(await raw.call('CLIENT', 'LIST')).split('\n')
  const own = clients.find((line) => line.includes(`name=${connectionName} `))
  await store.close()
  // RESP3 is ioredis 6's default (ioredis 5 speaks RESP2).
  expect(own).toMatch(/ resp=3(\s|$)/)
})

sessionStoreConformance(
  'redis (standalone, URL, ioredis 6)',
  (settings) => createRedisSessionStore({ redis: REDIS_URL, prefix, commandTimeoutMs: 10_000, ...settings }),
  {
    corruptRecord: corruptWith(() => raw, prefix),
    corruptField: corruptFieldWith(() => raw, prefix),
    corruptCheckpoints: corruptCheckpointsWith(() => raw, prefix),
    branching: true,
    testApi: concurrentCases,
  },
)
