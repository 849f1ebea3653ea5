// Large outputs through the provider (the real @e2b/code-interpreter SDK) against a local-e2b host run as
// its own process: for each size, a runCode that prints that many bytes (and one that returns them as the
// cell's value), a runCommand that writes them, and a writeFile of them; each time and the app's peak RSS.
// Also the longest event-loop stall seen during each call (what starves a lease renewal timer).
// Imports the BUILT packages: run `pnpm build` first.
// With --in-process the host runs in this process (as the tests run it): its work then shares this event loop.
// Usage: node bench/large-output.mjs [--mib 5,10,20,40] [--only print,value,command,write] [--in-process] [--json]
import { readFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { startHostProcess } from '../../local-e2b/bench/host-process.mjs'
import { startLocalE2B } from '../../local-e2b/dist/index.js'
import { createE2BProvider } from '../dist/index.js'

const args = process.argv.slice(2)
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback)
const sizes = option('--mib', '5,10,20,40').split(',').map(Number)
const only = option('--only', 'print,value,command,write').split(',')
const asJson = args.includes('--json')

function rssMiB(pid = 'self') {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024)
}

/** Runs `call`, sampling this process's RSS every 20 ms; returns seconds, peak RSS, longest stall and the value. */
async function measure(call) {
  global.gc?.()
  const before = rssMiB()
  let peak = before
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB())
  }, 20)
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const started = performance.now()
  const value = await call()
  const seconds = (performance.now() - started) / 1000
  delay.disable()
  clearInterval(sampler)
  peak = Math.max(peak, rssMiB())
  return {
    seconds: Math.round(seconds * 100) / 100,
    rssBeforeMiB: before,
    rssPeakMiB: peak,
    maxStallMs: Math.round(delay.max / 1e6),
    value,
  }
}

async function startHost() {
  if (!args.includes('--in-process')) return startHostProcess()
  const host = await startLocalE2B({ logger: () => {} })
  return {
    opts: { apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl },
    close: () => host.close(),
  }
}

const host = await startHost()
const provider = createE2BProvider({ ...host.opts, requestTimeoutMs: 600_000 })
const rows = []
try {
  const sandbox = await provider.create({ timeoutMs: 3_600_000 })
  const runTimeout = { timeoutMs: 600_000 }
  for (const mib of sizes) {
    const bytes = mib * 1024 * 1024
    const cases = {
      print: () => sandbox.runCode(`print('x' * ${bytes}, end='')`, runTimeout),
      value: () => sandbox.runCode(`'x' * ${bytes}`, runTimeout),
      command: () => sandbox.runCommand(`head -c ${bytes} /dev/zero | tr '\\0' x`, runTimeout),
      write: () => sandbox.writeFile('/home/user/large.bin', new Uint8Array(bytes).fill(120)),
    }
    for (const name of only) {
      const { value, ...figures } = await measure(cases[name])
      const held = value === undefined ? bytes : Math.max(value.stdout?.length ?? 0, value.text?.length ?? 0)
      const row = { case: name, mib, ...figures, charsReturned: held }
      rows.push(row)
      if (!asJson) console.log(JSON.stringify(row))
    }
  }
  await provider.kill(sandbox.id)
} finally {
  await host.close()
}
if (asJson) console.log(JSON.stringify({ rows }))
