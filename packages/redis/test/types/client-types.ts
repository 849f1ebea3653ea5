// Type-level test, checked by `pnpm typecheck` (tsconfig.test.json), never run: ioredis 6 is a supported
// peer, so an ioredis 5 or 6 Redis or Cluster (and an ioredis-mock client) must be accepted by
// createRedisSessionStore. With the store's nominal `Redis | Cluster` of its own ioredis 5, the ioredis 6
// lines failed with TS2322.
import { Cluster as Cluster5, Redis as Redis5 } from 'ioredis'
import RedisMock from 'ioredis-mock'
import { Cluster as Cluster6, Redis as Redis6 } from 'ioredis6'
import { createRedisSessionStore, type RedisClient } from '../../src/index.js'

export function acceptsEveryMajor(): void {
  createRedisSessionStore({ redis: new Redis5({ lazyConnect: true }) })
  createRedisSessionStore({ redis: new Cluster5([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true }) })
  createRedisSessionStore({ redis: new Redis6({ lazyConnect: true }) })
  createRedisSessionStore({ redis: new Redis6({ lazyConnect: true, protocol: 2 }) })
  createRedisSessionStore({ redis: new Redis6({ lazyConnect: true, protocol: 3, replyMapping: 'resp3' }) })
  createRedisSessionStore({ redis: new Cluster6([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true }) })
  // The README's way of unit-testing without a Redis server.
  createRedisSessionStore({ redis: new RedisMock() })
  const clients: RedisClient[] = [new Redis5(), new Redis6()]
  void clients
}

export function refusesWhatIsNotAClient(): void {
  // @ts-expect-error an object without the client's methods is not a RedisClient
  createRedisSessionStore({ redis: { status: 'ready' } })
  // @ts-expect-error nor is a number
  createRedisSessionStore({ redis: 6379 })
}
