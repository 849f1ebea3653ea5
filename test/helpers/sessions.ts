// Shared set-up for the cross-package session tests: a real local-e2b host driven through the real E2B SDK
// (via @sandkeep/e2b), and the real Redis store on 127.0.0.1:6379 under a random prefix.
import { randomInt, randomUUID } from 'node:crypto'
import {
  createSessionManager,
  portCheck,
  processCheck,
  type SandboxHandle,
  type SessionKey,
  type SessionManager,
  type SessionManagerOptions,
  type SessionStore,
} from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, type LocalE2BOptions, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { afterAll, beforeAll } from 'vitest'

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

export interface SessionRig {
  host: LocalE2BHost
  store: SessionStore
  /** The Redis store's key prefix (random per rig), for a test that reads the keys or a child that joins. */
  prefix: string
  sessions: SessionManager
  /** A fresh tenant for this rig, so parallel test files never meet. */
  tenant: string
  close(): Promise<void>
}

export async function startRig(
  hostOptions: LocalE2BOptions,
  managerOptions: Omit<Partial<SessionManagerOptions>, 'store' | 'provider'> = {},
): Promise<SessionRig> {
  const host = await startLocalE2B({ logger: () => {}, ...hostOptions })
  const prefix = `sandkeep-it-${randomUUID().slice(0, 8)}`
  const store = createRedisSessionStore({
    redis: REDIS_URL,
    prefix,
    // Leftovers of a crashed run expire on their own.
    ttlMs: 15 * 60_000,
  })
  const provider = createE2BProvider({
    apiKey: host.apiKey,
    apiUrl: host.apiUrl,
    sandboxUrl: host.sandboxUrl,
    // local-e2b's snapshots keep the files only.
    snapshots: { keepsMemory: false },
  })
  const sessions = createSessionManager({
    store,
    provider,
    ttlMs: 15 * 60_000,
    retry: { retries: 4, minTimeoutMs: 20, maxTimeoutMs: 200 },
    ...managerOptions,
  })
  const tenant = `it-${randomUUID().slice(0, 8)}`
  return {
    host,
    store,
    prefix,
    sessions,
    tenant,
    async close() {
      const page = await store.list(tenant).catch(() => ({ sessions: [] }))
      for (const session of page.sessions) {
        await sessions.endSession(session.conversationId, { tenant }).catch(() => false)
      }
      await store.close()
      await host.close()
    },
  }
}

/** Starts a rig before the enclosing describe block's tests and closes it after them; call the getter in tests. */
export function useRig(
  hostOptions: LocalE2BOptions,
  managerOptions: Omit<Partial<SessionManagerOptions>, 'store' | 'provider'> = {},
): () => SessionRig {
  let rig: SessionRig | undefined
  beforeAll(async () => {
    rig = await startRig(hostOptions, managerOptions)
  })
  afterAll(async () => {
    await rig?.close()
  })
  return () => rig!
}

/** The background HTTP server turn 1 starts, on a fresh port, and the checks that keep it up and answering. */
export function webServer(): {
  port: number
  command: string
  healthChecks: NonNullable<SessionManagerOptions['healthChecks']>
} {
  const port = testPort()
  const command = serverCommand(port)
  return {
    port,
    command,
    healthChecks: [
      processCheck({ name: 'web', command }),
      portCheck({ name: 'web-port', port, path: '/', timeoutMs: 15_000 }),
    ],
  }
}

/** Makes `key`'s record point at `sandboxId` (as a bug or tampering would), for a session the test invents. */
export async function mapToSandbox(store: SessionStore, key: SessionKey, sandboxId: string): Promise<void> {
  const acquired = await store.acquire(key, { holderId: 'tamper', leaseMs: 5000 })
  await store.setSandbox(key, acquired.lease, { sandboxId, expectedSandboxId: null, providerId: 'e2b' })
  await store.release(key, acquired.lease, { turnEndedAt: Date.now() })
}

/** A port for a test server inside a sandbox (random: without bubblewrap sandboxes share the host's ports). */
export function testPort(): number {
  return randomInt(20_000, 40_000)
}

/** The background HTTP server turn 1 starts. */
export function serverCommand(port: number): string {
  return `python3 -m http.server ${port} --bind 127.0.0.1 --directory /home/user`
}

/** True when the port answers HTTP from inside the sandbox. */
export async function answers(sandbox: SandboxHandle, port: number): Promise<boolean> {
  const result = await sandbox.runCommand(
    `exec 3<>/dev/tcp/127.0.0.1/${port} || exit 1; printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3; read -r -t 5 line <&3; echo "$line"`,
  )
  return result.exitCode === 0 && result.stdout.startsWith('HTTP/')
}

/** Waits until the port answers (a server just started needs a moment). */
export async function waitForServer(sandbox: SandboxHandle, port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await answers(sandbox, port))) {
    if (Date.now() > deadline) throw new Error(`nothing answers on port ${port} after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

export function conversation(): string {
  return `conv-${randomUUID()}`
}
