import { stepCountIs, tool } from 'ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type ScriptStep, scriptedModel, toolResultsIn } from '../src/mock-model.test-support.js'
import { sandkeepTurn } from '../src/turn/index.js'
import { useRedisSessions } from './helpers.js'

const rig = useRedisSessions('ai-sdk')
const { tenant, newConversation } = rig

/** Runs one turn of `conversationId` with the scripted model, through generateText or streamText. */
async function runTurn(mode: 'generateText' | 'streamText', conversationId: string, steps: ScriptStep[]) {
  const { model, prompts } = scriptedModel(steps)
  const turn = sandkeepTurn({ sessions: rig.sessions, conversationId, tenant })
  let text: string
  if (mode === 'generateText') {
    text = (await turn.generateText({ model, prompt: 'go', stopWhen: stepCountIs(steps.length + 1) })).text
  } else {
    const result = turn.streamText({ model, prompt: 'go', stopWhen: stepCountIs(steps.length + 1) })
    text = ''
    for await (const delta of result.textStream) text += delta
  }
  const end = await turn.ended
  return { text, prompts, end, report: turn.report }
}

function sandboxState(sandboxId: string | undefined) {
  expect(sandboxId).toBeDefined()
  return rig.host.getSandbox(sandboxId!)?.state
}

describe.each(['generateText', 'streamText'] as const)('a 3-turn conversation through %s', (mode) => {
  it('keeps a variable and a file across turns, paused in between', async () => {
    const conversationId = newConversation()

    const first = await runTurn(mode, conversationId, [
      {
        toolCalls: [
          { toolName: 'runCode', input: { code: 'data = [3, 1, 4, 1, 5, 9, 2, 6]\nlen(data)' } },
          { toolName: 'writeFile', input: { path: 'notes/summary.txt', content: 'eight numbers, max 9\n' } },
        ],
      },
      { text: 'Loaded 8 numbers.' },
    ])
    expect(first.text).toBe('Loaded 8 numbers.')
    expect(first.report?.outcome).toBe('created')
    expect(toolResultsIn(first.prompts[1]).map((r) => r.output)).toEqual([
      { result: '8', stdout: '', stderr: '' },
      { path: '/home/user/notes/summary.txt', bytes: 21 },
    ])
    expect(first.end?.action).toBe('paused')
    const sandboxId = first.report?.sandboxId
    expect(sandboxState(sandboxId)).toBe('paused')

    const second = await runTurn(mode, conversationId, [
      { toolCalls: [{ toolName: 'runCode', input: { code: 'sum(data) / len(data)' } }] },
      { text: 'The mean is 3.875.' },
    ])
    expect(second.report?.sandboxId).toBe(sandboxId)
    expect(second.report?.stateLost).toBe(false)
    expect(toolResultsIn(second.prompts[1]).map((r) => r.output)).toEqual([
      { result: '3.875', stdout: '', stderr: '' },
    ])
    expect(second.end?.action).toBe('paused')
    expect(sandboxState(sandboxId)).toBe('paused')

    const third = await runTurn(mode, conversationId, [
      { toolCalls: [{ toolName: 'readFile', input: { path: 'notes/summary.txt' } }] },
      { text: 'The summary says eight numbers.' },
    ])
    expect(third.report?.sandboxId).toBe(sandboxId)
    expect(toolResultsIn(third.prompts[1]).map((r) => r.output)).toEqual([
      { path: '/home/user/notes/summary.txt', content: 'eight numbers, max 9\n', totalLines: 1 },
    ])
    expect(third.end?.action).toBe('paused')
    expect(sandboxState(sandboxId)).toBe('paused')
    expect(rig.host.getSandbox(sandboxId!)?.pauseCount).toBe(3)
  }, 240_000)
})

