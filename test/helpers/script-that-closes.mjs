// A child process of test/session-close.test.ts (run on the built packages; its settings are argv[2]): a
// plain script on the real Redis store that runs two turns and calls sessions.close(), then simply returns.
// It exits on its own only if close() released everything (the Redis connection, timers). Log lines go to
// stdout as JSON, one per line.
import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { createRedisSessionStore } from '@sandkeep/redis'

const config = JSON.parse(process.argv[2] ?? '{}')
const line = (level) => (message, fields) =>
  process.stdout.write(`${JSON.stringify({ level, message, fields })}\n`)
const sessions = createSessionManager({
  store: createRedisSessionStore({ redis: config.redisUrl, prefix: config.prefix }),
  provider: createE2BProvider(config.connection),
  logger: { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') },
})
await sessions.withTurn(
  config.conversationId,
  async (turn) => {
    await turn.sandbox.writeFile('/home/user/notes.txt', 'turn 1')
  },
  { tenant: config.tenant },
)
await sessions.withTurn(
  config.conversationId,
  async (turn) => {
    await turn.sandbox.readFile('/home/user/notes.txt')
  },
  { tenant: config.tenant },
)
if (config.close) {
  const result = await sessions.close()
  process.stdout.write(`${JSON.stringify({ closed: result })}\n`)
}
process.stdout.write(`${JSON.stringify({ done: true })}\n`)
