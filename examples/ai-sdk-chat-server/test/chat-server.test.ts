// The example server driven by the AI SDK's own chat client: AbstractChat (what useChat wraps in React) over
// DefaultChatTransport, so each request carries exactly useChat's body ({ id, messages, trigger, messageId })
// and the reply is read as the UI message stream protocol.
import { AbstractChat, type ChatState, type ChatStatus, DefaultChatTransport, type UIMessage } from 'ai'
import { defaultTranscriptPath, loadTranscript } from 'sandkeep'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { start } from '../src/main.ts'

type App = Awaited<ReturnType<typeof start>>
let app: App

beforeAll(async () => {
  app = await start(0)
})
afterAll(async () => {
  await app?.close()
})

/** useChat's state as a plain array. */
class ArrayChatState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready'
  error: Error | undefined = undefined
  messages: UIMessage[] = []
  pushMessage = (message: UIMessage) => {
    this.messages = [...this.messages, message]
  }
  popMessage = () => {
    this.messages = this.messages.slice(0, -1)
  }
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.messages.with(index, message)
  }
  snapshot = <T>(thing: T): T => structuredClone(thing)
}

/** What the server was sent and answered, per request (the transport's fetch, observed). */
interface Exchange {
  body: Record<string, unknown>
  contentType: string | null
  streamHeader: string | null
}

class NodeChat extends AbstractChat<UIMessage> {
  readonly exchanges: Exchange[] = []
  constructor(url: string, id: string) {
    const exchanges: Exchange[] = []
    super({
      id,
      state: new ArrayChatState(),
      transport: new DefaultChatTransport({
        api: `${url}/api/chat`,
        fetch: async (input, init) => {
          const response = await fetch(input, init)
          exchanges.push({
            body: JSON.parse(String(init?.body)) as Record<string, unknown>,
            contentType: response.headers.get('content-type'),
            streamHeader: response.headers.get('x-vercel-ai-ui-message-stream'),
          })
          return response
        },
      }),
    })
    this.exchanges = exchanges
  }
}

/** The tool outputs and the text of an assistant message. */
function partsOf(message: UIMessage | undefined) {
  const parts = message?.parts ?? []
  return {
    outputs: parts.flatMap((part) =>
      part.type.startsWith('tool-') && 'output' in part ? [JSON.stringify(part.output)] : [],
    ),
    text: parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join(''),
  }
}

/** The session record once the turn's end (which follows the reply) paused the sandbox; bounded to 15 s. */
async function pausedRecord(conversationId: string) {
  for (const deadline = Date.now() + 15_000; ; ) {
    const record = await app.sessions.getSession(conversationId)
    const sandbox = record?.sandboxId ? app.host.getSandbox(record.sandboxId) : undefined
    if (sandbox?.state === 'paused' || Date.now() > deadline) return record
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('ai-sdk-chat-server example', () => {
  it("answers useChat's requests as turns and keeps the sandbox state between them, paused in between", async () => {
    const transcript = await loadTranscript(defaultTranscriptPath)
    const conversationId = `chat-${Date.now()}`
    const chat = new NodeChat(app.url, conversationId)
    await chat.sendMessage({ text: transcript.turns[0]!.user })
    expect(chat.error).toBeUndefined()
    const first = partsOf(chat.messages[1])
    expect(first.outputs).toHaveLength(2)
    expect(first.outputs[1]).toContain('12 rows')
    expect(chat.exchanges[0]).toMatchObject({
      body: { id: conversationId, trigger: 'submit-message' },
      contentType: 'text/event-stream',
      streamHeader: 'v1',
    })

    // Between requests the conversation's sandbox is paused on the host (the pause follows the reply).
    const record = await pausedRecord(conversationId)
    expect(record?.state).toBe('paused')
    expect(app.host.getSandbox(record!.sandboxId!)?.state).toBe('paused')

    // The second request (the whole history, as useChat sends it) computes on the variable the first loaded.
    await chat.sendMessage({ text: transcript.turns[1]!.user })
    expect(chat.error).toBeUndefined()
    expect(chat.exchanges[1]?.body.messages).toHaveLength(3)
    const second = partsOf(chat.messages[3])
    expect(second.outputs[0]).toContain('west: 4790')
    expect(second.text).toBe(transcript.turns[1]!.text)

    // A regenerate would need the sandbox as it was before the answer: this server keeps no checkpoints.
    await chat.regenerate()
    expect(chat.error?.message).toMatch(/keeps no checkpoints.*chat-branching/)
    await app.sessions.endSession(conversationId)
  })

  it("refuses a body that is not useChat's before any sandbox work", async () => {
    for (const body of [
      '{"conversationId": "c1", "message": "hi"}',
      '{"id": "c1", "messages": []}',
      '{"id": "c1", "messages": [{"role": "user", "content": "hi"}]}',
      '{"id": "c1\\u0000", "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}',
    ]) {
      const response = await fetch(`${app.url}/api/chat`, { method: 'POST', body })
      expect(response.status, body).toBe(400)
    }
    expect((await app.sessions.listSessions()).sessions).toEqual([])
  })
})
