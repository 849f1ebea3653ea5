// Three turns of a LangGraph agent that set a variable and write a file each, then time travel: the run from
// the end of turn 1 finds the sandbox as turn 1 left it (x = 1, one file), and the turn-3 branch is still
// there. Runs on the embedded defaults (a local-e2b host in this process, the memory store).
//   bash scripts/dev.sh node examples/langgraph-agent/src/main.ts   (at the repository root)
import { MemorySaver } from '@langchain/langgraph'
import { createSessionManager } from '@sandkeep/core'
import { SandkeepCheckpointSaver } from '@sandkeep/langgraph'
import { embeddedDefaults } from '@sandkeep-examples/shared'
import { buildAgent, type ScriptedCall, userMessage } from './agent.ts'

const dir = '/home/user/work'
const check: ScriptedCall[] = [
  ['run_code', { code: 'print(x)' }],
  ['run_command', { command: `ls ${dir}` }],
]

/** What one run's check found in the sandbox. */
export interface Seen {
  label: string
  x: string | undefined
  files: string[]
}

export async function main(log: (line: string) => void = console.log): Promise<Seen[]> {
  const defaults = await embeddedDefaults()
  const sessions = createSessionManager({
    store: defaults.store,
    provider: defaults.provider,
    checkpoints: { every: 'turn' },
  })
  const saver = new SandkeepCheckpointSaver({ saver: new MemorySaver(), sessions })
  const graph = buildAgent(saver)
  const thread = `langgraph-agent-${Date.now()}`
  const seen: Seen[] = []
  const record = (label: string, state: { messages: Array<{ type: string; content: unknown }> }) => {
    const [code, ls] = state.messages
      .filter((message) => message.type === 'tool')
      .slice(-2)
      .map((message) => String(message.content))
    const result = {
      label,
      x: /stdout: (\S+)/.exec(code ?? '')?.[1],
      files: (ls ?? '').match(/t\d\.txt/g) ?? [],
    }
    seen.push(result)
    log(`${label.padEnd(28)} x = ${result.x}   files: ${result.files.join(' ')}`)
  }
  try {
    const ends: string[] = []
    for (const n of [1, 2, 3]) {
      const rounds: ScriptedCall[][] = [
        [
          ['run_code', { code: `x = ${n}` }],
          ['write_file', { path: `${dir}/t${n}.txt`, content: `turn ${n}` }],
        ],
        check,
      ]
      record(`turn ${n}`, await graph.invoke({ messages: [userMessage(rounds)] }, saver.runConfig(thread)))
      const snapshot = await graph.getState({ configurable: { thread_id: thread } })
      ends.push(String(snapshot.config.configurable?.checkpoint_id))
    }
    const fromTurn1 = saver.runConfig(thread, { configurable: { checkpoint_id: ends[0] } })
    record('time travel to turn 1', await graph.invoke({ messages: [userMessage([check])] }, fromTurn1))
    const fromTurn3 = saver.runConfig(thread, { configurable: { checkpoint_id: ends[2] } })
    record('back on the turn-3 branch', await graph.invoke({ messages: [userMessage([check])] }, fromTurn3))
    await saver.deleteThread(thread)
    return seen
  } finally {
    await sessions.close({ keepStore: true })
    await defaults.close()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main()
}
