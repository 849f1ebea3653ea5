// A real StateGraph agent (scripted model, LangGraph's ToolNode, the sandkeep tools) over the wrapper around
// MemorySaver, on Redis and a local-e2b host whose snapshots keep files only: three turns set a variable
// and write a file each; time travel back to turn 1 (updateState + invoke(null)), a replay of turn 2 from
// its past checkpoint (invoke(null, pastConfig)), and the original turn-3 branch again each find the sandbox
// as it was at that checkpoint.
import { MemorySaver } from '@langchain/langgraph'
import { SandkeepCheckpointSaver, TIE_CHANNEL } from '@sandkeep/langgraph'
import { describe, expect, it } from 'vitest'
import { buildAgent, buildNestedAgent, lastToolResults, script } from './helpers/agent.mjs'
import { useSessions } from './helpers.js'

const rig = useSessions('lg-travel')
const dir = '/home/user/work'

/** The rounds of one turn: set x and write a file, then report x and the directory. */
function turn(n: number) {
  return script([
    [
      ['run_code', { code: `x = ${n}` }],
      ['write_file', { path: `${dir}/t${n}.txt`, content: `turn ${n}` }],
    ],
    ...check(),
  ])
}

function check() {
  return [
    [
      ['run_code', { code: 'print(x)' }],
      ['run_command', { command: `ls ${dir}` }],
    ],
  ]
}

/** x and the file list the check round of a run reported. */
function checked(state: unknown) {
  const [code, ls] = lastToolResults(state, 2)
  return { x: /stdout: (\S+)/.exec(code ?? '')?.[1], files: (ls ?? '').match(/t\d\.txt/g) ?? [] }
}

describe('time travel on a real StateGraph restores the sandbox', () => {
  it('three turns, back to turn 1, a replay of turn 2, and the turn-3 branch again', async () => {
    const thread = rig.newThread()
    const saver = new SandkeepCheckpointSaver({
      saver: new MemorySaver(),
      sessions: rig.sessions,
      tenant: rig.tenant,
    })
    const graph = buildAgent(saver)
    const outcomes: string[] = []
    rig.sessions.on('resume-end', ({ conversationId, report }) => {
      if (conversationId === thread) outcomes.push(report.outcome)
    })

    const ends: string[] = []
    for (const n of [1, 2, 3]) {
      const state = await graph.invoke({ messages: [turn(n)] }, saver.runConfig(thread))
      expect(checked(state)).toEqual({ x: String(n), files: ['t1.txt', 't2.txt', 't3.txt'].slice(0, n) })
      const snapshot = await graph.getState({ configurable: { thread_id: thread } })
      ends.push(snapshot.config.configurable?.checkpoint_id as string)
    }
    // One sandbox all along: created, then resumed at each turn, never restored.
    expect(outcomes).toEqual(['created', 'resumed', 'resumed'])
    const session = await rig.sessions.getSession(thread, { tenant: rig.tenant })
    expect(session?.state).toBe('paused')

    // Back to the end of turn 1 and fork there: updateState adds a message, invoke(null) runs from it.
    const forked = await graph.updateState(
      { configurable: { thread_id: thread, checkpoint_id: ends[0] } },
      { messages: [script(check())] },
      'tools',
    )
    const atTurn1 = await graph.invoke(null, saver.runConfig(thread, forked))
    expect(checked(atTurn1)).toEqual({ x: '1', files: ['t1.txt'] })
    expect(outcomes.at(-1)).toBe('rewound')

    // Replay turn 2 from its checkpoint before the tools ran: the sandbox goes back to the end of turn 1,
    // and the replayed tools set x = 2 and write t2 again; t3 is not there.
    const history = []
    for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: thread } }))
      history.push(snapshot)
    const beforeTools2 = history.find(
      (snapshot) =>
        snapshot.next.includes('tools') &&
        JSON.stringify(snapshot.values.messages.at(-1)?.tool_calls ?? []).includes('x = 2'),
    )
    expect(beforeTools2).toBeDefined()
    const replayed = await graph.invoke(null, saver.runConfig(thread, beforeTools2?.config))
    expect(checked(replayed)).toEqual({ x: '2', files: ['t1.txt', 't2.txt'] })
    expect(outcomes.at(-1)).toBe('rewound')

    // The original branch is still there: from the end of turn 3, the sandbox has x = 3 and all three files.
    const onBranch3 = await graph.invoke(
      { messages: [script(check())] },
      saver.runConfig(thread, { configurable: { checkpoint_id: ends[2] } }),
    )
    expect(checked(onBranch3)).toEqual({ x: '3', files: ['t1.txt', 't2.txt', 't3.txt'] })

    // Going on from the thread's latest checkpoint (the turn-3 branch) needs no restore.
    const next = await graph.invoke({ messages: [script(check())] }, saver.runConfig(thread))
    expect(checked(next)).toEqual({ x: '3', files: ['t1.txt', 't2.txt', 't3.txt'] })
    expect(outcomes.at(-1)).toBe('resumed')

    // deleteThread ends the session (the sandbox is killed) along with the inner saver's checkpoints.
    await saver.deleteThread(thread)
    expect(await rig.sessions.getSession(thread, { tenant: rig.tenant })).toBeNull()
    expect(await saver.getTuple({ configurable: { thread_id: thread } })).toBeUndefined()
  })
})

