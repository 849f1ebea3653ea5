import { sessionStoreConformance } from '@sandkeep/testing'
import { Redis } from 'ioredis'
import { Redis as Redis6, type RedisOptions as RedisOptions6 } from 'ioredis6'
import { afterAll, describe, expect, it } from 'vitest'
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

// ioredis 6 is a supported peer: the whole contract against the real local Redis with clients of ioredis 6,
// whose default protocol is RESP3. Each protocol setting gets its own run: RESP3 with the default 'legacy'
// reply mapping, RESP3 with replyMapping 'resp3' (maps as objects, pairs for WITHSCORES), and RESP2.
const prefix = randomPrefix()
const raw = new Redis(REDIS_URL, { lazyConnect: true })
const clients: Redis6[] = []

afterAll(async () => {
  await deletePrefix(raw, prefix)
  await raw.quit()
  await Promise.all(clients.map((client) => client.quit().catch(() => {})))
})

const settingsOf: Array<[string, RedisOptions6]> = [
  ['RESP3 (default)', {}],
  ['RESP3, replyMapping resp3', { protocol: 3, replyMapping: 'resp3' }],
  ['RESP2', { protocol: 2 }],
]

for (const [name, protocol] of settingsOf) {
  const client = new Redis6(REDIS_URL, { lazyConnect: true, ...protocol })
  clients.push(client)

  describe(`ioredis 6, ${name}`, () => {
    it('speaks the protocol it was asked for', async () => {
      await client.connect().catch(() => {})
      const hello = (await client.call('HELLO')) as unknown
      // HELLO answers a map: an object under replyMapping resp3, a flat list otherwise.
      const fields = Array.isArray(hello)
        ? Object.fromEntries(
            Array.from({ length: hello.length / 2 }, (_, i) => [hello[2 * i], hello[2 * i + 1]]),
          )
        : (hello as Record<string, unknown>)
      expect(Number(fields.proto)).toBe(protocol.protocol ?? 3)
    })
  })

  sessionStoreConformance(
    `redis (ioredis 6, ${name})`,
    (settings) => createRedisSessionStore({ redis: client, prefix, commandTimeoutMs: 10_000, ...settings }),
    {
      corruptRecord: corruptWith(() => raw, prefix),
      corruptField: corruptFieldWith(() => raw, prefix),
      corruptCheckpoints: corruptCheckpointsWith(() => raw, prefix),
      branching: true,
      testApi: concurrentCases,
    },
  )
}
