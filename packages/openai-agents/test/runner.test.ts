// The Agents SDK's own Runner, with a scripted model (no API key), on the sandkeep client over a real local-e2b
// host and real Redis: runs of one conversation share one sandbox, paused between them.
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Model, Runner, RunState } from '@openai/agents-core'
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing'
import { createSandkeepSandboxClient } from '@sandkeep/openai-agents'
import { describe, expect, it } from 'vitest'
import { buildAgent } from './helpers/agent.mjs'
import { useAgentSessions } from './helpers/sessions.js'

const rig = useAgentSessions('oai')
let calls = 0
const call = (name: string, args: Record<string, unknown>) =>
  functionCall(name, args, { callId: `call-${++calls}` })

function runOnce(model: Model, conversationId: string, input: string) {
  const agent = buildAgent(model)
  const client = createSandkeepSandboxClient({ sessions: rig.sessions })
  return new Runner().run(agent, input, {
    sandbox: { client, options: { conversationId, tenant: rig.tenant } },
  })
}

function toolOutputs(result: { newItems: ReadonlyArray<{ type: string; output?: unknown }> }): string[] {
  return result.newItems
    .filter((item) => item.type === 'tool_call_output_item')
    .map((item) => JSON.stringify(item.output))
}

async function sandboxState(sandboxId: string) {
  const info = await rig.sessions.provider.getInfo?.(sandboxId)
  return info?.state
}

describe('the Runner on the sandkeep sandbox client', () => {
  it('keeps interpreter variables and files from one run of a conversation to the next, paused between', async () => {
    const conversationId = rig.newConversation()
    const first = await runOnce(
      new ScriptedModel([
        [call('run_code', { code: 'x = 41' })],
        [call('exec_command', { cmd: 'echo kept-by-run-1 > data.txt && cat notes.txt' })],
        [assistantMessage('x is set')],
      ]),
      conversationId,
      'set x',
    )
    expect(first.finalOutput).toBe('x is set')
    expect(toolOutputs(first)[1]).toContain('from the manifest')
    const firstReport = rig.reports.at(-1)
    expect(firstReport).toMatchObject({ conversationId, outcome: 'created' })
    const sandboxId = firstReport?.sandboxId ?? ''
    expect(await sandboxState(sandboxId)).toBe('paused')

    const second = await runOnce(
      new ScriptedModel([
        [call('run_code', { code: 'x + 1' })],
        [call('exec_command', { cmd: 'cat data.txt' })],
        [assistantMessage('x + 1 is 42')],
      ]),
      conversationId,
      'add one',
    )
    const [code, command] = toolOutputs(second)
    expect(code).toContain('42')
    expect(command).toContain('kept-by-run-1')
    expect(rig.reports.at(-1)).toMatchObject({ sandboxId, outcome: 'resumed', stateLost: false })
    expect(rig.reports.at(-1)?.survived.memory).toBe(true)
    expect(await sandboxState(sandboxId)).toBe('paused')
  })

  it('gives a sandbox recreated after the old one was lost the manifest back, and says state was lost', async () => {
    const conversationId = rig.newConversation()
    await runOnce(
      new ScriptedModel([[call('run_code', { code: 'z = 1' })], [assistantMessage('ok')]]),
      conversationId,
      'set z',
    )
    const lostId = rig.reports.at(-1)?.sandboxId ?? ''
    expect(await rig.sessions.provider.kill(lostId)).toBe(true)

    const model = new ScriptedModel([
      [call('exec_command', { cmd: 'cat notes.txt' })],
      [call('run_code', { code: "'z' in dir()" })],
      [assistantMessage('z is gone')],
    ])
    const result = await runOnce(model, conversationId, 'is z there?')
    const report = rig.reports.at(-1)
    expect(report).toMatchObject({ conversationId, outcome: 'recreated', stateLost: true })
    expect(report?.sandboxId).not.toBe(lostId)
    const [notes, hasZ] = toolOutputs(result)
    expect(notes).toContain('from the manifest')
    expect(hasZ).toContain('False')
    // The model was told, in its instructions, that the sandbox is a new one.
    expect(JSON.stringify(model.calls[0]?.request.systemInstructions)).toContain(
      'the sandbox was replaced by a fresh one',
    )
  })

  it('resumes an interrupted run in a second process on the same sandbox, paused while it waited', async () => {
    const conversationId = rig.newConversation()
    const interrupted = await runOnce(
      new ScriptedModel([
        [call('run_code', { code: 'y = 7' })],
        [call('run_code', { code: 'print(y * 6)  # approve-me' })],
      ]),
      conversationId,
      'multiply y',
    )
    expect(interrupted.interruptions).toHaveLength(1)
    const sandboxId = rig.reports.at(-1)?.sandboxId ?? ''
    expect(await sandboxState(sandboxId)).toBe('paused')
    const serialized = interrupted.state.toString()
    expect(serialized).toContain(conversationId)
    expect(serialized).not.toContain(sandboxId)
    expect(serialized).not.toContain(rig.host.apiKey)

    const child = await runChild(conversationId, serialized)
    expect(child.error).toBeUndefined()
    // The resumed run's items start with the first run's; the approved call's output is the last one.
    expect(child.outputs?.at(-1)).toContain('42\\n')
    expect(child.finalOutput).toBe('y times six is 42')
    expect(child.sandboxIds).toEqual([sandboxId])
    expect(child.outcomes).toEqual(['resumed'])
    expect(await sandboxState(sandboxId)).toBe('paused')
  })

  it('refuses a RunState whose sandbox state names no valid conversation, before any sandbox is made', async () => {
    const conversationId = rig.newConversation()
    const interrupted = await runOnce(
      new ScriptedModel([[call('run_code', { code: '# approve-me\n1' })]]),
      conversationId,
      'one',
    )
    const reportsBefore = rig.reports.length
    const tampered = interrupted.state.toString().replaceAll(conversationId, 'bad id\\u0007')
    const agent = buildAgent(new ScriptedModel([[assistantMessage('never')]]))
    const state = await RunState.fromString(agent, tampered)
    for (const interruption of state.getInterruptions()) state.approve(interruption)
    const client = createSandkeepSandboxClient({ sessions: rig.sessions })
    const error = await new Runner()
      .run(agent, state, { sandbox: { client, options: { conversationId, tenant: rig.tenant } } })
      .catch((caught: unknown) => caught)
    expect(error).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/not a sandkeep sandbox session state/),
    })
    expect(rig.reports.length).toBe(reportsBefore)
    expect(await sandboxState(rig.reports.at(-1)?.sandboxId ?? '')).toBe('paused')
  })

  it('refuses a run without a conversation id before any I/O', async () => {
    const reportsBefore = rig.reports.length
    const agent = buildAgent(new ScriptedModel([[assistantMessage('never')]]))
    const client = createSandkeepSandboxClient({ sessions: rig.sessions })
    const error = await new Runner()
      .run(agent, 'hi', { sandbox: { client, options: { tenant: rig.tenant } } })
      .catch((caught: unknown) => caught)
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(rig.reports.length).toBe(reportsBefore)
  })
})

