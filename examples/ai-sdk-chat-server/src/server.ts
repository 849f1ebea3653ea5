// A chat endpoint on node:http. Each POST /chat is one turn of a conversation: sandkeepTurn wraps one
// streamText call, so the conversation's sandbox is resumed while the model thinks (after a turn that used
// it; otherwise at the model's first tool call) and paused once the response stream has ended (or the client
// went away): the response does not wait for the pause, and the next request of the conversation waits for
// it. The reply is the AI SDK UI message stream (SSE) that useChat reads. A long-lived Node server needs
// nothing more; a serverless function would pass `turn.ended` to its host's `waitUntil`.
import { createServer, type Server } from 'node:http'
import { sandkeepTurn } from '@sandkeep/ai-sdk'
import type { SessionManager } from '@sandkeep/core'
import { readJsonBody } from '@sandkeep-examples/shared/http'
import { type LanguageModel, type ModelMessage, stepCountIs } from 'ai'

export interface ChatServerOptions {
  sessions: SessionManager
  model: LanguageModel
  /** Model calls per turn at most. Default 8. */
  maxSteps?: number
}

const MAX_BODY = 64 * 1024

export function createChatServer(options: ChatServerOptions): Server {
  // The conversation history lives here for the example; a real server keeps it in its database.
  const histories = new Map<string, ModelMessage[]>()
  return createServer(async (request, response) => {
    if (request.method === 'GET' && request.url === '/health') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
      return
    }
    if (request.method !== 'POST' || request.url !== '/chat') {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"POST /chat"}')
      return
    }
    let body: { conversationId?: unknown; message?: unknown }
    try {
      body = (await readJsonBody(request, MAX_BODY)) as typeof body
    } catch (error) {
      response.writeHead(400, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ error: `bad request body: ${(error as Error).message}` }))
      return
    }
    const { conversationId, message } = body
    if (typeof conversationId !== 'string' || typeof message !== 'string' || !message) {
      response.writeHead(400, { 'content-type': 'application/json' })
      response.end('{"error":"send {\\"conversationId\\": string, \\"message\\": string}"}')
      return
    }
    let turn: ReturnType<typeof sandkeepTurn>
    try {
      // Bad ids are refused here, before any I/O.
      turn = sandkeepTurn({ sessions: options.sessions, conversationId })
    } catch (error) {
      response.writeHead(400, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ error: (error as Error).message }))
      return
    }
    const history = histories.get(conversationId) ?? []
    const messages: ModelMessage[] = [...history, { role: 'user', content: message }]
    const result = turn.streamText({
      model: options.model,
      messages,
      stopWhen: stepCountIs(options.maxSteps ?? 8),
      onFinish: ({ response: modelResponse }) => {
        histories.set(conversationId, [...messages, ...modelResponse.messages])
      },
    })
    await result.pipeUIMessageStreamToResponse(response)
  })
}
