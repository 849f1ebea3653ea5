// The embedded defaults every example runs on, kept once here and imported as '@sandkeep-examples/shared':
// a local E2B-compatible host in this process, the E2B provider pointed at it, and the memory store (Redis
// when REDIS_URL is set). Swap in E2B cloud by dropping the host and calling createE2BProvider() with
// E2B_API_KEY in the environment.
import { createMemorySessionStore, type SandboxProvider, type SessionStore } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'

export interface Defaults {
  host: LocalE2BHost
  provider: SandboxProvider
  store: SessionStore
  close(): Promise<void>
}

export async function embeddedDefaults(options: { redisPrefix?: string } = {}): Promise<Defaults> {
  const host = await startLocalE2B({ port: 0 })
  const provider = createE2BProvider({
    apiKey: host.apiKey,
    apiUrl: host.apiUrl,
    sandboxUrl: host.sandboxUrl,
    // local-e2b's snapshots keep the files, not the memory (E2B cloud's keep both: drop this there).
    snapshots: { keepsMemory: false },
  })
  const store = process.env.REDIS_URL
    ? createRedisSessionStore({
        redis: process.env.REDIS_URL,
        prefix: options.redisPrefix ?? 'sandkeep-example',
      })
    : createMemorySessionStore()
  return {
    host,
    provider,
    store,
    async close() {
      await store.close()
      await host.close()
    },
  }
}