describe('subgraphs: only the root namespace drives branching', () => {
  it('tools inside a subgraph run in the sandbox of the root checkpoint; time travel to a root checkpoint restores it', async () => {
    const thread = rig.newThread()
    const inner = new MemorySaver()
    const saver = new SandkeepCheckpointSaver({ saver: inner, sessions: rig.sessions, tenant: rig.tenant })
    const graph = buildNestedAgent(saver)
    const ends: string[] = []
    for (const n of [1, 2]) {
      const state = await graph.invoke({ messages: [turn(n)] }, saver.runConfig(thread))
      expect(checked(state)).toEqual({ x: String(n), files: ['t1.txt', 't2.txt'].slice(0, n) })
      const snapshot = await graph.getState({ configurable: { thread_id: thread } })
      ends.push(snapshot.config.configurable?.checkpoint_id as string)
    }
    // The subgraph's checkpoints are stored (nested namespace) and carry no tie; the root ones do.
    const nested = []
    for await (const tuple of inner.list({ configurable: { thread_id: thread } })) {
      if (tuple.config.configurable?.checkpoint_ns !== '') nested.push(tuple)
    }
    expect(nested.length).toBeGreaterThan(0)
    expect(nested.some((tuple) => tuple.pendingWrites?.some((write) => write[1] === TIE_CHANNEL))).toBe(false)

    const atTurn1 = await graph.invoke(
      { messages: [script(check())] },
      saver.runConfig(thread, { configurable: { checkpoint_id: ends[0] } }),
    )
    expect(checked(atTurn1)).toEqual({ x: '1', files: ['t1.txt'] })
  })
})

describe.each(['sync', 'exit'] as const)('durability %s', (durability) => {
  it('three turns, then back to turn 1 and to the turn-3 branch, each with its own sandbox state', async () => {
    const thread = rig.newThread()
    const saver = new SandkeepCheckpointSaver({
      saver: new MemorySaver(),
      sessions: rig.sessions,
      tenant: rig.tenant,
    })
    const graph = buildAgent(saver)
    const ends: string[] = []
    for (const n of [1, 2, 3]) {
      const state = await graph.invoke({ messages: [turn(n)] }, saver.runConfig(thread, { durability }))
      expect(checked(state)).toEqual({ x: String(n), files: ['t1.txt', 't2.txt', 't3.txt'].slice(0, n) })
      const snapshot = await graph.getState({ configurable: { thread_id: thread } })
      ends.push(snapshot.config.configurable?.checkpoint_id as string)
    }
    const from = (checkpoint_id: string | undefined) =>
      saver.runConfig(thread, { configurable: { checkpoint_id }, durability })
    const atTurn1 = await graph.invoke({ messages: [script(check())] }, from(ends[0]))
    expect(checked(atTurn1)).toEqual({ x: '1', files: ['t1.txt'] })
    const atTurn3 = await graph.invoke({ messages: [script(check())] }, from(ends[2]))
    expect(checked(atTurn3)).toEqual({ x: '3', files: ['t1.txt', 't2.txt', 't3.txt'] })
  })
})
