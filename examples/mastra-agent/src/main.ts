// A Mastra Agent with a sandkeep workspace, on the embedded defaults (local-e2b in this process, memory
// store): three turns of one thread, a host restart before the third (simulated), then a cloned thread.
//   bash scripts/dev.sh node examples/mastra-agent/src/main.ts   (at the repository root)
import { Agent } from '@mastra/core/agent'
import { MockMemory } from '@mastra/core/memory'
import { Workspace } from '@mastra/core/workspace'
import { createSessionManager } from '@sandkeep/core'
import { createSandkeepSandboxes } from '@sandkeep/mastra'
import { embeddedDefaults } from '@sandkeep-examples/shared'
import { type Step, scriptedModel } from './model.ts'

export interface TurnLog {
  threadId: string
  user: string
  outcome: string | undefined
  toolOutputs: string[]
  answer: string
}

export async function main(log: (line: string) => void = console.log): Promise<TurnLog[]> {
  const defaults = await embeddedDefaults()
  const sessions = createSessionManager({
    store: defaults.store,
    provider: defaults.provider,
    checkpoints: { every: 'turn', keep: 10 },
  })
  const sandboxes = createSandkeepSandboxes({ sessions, tenant: 'example' })
  const workspace = new Workspace({ sandbox: sandboxes.sandbox, sandboxCacheKey: sandboxes.sandboxCacheKey })
  const memory = new MockMemory()
  const turns: TurnLog[] = []

  const turn = async (threadId: string, user: string, steps: Step[]) => {
    const agent = new Agent({
      id: 'coder',
      name: 'coder',
      instructions: 'You work in a shell sandbox that is kept for this thread.',
      model: scriptedModel(steps),
      workspace,
      memory,
    })
    const toolOutputs: string[] = []
    // One user message is one sandkeep turn: withTurn ends it (the sandbox is paused) however the call ends.
    const result = await sandboxes.withTurn(threadId, () =>
      agent.generate(user, {
        memory: { thread: threadId, resource: 'user-1' },
        maxSteps: 6,
        onStepFinish: (step) => {
          for (const part of step.toolResults ?? []) toolOutputs.push(String(part.payload?.result ?? ''))
        },
      }),
    )
    const report = sandboxes.forThread(threadId).report
    const entry = { threadId, user, outcome: report?.outcome, toolOutputs, answer: result.text }
    turns.push(entry)
    log(`user       ${user}`)
    for (const output of toolOutputs) log(`  tool     ${output.trimEnd().replaceAll('\n', '\n           ')}`)
    log(`assistant  ${result.text}`)
    log(
      `  sandbox ${report?.outcome} in ${Math.round(report?.timings.totalMs ?? 0)} ms, then ${sandboxes.forThread(threadId).endReport?.action}`,
    )
    return entry
  }

  const thread = `mastra-agent-${Date.now()}`
  const clone = `${thread}-clone`
  try {
    await turn(thread, 'Start a counter at 41 and a worker.', [
      { command: 'mkdir -p work && echo 41 > work/n.txt && cat work/n.txt' },
      { command: 'sleep 3600', background: true },
      { text: 'The counter is 41 and a worker runs.' },
    ])
    await turn(thread, 'Add one.', [
      { command: 'echo $(( $(cat work/n.txt) + 1 )) > work/n.txt; cat work/n.txt' },
      { text: 'It is 42.' },
    ])
    await defaults.host.faults.restart() // simulated: the sandbox host restarts while the user is away
    await turn(thread, 'What is the counter?', [
      { command: 'cat work/n.txt' },
      { text: 'Still 42; the worker was lost in a restart, I can start it again.' },
    ])
    await sandboxes.cloneThread(memory, { sourceThreadId: thread, newThreadId: clone, tenant: 'example' })
    await turn(clone, 'On this branch, double it.', [
      { command: 'echo $(( $(cat work/n.txt) * 2 )) > work/n.txt; cat work/n.txt' },
      { text: 'This branch has 84.' },
    ])
    await turn(thread, 'And on the original?', [
      { command: 'cat work/n.txt' },
      { text: 'The original still has 42.' },
    ])
    return turns
  } finally {
    for (const id of [thread, clone]) await sessions.endSession(id, { tenant: 'example' }).catch(() => {})
    await sessions.close({ keepStore: true })
    await defaults.close()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main()
}
