// A chat endpoint on node:http that speaks what the AI SDK's useChat sends and reads: POST /api/chat with
// { id, messages, trigger, messageId } (DefaultChatTransport's body: the chat's history), answered with the
// UI message stream. Each request is one sandkeep turn, and the sandbox follows the branch of the chat the
// client sent: `branchFromMessages` reads the checkpoint id of the last answer in the history (its
// metadata holds it, put there by `turn.messageMetadata()`), so a regenerated answer (history without it),
// an edited message (history cut before it) or a switch to another answer (that answer's branch) restores
// the sandbox to that checkpoint, and a normal request, which ends on the head, changes nothing.
// POST /api/fork { id, newId, messages } starts a new conversation from the checkpoint the messages reached.
// GET / serves the chat page (src/page), when the server has it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { branchFromMessages, sandkeepTurn } from '@sandkeep/ai-sdk'
import { SandkeepError, type SessionManager } from '@sandkeep/core'
import { readJsonBody } from '@sandkeep-examples/shared/http'
import { convertToModelMessages, type LanguageModel, stepCountIs, type UIMessage } from 'ai'
import type { ChatPage } from './page/build.ts'

export interface BranchingChatServerOptions {
  sessions: SessionManager
  model: LanguageModel
  /** The chat page (`buildChatPage()`), served at GET / and GET /app.js; none: the API alone. */
  page?: ChatPage
  /** Model calls per turn at most. Default 8. */
  maxSteps?: number
}

const MAX_BODY = 1024 * 1024

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readJsonBody(request, MAX_BODY)
  if (typeof body !== 'object' || body === null) throw new Error('the body must be a JSON object')
  return body as Record<string, unknown>
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

/** What a client may see of an error: sandkeep's code and message (they name no secret), else nothing. */
function errorText(error: unknown): string {
  return SandkeepError.isInstance(error) ? `${error.code}: ${error.message}` : 'An error occurred.'
}

/** The HTTP status of an error thrown before the response began. */
function statusOf(error: unknown): number {
  if (SandkeepError.hasCode(error, 'INVALID_ARGUMENT')) return 400
  if (SandkeepError.hasCode(error, 'CHECKPOINT_NOT_FOUND')) return 404
  if (SandkeepError.hasCode(error, 'SESSION_EXISTS')) return 409
  return 500
}

export function createBranchingChatServer(options: BranchingChatServerOptions): Server {
  const { sessions, model } = options

  async function chat(body: Record<string, unknown>, response: ServerResponse): Promise<void> {
    const { id, messages, trigger, messageId } = body
    if (typeof id !== 'string' || !Array.isArray(messages)) {
      sendJson(response, 400, { error: 'send { id: string, messages: UIMessage[] }' })
      return
    }
    const history = messages as UIMessage[]
    // Bad ids, and metadata a client altered, are refused here, before any I/O; a checkpoint id the
    // conversation does not have is refused by the turn, before the model runs (an error part).
    const branch = branchFromMessages(history, {
      trigger: trigger as 'submit-message' | 'regenerate-message' | undefined,
      messageId: messageId as string | undefined,
    })
    const turn = sandkeepTurn({ sessions, conversationId: id, ...(branch ? { branch } : {}) })
    const result = turn.streamText({
      model,
      messages: await convertToModelMessages(history),
      stopWhen: stepCountIs(options.maxSteps ?? 8),
    })
    result.pipeUIMessageStreamToResponse(response, {
      originalMessages: history,
      // The finish chunk carries { sandkeep: { checkpoint, parentCheckpoint, turn, ... } }: the client keeps
      // it with the message.
      messageMetadata: turn.messageMetadata(),
      onError: errorText,
    })
  }

  async function fork(body: Record<string, unknown>, response: ServerResponse): Promise<void> {
    const { id, newId, messages } = body
    if (typeof id !== 'string' || typeof newId !== 'string' || !Array.isArray(messages)) {
      sendJson(response, 400, { error: 'send { id: string, newId: string, messages: UIMessage[] }' })
      return
    }
    // The checkpoint the messages end on (none: the conversation's head).
    const branch = branchFromMessages(messages as UIMessage[])
    const checkpoint = branch && 'checkpoint' in branch ? branch.checkpoint : undefined
    const forked = await sessions.fork(id, newId, checkpoint ? { checkpoint } : {})
    sendJson(response, 200, {
      conversationId: forked.conversationId,
      atTurn: forked.atTurn,
      source: forked.source,
    })
  }

  return createServer(async (request, response) => {
    if (request.method === 'GET' && options.page) {
      const file = {
        '/': ['text/html; charset=utf-8', options.page.html],
        '/app.js': ['text/javascript; charset=utf-8', options.page.script],
      }[request.url ?? '']
      if (file) {
        response.writeHead(200, { 'content-type': file[0]!, 'cache-control': 'no-store' }).end(file[1])
        return
      }
    }
    const route =
      request.method === 'POST' ? { '/api/chat': chat, '/api/fork': fork }[request.url ?? ''] : undefined
    if (!route) {
      sendJson(response, 404, { error: 'POST /api/chat or /api/fork' })
      return
    }
    let body: Record<string, unknown>
    try {
      body = await readJson(request)
    } catch (error) {
      sendJson(response, 400, { error: `bad request body: ${(error as Error).message}` })
      return
    }
    try {
      await route(body, response)
    } catch (error) {
      if (response.headersSent) response.end()
      else sendJson(response, statusOf(error), { error: errorText(error) })
    }
  })
}
