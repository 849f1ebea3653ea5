// What sandkeep's harness provider adds over a plain E2B harness sandbox, measured on a local-e2b host and
// Redis (127.0.0.1:6379). "Plain" is what an E2B network sandbox session does for the AI SDK harness (the
// behaviour of vercel/ai packages/sandbox-e2b, written here on the E2B SDK): create makes a sandbox, stop()
// pauses it, resume is `Sandbox.connect(id)`, and nothing checks or repairs anything after it.
//   restart   a web server started in turn 1; the host restarts while paused (processes die); the next
//             resume: does the server's URL answer within 10 s, and when
//   expired   the same, but the paused sandbox passes its retention: does the resume give a working sandbox
//   parallel  five starts of one new conversation at once: how many sandboxes exist afterwards (and, for
//             sandkeep, how often onFirstCreate ran)
//   resume    a paused -> running resume with nothing lost, ms (sandkeep: lease, connect, probes, checks)
// Imports the BUILT packages (`pnpm build`). Usage: node bench/harness-provider.mjs [--runs 5] [--json]
import { randomInt, randomUUID } from 'node:crypto'
import { createSandkeepHarnessProvider } from '@sandkeep/ai-sdk/harness'
import { createSessionManager, portCheck } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { Sandbox } from 'e2b'
import { percentile } from './stats.mjs'

const args = process.argv.slice(2)
const runs = Number(args[args.indexOf('--runs') + 1]) || 5
const asJson = args.includes('--json')

const host = await startLocalE2B({ logger: () => {} })
const connection = { apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }
const store = createRedisSessionStore({
  prefix: `bench-harness-${randomUUID().slice(0, 8)}`,
  ttlMs: 30 * 60_000,
})
const tenant = `bench-${randomUUID().slice(0, 8)}`
const port = randomInt(20_000, 40_000)
const serve = `python3 -m http.server ${port} --directory /home/user`
const sessions = createSessionManager({
  store,
  provider: createE2BProvider(connection),
  healthChecks: [portCheck({ name: 'web', port, path: '/', repair: { command: serve, background: true } })],
})
const harness = createSandkeepHarnessProvider({ sessions, tenant })
const conversations = []

