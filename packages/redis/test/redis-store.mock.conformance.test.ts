import { sessionStoreConformance } from '@sandkeep/core/test'
import RedisMock from 'ioredis-mock'
import { vi } from 'vitest'
import { createRedisSessionStore } from '../src/index.js'
import { corruptCheckpointsWith, corruptFieldWith, corruptWith, randomPrefix } from './helpers.js'

// Testing without a Redis server: the whole contract on ioredis-mock, so users can unit-test
// with createRedisSessionStore({ redis: new RedisMock() }). Before: the store refused the mock (no
// `status`); forced through, 34 of 37 cases failed with STORE_CORRUPT under the mock's Lua engine.
// A last-resort guard, not a speed check: fengari runs every script on this process's one thread, and the
// 100-holder creation case (about 220 script calls) took 64 s under four CPU hogs at load 24.
vi.setConfig({ testTimeout: 180_000 })
const mock = new RedisMock()
const prefix = randomPrefix()

sessionStoreConformance(
  'redis (ioredis-mock)',
  (settings) => createRedisSessionStore({ redis: mock, prefix, ...settings }),
  // The mock runs the Lua scripts in fengari (Lua in JavaScript), tens of ms a call under load: twice the
  // short leases (600 ms, lapse wait 1.8 s) leave a test's calls inside a lease the same slack as the
  // memory store's. Its store clock counts microseconds and never goes back (in-memory-engine.ts); when it
  // counted whole seconds a lease could end up to a second early and this took ten times (lapse wait 9 s).
  {
    corruptRecord: corruptWith(() => mock, prefix),
    corruptField: corruptFieldWith(() => mock, prefix),
    corruptCheckpoints: corruptCheckpointsWith(() => mock, prefix),
    branching: true,
    leaseScale: 2,
  },
)
