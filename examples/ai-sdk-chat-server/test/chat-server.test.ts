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

/** Sends one chat message and returns the UI message stream's chunks. */
async function chat(conversationId: string, message: string): Promise<Array<Record<string, unknown>>> {
  const response = await fetch(`${app.url}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ conversationId, message }),
  })
  expect(response.status).toBe(200)
  const text = await response.text()
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>)
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
  it('runs each request as one turn and keeps the sandbox state between requests, paused in between', async () => {
    const transcript = await loadTranscript(defaultTranscriptPath)
    const conversationId = `chat-${Date.now()}`
    const first = await chat(conversationId, transcript.turns[0]!.user)
    const outputs = first.filter((chunk) => chunk.type === 'tool-output-available')
    expect(outputs).toHaveLength(2)
    expect(JSON.stringify(outputs[1]?.output)).toContain('12 rows')

    // Between requests the conversation's sandbox is paused on the host (the pause follows the reply).
    const record = await pausedRecord(conversationId)
    expect(record?.state).toBe('paused')
    expect(app.host.getSandbox(record!.sandboxId!)?.state).toBe('paused')

    // The second request computes on the variable the first one loaded into the interpreter.
    const second = await chat(conversationId, transcript.turns[1]!.user)
    const output = second.find((chunk) => chunk.type === 'tool-output-available')
    expect(JSON.stringify(output?.output)).toContain('west: 4790')
    const text = second
      .filter((chunk) => chunk.type === 'text-delta')
      .map((chunk) => chunk.delta)
      .join('')
    expect(text).toBe(transcript.turns[1]!.text)
    await app.sessions.endSession(conversationId)
  })

  it('refuses a bad request before any sandbox work', async () => {
    const response = await fetch(`${app.url}/chat`, { method: 'POST', body: '{"conversationId": 5}' })
    expect(response.status).toBe(400)
  })
})
