// A child process of test/session-branching.test.ts (run on the built packages; its settings are argv[2]): its own session manager over
// the parent's Redis prefix and local-e2b host begins the session's next turn, which carries out a pending
// rewind. Once the host has made the sandbox from the snapshot, the child says so on stdout and stalls
// before the mapping is written, so the parent can SIGKILL it at exactly that point.
import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { createRedisSessionStore } from '@sandkeep/redis'

const config = JSON.parse(process.argv[2] ?? '{}')
const store = createRedisSessionStore({ redis: config.redisUrl, prefix: config.prefix })
const provider = createE2BProvider({ ...config.connection, snapshots: { keepsMemory: false } })
const stalling = new Proxy(provider, {
  get(target, name) {
    const value = Reflect.get(target, name)
    if (typeof value !== 'function') return value
    if (name !== 'createFromSnapshot') return value.bind(target)
    return async (...args) => {
      const handle = await value.apply(target, args)
      process.stdout.write(`${JSON.stringify({ createdFromSnapshot: handle.id })}\n`)
      return new Promise(() => {})
    }
  },
})
const sessions = createSessionManager({
  store,
  provider: stalling,
  leaseMs: config.leaseMs,
  checkpoints: { every: 'turn', keep: 10 },
})
await sessions.beginTurn(config.conversationId, { tenant: config.tenant })
