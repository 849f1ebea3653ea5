// Sandboxes after a local-e2b host restart (the host stopped and started again on its state dir and port),
// side by side (pnpm --filter @sandkeep/langgraph bench:restart, after pnpm build):
//  - sandkeep: the agent graph of the tests on SandkeepCheckpointSaver and sandkeepTools, sessions in Redis
//    (127.0.0.1:6379), paused at each run's end;
//  - the open-swe approach: the same graph and scripted model, its run_code / run_command tools on the e2b
//    SDK; the sandbox id lives in the thread's metadata (a Map here), each run reconnects by that id
//    (Sandbox.connect), and creates a sandbox and writes its id back when the connect fails. The sandbox is
//    left running between runs, as open-swe does.
// Each thread's first run leaves a variable in the interpreter and a file on disk; then the host restarts
// (or, for `expired`, each sandbox is gone: a paused one expired, a running one killed) and each thread's second run reads both back. Reported: how
// many threads got their old sandbox back, kept the file and the variable, were told what was lost, and how
// many sandboxes the threads hold on the host; the second run's median in ms.
// Usage: node bench/host-restart.mjs [--threads 3] [--json]
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from '@e2b/code-interpreter'
import { tool } from '@langchain/core/tools'
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph'
import { ToolNode } from '@langchain/langgraph/prebuilt'
import { createSessionManager, hashConversationId, SANDKEEP_METADATA } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { SandkeepCheckpointSaver, sandkeepTools } from '@sandkeep/langgraph'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { z } from 'zod'
import { lastToolResults, ScriptedChatModel, script } from '../test/helpers/agent.mjs'

const args = process.argv.slice(2)
const threadCount = Number(args[args.indexOf('--threads') + 1]) || 3
const asJson = args.includes('--json')

const stateDir = await mkdtemp(join(tmpdir(), 'sandkeep-lg-restart-'))
const apiKey = `e2b_test_${randomUUID().replaceAll('-', '')}`
let host = await startLocalE2B({ stateDir, apiKey, logger: () => {} })
const port = host.port
// The open-swe side's e2b SDK reads the host's address and key from the environment.
Object.assign(process.env, host.env)
async function restartHost() {
  await host.close()
  host = await startLocalE2B({ stateDir, apiKey, port, logger: () => {} })
}

const tenant = `bench-${randomUUID().slice(0, 8)}`
const sessions = createSessionManager({
  store: createRedisSessionStore({ prefix: `sklgbench:${randomUUID().slice(0, 8)}`, ttlMs: 30 * 60_000 }),
  provider: createE2BProvider({
    apiKey,
    apiUrl: host.apiUrl,
    sandboxUrl: host.sandboxUrl,
    snapshots: { keepsMemory: false },
  }),
  onTurnEnd: 'pause',
  checkpoints: { every: 'turn', keep: 50 },
})
const sandboxOfThread = new Map()
const reportOfThread = new Map()
sessions.on('resume-end', ({ conversationId, report }) => {
  sandboxOfThread.set(conversationId, report.sandboxId)
  reportOfThread.set(conversationId, report)
})

/** agent node -> ToolNode -> agent, on the scripted model, as the tests' agent. */
function buildGraph(tools, checkpointer) {
  const model = new ScriptedChatModel({})
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(tools))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (state) => (state.messages.at(-1)?.tool_calls?.length ? 'tools' : END), [
      'tools',
      END,
    ])
    .addEdge('tools', 'agent')
    .compile({ checkpointer })
}

const saver = new SandkeepCheckpointSaver({ saver: new MemorySaver(), sessions, tenant })
const sandkeepSide = {
  graph: buildGraph(sandkeepTools(saver), saver),
  config: (thread) => saver.runConfig(thread),
  beforeRun: () => {},
  sandboxOf: (thread) => sandboxOfThread.get(thread),
  count: (thread) =>
    host
      .listSandboxes()
      .filter((view) => view.metadata[SANDKEEP_METADATA.session] === hashConversationId(thread)).length,
  end: (thread) => sessions.endSession(thread, { tenant }).catch(() => {}),
}

