import { sessionStoreConformance } from '@sandkeep/testing'
import { Redis } from 'ioredis'
import { afterAll } from 'vitest'
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

// The whole contract against the real local Redis, with a client the store creates from a URL.
const prefix = randomPrefix()
const raw = new Redis(REDIS_URL, { lazyConnect: true })

afterAll(async () => {
  await deletePrefix(raw, prefix)
  await raw.quit()
})

sessionStoreConformance(
  'redis (standalone, URL)',
  (settings) => createRedisSessionStore({ redis: REDIS_URL, prefix, commandTimeoutMs: 10_000, ...settings }),
  {
    corruptRecord: corruptWith(() => raw, prefix),
    corruptField: corruptFieldWith(() => raw, prefix),
    corruptCheckpoints: corruptCheckpointsWith(() => raw, prefix),
    branching: true,
    testApi: concurrentCases,
  },
)
