// A real Mastra Agent with a sandkeep workspace, a scripted model and a local-e2b host: three turns of one
// thread keep their files on one sandbox paused in between; a host restart is repaired and reported to the
// model; a cloned thread goes on from the source's state on a sandbox of its own.
import { Agent } from '@mastra/core/agent'
import { MockMemory } from '@mastra/core/memory'
import { Workspace } from '@mastra/core/workspace'
import { describe, expect, it } from 'vitest'
import { createSandkeepSandboxes } from '../src/index.js'
import { useRig } from './helpers.js'
import { type Step, scriptedModel, toolOutputsIn } from './scripted-model.js'

const rig = useRig('mastra-agent')
const run = (command: string) => ({
  tools: [{ name: 'mastra_workspace_execute_command', input: { command } }],
})

function setup() {
  const outcomes: Array<string | undefined> = []
  const sandboxes = createSandkeepSandboxes({
    sessions: rig.sessions,
    tenant: rig.tenant,
    onStart: ({ outcome }) => {
      outcomes.push(outcome)
    },
  })
  const workspace = new Workspace({ sandbox: sandboxes.sandbox, sandboxCacheKey: sandboxes.sandboxCacheKey })
  const memory = new MockMemory()
  /** One user turn: the agent runs the script, then the app ends the thread's turn. */
  const turn = async (threadId: string, steps: Step[]) => {
    const { model, prompts } = scriptedModel(steps)
    const agent = new Agent({
      id: 'coder',
      name: 'coder',
      instructions: 'You write code.',
      model,
      workspace,
      memory,
    })
    const result = await agent.generate('go on', {
      memory: { thread: threadId, resource: 'user-1' },
      maxSteps: 6,
    })
    await sandboxes.endTurn(threadId)
    const sandbox = sandboxes.forThread(threadId)
    // The memory replays earlier turns' tool results: keep this turn's, without the trailing newline.
    const earlier = toolOutputsIn(prompts[0]).length
    const outputs = toolOutputsIn(prompts.at(-1))
      .slice(earlier)
      .map((output) => output.trimEnd())
    return { text: result.text, outputs, sandbox, report: sandbox.report }
  }
  return { sandboxes, memory, turn, outcomes }
}

describe('a Mastra Agent on a sandkeep workspace', () => {
  it('keeps a file over three turns, paused between them, and reports a host restart before turn 3', async () => {
    const { turn, outcomes } = setup()
    const thread = rig.newThread()

    const server = {
      name: 'mastra_workspace_execute_command',
      input: { command: 'sleep 600', background: true },
    }
    const first = await turn(thread, [
      run('mkdir -p work && echo 41 > work/n.txt && cat work/n.txt'),
      { tools: [server] },
      { text: 'ok' },
    ])
    expect(first.text).toBe('ok')
    expect(first.outputs[0]).toBe('41')
    expect(first.outputs[1]).toMatch(/^Started background process \(PID: \d+\)$/)
    expect(first.report).toMatchObject({ outcome: 'created', stateLost: false })
    const sandboxId = first.report?.sandboxId
    expect(first.sandbox.endReport?.action).toBe('paused')
    expect(rig.stateOf(sandboxId)).toBe('paused')

    const second = await turn(thread, [
      run('echo $(( $(cat work/n.txt) + 1 )) > work/n.txt; cat work/n.txt'),
      { text: 'ok' },
    ])
    expect(second.outputs).toEqual(['42'])
    expect(second.report).toMatchObject({ outcome: 'resumed', sandboxId, stateLost: false })
    expect(second.report?.survived.processes).toBe(true)
    expect(second.sandbox.notice).toBeUndefined()
    expect(rig.stateOf(sandboxId)).toBe('paused')

    await rig.host.faults.restart()
    const third = await turn(thread, [run('cat work/n.txt'), { text: 'ok' }])
    expect(third.report?.sandboxId).toBe(sandboxId)
    expect(third.report?.survived).toMatchObject({ filesystem: true, processes: false })
    expect(third.sandbox.getInfo().metadata).toMatchObject({ outcome: 'resumed' })
    // The model read the notice in front of the command's output: processes were lost, files kept.
    expect(third.outputs).toHaveLength(1)
    expect(third.outputs[0]).toMatch(/^Notice: the running processes from earlier turns did not survive/)
    expect(third.outputs[0]).toMatch(/files are still there\.[^\n]*\n42$/)
    expect(rig.stateOf(sandboxId)).toBe('paused')
    // What Mastra's onStart hook was told: a fresh VM, the same one whole, then one that lost state.
    expect(outcomes).toEqual(['created', 'connected', 'created'])
  })

  it('a cloned thread starts from the source state and keeps its own', async () => {
    const { turn, sandboxes, memory } = setup()
    const source = rig.newThread()
    await turn(source, [run('echo base > state.txt'), { text: 'ok' }])

    const clone = rig.newThread()
    const cloned = await sandboxes.cloneThread(memory, {
      sourceThreadId: source,
      newThreadId: clone,
      tenant: rig.tenant,
    })
    expect(cloned.thread.id).toBe(clone)
    expect(cloned.fork?.conversationId).toBe(clone)

    const onClone = await turn(clone, [run('cat state.txt; echo clone > state.txt'), { text: 'ok' }])
    expect(onClone.outputs).toEqual(['base'])
    expect(onClone.report?.outcome).toBe('forked')
    const onSource = await turn(source, [run('cat state.txt'), { text: 'ok' }])
    expect(onSource.outputs).toEqual(['base'])
    expect(onClone.report?.sandboxId).not.toBe(onSource.report?.sandboxId)
    const again = await turn(clone, [run('cat state.txt'), { text: 'ok' }])
    expect(again.outputs).toEqual(['clone'])
  })
})
