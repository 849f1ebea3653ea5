// How long an Agents SDK run waits for its sandbox on the sandkeep client: runs of one conversation on a
// local-e2b host and Redis (127.0.0.1:6379), each a Runner.run whose scripted model runs one command.
//   resume  = sandkeep's ResumeReport.timings.totalMs (lease, connect/resume of the paused sandbox, health checks)
//   create  = client.create() as the runner calls it (the resume plus the manifest's journal check)
//   run     = the whole Runner.run, the pause at its end included
// Imports the BUILT packages (`pnpm --filter @sandkeep/openai-agents build`).
// Usage (from packages/openai-agents): node bench/resume.mjs [--runs 30] [--json]
import { randomUUID } from 'node:crypto'
import { Runner, setTracingDisabled } from '@openai/agents-core'
import { SandboxAgent, shell } from '@openai/agents-core/sandbox'
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing'
import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { createSandkeepSandboxClient } from '@sandkeep/openai-agents'
import { createRedisSessionStore } from '@sandkeep/redis'
import { percentile } from '../../../bench/stats.mjs'

// The SDK's tracing would export spans to OpenAI (and, without a key, say so on every span).
setTracingDisabled(true)

const args = process.argv.slice(2)
const runs = Number(args[args.indexOf('--runs') + 1]) || 30
const asJson = args.includes('--json')

const host = await startLocalE2B({ logger: () => {} })
const sessions = createSessionManager({
  store: createRedisSessionStore({ prefix: `skbench:oai:${randomUUID().slice(0, 8)}` }),
  provider: createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }),
  onTurnEnd: 'pause',
})
const reports = []
sessions.on('resume-end', ({ report }) => reports.push(report))
const inner = createSandkeepSandboxClient({ sessions })
const createMs = []
const client = {
  ...inner,
  async create(...createArgs) {
    const started = performance.now()
    const session = await inner.create(...createArgs)
    createMs.push(performance.now() - started)
    return session
  },
}
const conversationId = `bench-${randomUUID()}`
const runMs = []
try {
  for (let index = 0; index <= runs; index++) {
    const model = new ScriptedModel([
      [functionCall('exec_command', { cmd: 'true' }, { callId: `b${index}` })],
      [assistantMessage('ok')],
    ])
    const agent = new SandboxAgent({ name: 'bench', instructions: 'bench', model, capabilities: [shell()] })
    const started = performance.now()
    await new Runner().run(agent, 'go', { sandbox: { client, options: { conversationId } } })
    runMs.push(performance.now() - started)
  }
} finally {
  await sessions.endSession(conversationId).catch(() => {})
  await sessions.close()
  await host.close()
}

// The first run creates the sandbox; the figures are the resumes after it.
const resumed = reports.slice(1)
const outcomes = [...new Set(resumed.map((report) => report.outcome))]
const pct = (values, p) => Math.round(percentile(values, p) * 10) / 10
const row = (values) => ({ p50: pct(values, 50), p95: pct(values, 95) })
const result = {
  runs,
  outcomes,
  resumeMs: row(resumed.map((report) => report.timings.totalMs)),
  createMs: row(createMs.slice(1)),
  runMs: row(runMs.slice(1)),
}
if (asJson) console.log(JSON.stringify(result))
else {
  console.log(`${runs} resumed runs of one conversation (outcomes: ${outcomes.join(', ')})`)
  for (const name of ['resumeMs', 'createMs', 'runMs']) {
    console.log(`  ${name.padEnd(9)} p50 ${result[name].p50} ms   p95 ${result[name].p95} ms`)
  }
}
