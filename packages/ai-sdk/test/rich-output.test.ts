// Rich and streaming tool output: real AI SDK loops (MockLanguageModelV4 scripting the tool calls)
// against a real local-e2b host through the unmodified E2B SDK: a plot reaches the model as an image part, and
// long command / cell output arrives as preliminary tool results before the complete one.
import { randomUUID } from 'node:crypto'
import type { SessionManager } from '@sandkeep/core'
import type { LocalE2BHost } from '@sandkeep/local-e2b'
import { stepCountIs } from 'ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ScriptStep, scriptedModel } from '../src/mock-model.test-support.js'
import { type SandkeepTurnOptions, sandkeepTurn } from '../src/turn/index.js'
import { startLocalSessions, stopLocalSessions } from './helpers.js'

let host: LocalE2BHost
let sessions: SessionManager
const tenant = `rich-${randomUUID().slice(0, 8)}`
const conversations: string[] = []

beforeAll(async () => {
  ;({ host, sessions } = await startLocalSessions({ onTurnEnd: 'pause' }))
}, 120_000)

afterAll(() => stopLocalSessions({ host, sessions }, conversations, tenant), 120_000)

function turnFor(tools: SandkeepTurnOptions['tools']) {
  const conversationId = `conv-${randomUUID()}`
  conversations.push(conversationId)
  return sandkeepTurn({ sessions, conversationId, tenant, tools })
}

// A real 1x1 PNG, built in the cell so the test needs no imaging library in the sandbox's python.
const PLOT_CELL = [
  'import struct, zlib',
  'def chunk(kind, body):',
  '    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))',
  'PNG = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) + \\',
  '    chunk(b"IDAT", zlib.compress(b"\\x00\\xff\\x00\\x00")) + chunk(b"IEND", b"")',
  'class Figure:',
  '    def _repr_png_(self): return PNG',
  '    def __repr__(self): return "<Figure size 1x1>"',
  'print("plotting")',
  'display(Figure())',
  '{"points": 1}',
].join('\n')

type Prompt = ReturnType<typeof scriptedModel>['prompts'][number]

/** The `output` of each tool-result part of one prompt the model received, as the provider gets it. */
function toolOutputs(prompt: Prompt | undefined): unknown[] {
  const outputs: unknown[] = []
  for (const message of prompt ?? []) {
    if (message.role !== 'tool') continue
    for (const part of message.content) if (part.type === 'tool-result') outputs.push(part.output)
  }
  return outputs
}

describe('rich tool output through generateText', () => {
  it('a display()ed PNG reaches the model as an image part after the JSON text', async () => {
    const steps: ScriptStep[] = [
      { toolCalls: [{ toolName: 'runCode', input: { code: PLOT_CELL } }] },
      { text: 'ok' },
    ]
    const { model, prompts } = scriptedModel(steps)
    const turn = turnFor({})
    const result = await turn.generateText({ model, prompt: 'plot', stopWhen: stepCountIs(3) })
    await turn.ended
    expect(result.text).toBe('ok')
    const [output] = toolOutputs(prompts[1]) as Array<{ type: string; value: Array<Record<string, unknown>> }>
    expect(output?.type).toBe('content')
    const [text, image] = output?.value ?? []
    const described = JSON.parse(String(text?.text))
    expect(described).toMatchObject({
      result: "{'points': 1}",
      stdout: 'plotting\n',
      outputs: [
        { main: false, text: '<Figure size 1x1>', image: 'image/png, attached after this JSON as image 1' },
      ],
    })
    expect(image).toMatchObject({ type: 'file', mediaType: 'image/png' })
    const data = (image?.data as { type: string; data: string | Uint8Array } | undefined)?.data ?? ''
    const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : Buffer.from(data)
    expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    // The tool's own result (for UIs and transcripts) keeps the image as base64.
    const call = result.steps[0]?.toolResults[0]?.output as {
      outputs?: Array<{ image?: { base64: string } }>
    }
    expect(Buffer.from(call.outputs?.[0]?.image?.base64 ?? '', 'base64')).toEqual(bytes)
  })
})

describe('streamed tool output through streamText', () => {
  async function run(
    tools: SandkeepTurnOptions['tools'],
    toolCall: { toolName: string; input: Record<string, unknown> },
  ) {
    const { model, prompts } = scriptedModel([{ toolCalls: [toolCall] }, { text: 'done' }])
    const turn = turnFor(tools)
    const stream = turn.streamText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
    const results: Array<{ preliminary: boolean; output: Record<string, unknown> }> = []
    for await (const part of stream.fullStream) {
      if (part.type === 'tool-result') {
        results.push({
          preliminary: part.preliminary === true,
          output: part.output as Record<string, unknown>,
        })
      }
    }
    await turn.ended
    return { results, prompts }
  }

  it('a long command yields growing partial results, then the complete one; the model sees only that', async () => {
    const { results, prompts } = await run(
      { streamOutput: true },
      {
        toolName: 'runCommand',
        input: { command: 'for i in 1 2 3 4 5; do echo line-$i; echo warn-$i >&2; sleep 0.25; done' },
      },
    )
    const partials = results.filter((r) => r.preliminary && r.output.running === true)
    // Lines are 250 ms apart and partials at most 100 ms apart: several arrive while the command runs.
    expect(partials.length).toBeGreaterThanOrEqual(2)
    for (const [index, partial] of partials.entries()) {
      expect(partial.output.stdout).toMatch(/^(line-\d\n)+$/)
      const next = partials[index + 1]
      if (next) expect(String(next.output.stdout).startsWith(String(partial.output.stdout))).toBe(true)
    }
    expect(partials[0]?.output.stdout).not.toContain('line-5')
    const expected = {
      exitCode: 0,
      stdout: 'line-1\nline-2\nline-3\nline-4\nline-5\n',
      stderr: 'warn-1\nwarn-2\nwarn-3\nwarn-4\nwarn-5\n',
    }
    expect(results.at(-1)).toEqual({ preliminary: false, output: expected })
    expect(toolOutputs(prompts[1])).toEqual([{ type: 'json', value: expected }])
  })

  it('a code cell streams its prints (throttled) and ends with the full result, images included', async () => {
    const code = `import time\nfor i in range(60):\n    print(i, flush=True)\n    time.sleep(0.01)\n${PLOT_CELL}`
    const { results } = await run({ streamOutput: true }, { toolName: 'runCode', input: { code } })
    const partials = results.filter((r) => r.preliminary && r.output.running === true)
    expect(partials.length).toBeGreaterThanOrEqual(2)
    // 61 prints arrive as many chunks; the throttle turns them into a handful of partial results.
    expect(partials.length).toBeLessThan(30)
    const final = results.at(-1)
    expect(final?.preliminary).toBe(false)
    expect(final?.output.stdout).toBe(`${Array.from({ length: 60 }, (_, i) => `${i}\n`).join('')}plotting\n`)
    expect(final?.output.outputs).toEqual([
      expect.objectContaining({ main: false, image: expect.objectContaining({ mediaType: 'image/png' }) }),
    ])
  })

  it('without streamOutput a call returns once: no partial results', async () => {
    const { results } = await run(
      {},
      { toolName: 'runCommand', input: { command: 'echo a; sleep 0.3; echo b' } },
    )
    expect(results.filter((r) => r.output.running === true)).toEqual([])
    expect(results.at(-1)?.output).toEqual({ exitCode: 0, stdout: 'a\nb\n', stderr: '' })
  })
})
