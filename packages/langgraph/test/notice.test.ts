// What the model reads from the sandkeep tools of a LangGraph agent when the sandbox is not what the last run
// left: @sandkeep/agent's notice on the first tool result of the run, then none; limits cut long outputs.
import { MemorySaver } from '@langchain/langgraph'
import { SandkeepCheckpointSaver, sandkeepTools } from '@sandkeep/langgraph'
import { describe, expect, it } from 'vitest'
import { buildAgent, lastToolResults, script } from './helpers/agent.mjs'
import { useSessions } from './helpers.js'

const rig = useSessions('lg-notice')

function newSaver() {
  return new SandkeepCheckpointSaver({ saver: new MemorySaver(), sessions: rig.sessions, tenant: rig.tenant })
}

describe('the state-lost notice', () => {
  it('a run after the sandbox expired reads the notice once, first, and the replayed variable', async () => {
    const thread = rig.newThread()
    const saver = newSaver()
    const graph = buildAgent(saver)
    await graph.invoke({ messages: [script([[['run_code', { code: 'v = 5' }]]])] }, saver.runConfig(thread))
    const before = await rig.sessions.getSession(thread, { tenant: rig.tenant })
    await rig.host.faults.expire(before?.sandboxId ?? '')

    const result = await graph.invoke(
      {
        messages: [
          script([[['run_code', { code: 'print(v)' }]], [['run_command', { command: 'echo again' }]]]),
        ],
      },
      saver.runConfig(thread),
    )
    const [code, command] = lastToolResults(result, 2)
    expect(code).toMatch(/^notice: Notice: the sandbox was replaced by a fresh one/)
    expect(code).toMatch(/1 recorded setup step was replayed/)
    expect(code).toContain('stdout: 5')
    // Once per run: the next result is the command's own.
    expect(command).toBe('exitCode: 0\nstdout: again\n')
  })
})

describe('sandkeepTools', () => {
  it('keeps its snake_case names and cuts an output past maxOutputChars with a note', async () => {
    const thread = rig.newThread()
    const saver = newSaver()
    const tools = sandkeepTools(saver, { maxOutputChars: 100 })
    expect(tools.map((tool) => tool.name)).toEqual([
      'run_code',
      'run_command',
      'read_file',
      'write_file',
      'list_files',
      'preview_url',
    ])
    const runCommand = tools[1]
    const text = String(
      await runCommand?.invoke(
        { command: 'python3 -c "print(\'y\' * 1000)"' },
        { configurable: { thread_id: thread } },
      ),
    )
    expect(text).toMatch(/^exitCode: 0\nstdout: y{60}\n\[\.\.\. 901 characters omitted/)
    await saver.endRun(thread)
  })

  it('refuses bad options before anything runs', () => {
    const saver = newSaver()
    expect(() => sandkeepTools(saver, { maxOutputChars: 0 })).toThrow(/maxOutputChars/)
    expect(() => sandkeepTools(saver, { journal: 'some' as 'all' })).toThrow(/journal/)
  })
})
