// How many sandbox round trips a resume's checks cost one after the other, on the real stack (Redis, the
// unmodified E2B SDK, a local-e2b host): every call goes through a proxy that logs it and holds it back as a
// network would, so calls made side by side and calls made one after the other can be told apart.
import { randomUUID } from 'node:crypto'
import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RequestLog, sequentialRoundTrips, startRequestLog } from './helpers/request-log.js'
import { conversation, REDIS_URL, waitForServer, webServer } from './helpers/sessions.js'

describe('the checks of a resume where nothing was lost', () => {
  let host: LocalE2BHost
  let log: RequestLog
  const tenant = `rt-${randomUUID().slice(0, 8)}`
  const store = createRedisSessionStore({
    redis: REDIS_URL,
    prefix: `sandkeep-it-${randomUUID().slice(0, 8)}`,
  })
  const web = webServer()

  beforeAll(async () => {
    host = await startLocalE2B({ logger: () => {}, pauseMode: 'memory' })
    log = await startRequestLog(host.apiUrl, { delayMs: 40 })
  })
  afterAll(async () => {
    await store.close()
    await log?.close()
    await host?.close()
  })

  it('cost one sequential sandbox round trip: built-in probes, a process check and a port check', async () => {
    const sessions = createSessionManager({
      store,
      provider: createE2BProvider({ apiKey: host.apiKey, apiUrl: log.url, sandboxUrl: log.url }),
      healthChecks: web.healthChecks,
    })
    const id = conversation()
    try {
      await sessions.withTurn(
        id,
        async (turn) => {
          await turn.sandbox.runCode('state = 1')
          await turn.sandbox.startProcess(web.command)
          await waitForServer(turn.sandbox, web.port)
        },
        { tenant },
      )
      const from = log.requests.length
      const turn = await sessions.beginTurn(id, { tenant })
      const during = log.requests.slice(from)
      await turn.end()
      expect(turn.report).toMatchObject({ outcome: 'resumed', stateLost: false })
      expect(Object.fromEntries(turn.report!.checks.map((c) => [c.name, c.status]))).toEqual({
        memory: 'passed',
        filesystem: 'passed',
        processes: 'passed',
        web: 'passed',
        'web-port': 'passed',
      })
      // The connect (control plane), then the sandbox calls of the checks.
      const connect = during.filter((r) => r.sandboxId === undefined && r.path.includes('/connect'))
      expect(connect).toHaveLength(1)
      const checks = during.filter((r) => r.sandboxId !== undefined && r.startedAt >= connect[0]!.endedAt)
      expect(checks.length).toBeGreaterThanOrEqual(2)
      expect(sequentialRoundTrips(checks)).toBe(1)
    } finally {
      await sessions.endSession(id, { tenant }).catch(() => false)
    }
  }, 120_000)
})