/** Whether the server in `sandboxId` answers on its URL within `withinMs`, and after how long. */
async function answersWithin(sandboxId, withinMs) {
  const started = performance.now()
  const headers = { 'E2b-Sandbox-Id': sandboxId, 'E2b-Sandbox-Port': String(port) }
  while (performance.now() - started < withinMs) {
    const status = await fetch(`${host.sandboxUrl}/`, { headers, signal: AbortSignal.timeout(5_000) }).then(
      (response) => response.status,
      () => 0,
    )
    if (status === 200) return { answers: true, ms: performance.now() - started }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { answers: false, ms: withinMs }
}

async function sandkeepTurn1() {
  const sessionId = `bench-${randomUUID()}`
  conversations.push(sessionId)
  const session = await harness.createSession({ sessionId })
  const handle = await session.restricted().ready()
  await handle.startProcess(serve)
  if (!(await answersWithin(session.id, 10_000)).answers)
    throw new Error('sandkeep: the server never answered')
  await session.stop()
  return { sessionId, sandboxId: session.id }
}

async function plainTurn1() {
  const sandbox = await Sandbox.create('code-interpreter-v1', { ...connection, allowInternetAccess: false })
  await sandbox.commands.run(serve, { background: true, timeoutMs: 0 })
  if (!(await answersWithin(sandbox.sandboxId, 10_000)).answers)
    throw new Error('plain: the server never answered')
  await sandbox.pause()
  return { sandboxId: sandbox.sandboxId }
}

/** One run of a fault scenario for both; `fault` acts on the paused sandbox. */
async function faultRun(fault) {
  const kept = await sandkeepTurn1()
  const plain = await plainTurn1()
  await fault([kept.sandboxId, plain.sandboxId])
  const sandkeepStarted = performance.now()
  const resumed = await harness.resumeSession({ sessionId: kept.sessionId })
  const sandkeepReady = performance.now() - sandkeepStarted
  const sandkeepAnswer = await answersWithin(resumed.id, 10_000)
  const sandkeepResult = {
    outcome: resumed.report.outcome,
    repaired: resumed.report.checks.some((check) => check.status === 'repaired'),
    readyMs: sandkeepReady,
    ...sandkeepAnswer,
  }
  await resumed.stop()
  const plainStarted = performance.now()
  let plainResult
  try {
    const sandbox = await Sandbox.connect(plain.sandboxId, connection)
    const plainReady = performance.now() - plainStarted
    plainResult = {
      outcome: 'connected',
      readyMs: plainReady,
      ...(await answersWithin(sandbox.sandboxId, 10_000)),
    }
    await sandbox.kill()
  } catch (error) {
    plainResult = {
      outcome: `failed: ${error?.name ?? error}`,
      readyMs: performance.now() - plainStarted,
      answers: false,
    }
  }
  return { sandkeep: sandkeepResult, plain: plainResult }
}

async function parallelRun() {
  const sessionId = `bench-${randomUUID()}`
  conversations.push(sessionId)
  const before = new Set(host.listSandboxes().map((sandbox) => sandbox.sandboxId))
  let firstCreates = 0
  const onFirstCreate = async () => {
    firstCreates++
  }
  const opened = await Promise.all(
    Array.from({ length: 5 }, () => harness.createSession({ sessionId, onFirstCreate })),
  )
  const sandkeepMade = host.listSandboxes().filter((sandbox) => !before.has(sandbox.sandboxId)).length
  await Promise.all(opened.map((session) => session.stop()))
  const middle = new Set(host.listSandboxes().map((sandbox) => sandbox.sandboxId))
  // E2B names a sandbox itself: five creates for one conversation are five sandboxes.
  const plain = await Promise.all(
    Array.from({ length: 5 }, () =>
      Sandbox.create('code-interpreter-v1', { ...connection, allowInternetAccess: false }),
    ),
  )
  const plainMade = host.listSandboxes().filter((sandbox) => !middle.has(sandbox.sandboxId)).length
  await Promise.all(plain.map((sandbox) => sandbox.kill()))
  return { sandkeep: sandkeepMade, firstCreates, plain: plainMade }
}

async function resumeRun() {
  const kept = await sandkeepTurn1()
  const plain = await plainTurn1()
  const sandkeepStarted = performance.now()
  const resumed = await harness.resumeSession({ sessionId: kept.sessionId })
  const sandkeepMs = performance.now() - sandkeepStarted
  await resumed.stop()
  const plainStarted = performance.now()
  const sandbox = await Sandbox.connect(plain.sandboxId, connection)
  const plainMs = performance.now() - plainStarted
  await sandbox.kill()
  return { sandkeep: sandkeepMs, plain: plainMs }
}

const results = { restart: [], expired: [], parallel: [], resume: [] }
try {
  await store.get({ tenant: 'default', conversationId: 'bench-probe' })
  for (let index = 0; index < runs; index++) {
    results.restart.push(await faultRun(() => host.faults.restart()))
    results.expired.push(await faultRun((ids) => Promise.all(ids.map((id) => host.faults.expire(id)))))
    results.parallel.push(await parallelRun())
    results.resume.push(await resumeRun())
  }
} finally {
  for (const sessionId of conversations) await sessions.endSession(sessionId, { tenant }).catch(() => false)
  await store.close()
  await host.close()
}

const p50 = (values) => Number(percentile(values, 50).toFixed(1))
const summary = (side, list) => {
  const answered = list.filter((run) => run[side].answers)
  return {
    outcomes: [...new Set(list.map((run) => run[side].outcome))].join(', '),
    answered: `${answered.length}/${list.length}`,
    readyP50: p50(list.map((run) => run[side].readyMs)),
    answerP50: answered.length ? p50(answered.map((run) => run[side].readyMs + run[side].ms)) : null,
  }
}
const table = {
  runs,
  restart: { sandkeep: summary('sandkeep', results.restart), plain: summary('plain', results.restart) },
  expired: { sandkeep: summary('sandkeep', results.expired), plain: summary('plain', results.expired) },
  parallel: {
    sandkeep: results.parallel.map((run) => run.sandkeep),
    firstCreates: results.parallel.map((run) => run.firstCreates),
    plain: results.parallel.map((run) => run.plain),
  },
  resume: {
    sandkeepP50: p50(results.resume.map((run) => run.sandkeep)),
    plainP50: p50(results.resume.map((run) => run.plain)),
  },
}
if (asJson) console.log(JSON.stringify({ benchmark: 'harness-provider', ...table }))
else {
  console.log(`harness provider vs a plain E2B harness sandbox, ${runs} runs each, local-e2b + Redis`)
  console.log('| scenario | | sandkeep | plain E2B |\n| --- | --- | --- | --- |')
  for (const name of ['restart', 'expired']) {
    const { sandkeep, plain } = table[name]
    console.log(`| ${name} | resume | ${sandkeep.outcomes} | ${plain.outcomes} |`)
    console.log(`| ${name} | URL answers within 10 s | ${sandkeep.answered} | ${plain.answered} |`)
    console.log(
      `| ${name} | resume -> URL answers, p50 ms | ${sandkeep.answerP50 ?? '—'} | ${plain.answerP50 ?? '—'} |`,
    )
  }
  console.log(
    `| parallel | sandboxes for 5 concurrent starts | ${table.parallel.sandkeep.join(', ')} | ${table.parallel.plain.join(', ')} |`,
  )
  console.log(`| parallel | onFirstCreate runs | ${table.parallel.firstCreates.join(', ')} | — |`)
  console.log(`| resume | paused -> ready, p50 ms | ${table.resume.sandkeepP50} | ${table.resume.plainP50} |`)
}
