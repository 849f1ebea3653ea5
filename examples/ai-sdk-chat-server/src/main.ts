// Starts the chat server on the embedded defaults with the scripted model replaying the CLI's default
// transcript (swap `model` for any AI SDK model, e.g. openai('gpt-5'), to chat for real).
//   bash scripts/dev.sh node examples/ai-sdk-chat-server/src/main.ts    then point useChat at http://localhost:3000/api/chat
import { createSessionManager } from '@sandkeep/core'
import { embeddedDefaults } from '@sandkeep-examples/shared'
import { listenOnLoopback } from '@sandkeep-examples/shared/http'
import { createScriptedModel, defaultTranscriptPath, loadTranscript } from 'sandkeep'
import { createChatServer } from './server.ts'

export async function start(port = Number(process.env.PORT ?? 3000)) {
  const defaults = await embeddedDefaults()
  const sessions = createSessionManager({ store: defaults.store, provider: defaults.provider })
  const model = createScriptedModel(await loadTranscript(defaultTranscriptPath))
  const listening = await listenOnLoopback(createChatServer({ sessions, model }), port)
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

if (import.meta.url === `file://${process.argv[1]}`) {
  const app = await start()
  console.log(`chat server on ${app.url}; each POST /api/chat (useChat's { id, messages }) is one turn`)
  process.on('SIGINT', () => void app.close().then(() => process.exit(0)))
}
