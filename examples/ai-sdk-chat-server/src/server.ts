// A chat endpoint on node:http that speaks what the AI SDK's useChat sends and reads. Each POST /api/chat
// ({ id, messages, trigger?, messageId? }, the chat's whole history) is one turn of conversation `id`:
// sandkeepTurn wraps one streamText call, so the conversation's sandbox is resumed while the model thinks
// (after a turn that used it; otherwise at the model's first tool call) and paused once the response stream
// has ended (or the client went away): the response does not wait for the pause, and the next request of the
// conversation waits for it. The reply is the UI message stream (SSE) that useChat reads. A long-lived Node
// server needs nothing more; a serverless function would pass `turn.ended` to its host's `waitUntil`.
//
// The sandbox goes forward only: this server keeps no checkpoints, so it refuses a regenerate (the sandbox
// still holds what the discarded answer did). examples/chat-branching rewinds the sandbox for regenerates
// and edits.
import { createServer, type Server, type ServerResponse } from 'node:http'
import { sandkeepTurn } from '@sandkeep/ai-sdk'
import { SandkeepError, type SessionManager } from '@sandkeep/core'
import { readJsonBody } from '@sandkeep-examples/shared/http'
import {
  convertToModelMessages,
  type LanguageModel,
  stepCountIs,
  type UIMessage,
  validateUIMessages,
} from 'ai'

export interface ChatServerOptions {
  sessions: SessionManager
  model: LanguageModel
  /** Model calls per turn at most. Default 8. */
  maxSteps?: number
}

/** The whole history comes with every request, so the bound is on the history, not one message. */
const MAX_BODY = 1024 * 1024

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

/** What a client may see of an error: sandkeep's code and message (they name no secret), else nothing. */
function errorText(error: unknown): string {
  return SandkeepError.isInstance(error) ? `${error.code}: ${error.message}` : 'An error occurred.'
}

/** The UI messages of a request, checked; `undefined` (after answering 400/409) when they cannot be used. */
async function historyOf(body: Record<string, unknown>, response: ServerResponse) {
  const { id, messages, trigger } = body
  if (typeof id !== 'string' || !Array.isArray(messages) || messages.length === 0) {
    sendJson(response, 400, {
      error: 'send useChat\'s body: { id: string, messages: UIMessage[], trigger?: "submit-message" }',
    })
    return undefined
  }
  if (trigger === 'regenerate-message') {
    sendJson(response, 409, {
      error:
        'this server keeps no checkpoints, so it cannot take the sandbox back before the answer to regenerate; see examples/chat-branching',
    })
    return undefined
  }
  if (trigger !== undefined && trigger !== 'submit-message') {
    sendJson(response, 400, { error: 'trigger must be "submit-message" or "regenerate-message"' })
    return undefined
  }
  let history: UIMessage[]
  try {
    history = await validateUIMessages({ messages })
  } catch (error) {
    sendJson(response, 400, { error: `messages are not UI messages: ${(error as Error).message}` })
    return undefined
  }
  if (history.at(-1)?.role !== 'user') {
    sendJson(response, 400, { error: 'the last message must be the user message to answer' })
    return undefined
  }
  return { id, history }
}

export function createChatServer(options: ChatServerOptions): Server {
  const { sessions, model } = options
  return createServer(async (request, response) => {
    if (request.method === 'GET' && request.url === '/health') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
      return
    }
    if (request.method !== 'POST' || request.url !== '/api/chat') {
      sendJson(response, 404, { error: 'POST /api/chat' })
      return
    }
    let body: Record<string, unknown>
    try {
      const parsed = await readJsonBody(request, MAX_BODY)
      if (typeof parsed !== 'object' || parsed === null) throw new Error('the body must be a JSON object')
      body = parsed as Record<string, unknown>
    } catch (error) {
      sendJson(response, 400, { error: `bad request body: ${(error as Error).message}` })
      return
    }
    const checked = await historyOf(body, response)
    if (!checked) return
    const { id, history } = checked
    let turn: ReturnType<typeof sandkeepTurn>
    let messages: Awaited<ReturnType<typeof convertToModelMessages>>
    try {
      // Before the turn: a turn once begun must end, and a history the model cannot take is the client's error.
      messages = await convertToModelMessages(history)
      // Bad ids are refused here, before any I/O.
      turn = sandkeepTurn({ sessions, conversationId: id })
    } catch (error) {
      const text = SandkeepError.isInstance(error)
        ? errorText(error)
        : `bad messages: ${(error as Error).message}`
      sendJson(response, 400, { error: text })
      return
    }
    const result = turn.streamText({ model, messages, stopWhen: stepCountIs(options.maxSteps ?? 8) })
    // originalMessages: the stream continues useChat's history, so the assistant message gets a stable id.
    result.pipeUIMessageStreamToResponse(response, { originalMessages: history, onError: errorText })
  })
}