interface ChildResult {
  outputs?: string[]
  finalOutput?: string
  sandboxIds?: string[]
  outcomes?: string[]
  error?: { code?: string; message?: string }
}

async function runChild(conversationId: string, serialized: string): Promise<ChildResult> {
  const dir = await mkdtemp(join(tmpdir(), 'sandkeep-oai-'))
  const stateFile = join(dir, 'state.json')
  await writeFile(stateFile, serialized)
  const script = fileURLToPath(new URL('./helpers/resume-approval.mjs', import.meta.url))
  const config = {
    prefix: rig.prefix,
    tenant: rig.tenant,
    conversationId,
    stateFile,
    apiKey: rig.host.apiKey,
    apiUrl: rig.host.apiUrl,
    sandboxUrl: rig.host.sandboxUrl,
  }
  try {
    const { stdout, stderr, code } = await new Promise<{
      stdout: string
      stderr: string
      code: number | null
    }>((resolve) => {
      const child = spawn(process.execPath, [script, JSON.stringify(config)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      let err = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk
      })
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        err += chunk
      })
      child.once('exit', (exitCode) => resolve({ stdout: out, stderr: err, code: exitCode }))
    })
    const line = stdout.split('\n').find((entry) => entry.startsWith('{'))
    if (!line) throw new Error(`the child printed no result (exit ${code})\n${stdout}\n${stderr}`)
    return JSON.parse(line) as ChildResult
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
