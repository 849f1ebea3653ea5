// The kit's own machinery: per-test store scopes (so cases may run side by side) and withinLease's bounded
// reruns of a case whose calls outlived the lease they needed.
import { createMemorySessionStore } from '@sandkeep/core'
import type { SessionStore } from '@sandkeep/core/store'
import { describe, expect, test } from 'vitest'
import type { StoreConformanceTestApi } from '../test-api.js'
import {
  createStoreConformanceContext,
  LEASE_ATTEMPTS,
  type StoreConformanceContext,
  sleep,
} from './context.js'

/** A context on a recording runner: the bodies it registers, run by hand, and the stores it closed. */
function recordingContext() {
  const bodies = new Map<string, () => Promise<void>>()
  const afterEach: Array<() => Promise<void>> = []
  const api: StoreConformanceTestApi = {
    describe: (_name, body) => body(),
    test: (name, body) => {
      bodies.set(name, body)
    },
    expect: expect as never,
    afterEach: (hook) => {
      afterEach.push(hook)
    },
  }
  const closed: SessionStore[] = []
  const context = createStoreConformanceContext(api, () => {
    const store = createMemorySessionStore()
    const close = store.close.bind(store)
    store.close = async () => {
      closed.push(store)
      await close()
    }
    return store
  })
  return { bodies, context, closed }
}

const register = (context: StoreConformanceContext, name: string, body: () => Promise<void>) =>
  context.api.test(name, body)

describe('store conformance context', () => {
  test('reruns a case whose calls outlived the lease, then fails naming the machine', async () => {
    const { bodies, context, closed } = recordingContext()
    let runs = 0
    register(context, 'slow', async () => {
      runs += 1
      await context.open()
      await context.withinLease(() => sleep(30), 10)
    })
    await expect(bodies.get('slow')!()).rejects.toThrow(/took \d+ ms on 5 attempts.*leaseScale/)
    expect(runs).toBe(LEASE_ATTEMPTS)
    // Each attempt's store is closed before the next one starts.
    expect(closed).toHaveLength(LEASE_ATTEMPTS)
  })

  test('passes once an attempt fits in the lease, even when the outlived attempt failed', async () => {
    const { bodies, context } = recordingContext()
    let runs = 0
    register(context, 'flaky', async () => {
      runs += 1
      const value = await context.withinLease(async () => {
        if (runs < 3) {
          await sleep(30)
          throw new Error('the lease lapsed')
        }
        return 'fitted'
      }, 20)
      expect(value).toBe('fitted')
    })
    await bodies.get('flaky')!()
    expect(runs).toBe(3)
  })

  test('fails at once on a failure inside the lease, and on a failure that is no lease overrun', async () => {
    const { bodies, context } = recordingContext()
    let runs = 0
    register(context, 'wrong store', async () => {
      runs += 1
      await context.withinLease(async () => {
        throw new Error('wrong answer')
      }, 60_000)
    })
    await expect(bodies.get('wrong store')!()).rejects.toThrow('wrong answer')
    register(context, 'plain failure', async () => {
      runs += 1
      await sleep(30)
      throw new Error('plain')
    })
    await expect(bodies.get('plain failure')!()).rejects.toThrow('plain')
    expect(runs).toBe(2)
  })

  test('cases side by side close only their own stores', async () => {
    const { bodies, context, closed } = recordingContext()
    const stores: Record<string, SessionStore> = {}
    let releaseFirst: () => void = () => {}
    const firstMayEnd = new Promise<void>((resolve) => {
      releaseFirst = resolve
    })
    register(context, 'first', async () => {
      stores.first = await context.open()
      await firstMayEnd
      // The second case ended meanwhile; this case's store is still open.
      expect(closed).not.toContain(stores.first)
      await stores.first.get({ tenant: 't', conversationId: 'c' })
    })
    register(context, 'second', async () => {
      stores.second = await context.open()
    })
    const first = bodies.get('first')!()
    await bodies.get('second')!()
    expect(closed).toEqual([stores.second])
    releaseFirst()
    await first
    expect(closed).toEqual([stores.second, stores.first])
  })
})
