// Benchmark of the code interpreter (port 49999) through the real @e2b/code-interpreter SDK against the BUILT
// package: runCode round trips on a warm kernel, and kernel cold starts, per language.
// Run `pnpm --filter @sandkeep/local-e2b build` first.
// Usage: node bench/interpreter.mjs [--cells 200] [--restarts 20] [--json]
//
// Figures:
// - runCode round trip: SDK call to parsed Execution, warm kernel, one context, cells run one after another.
// - kernel cold start (spawn to ready): from the host's kernel-start events, i.e. the kernel process started
//   inside the sandbox through nsenter until it said ready; what a cold-booted context pays once.
// - restartCodeContext: SDK round trip of a restart (kill the kernel, cold-start a new one, wait for ready).
// - first runCode of a new sandbox: SDK round trip of the first cell, cold start included.
import { Sandbox } from '@e2b/code-interpreter'
import { startLocalE2B } from '../dist/index.js'
import { printRows, summary, timed } from './stats.mjs'

const args = process.argv.slice(2)
const option = (name, fallback) => {
  const index = args.indexOf(name)
  return index >= 0 ? Number(args[index + 1]) || fallback : fallback
}
const cells = option('--cells', 200)
const restarts = option('--restarts', 20)
const asJson = args.includes('--json')

function check(execution, expected) {
  if (execution.error) throw new Error(`cell failed: ${execution.error.name}: ${execution.error.value}`)
  if (expected !== undefined && execution.text !== expected) {
    throw new Error(`expected ${expected}, got ${execution.text}`)
  }
}

const host = await startLocalE2B({ logger: () => {} })
const opts = { apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }
const rows = []
try {
  const languages = [
    { language: 'python', set: 'x = 41 + 1', get: 'x', print: 'print("hello")' },
    { language: 'javascript', set: 'var x = 41 + 1', get: 'x', print: 'console.log("hello")' },
  ]
  const firstCells = { python: [], javascript: [] }
  // First cell of fresh sandboxes (the namespace is already up after create; the kernel is not).
  for (let index = 0; index < 10; index++) {
    const sandbox = await Sandbox.create({ ...opts, template: 'code-interpreter-v1' })
    for (const { language, set } of languages) {
      const [ms, execution] = await timed(() => sandbox.runCode(set, { language }))
      check(execution)
      if (index > 0) firstCells[language].push(ms)
    }
    await sandbox.kill()
  }

  const sandbox = await Sandbox.create({ ...opts, template: 'code-interpreter-v1' })
  for (const { language, set, get, print } of languages) {
    const context = await sandbox.createCodeContext({ language })
    check(await sandbox.runCode(set, { context }))
    // Warm up the SDK's connection and both JITs; not measured.
    for (let run = 0; run < 20; run++) check(await sandbox.runCode(get, { context }), '42')
    const withResult = []
    const withOutput = []
    const silent = []
    for (let run = 0; run < cells; run++) {
      const [a, resultExecution] = await timed(() => sandbox.runCode(get, { context }))
      check(resultExecution, '42')
      withResult.push(a)
      const [b, printExecution] = await timed(() => sandbox.runCode(print, { context }))
      check(printExecution)
      withOutput.push(b)
      const [c, silentExecution] = await timed(() => sandbox.runCode(set, { context }))
      check(silentExecution)
      silent.push(c)
    }
    rows.push(summary(`${language}: runCode round trip, value shown ('${get}')`, withResult, 10))
    rows.push(summary(`${language}: runCode round trip, printing ('${print}')`, withOutput, 10))
    rows.push(summary(`${language}: runCode round trip, statement ('${set}')`, silent, 10))

    const restartMs = []
    const before = host.events.list({ type: 'kernel-start', sandboxId: sandbox.sandboxId }).length
    for (let run = 0; run < restarts; run++) {
      const [ms] = await timed(() => sandbox.restartCodeContext(context))
      restartMs.push(ms)
    }
    const spawnToReady = host.events
      .list({ type: 'kernel-start', sandboxId: sandbox.sandboxId })
      .slice(before)
      .map((event) => event.detail.coldStartMs)
    rows.push(summary(`${language}: kernel cold start, spawn to ready`, spawnToReady, 300))
    rows.push(summary(`${language}: restartCodeContext (SDK round trip)`, restartMs))
    rows.push(
      summary(`${language}: first runCode of a new sandbox (cold start included)`, firstCells[language], 300),
    )
  }
  await sandbox.kill()
} catch (error) {
  console.error(
    'interpreter bench failed; host errors:',
    JSON.stringify(host.events.list({ type: 'host-error' })),
  )
  throw error
} finally {
  await host.close()
}

printRows(rows, {
  asJson,
  info: { package: '@sandkeep/local-e2b', part: 'code interpreter', isolation: host.isolation },
  title: `@sandkeep/local-e2b code interpreter bench: isolation ${host.isolation} (ms)`,
  nameWidth: 66,
  withCount: true,
})
