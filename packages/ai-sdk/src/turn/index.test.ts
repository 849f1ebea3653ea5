import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { stepCountIs, ToolLoopAgent, tool } from 'ai'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createFakeSessions, type FakeSessions } from '../fake-sessions.test-support.js'
import { scriptedModel, toolResultsIn } from '../mock-model.test-support.js'
import { sandboxTools } from '../sandbox-tools.js'
import { sandkeepTurn } from './index.js'

let fake: FakeSessions

beforeEach(async () => {
  fake = await createFakeSessions()
})
afterEach(async () => {
  await fake.cleanup()
})

const newTurn = (extra: Record<string, unknown> = {}) =>
  sandkeepTurn({
    sessions: fake.sessions,
    conversationId: 'conv-turn',
    workingDirectory: fake.home,
    ...extra,
  })

/** Streams a turn whose model runs one command, then answers; reads the text stream to its end. */
async function streamToTheEnd(turn: ReturnType<typeof newTurn>): Promise<string> {
  const { model } = scriptedModel([
    { toolCalls: [{ toolName: 'runCommand', input: { command: 'echo streamed' } }] },
    { text: 'all done now' },
  ])
  const result = turn.streamText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
  let text = ''
  for await (const delta of result.textStream) text += delta
  return text
}

describe('sandkeepTurn', () => {
  it('generateText: resumes on the first tool call and pauses when the call finishes', async () => {
    const turn = newTurn()
    const { model, prompts } = scriptedModel([
      { toolCalls: [{ toolName: 'runCode', input: { code: 'var x = 6 * 7; x', language: 'javascript' } }] },
      { text: 'x is 42' },
    ])
    expect(fake.begins).toHaveLength(0)
    const result = await turn.generateText({ model, prompt: 'compute', stopWhen: stepCountIs(5) })
    expect(result.text).toBe('x is 42')
    expect(toolResultsIn(prompts[1])).toEqual([
      { toolName: 'runCode', output: { result: '42', stdout: '', stderr: '' } },
    ])
    expect(fake.begins).toHaveLength(1)
    expect((await turn.ended)?.action).toBe('paused')
    expect(fake.state).toBe('paused')
    expect(turn.abortSignal.aborted).toBe(true)
  })

  it('generateText resolves before the pause is done; turn.ended resolves after it', async () => {
    const gate = Promise.withResolvers<void>()
    fake.endGate = gate.promise
    const turn = newTurn()
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'echo hi' } }] },
      { text: 'done' },
    ])
    // With the end awaited, this call would wait on the gate, which only opens below.
    const result = await turn.generateText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
    expect(result.text).toBe('done')
    let ended = false
    void turn.ended.then(() => {
      ended = true
    })
    await new Promise((resolve) => setImmediate(resolve))
    expect(fake.endsInFlight).toBe(1)
    expect(fake.state).toBe('running')
    expect(ended).toBe(false)
    gate.resolve()
    expect((await turn.ended)?.action).toBe('paused')
    expect(fake.state).toBe('paused')
  })

  it('awaitEnd: generateText resolves only once the pause is done', async () => {
    const gate = Promise.withResolvers<void>()
    fake.endGate = gate.promise
    const turn = newTurn({ awaitEnd: true })
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'echo hi' } }] },
      { text: 'done' },
    ])
    let settled = false
    const call = turn.generateText({ model, prompt: 'go', stopWhen: stepCountIs(3) }).finally(() => {
      settled = true
    })
    for (let i = 0; i < 200 && fake.endsInFlight === 0; i++) await new Promise((r) => setTimeout(r, 10))
    expect(fake.endsInFlight).toBe(1)
    await new Promise((resolve) => setImmediate(resolve))
    expect(settled).toBe(false)
    gate.resolve()
    expect((await call).text).toBe('done')
    expect(fake.state).toBe('paused')
  })

  it("resume: 'lazy': a call that uses no tool touches no session", async () => {
    const turn = newTurn({ resume: 'lazy' })
    const { model } = scriptedModel([{ text: 'hello' }])
    await turn.generateText({ model, prompt: 'hi' })
    expect(await turn.ended).toBeUndefined()
    expect(fake.begins).toHaveLength(0)
  })

  it("resume: 'auto' (the default) takes the lease as the call starts and resumes early only after a turn that used the sandbox", async () => {
    const quiet = newTurn()
    await quiet.generateText({ model: scriptedModel([{ text: 'hello' }]).model, prompt: 'hi' })
    expect(await quiet.ended).toBeUndefined()
    expect(fake.begins.map((b) => b.options)).toMatchObject([{ lazy: true, prewarm: 'auto' }])
    expect(fake.resumes).toBe(0)

    const working = newTurn()
    await working.generateText({
      model: scriptedModel([
        { toolCalls: [{ toolName: 'runCommand', input: { command: 'true' } }] },
        { text: 'ok' },
      ]).model,
      prompt: 'go',
      stopWhen: stepCountIs(3),
    })
    expect((await working.ended)?.action).toBe('paused')
    expect(fake.resumes).toBe(1)

    // The previous turn used the sandbox: this one resumes with no tool call at all.
    const next = newTurn()
    await next.generateText({ model: scriptedModel([{ text: 'hello again' }]).model, prompt: 'hi' })
    expect((await next.ended)?.action).toBe('paused')
    expect(fake.resumes).toBe(2)
  })

  it('parallel tool calls in one step share one turn', async () => {
    fake.resumeDelayMs = 200
    const turn = newTurn()
    const { model, prompts } = scriptedModel([
      {
        toolCalls: [
          { toolName: 'runCommand', input: { command: 'echo one' } },
          { toolName: 'runCommand', input: { command: 'echo two' } },
          { toolName: 'writeFile', input: { path: 'p.txt', content: 'three' } },
        ],
      },
      { text: 'ok' },
    ])
    await turn.generateText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
    expect(fake.begins).toHaveLength(1)
    expect(fake.resumes).toBe(1)
    expect(toolResultsIn(prompts[1]).map((r) => r.output)).toEqual([
      { exitCode: 0, stdout: 'one\n', stderr: '' },
      { exitCode: 0, stdout: 'two\n', stderr: '' },
      { path: `${fake.home}/p.txt`, bytes: 5 },
    ])
    await turn.ended
    expect(fake.state).toBe('paused')
  })

  it('streamText: the stream closes before the pause is done; turn.ended resolves after it', async () => {
    const gate = Promise.withResolvers<void>()
    fake.endGate = gate.promise
    const turn = newTurn()
    // With the end awaited in the stream's flush, this would wait on the gate, which opens below.
    expect(await streamToTheEnd(turn)).toBe('all done now')
    expect(fake.endsInFlight).toBe(1)
    expect(fake.state).toBe('running')
    gate.resolve()
    expect((await turn.ended)?.action).toBe('paused')
    expect(fake.state).toBe('paused')
    expect(fake.ends).toBe(1)
  })

  it('streamText with awaitEnd: the sandbox is paused by the time the stream has been read to the end', async () => {
    const turn = newTurn({ awaitEnd: true })
    expect(await streamToTheEnd(turn)).toBe('all done now')
    expect(fake.state).toBe('paused')
    expect(fake.ends).toBe(1)
  })

  it("resume: 'eager' begins the turn and resumes as the call starts, before any tool call", async () => {
    const turn = newTurn({ resume: 'eager' })
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'echo hi' } }] },
      { text: 'done' },
    ])
    const result = turn.streamText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
    const reader = result.fullStream.getReader()
    const first = await reader.read()
    expect(first.value?.type).not.toBe('tool-call')
    expect(fake.begins).toHaveLength(1)
    for (let i = 0; i < 200 && fake.resumes === 0; i++) await new Promise((r) => setTimeout(r, 10))
    expect(fake.resumes).toBe(1)
    while (!(await reader.read()).done) {}
    expect((await turn.ended)?.action).toBe('paused')
    expect(fake.begins).toHaveLength(1)
    expect(fake.resumes).toBe(1)
  })

  it("resume: 'eager' with a model that uses no tool still pauses what it resumed", async () => {
    const turn = newTurn({ resume: 'eager' })
    const { model } = scriptedModel([{ text: 'hello' }])
    await turn.generateText({ model, prompt: 'hi' })
    expect((await turn.ended)?.action).toBe('paused')
    expect(fake.resumes).toBe(1)
    expect(fake.state).toBe('paused')
  })

  it('refuses a bad resume or awaitEnd before any I/O', () => {
    expect(() => newTurn({ resume: 'sometimes' })).toThrow(/resume must be/)
    expect(() => newTurn({ awaitEnd: 'yes' })).toThrow(/awaitEnd must be/)
    expect(fake.begins).toHaveLength(0)
  })

  it('streamText: a consumer that cancels mid-way (during a tool call) still pauses, promptly', async () => {
    const turn = newTurn()
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'echo begin; sleep 30' } }] },
      { text: 'never reached' },
    ])
    const result = turn.streamText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
    for await (const part of result.fullStream) {
      if (part.type === 'tool-call') {
        // Let the command start in the sandbox before walking away.
        await new Promise((resolve) => setTimeout(resolve, 300))
        break
      }
    }
    const report = await turn.ended
    expect(report?.action).toBe('paused')
    expect(fake.state).toBe('paused')
    expect(fake.begins).toHaveLength(1)
  })

  it('streamText: cancelling a text stream or a UI message stream response body also ends the turn', async () => {
    const turn = newTurn()
    const { model } = scriptedModel(
      [
        { toolCalls: [{ toolName: 'runCommand', input: { command: 'echo hi' } }] },
        { text: 'one two three four five six seven eight nine ten' },
      ],
      { chunkDelayMs: 50 },
    )
    const response = turn
      .streamText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
      .toUIMessageStreamResponse()
    const reader = response.body!.getReader()
    let seen = ''
    while (!seen.includes('text-delta')) {
      const { value } = await reader.read()
      seen += new TextDecoder().decode(value)
    }
    await reader.cancel()
    expect((await turn.ended)?.action).toBe('paused')
    expect(fake.state).toBe('paused')
  })

  it('streamText: an HTTP client that goes away from pipeUIMessageStreamToResponse ends the turn', async () => {
    const turn = newTurn()
    const { model } = scriptedModel(
      [
        { toolCalls: [{ toolName: 'runCommand', input: { command: 'echo hi' } }] },
        { text: 'a b c d e f g h i j k l m n o p q r s t u v w x y z' },
      ],
      { chunkDelayMs: 100 },
    )
    const server = createServer((_request, response) => {
      turn
        .streamText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
        .pipeUIMessageStreamToResponse(response)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      const client = new AbortController()
      const response = await fetch(`http://127.0.0.1:${port}/`, { signal: client.signal })
      const reader = response.body!.getReader()
      let seen = ''
      while (!seen.includes('text-delta')) seen += new TextDecoder().decode((await reader.read()).value)
      client.abort()
      expect((await turn.ended)?.action).toBe('paused')
      expect(fake.state).toBe('paused')
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('generateText: the caller aborting mid-call rejects the call and ends the turn', async () => {
    const controller = new AbortController()
    const turn = newTurn()
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'sleep 30' } }] },
      { text: 'never' },
    ])
    setTimeout(() => controller.abort(new Error('user left')), 500)
    await expect(
      turn.generateText({ model, prompt: 'go', stopWhen: stepCountIs(3), abortSignal: controller.signal }),
    ).rejects.toBeDefined()
    expect((await turn.ended)?.action).toBe('paused')
    expect(fake.state).toBe('paused')
  })

  it('streamText: the caller aborting ends the turn even when nobody reads the stream', async () => {
    const controller = new AbortController()
    const turn = newTurn()
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'sleep 30' } }] },
      { text: 'never' },
    ])
    const result = turn.streamText({
      model,
      prompt: 'go',
      stopWhen: stepCountIs(3),
      abortSignal: controller.signal,
    })
    const reader = result.fullStream.getReader()
    while ((await reader.read()).value?.type !== 'tool-call') {}
    await new Promise((resolve) => setTimeout(resolve, 300))
    controller.abort(new Error('user left'))
    expect((await turn.ended)?.action).toBe('paused')
    expect(fake.state).toBe('paused')
  })

  it('ends the turn when the model fails after a tool ran (generateText and streamText)', async () => {
    let calls = 0
    const { model } = scriptedModel([{ toolCalls: [{ toolName: 'runCommand', input: { command: 'true' } }] }])
    const failing = Object.assign(model, {
      doGenerate: async (options: Parameters<typeof model.doGenerate>[0]) => {
        calls += 1
        if (calls === 2) throw new Error('model down')
        return scriptedModel([
          { toolCalls: [{ toolName: 'runCommand', input: { command: 'true' } }] },
        ]).model.doGenerate(options)
      },
    })
    const turn = newTurn()
    await expect(
      turn.generateText({ model: failing, prompt: 'go', stopWhen: stepCountIs(3), maxRetries: 0 }),
    ).rejects.toThrow('model down')
    expect((await turn.ended)?.action).toBe('paused')

    let streamCalls = 0
    const streaming = scriptedModel([
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'true' } }] },
    ]).model
    const original = streaming.doStream
    streaming.doStream = async (options) => {
      streamCalls += 1
      if (streamCalls === 2) throw new Error('stream down')
      return original(options)
    }
    const turn2 = newTurn()
    const errors: unknown[] = []
    const result = turn2.streamText({
      model: streaming,
      prompt: 'go',
      stopWhen: stepCountIs(3),
      maxRetries: 0,
      onError: ({ error }) => {
        errors.push(error)
      },
    })
    for await (const _ of result.fullStream) {
    }
    expect((await turn2.ended)?.action).toBe('paused')
    expect(errors).toHaveLength(1)
  })

  it('maxDurationMs ends a turn whose stream is abandoned without a cancel', async () => {
    const turn = newTurn({ maxDurationMs: 1_000 })
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'sleep 30' } }] },
      { text: 'never' },
    ])
    const result = turn.streamText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
    const reader = result.fullStream.getReader()
    while ((await reader.read()).value?.type !== 'tool-call') {}
    // The reader is simply dropped: no cancel, no abort.
    expect((await turn.ended)?.action).toBe('paused')
    expect(turn.abortSignal.reason).toMatchObject({ code: 'TIMEOUT' })
    expect(() => newTurn({ maxDurationMs: -1 })).toThrow(/maxDurationMs/)
  })

  it('wraps one call only', async () => {
    const turn = newTurn()
    const { model } = scriptedModel([{ text: 'a' }, { text: 'b' }])
    await turn.generateText({ model, prompt: 'a' })
    await expect(turn.generateText({ model, prompt: 'b' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
  })

  it('agents: sandboxTools() on the agent use the turn sandbox passed as experimental_sandbox', async () => {
    const { model, prompts } = scriptedModel([
      { toolCalls: [{ toolName: 'writeFile', input: { path: 'agent.txt', content: 'from agent' } }] },
      { toolCalls: [{ toolName: 'readFile', input: { path: 'agent.txt' } }] },
      { text: 'read it' },
    ])
    const agent = new ToolLoopAgent({ model, tools: sandboxTools(), stopWhen: stepCountIs(5) })
    const turn = newTurn({ tools: false })
    const result = await turn.agentGenerate(agent, { prompt: 'go' })
    expect(result.text).toBe('read it')
    expect(toolResultsIn(prompts[2]).at(-1)?.output).toMatchObject({ content: 'from agent' })
    expect((await turn.ended)?.action).toBe('paused')

    const streamingAgent = new ToolLoopAgent({
      model: scriptedModel([{ toolCalls: [{ toolName: 'runCommand', input: { command: 'cat agent.txt' } }] }])
        .model,
      tools: sandboxTools(),
      stopWhen: stepCountIs(5),
    })
    const turn2 = newTurn({ tools: false })
    const streamed = await turn2.agentStream(streamingAgent, { prompt: 'go' })
    const results = []
    for await (const part of streamed.fullStream) if (part.type === 'tool-result') results.push(part.output)
    expect(results).toEqual([{ exitCode: 0, stdout: 'from agent', stderr: '' }])
    await turn2.ended
    expect(fake.state).toBe('paused')
  })

  it('experimental_sandbox and the sandbox tools share one sandbox within the turn', async () => {
    const turn = newTurn()
    const { model, prompts } = scriptedModel([
      { toolCalls: [{ toolName: 'note', input: { text: 'written through experimental_sandbox' } }] },
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'cat shared.txt' } }] },
      { text: 'ok' },
    ])
    const note = tool({
      inputSchema: z.object({ text: z.string() }),
      execute: async ({ text }, { experimental_sandbox }) => {
        await experimental_sandbox!.writeTextFile({ path: 'shared.txt', content: text })
        return 'saved'
      },
    })
    await turn.generateText({ model, prompt: 'go', tools: { note }, stopWhen: stepCountIs(5) })
    expect(toolResultsIn(prompts[2]).at(-1)?.output).toMatchObject({
      stdout: 'written through experimental_sandbox',
    })
    expect(fake.begins).toHaveLength(1)
  })
})
