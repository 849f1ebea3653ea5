// @sandkeep/mastra beside @mastra/e2b 0.8.0, both as Mastra WorkspaceSandboxes on one local-e2b host (and
// Redis at 127.0.0.1:6379 for sandkeep). Each "request" makes a new sandbox object for the thread, as a
// server process handling a new message would.
//   resume     paused -> running start of a thread whose sandbox exists, nothing lost: p50/p90 of start(), ms
//   parallel   five processes start one new thread at once: sandboxes on the host afterwards
//   restart    a file and a background process, stop, the host restarts: start's outcome, the file, the
//              process, and whether anything tells the model what was lost
//   expired    the paused sandbox is gone (retention passed): start's outcome, the file, the notice
// Imports the BUILT packages (`pnpm build`). Usage: node packages/mastra/bench/compare.mjs [--runs 20] [--json]
import { randomUUID } from 'node:crypto'
import { E2BSandbox } from '@mastra/e2b'
import { createSessionManager, hashConversationId, SANDKEEP_METADATA } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { SandkeepMastraSandbox } from '@sandkeep/mastra'
import { createRedisSessionStore } from '@sandkeep/redis'

const args = process.argv.slice(2)
const runs = Number(args[args.indexOf('--runs') + 1]) || 20
const asJson = args.includes('--json')

const host = await startLocalE2B({ logger: () => {} })
// @mastra/e2b passes apiKey and apiUrl to the E2B SDK; the SDK reads the envd address from the environment.
process.env.E2B_SANDBOX_URL = host.sandboxUrl
const prefix = `bench-mastra-${randomUUID().slice(0, 8)}`
const tenant = `bench-${randomUUID().slice(0, 8)}`
const managers = []
const newManager = () => {
  const manager = createSessionManager({
    store: createRedisSessionStore({ prefix, ttlMs: 30 * 60_000 }),
    provider: createE2BProvider({
      apiKey: host.apiKey,
      apiUrl: host.apiUrl,
      sandboxUrl: host.sandboxUrl,
      snapshots: { keepsMemory: false },
    }),
  })
  managers.push(manager)
  return manager
}
const sessions = newManager()

const sides = {
  sandkeep: {
    open: (thread, manager = sessions) =>
      new SandkeepMastraSandbox({ sessions: manager, threadId: thread, tenant }),
    count: (thread) =>
      host
        .listSandboxes()
        .filter((view) => view.metadata[SANDKEEP_METADATA.session] === hashConversationId(thread)).length,
    told: (sandbox) => sandbox.notice ?? null,
  },
  'mastra-e2b': {
    open: (thread) =>
      new E2BSandbox({
        id: thread,
        template: 'code-interpreter-v1',
        apiKey: host.apiKey,
        apiUrl: host.apiUrl,
      }),
    count: (thread) =>
      host.listSandboxes().filter((view) => view.metadata['mastra-sandbox-id'] === thread).length,
    told: () => null,
  },
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}
const sandboxIdOf = (name, sandbox) =>
  name === 'sandkeep' ? sandbox.report?.sandboxId : sandbox.instance?.sandboxId
const cleanup = []

async function resume(name) {
  const side = sides[name]
  const thread = `resume-${randomUUID()}`
  const first = side.open(thread)
  await first._start()
  await first._stop()
  const ms = []
  for (let run = 0; run < runs; run++) {
    const sandbox = side.open(thread)
    const started = performance.now()
    await sandbox._start()
    ms.push(performance.now() - started)
    await sandbox.executeCommand('true')
    await sandbox._stop()
  }
  cleanup.push(() => side.open(thread)._destroy())
  return { p50: Math.round(percentile(ms, 50)), p90: Math.round(percentile(ms, 90)), runs }
}

async function parallel(name) {
  const side = sides[name]
  const thread = `parallel-${randomUUID()}`
  const sandboxes = Array.from({ length: 5 }, () =>
    name === 'sandkeep' ? side.open(thread, newManager()) : side.open(thread),
  )
  await Promise.all(sandboxes.map((sandbox) => sandbox._start()))
  const sandboxesOnHost = side.count(thread)
  await Promise.all(sandboxes.map((sandbox) => sandbox._stop().catch(() => {})))
  for (const view of host.listSandboxes()) {
    if (view.metadata['mastra-sandbox-id'] === thread) cleanup.push(() => host.admin?.kill?.(view.sandboxId))
  }
  cleanup.push(() => side.open(thread)._destroy())
  return { starts: 5, sandboxesOnHost }
}

async function loss(name, fault) {
  const side = sides[name]
  const thread = `${fault}-${randomUUID()}`
  const before = side.open(thread)
  await before._start()
  await before.writeFiles([{ path: '/home/user/kept.txt', content: 'kept' }])
  await before.processes.spawn('sleep 3600')
  const sandboxId = sandboxIdOf(name, before)
  await before._stop()
  if (fault === 'restart') await host.faults.restart()
  else await host.faults.expire(sandboxId)
  const after = side.open(thread)
  const result = await after._start()
  const file = await after.executeCommand('cat /home/user/kept.txt 2>/dev/null || echo missing')
  // Asked of the host: local-e2b may run sandboxes without their own pid namespace, so pgrep sees others.
  const view = host.getSandbox(sandboxIdOf(name, after))
  const running = view?.processes.some((info) => [info.cmd, ...info.args].join(' ').includes('sleep 3600'))
  const out = {
    outcome: result?.outcome ?? '(none reported)',
    sameSandbox: sandboxIdOf(name, after) === sandboxId,
    file: file.stdout.includes('kept') ? 'kept' : 'missing',
    process: running ? 'running' : 'gone',
    toldTheModel: side.told(after),
  }
  await after._stop()
  cleanup.push(() => side.open(thread)._destroy())
  return out
}

const results = {}
try {
  for (const name of Object.keys(sides)) {
    results[name] = {
      resume: await resume(name),
      parallel: await parallel(name),
      restart: await loss(name, 'restart'),
      expired: await loss(name, 'expired'),
    }
  }
} finally {
  for (const step of cleanup) await Promise.resolve(step()).catch(() => {})
  for (const manager of managers) await manager.close()
  await host.close()
}

if (asJson) console.log(JSON.stringify(results, null, 2))
else {
  for (const [name, result] of Object.entries(results)) {
    console.log(`${name}`)
    console.log(
      `  resume    p50 ${result.resume.p50} ms, p90 ${result.resume.p90} ms (${result.resume.runs} runs)`,
    )
    console.log(`  parallel  5 starts -> ${result.parallel.sandboxesOnHost} sandbox(es)`)
    for (const fault of ['restart', 'expired']) {
      const r = result[fault]
      console.log(
        `  ${fault.padEnd(9)} outcome ${r.outcome}, same sandbox ${r.sameSandbox}, file ${r.file}, process ${r.process}, ` +
          `told: ${r.toldTheModel ?? 'nothing'}`,
      )
    }
  }
}
