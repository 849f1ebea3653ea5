// sandkeep's SandboxClient beside the Agents SDK's own E2BSandboxClient (@openai/agents-extensions 0.18.0 on
// the @openai/agents-core 0.18.0 it pins), both on one local-e2b host (state dir kept, so it can be restarted)
// and, for sandkeep, Redis at 127.0.0.1:6379. Every "request" is a Runner.run whose scripted model runs one
// command, as a server handling a conversation's next message would.
// The SDK client has no conversation key, so its side is the pattern its API offers for that: the app keeps
// the serialized session state per conversation (a Map here, a database in an app), resumes it with
// client.resume, hands the session to the run (`sandbox: { session }`), stores the state again and closes
// the session with pauseOnExit (a pause). Handing the runner `sessionState` instead makes the session the
// runner's: its cleanup kills the sandbox after a completed run (`runnerOwned` below).
//   resume      p50/p90 of getting the sandbox for a run (sandkeep: client.create as the runner calls it;
//               SDK: client.resume of the stored state) and of the whole run, ms
//   parallel    five first requests of one new conversation at once: sandboxes on the host afterwards
//   restart     a file and a background process, pause, the host is stopped and started on its state dir:
//               same sandbox, the file, the process, and what the model is told
//   expired     the paused sandbox is gone (retention passed): same, on a new sandbox
//   runnerOwned the SDK with `sandbox: { client, sessionState }`: the sandbox's state after a completed run
// Imports the BUILT packages. Usage (from packages/openai-agents): node bench/compare.mjs [--runs 20] [--json]
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Runner, setTracingDisabled } from '@openai/agents-core'
import { SandboxAgent, shell } from '@openai/agents-core/sandbox'
import * as testing from '@openai/agents-core/testing'
import { Runner as SdkRunner, setTracingDisabled as sdkSetTracingDisabled } from '@openai/agents-core-ext'
import {
  Manifest as SdkManifest,
  SandboxAgent as SdkSandboxAgent,
  shell as sdkShell,
} from '@openai/agents-core-ext/sandbox'
import * as sdkTesting from '@openai/agents-core-ext/testing'
import { E2BSandboxClient } from '@openai/agents-extensions/sandbox/e2b'
import { createSessionManager, hashConversationId, SANDKEEP_METADATA } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { codeInterpreter, createSandkeepSandboxClient } from '@sandkeep/openai-agents'
import { createRedisSessionStore } from '@sandkeep/redis'
import { percentile } from '../../../bench/stats.mjs'

// Both SDK copies would export spans to OpenAI.
setTracingDisabled(true)
sdkSetTracingDisabled(true)

const args = process.argv.slice(2)
const runs = Number(args[args.indexOf('--runs') + 1]) || 20
const asJson = args.includes('--json')

const stateDir = await mkdtemp(join(tmpdir(), 'sandkeep-oai-compare-'))
const apiKey = `e2b_test_${randomUUID().replaceAll('-', '')}`
let host = await startLocalE2B({ stateDir, apiKey, logger: () => {} })
const port = host.port
// The SDK's E2B client gives the e2b SDK no address or key: the e2b SDK reads them from the environment.
Object.assign(process.env, host.env)
async function restartHost() {
  await host.close()
  host = await startLocalE2B({ stateDir, apiKey, port, logger: () => {} })
}

const ROOT = '/home/user/workspace'
const MARK = 'sleep 3600'
const prefix = `skbench:oaicmp:${randomUUID().slice(0, 8)}`
const managers = []
function newManager() {
  const manager = createSessionManager({
    store: createRedisSessionStore({ prefix, ttlMs: 30 * 60_000 }),
    provider: createE2BProvider({ apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }),
    onTurnEnd: 'pause',
  })
  managers.push(manager)
  return manager
}
const sessions = newManager()

/** A Runner.run's scripted model: one `exec_command`, then a reply. `kit` is the SDK copy's testing module. */
const scripted = (kit, cmd) =>
  new kit.ScriptedModel([
    [kit.functionCall('exec_command', { cmd }, { callId: `c-${randomUUID().slice(0, 8)}` })],
    [kit.assistantMessage('ok')],
  ])
const outputOf = (result) =>
  result.newItems
    .filter((item) => item.type === 'tool_call_output_item')
    .map((item) => JSON.stringify(item.output))
    .join('\n')

