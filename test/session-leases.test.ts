// Issue 14, items 1–5, on the real stack (local-e2b through the E2B SDK, real Redis): overlapping first turns
// that must not stall, speculative connects and corrupt records that must leave a paused sandbox paused, a
// begin that timed out and must not leave a holder behind, and a Redis that restarts empty.

import { randomUUID } from 'node:crypto'
import {
  createMemorySessionStore,
  createSessionManager,
  type SessionManager,
  type SessionStore,
} from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { conversation, REDIS_URL } from './helpers/sessions.js'

let host: LocalE2BHost
beforeAll(async () => {
  host = await startLocalE2B({ logger: () => {}, pauseMode: 'memory' })
})
afterAll(async () => {
  await host?.close()
})

function provider() {
  return createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl })
}

function redisStore(): SessionStore {
  return createRedisSessionStore({
    redis: REDIS_URL,
    prefix: `sandkeep-i14-${randomUUID().slice(0, 8)}`,
    ttlMs: 15 * 60_000,
  })
}

describe('issue 14 item 1: overlapping first turns never stall', () => {
  // Far above what a creation takes here: a turn that waits for it (or for anything else) shows.
  const createWaitMs = 120_000
  for (const [storeName, makeStore] of [
    ['memory', () => createMemorySessionStore()],
    ['redis', redisStore],
  ] as const) {
    for (const count of [10, 20]) {
      it(`${count} concurrent first turns (${storeName} store) all end within seconds, not createWaitMs`, async () => {
        const store = makeStore()
        const sessions = createSessionManager({ store, provider: provider(), createWaitMs })
        const id = conversation()
        const started = Date.now()
        try {
          const ends = await Promise.all(
            Array.from({ length: count }, () =>
              sessions
                .withTurn(id, async (turn) => {
                  const result = await turn.sandbox.runCommand('echo hi')
                  return { outcome: turn.report?.outcome, exitCode: result.exitCode }
                })
                .then((turn) => ({ ...turn, ms: Date.now() - started })),
            ),
          )
          expect(ends.filter((end) => end.outcome === 'created')).toHaveLength(1)
          for (const end of ends) expect(end.exitCode).toBe(0)
          // Before the fix one turn in ten took 60 s (a command whose exit the host missed).
          expect(Math.max(...ends.map((end) => end.ms))).toBeLessThan(20_000)
        } finally {
          await sessions.endSession(id).catch(() => false)
          await store.close()
        }
      }, 90_000)
    }
  }
})
