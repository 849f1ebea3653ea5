import { generateText, stepCountIs, streamText, tool } from 'ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createScriptedModel } from './scripted-model.js'
import { parseTranscript } from './transcript.js'

const transcript = parseTranscript(
  JSON.stringify({
    version: 1,
    title: 'unit',
    turns: [
      {
        user: 'add',
        toolCalls: [
          { tool: 'runCode', input: { code: '1 + 1' } },
          { tool: 'runCode', input: { code: '2 + 2' } },
        ],
        text: 'Sums done.',
      },
      { user: 'again', toolCalls: [{ tool: 'runCode', input: { code: '3 + 3' } }], text: 'Second turn.' },
    ],
  }),
  'unit.json',
)

// A stand-in tool: the real ones need a sandbox; this one records what the scripted model sent.
function recordingTools(seen: string[]) {
  return {
    runCode: tool({
      inputSchema: z.object({ code: z.string() }),
      execute: async ({ code }) => {
        seen.push(code)
        return { result: `ran ${code}` }
      },
    }),
  }
}

describe('createScriptedModel', () => {
  it('plays each turn step by step through generateText, reading its position from the prompt', async () => {
    const model = createScriptedModel(transcript)
    const seen: string[] = []
    const first = await generateText({
      model,
      tools: recordingTools(seen),
      stopWhen: stepCountIs(5),
      messages: [{ role: 'user', content: 'add' }],
    })
    expect(seen).toEqual(['1 + 1', '2 + 2'])
    expect(first.text).toBe('Sums done.')
    const second = await generateText({
      model,
      tools: recordingTools(seen),
      stopWhen: stepCountIs(5),
      messages: [
        { role: 'user', content: 'add' },
        ...first.response.messages,
        { role: 'user', content: 'again' },
      ],
    })
    expect(seen).toEqual(['1 + 1', '2 + 2', '3 + 3'])
    expect(second.text).toBe('Second turn.')
  })

  it('streams tool calls and text through streamText', async () => {
    const seen: string[] = []
    const result = streamText({
      model: createScriptedModel(transcript),
      tools: recordingTools(seen),
      stopWhen: stepCountIs(5),
      messages: [{ role: 'user', content: 'add' }],
    })
    const types: string[] = []
    for await (const part of result.fullStream) types.push(part.type)
    expect(types.filter((type) => type === 'tool-call')).toHaveLength(2)
    expect(types.filter((type) => type === 'tool-result')).toHaveLength(2)
    expect(await result.text).toBe('Sums done.')
  })
})