// open-swe: the thread's metadata holds the sandbox id; a worker reconnects by it, or creates one.
const threadMetadata = new Map()
const workerCache = new Map()
async function connectOrCreate(thread) {
  const sandboxId = threadMetadata.get(thread)?.sandbox_id
  if (sandboxId) {
    try {
      return await Sandbox.connect(sandboxId)
    } catch {
      // gone: a new one below
    }
  }
  const sandbox = await Sandbox.create({ metadata: { 'bench-thread': thread } })
  threadMetadata.set(thread, { sandbox_id: sandbox.sandboxId })
  return sandbox
}
function sandboxFor(config) {
  const thread = config.configurable.thread_id
  if (!workerCache.has(thread)) workerCache.set(thread, connectOrCreate(thread))
  return workerCache.get(thread)
}
const openSweTools = [
  tool(
    async ({ code }, config) => {
      const execution = await (await sandboxFor(config)).runCode(code)
      const stdout = execution.logs.stdout.join('')
      return [stdout && `stdout: ${stdout}`, execution.error && `error: ${execution.error.name}`]
        .filter(Boolean)
        .join('\n')
    },
    { name: 'run_code', description: 'Runs Python.', schema: z.object({ code: z.string() }) },
  ),
  tool(
    async ({ command }, config) => {
      const sandbox = await sandboxFor(config)
      const result = await sandbox.commands.run(command).catch((error) => error)
      return `exitCode: ${result.exitCode}\nstdout: ${result.stdout}`
    },
    { name: 'run_command', description: 'Runs a shell command.', schema: z.object({ command: z.string() }) },
  ),
]
const openSweSide = {
  graph: buildGraph(openSweTools, new MemorySaver()),
  config: (thread) => ({ configurable: { thread_id: thread } }),
  // Every request on a cold worker: the handle comes from the thread's metadata, not a cached object.
  beforeRun: () => workerCache.clear(),
  sandboxOf: (thread) => threadMetadata.get(thread)?.sandbox_id,
  count: (thread) => host.listSandboxes().filter((view) => view.metadata['bench-thread'] === thread).length,
  end: async () => {},
}
const sides = { sandkeep: sandkeepSide, 'open-swe': openSweSide }

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const FIRST = script([
  [
    ['run_code', { code: 'x = 41' }],
    ['run_command', { command: 'echo on-disk > kept.txt' }],
  ],
])
const SECOND = () =>
  script([[['run_command', { command: 'cat kept.txt' }]], [['run_code', { code: "print('x' in dir())" }]]])

async function scenario(fault) {
  const threads = Object.fromEntries(
    Object.keys(sides).map((name) => [
      name,
      Array.from({ length: threadCount }, () => `${fault}-${name}-${randomUUID()}`),
    ]),
  )
  const before = new Map()
  for (const [name, side] of Object.entries(sides)) {
    for (const thread of threads[name]) {
      side.beforeRun()
      await side.graph.invoke({ messages: [FIRST] }, side.config(thread))
      before.set(thread, side.sandboxOf(thread))
    }
  }
  if (fault === 'restart') await restartHost()
  else {
    // A paused sandbox past its retention; a running one (open-swe's) ended as its timeout would end it.
    for (const sandboxId of before.values()) {
      if (host.getSandbox(sandboxId)?.state === 'paused') await host.faults.expire(sandboxId)
      else await Sandbox.kill(sandboxId)
    }
  }
  const out = {}
  for (const [name, side] of Object.entries(sides)) {
    const row = { threads: threadCount, sameSandbox: 0, file: 0, variable: 0, told: 0, sandboxesOnHost: 0 }
    const ms = []
    let notice = null
    for (const thread of threads[name]) {
      side.beforeRun()
      const started = performance.now()
      const state = await side.graph.invoke({ messages: [SECOND()] }, side.config(thread))
      ms.push(performance.now() - started)
      const [command, code] = lastToolResults(state, 2)
      if (side.sandboxOf(thread) === before.get(thread)) row.sameSandbox += 1
      if (command.includes('on-disk')) row.file += 1
      if (code.includes('True')) row.variable += 1
      if (command.startsWith('notice:')) {
        row.told += 1
        notice = command.split('\n')[0]
      }
      row.sandboxesOnHost += side.count(thread)
    }
    out[name] = { ...row, secondRunMedianMs: Math.round(median(ms)), notice }
  }
  for (const [name, side] of Object.entries(sides)) for (const thread of threads[name]) await side.end(thread)
  return out
}

const results = {}
try {
  results.restart = await scenario('restart')
  results.expired = await scenario('expired')
} finally {
  await sessions.close()
  await host.close()
  await rm(stateDir, { recursive: true, force: true })
}

if (asJson) console.log(JSON.stringify(results, null, 2))
else {
  for (const [fault, bySide] of Object.entries(results)) {
    console.log(fault === 'restart' ? 'after a host restart (same state dir)' : 'after each sandbox expired')
    for (const [name, r] of Object.entries(bySide)) {
      console.log(
        `  ${name.padEnd(9)} of ${r.threads} threads: same sandbox ${r.sameSandbox}, file ${r.file}, ` +
          `variable ${r.variable}, told ${r.told}; ${r.sandboxesOnHost} sandbox(es) on the host; ` +
          `second run median ${r.secondRunMedianMs} ms`,
      )
      if (r.notice) console.log(`            ${r.notice}`)
    }
  }
}