describe('turn boundaries and results against local-e2b', () => {
  it('a stream its consumer cancels mid-way (during a tool call) still pauses the sandbox', async () => {
    const conversationId = newConversation()
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'echo started > started.txt; sleep 60' } }] },
      { text: 'never reached' },
    ])
    const turn = sandkeepTurn({ sessions: rig.sessions, conversationId, tenant })
    const result = turn.streamText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
    for await (const part of result.fullStream) {
      if (part.type === 'tool-call') {
        // Wait until the command really runs in the sandbox, then walk away.
        for (let i = 0; i < 100 && !turn.report; i++) await new Promise((r) => setTimeout(r, 100))
        await new Promise((r) => setTimeout(r, 500))
        break
      }
    }
    const end = await turn.ended
    expect(end?.action).toBe('paused')
    expect(sandboxState(turn.report?.sandboxId)).toBe('paused')

    // The next turn resumes the same sandbox, and the cancelled command had really started.
    const next = await runTurn('generateText', conversationId, [
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'cat started.txt' } }] },
      { text: 'ok' },
    ])
    expect(next.report?.sandboxId).toBe(turn.report?.sandboxId)
    expect(toolResultsIn(next.prompts[1])[0]?.output).toEqual({
      exitCode: 0,
      stdout: 'started\n',
      stderr: '',
    })
  }, 180_000)

  it('a failing command comes back to the model as a tool result', async () => {
    const conversationId = newConversation()
    const run = await runTurn('streamText', conversationId, [
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'ls /does-not-exist' } }] },
      { text: 'That directory does not exist.' },
    ])
    const [result] = toolResultsIn(run.prompts[1])
    expect(result?.toolName).toBe('runCommand')
    expect(result?.output).toMatchObject({ exitCode: 2, stdout: '' })
    expect(result?.output).toMatchObject({ stderr: expect.stringMatching(/No such file or directory/) })
    expect(run.text).toBe('That directory does not exist.')
    expect(run.end?.action).toBe('paused')
  }, 120_000)

  it('a resume that lost state (sandbox past retention) puts the notice in front of the model', async () => {
    const conversationId = newConversation()
    const first = await runTurn('generateText', conversationId, [
      { toolCalls: [{ toolName: 'runCode', input: { code: 'secret = 41 + 1' } }] },
      { text: 'stored' },
    ])
    const oldId = first.report!.sandboxId
    await rig.host.faults.expire(oldId)

    const second = await runTurn('generateText', conversationId, [
      {
        toolCalls: [{ toolName: 'runCode', input: { code: 'secret' } }],
      },
      { text: 'It is gone.' },
    ])
    expect(second.report?.stateLost).toBe(true)
    expect(second.report?.outcome).toBe('recreated')
    expect(second.report?.sandboxId).not.toBe(oldId)
    const [result] = toolResultsIn(second.prompts[1])
    const output = result?.output as { notice?: string; error?: string }
    expect(output.notice).toMatch(/replaced by a fresh one/)
    expect(output.error).toMatch(/NameError/)
    expect(second.end?.action).toBe('paused')
  }, 180_000)

  it('a resume that lost memory but kept files says so (host dropped the memory while paused)', async () => {
    const conversationId = newConversation()
    const first = await runTurn('generateText', conversationId, [
      {
        toolCalls: [
          { toolName: 'runCode', input: { code: 'value = 7' } },
          { toolName: 'writeFile', input: { path: 'kept.txt', content: 'still here' } },
        ],
      },
      { text: 'ok' },
    ])
    await rig.host.faults.dropMemory(first.report!.sandboxId)
    const second = await runTurn('streamText', conversationId, [
      {
        toolCalls: [{ toolName: 'readFile', input: { path: 'kept.txt' } }],
      },
      { toolCalls: [{ toolName: 'runCode', input: { code: 'value' } }] },
      { text: 'ok' },
    ])
    expect(second.report?.stateLost).toBe(true)
    const [read] = toolResultsIn(second.prompts[1])
    expect(read?.output).toMatchObject({ content: 'still here' })
    expect(read?.output).toMatchObject({ notice: expect.stringMatching(/memory did not survive/) })
    const [, code] = toolResultsIn(second.prompts[2])
    expect(code?.output).not.toHaveProperty('notice')
    expect(code?.output).toMatchObject({ error: expect.stringMatching(/NameError/) })
  }, 180_000)

  it('memory lost, files kept, the first tool a command: its result comes first, the notice once after all', async () => {
    const conversationId = newConversation()
    const first = await runTurn('generateText', conversationId, [
      {
        toolCalls: [
          { toolName: 'runCode', input: { code: 'value = 7' } },
          { toolName: 'writeFile', input: { path: 'kept.txt', content: 'still here' } },
        ],
      },
      { text: 'ok' },
    ])
    await rig.host.faults.dropMemory(first.report!.sandboxId)
    const second = await runTurn('streamText', conversationId, [
      { toolCalls: [{ toolName: 'runCommand', input: { command: 'cat kept.txt' } }] },
      { toolCalls: [{ toolName: 'runCode', input: { code: 'value' } }] },
      { text: 'ok' },
    ])
    expect(second.report?.stateLost).toBe(true)
    expect(second.report?.survived).toMatchObject({ memory: false, filesystem: true })
    const [command] = toolResultsIn(second.prompts[1])
    const [, code] = toolResultsIn(second.prompts[2])
    expect(command?.output).toMatchObject({ exitCode: 0, stdout: 'still here' })
    expect(code?.output).toMatchObject({ error: expect.stringMatching(/NameError/) })
    // The command's result does not wait for the memory verdict: the notice is on it or on the next result,
    // exactly once.
    const notices = [command?.output, code?.output].filter((output) =>
      /memory did not survive/.test((output as { notice?: string }).notice ?? ''),
    )
    expect(notices).toHaveLength(1)
  }, 180_000)

  it('experimental_sandbox and the sandbox tools use the same sandbox within a turn', async () => {
    const conversationId = newConversation()
    const { model, prompts } = scriptedModel([
      { toolCalls: [{ toolName: 'stamp', input: { text: 'via experimental_sandbox' } }] },
      {
        toolCalls: [
          {
            toolName: 'runCommand',
            input: {
              command: 'cat stamp/file.txt && cat /proc/sys/kernel/random/boot_id > /dev/null && echo same',
            },
          },
        ],
      },
      { text: 'ok' },
    ])
    const stamp = tool({
      inputSchema: z.object({ text: z.string() }),
      execute: async ({ text }, { experimental_sandbox }) => {
        await experimental_sandbox!.writeTextFile({ path: 'stamp/file.txt', content: `${text}\n` })
        const { stdout } = await experimental_sandbox!.run({ command: 'cat stamp/file.txt' })
        return stdout
      },
    })
    const turn = sandkeepTurn({ sessions: rig.sessions, conversationId, tenant })
    await turn.generateText({ model, prompt: 'go', tools: { stamp }, stopWhen: stepCountIs(5) })
    expect(toolResultsIn(prompts[1])[0]?.output).toBe('via experimental_sandbox\n')
    expect(toolResultsIn(prompts[2])[1]?.output).toMatchObject({
      exitCode: 0,
      stdout: 'via experimental_sandbox\nsame\n',
    })
    const sandboxId = turn.report?.sandboxId
    expect(rig.host.listSandboxes().filter((s) => s.sandboxId === sandboxId)).toHaveLength(1)
    expect((await turn.ended)?.action).toBe('paused')
    expect(sandboxState(sandboxId)).toBe('paused')
  }, 120_000)
})