const sandkeep = {
  clientFor(manager) {
    const inner = createSandkeepSandboxClient({ sessions: manager })
    const client = {
      ...inner,
      async create(...createArgs) {
        const started = performance.now()
        const session = await inner.create(...createArgs)
        client.last = { session, ms: performance.now() - started }
        return session
      },
    }
    return client
  },
  /** One request: a run of the conversation. */
  async run(conversation, cmd, manager = sessions) {
    const client = sandkeep.clientFor(manager)
    const model = scripted(testing, cmd)
    const agent = new SandboxAgent({
      name: 'bench',
      instructions: 'bench',
      model,
      capabilities: [shell(), codeInterpreter()],
      defaultManifest: { entries: { 'notes.txt': { type: 'file', content: 'from the manifest\n' } } },
    })
    const started = performance.now()
    const result = await new Runner().run(agent, 'go', {
      sandbox: { client, options: { conversationId: conversation } },
    })
    return {
      openMs: client.last.ms,
      runMs: performance.now() - started,
      sandboxId: client.last.session.report?.sandboxId,
      output: outputOf(result),
      instructions: JSON.stringify(model.calls?.[0]?.request?.systemInstructions ?? ''),
      told: client.last.session.notice ?? null,
    }
  },
  /** Writes the file and starts the background process in the conversation's sandbox, then pauses it. */
  async seed(conversation) {
    const session = await sandkeep.clientFor(sessions).create({ options: { conversationId: conversation } })
    await session.exec({ cmd: 'echo on-disk > kept.txt' })
    await session.runCode('x = 41')
    await session.turn.sandbox.startProcess(MARK)
    const sandboxId = session.report?.sandboxId
    await session.stop()
    return sandboxId
  },
  /** Whether the interpreter still holds `x`, asked in a session of its own after the run. */
  async hasVariable(conversation) {
    const session = await sandkeep.clientFor(sessions).create({ options: { conversationId: conversation } })
    const result = await session.runCode("'x' in dir()")
    await session.stop()
    return result.text === 'True'
  },
  count: (conversation) =>
    host
      .listSandboxes()
      .filter((view) => view.metadata[SANDKEEP_METADATA.session] === hashConversationId(conversation)).length,
  end: (conversation) => sessions.endSession(conversation).catch(() => {}),
}

const sdkClient = new E2BSandboxClient()
// The SDK's default root /workspace is not writable by an E2B sandbox's user.
const sdkManifest = () =>
  new SdkManifest({ root: ROOT, entries: { 'notes.txt': { type: 'file', content: 'from the manifest\n' } } })
const sdkStore = new Map()
const sdk = {
  async open(conversation) {
    const stored = sdkStore.get(conversation)
    if (stored) return sdkClient.resume(await sdkClient.deserializeSessionState(JSON.parse(stored)))
    const session = await sdkClient.create({
      manifest: sdkManifest(),
      // The code-interpreter sandbox, so the bench can leave a variable in its memory.
      options: {
        sandboxType: 'e2b_code_interpreter',
        pauseOnExit: true,
        metadata: { 'bench-conversation': conversation },
      },
    })
    await sdk.save(conversation, session)
    return session
  },
  save: async (conversation, session) =>
    sdkStore.set(conversation, JSON.stringify(await sdkClient.serializeSessionState(session.state))),
  async run(conversation, cmd) {
    const started = performance.now()
    const session = await sdk.open(conversation)
    const openMs = performance.now() - started
    const model = scripted(sdkTesting, cmd)
    const agent = new SdkSandboxAgent({
      name: 'bench',
      instructions: 'bench',
      model,
      capabilities: [sdkShell()],
    })
    const result = await new SdkRunner().run(agent, 'go', { sandbox: { session } })
    await sdk.save(conversation, session)
    await session.close()
    return {
      openMs,
      runMs: performance.now() - started,
      sandboxId: session.state.sandboxId,
      output: outputOf(result),
      instructions: JSON.stringify(model.calls?.[0]?.request?.systemInstructions ?? ''),
      told: null,
    }
  },
  async seed(conversation) {
    const session = await sdk.open(conversation)
    await session.execCommand({ cmd: 'echo on-disk > kept.txt' })
    await session.sandbox.runCode('x = 41')
    await session.sandbox.commands.run(MARK, { background: true })
    const sandboxId = session.state.sandboxId
    await sdk.save(conversation, session)
    await session.close()
    return sandboxId
  },
  async hasVariable(conversation) {
    const session = await sdk.open(conversation)
    const result = await session.sandbox.runCode("'x' in dir()")
    await session.close()
    return result.text === 'True'
  },
  count: (conversation) =>
    host.listSandboxes().filter((view) => view.metadata['bench-conversation'] === conversation).length,
  // Its sandboxes go with the host and its state dir at the end.
  end: async () => {},
}
const sides = { sandkeep, 'sdk-e2b': sdk }

const pct = (values, p) => Math.round(percentile(values, p))
const conversations = []
const newConversation = (name, kind) => {
  const conversation = `${kind}-${name}-${randomUUID()}`
  conversations.push([name, conversation])
  return conversation
}

