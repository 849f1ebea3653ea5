// Starts the branching chat server on the embedded defaults (a local-e2b host in this process, the memory
// store) with checkpoints at every turn, runs the scripted client against it and stops; with --serve, it
// serves the chat page until stopped (Ctrl-C) instead.
//   bash scripts/dev.sh node examples/chat-branching/src/main.ts
//   PORT=3000 bash scripts/dev.sh node examples/chat-branching/src/main.ts --serve   # open http://127.0.0.1:3000
import { createSessionManager } from '@sandkeep/core'
import { embeddedDefaults } from '@sandkeep-examples/shared'
import { listenOnLoopback } from '@sandkeep-examples/shared/http'
import { createScriptedChatModel } from './model.ts'
import { buildChatPage } from './page/build.ts'
import { runScenario } from './scenario.ts'
import { script } from './script.ts'
import { createBranchingChatServer } from './server.ts'

export async function start(port = Number(process.env.PORT ?? 0)) {
  const defaults = await embeddedDefaults({ redisPrefix: 'sandkeep-example-branching' })
  const sessions = createSessionManager({
    store: defaults.store,
    provider: defaults.provider,
    checkpoints: { every: 'turn', keep: 10 },
  })
  const page = await buildChatPage()
  const server = createBranchingChatServer({ sessions, model: createScriptedChatModel(script), page })
  const listening = await listenOnLoopback(server, port)
  return {
    url: listening.url,
    sessions,
    host: defaults.host,
    async close() {
      await listening.close()
      await defaults.close()
    },
  }
}

if (import.meta.url === `file://${process.argv[1]}` && process.argv.includes('--serve')) {
  const app = await start()
  console.log(`chat page at ${app.url}/ (Ctrl-C stops)`)
  const stop = () => void app.close().then(() => process.exit(0))
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const app = await start()
  try {
    const { conversations } = await runScenario(app.url)
    for (const conversationId of conversations) await app.sessions.endSession(conversationId)
  } finally {
    await app.close()
  }
}
