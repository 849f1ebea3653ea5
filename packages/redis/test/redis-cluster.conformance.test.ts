import { randomUUID } from 'node:crypto'
import { sessionStoreConformance } from '@sandkeep/testing'
import { Cluster } from 'ioredis'
import { Cluster as Cluster6 } from 'ioredis6'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisSessionStore, sessionKeys } from '../src/index.js'
import {
  concurrentCases,
  corruptCheckpointsWith,
  corruptFieldWith,
  corruptWith,
  randomPrefix,
} from './helpers.js'
import { startRedisCluster, type TestCluster } from './redis-servers.js'

// The whole contract against a real 3-master Redis Cluster started for this file, through a Cluster
// client the test owns (so the store must not close it).
const prefix = randomPrefix()
let cluster: TestCluster
let client: Cluster
// ioredis 6 is a supported peer: the same contract through an ioredis 6 Cluster client, RESP3 (its default).
let client6: Cluster6

beforeAll(async () => {
  cluster = await startRedisCluster()
  client = new Cluster(
    cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
    { redisOptions: { connectTimeout: 5_000 }, slotsRefreshTimeout: 5_000 },
  )
  client6 = new Cluster6(
    cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
    { redisOptions: { connectTimeout: 5_000 }, slotsRefreshTimeout: 5_000 },
  )
}, 120_000)

afterAll(async () => {
  await client?.quit().catch(() => {})
  await client6?.quit().catch(() => {})
  await cluster?.stop()
})

sessionStoreConformance(
  'redis (3-master Cluster)',
  (settings) => createRedisSessionStore({ redis: client, prefix, commandTimeoutMs: 10_000, ...settings }),
  {
    corruptRecord: corruptWith(() => client, prefix),
    corruptField: corruptFieldWith(() => client, prefix),
    corruptCheckpoints: corruptCheckpointsWith(() => client, prefix),
    branching: true,
    testApi: concurrentCases,
  },
)

it('talks RESP3 to the Cluster through ioredis 6 by default', async () => {
  await createRedisSessionStore({ redis: client6, prefix }).get({ tenant: 't', conversationId: 'c' })
  const hello = (await client6.nodes('master')[0]!.call('HELLO')) as unknown[]
  expect(hello[hello.indexOf('proto') + 1]).toBe(3)
})

sessionStoreConformance(
  'redis (3-master Cluster, ioredis 6, RESP3)',
  (settings) => createRedisSessionStore({ redis: client6, prefix, commandTimeoutMs: 10_000, ...settings }),
  {
    corruptRecord: corruptWith(() => client, prefix),
    corruptField: corruptFieldWith(() => client, prefix),
    corruptCheckpoints: corruptCheckpointsWith(() => client, prefix),
    branching: true,
    testApi: concurrentCases,
  },
)

describe('Redis Cluster layout', () => {
  it('keeps one session in one slot, spreads sessions over the masters, and leaves the client open', async () => {
    const store = createRedisSessionStore({ redis: client, prefix })
    const tenant = `t-${randomUUID().slice(0, 8)}`
    const slots = new Set<number>()
    const nodes = new Set<string>()
    for (let index = 0; index < 30; index += 1) {
      const key = { tenant, conversationId: `conv-${index}` }
      const begun = await store.acquire(key, { holderId: 'h', leaseMs: 60_000 })
      await store.setSandbox(key, begun.lease, {
        sandboxId: `sbx-${index}`,
        expectedSandboxId: null,
        providerId: 'p',
      })
      await store.appendJournal(key, { kind: 'command', command: 'true' })
      await store.release(key, begun.lease, { turnEndedAt: Date.now() + index })
      const keys = sessionKeys(prefix, key)
      const keySlots = await Promise.all(
        [keys.record, keys.lease, keys.journal, keys.checkpoints].map(
          (name) => client.cluster('KEYSLOT', name) as Promise<number>,
        ),
      )
      expect(new Set(keySlots).size).toBe(1)
      slots.add(keySlots[0]!)
      const owner = client.slots[keySlots[0]!]?.[0]
      if (owner) nodes.add(owner)
    }
    expect(slots.size).toBeGreaterThan(20)
    expect(nodes.size).toBe(3)
    const listed = await store.list(tenant, { limit: 10 })
    expect(listed.sessions.map((record) => record.conversationId)).toEqual(
      Array.from({ length: 10 }, (_, index) => `conv-${29 - index}`),
    )
    await store.close()
    expect(client.status).toBe('ready')
  })
})
