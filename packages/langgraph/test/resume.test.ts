// Resuming a thread: an interrupt (human in the loop) ends the run's turn with the sandbox paused and the
// resume continues in it; a second process on the same Redis, host and SQLite checkpoints resumes a thread
// and reaches the same sandbox, with its variables and files.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Command, MemorySaver } from '@langchain/langgraph'
import { SandkeepCheckpointSaver, TIE_CHANNEL } from '@sandkeep/langgraph'
import { afterAll, describe, expect, it } from 'vitest'
import { buildAgent, lastToolResults, script } from './helpers/agent.mjs'
import { REDIS_URL, useSessions } from './helpers.js'
import { sqliteUnavailable } from './sqlite.js'

const rig = useSessions('lg-resume')
const dir = '/home/user/work'

function outcomesOf(thread: string): string[] {
  const outcomes: string[] = []
  rig.sessions.on('resume-end', ({ conversationId, report }) => {
    if (conversationId === thread) outcomes.push(report.outcome)
  })
  return outcomes
}

describe('an interrupt pauses the sandbox, and the resume finds it', () => {
  it('ask_human interrupts after the tools ran; Command({ resume }) goes on in the same sandbox', async () => {
    const thread = rig.newThread()
    const saver = new SandkeepCheckpointSaver({
      saver: new MemorySaver(),
      sessions: rig.sessions,
      tenant: rig.tenant,
    })
    const graph = buildAgent(saver)
    const outcomes = outcomesOf(thread)
    const first = await graph.invoke(
      {
        messages: [
          script([
            [
              ['run_code', { code: 'y = 7' }],
              ['write_file', { path: `${dir}/draft.txt`, content: 'draft 1' }],
            ],
            [['ask_human', { question: 'publish the draft?' }]],
            [
              ['run_code', { code: 'print(y)' }],
              ['read_file', { path: `${dir}/draft.txt` }],
            ],
          ]),
        ],
      },
      saver.runConfig(thread),
    )
    expect(first.__interrupt__?.[0]?.value).toBe('publish the draft?')
    const paused = await rig.sessions.getSession(thread, { tenant: rig.tenant })
    expect(paused).toMatchObject({ state: 'paused' })

    const resumed = await graph.invoke(new Command({ resume: 'yes' }), saver.runConfig(thread))
    const [answer, code, file] = lastToolResults(resumed, 3)
    expect(answer).toBe('yes')
    expect(code).toContain('stdout: 7')
    expect(file).toBe('draft 1')
    expect(outcomes).toEqual(['created', 'resumed'])
    expect((await rig.sessions.getSession(thread, { tenant: rig.tenant }))?.sandboxId).toBe(paused?.sandboxId)
  })
})

describe('the ties are kept in the inner saver, not only in memory', () => {
  it('a fresh wrapper over the same MemorySaver time-travels with the ties it reads back', async () => {
    const thread = rig.newThread()
    const inner = new MemorySaver()
    const first = new SandkeepCheckpointSaver({ saver: inner, sessions: rig.sessions, tenant: rig.tenant })
    const graph = buildAgent(first)
    const ends: string[] = []
    for (const n of [1, 2]) {
      const set = [
        ['run_code', { code: `w = ${n}` }],
        ['write_file', { path: `${dir}/w${n}.txt`, content: String(n) }],
      ]
      await graph.invoke({ messages: [script([set])] }, first.runConfig(thread))
      const snapshot = await graph.getState({ configurable: { thread_id: thread } })
      ends.push(snapshot.config.configurable?.checkpoint_id as string)
    }
    // A second wrapper (as a restarted process would have): no cached ties, no thread state.
    const second = new SandkeepCheckpointSaver({ saver: inner, sessions: rig.sessions, tenant: rig.tenant })
    const outcomes = outcomesOf(thread)
    const check = [
      ['run_code', { code: 'print(w)' }],
      ['run_command', { command: `ls ${dir}` }],
    ]
    const atTurn1 = await buildAgent(second).invoke(
      { messages: [script([check])] },
      second.runConfig(thread, { configurable: { checkpoint_id: ends[0] } }),
    )
    const [code, ls] = lastToolResults(atTurn1, 2)
    expect(code).toContain('stdout: 1')
    expect(ls).toContain('w1.txt')
    expect(ls).not.toContain('w2.txt')
    expect(outcomes).toEqual(['rewound'])
    // And the wrapper's own writes never show: the tuple has no pending write of the reserved channel.
    const tuple = await second.getTuple({ configurable: { thread_id: thread, checkpoint_id: ends[0] } })
    const raw = await inner.getTuple({ configurable: { thread_id: thread, checkpoint_id: ends[0] } })
    expect(raw?.pendingWrites?.some((write) => write[1] === TIE_CHANNEL)).toBe(true)
    expect(tuple?.pendingWrites?.some((write) => write[1] === TIE_CHANNEL)).toBe(false)
  })
})

describe.skipIf(sqliteUnavailable !== undefined)('a second process resumes the thread', () => {
  const folder = mkdtempSync(join(tmpdir(), 'sandkeep-langgraph-'))
  afterAll(() => rmSync(folder, { recursive: true, force: true }))

  it('a child process on the same Redis, host and SQLite file reaches the same sandbox', async () => {
    const { SqliteSaver } = await import('@langchain/langgraph-checkpoint-sqlite')
    const sqlite = join(folder, 'checkpoints.db')
    const thread = rig.newThread()
    const saver = new SandkeepCheckpointSaver({
      saver: SqliteSaver.fromConnString(sqlite),
      sessions: rig.sessions,
      tenant: rig.tenant,
    })
    const graph = buildAgent(saver)
    await graph.invoke(
      {
        messages: [
          script([
            [
              ['run_code', { code: 'z = 41 + 1' }],
              ['write_file', { path: `${dir}/notes.txt`, content: 'from the first process' }],
            ],
          ]),
        ],
      },
      saver.runConfig(thread),
    )
    const before = await rig.sessions.getSession(thread, { tenant: rig.tenant })
    expect(before?.state).toBe('paused')

    const child = await runChild({
      redisUrl: REDIS_URL,
      prefix: rig.prefix,
      tenant: rig.tenant,
      host: { apiKey: rig.host.apiKey, apiUrl: rig.host.apiUrl, sandboxUrl: rig.host.sandboxUrl },
      sqlite,
      thread,
      rounds: [
        [
          ['run_code', { code: 'print(z)' }],
          ['read_file', { path: `${dir}/notes.txt` }],
        ],
      ],
      results: 2,
    })
    expect(child.results).toEqual([expect.stringContaining('stdout: 42'), 'from the first process'])
    expect(child.reports).toEqual([{ outcome: 'resumed', sandboxId: before?.sandboxId }])
  })
})

interface ChildResult {
  results: string[]
  reports: Array<{ outcome: string; sandboxId: string }>
}

function runChild(config: Record<string, unknown>): Promise<ChildResult> {
  const scriptPath = fileURLToPath(new URL('./helpers/second-process.mjs', import.meta.url))
  const child = spawn(process.execPath, [scriptPath, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  // A guard only: the child takes seconds; past this it is stuck and the test fails on its output.
  const guard = setTimeout(() => child.kill('SIGKILL'), 90_000)
  return new Promise((resolve, reject) => {
    child.on('close', (code) => {
      clearTimeout(guard)
      const line = stdout.trim().split('\n').at(-1) ?? ''
      if (code !== 0 || line === '')
        reject(new Error(`second process exited with ${code}: ${stderr.slice(-2000)}`))
      else resolve(JSON.parse(line) as ChildResult)
    })
  })
}
