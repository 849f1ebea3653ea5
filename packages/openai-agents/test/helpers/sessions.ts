// A local-e2b host and a session manager on the real Redis for this package's integration tests.
import { randomUUID } from 'node:crypto'
import { createSessionManager, type ResumeReport, type SessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { afterAll, beforeAll } from 'vitest'

/** What {@link useAgentSessions} gives a test file. */
export interface AgentSessionsRig {
  readonly host: LocalE2BHost
  readonly sessions: SessionManager
  /** The Redis key prefix, for a second manager (another process) on the same sessions. */
  readonly prefix: string
  /** The file's tenant. */
  readonly tenant: string
  /** Every resume report of this manager, in order. */
  readonly reports: ResumeReport[]
  /** A fresh conversation id, ended after the file's tests. */
  newConversation(): string
}

/** Starts a quiet local-e2b host and a manager (Redis, pause at turn end) before the file's tests. */
export function useAgentSessions(tenantPrefix: string): AgentSessionsRig {
  const prefix = `skoaitest:${randomUUID().slice(0, 12)}`
  const tenant = `${tenantPrefix}-${randomUUID().slice(0, 8)}`
  const conversations: string[] = []
  const reports: ResumeReport[] = []
  let host: LocalE2BHost | undefined
  let sessions: SessionManager | undefined
  beforeAll(async () => {
    host = await startLocalE2B({ logger: () => {} })
    sessions = createSessionManager({
      store: createRedisSessionStore({ prefix }),
      provider: createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }),
      onTurnEnd: 'pause',
    })
    sessions.on('resume-end', ({ report }) => reports.push(report))
  }, 120_000)
  afterAll(async () => {
    for (const conversationId of conversations) {
      await sessions?.endSession(conversationId, { tenant }).catch(() => {})
    }
    await sessions?.close()
    await host?.close()
  }, 120_000)
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useAgentSessions: the rig starts in beforeAll')
    return value
  }
  return {
    prefix,
    tenant,
    reports,
    get host() {
      return started(host)
    },
    get sessions() {
      return started(sessions)
    },
    newConversation() {
      const id = `oai-${randomUUID()}`
      conversations.push(id)
      return id
    },
  }
}
