// How long a 100 MiB print holds an in-process host's event loop: the longest event-loop delay (and the round
// trip) while `runCode('print("x" * 100 MiB)')` runs, through the real @e2b/code-interpreter SDK. Build first
// (`pnpm --filter @sandkeep/local-e2b build`), then `node bench/large-print.mjs [--runs 3]` in this package.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { Sandbox } from '@e2b/code-interpreter'
import { startLocalE2B } from '../dist/index.js'

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } })
const runs = Number(values.runs)
const host = await startLocalE2B({ logger: () => {} })
const sandbox = await Sandbox.create({
  apiKey: host.apiKey,
  apiUrl: host.apiUrl,
  sandboxUrl: host.sandboxUrl,
  template: 'code-interpreter-v1',
  requestTimeoutMs: 120_000,
})
try {
  await sandbox.runCode('1')
  for (let run = 0; run < runs; run++) {
    const delay = monitorEventLoopDelay({ resolution: 10 })
    delay.enable()
    const started = performance.now()
    const execution = await sandbox.runCode('print("x" * (100 * 1024 * 1024))', { timeoutMs: 120_000 })
    const roundTripMs = performance.now() - started
    delay.disable()
    const characters = execution.logs.stdout.reduce((sum, line) => sum + line.length, 0)
    console.log(
      `run ${run + 1}: longest event-loop delay ${(delay.max / 1e6).toFixed(0)} ms, round trip ${roundTripMs.toFixed(0)} ms, ${characters} characters`,
    )
  }
} finally {
  await sandbox.kill()
  await host.close()
}