async function resume(name) {
  const side = sides[name]
  const conversation = newConversation(name, 'resume')
  await side.run(conversation, 'true')
  const open = []
  const run = []
  let baseline = ''
  const ids = new Set()
  for (let index = 0; index < runs; index++) {
    const result = await side.run(conversation, 'true')
    open.push(result.openMs)
    run.push(result.runMs)
    ids.add(result.sandboxId)
    baseline = result.instructions
  }
  return {
    runs,
    sandboxes: ids.size,
    openMs: { p50: pct(open, 50), p90: pct(open, 90) },
    runMs: { p50: pct(run, 50), p90: pct(run, 90) },
    baseline,
  }
}

async function parallel(name) {
  const side = sides[name]
  const conversation = newConversation(name, 'parallel')
  // sandkeep: each request on its own manager, as five processes would be.
  await Promise.all(
    Array.from({ length: 5 }, () =>
      name === 'sandkeep' ? side.run(conversation, 'true', newManager()) : side.run(conversation, 'true'),
    ),
  )
  return { requests: 5, sandboxesOnHost: side.count(conversation) }
}

async function loss(name, fault, baseline) {
  const side = sides[name]
  const conversation = newConversation(name, fault)
  const sandboxId = await side.seed(conversation)
  if (fault === 'restart') await restartHost()
  else await host.faults.expire(sandboxId)
  const after = await side.run(conversation, 'cat kept.txt notes.txt 2>&1')
  const view = host.getSandbox(after.sandboxId)
  const running = view?.processes.some((info) => [info.cmd, ...info.args].join(' ').includes(MARK))
  return {
    sameSandbox: after.sandboxId === sandboxId,
    file: after.output.includes('on-disk') ? 'kept' : 'missing',
    manifestFile: after.output.includes('from the manifest') ? 'there' : 'missing',
    variable: (await side.hasVariable(conversation)) ? 'kept' : 'gone',
    process: running ? 'running' : 'gone',
    toldTheModel: after.told,
    instructionsChanged: after.instructions !== baseline,
    sandboxesOnHost: side.count(conversation),
  }
}

/** The SDK's runner-owned path: the run resumes `sessionState`, and its cleanup decides the sandbox's fate. */
async function runnerOwned() {
  const conversation = newConversation('sdk-e2b', 'owned')
  await sdk.run(conversation, 'true')
  const state = await sdkClient.deserializeSessionState(JSON.parse(sdkStore.get(conversation)))
  const agent = new SdkSandboxAgent({
    name: 'bench',
    instructions: 'bench',
    model: scripted(sdkTesting, 'true'),
    capabilities: [sdkShell()],
    defaultManifest: sdkManifest(),
  })
  await new SdkRunner().run(agent, 'go', { sandbox: { client: sdkClient, sessionState: state } })
  return { sandboxState: host.getSandbox(state.sandboxId)?.state ?? 'gone' }
}

const results = {}
try {
  for (const name of Object.keys(sides)) {
    const resumed = await resume(name)
    results[name] = {
      resume: resumed,
      parallel: await parallel(name),
      restart: await loss(name, 'restart', resumed.baseline),
      expired: await loss(name, 'expired', resumed.baseline),
    }
    delete resumed.baseline
  }
  results['sdk-e2b'].runnerOwned = await runnerOwned()
} finally {
  for (const [name, conversation] of conversations) await sides[name].end(conversation)
  for (const manager of managers) await manager.close()
  await host.close()
  await rm(stateDir, { recursive: true, force: true })
}

if (asJson) console.log(JSON.stringify(results, null, 2))
else {
  for (const [name, result] of Object.entries(results)) {
    const { resume: r, parallel: p } = result
    console.log(name)
    console.log(
      `  resume    open p50 ${r.openMs.p50} ms (p90 ${r.openMs.p90}), run p50 ${r.runMs.p50} ms (p90 ${r.runMs.p90}); ` +
        `${r.runs} runs on ${r.sandboxes} sandbox(es)`,
    )
    console.log(`  parallel  ${p.requests} first requests -> ${p.sandboxesOnHost} sandbox(es)`)
    for (const fault of ['restart', 'expired']) {
      const f = result[fault]
      console.log(
        `  ${fault.padEnd(9)} same sandbox ${f.sameSandbox}, file ${f.file}, manifest file ${f.manifestFile}, ` +
          `variable ${f.variable}, process ${f.process}, sandboxes ${f.sandboxesOnHost}, ` +
          `instructions changed ${f.instructionsChanged}, told: ${f.toldTheModel ?? 'nothing'}`,
      )
    }
    if (result.runnerOwned)
      console.log(`  runner-owned session: sandbox ${result.runnerOwned.sandboxState} after the run`)
  }
}
