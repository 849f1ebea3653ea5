// Benchmark of the local E2B host through the real e2b SDK: create, pause, resume (connect of a paused
// sandbox) and commands.run('true') over N sandboxes, plus the code interpreter's round trip and kernel
// cold start. Imports the BUILT package: run `pnpm --filter @sandkeep/local-e2b build` first.
// By default the host runs as its own process (the bin, as `sandkeep host` runs it), so the SDK client and the
// host do not share one event loop; `--in-process` measures startLocalE2B in this process instead.
// Usage: node bench/index.mjs [--sandboxes 50] [--in-process] [--json]

import { Sandbox } from 'e2b'
import { startLocalE2B } from '../dist/index.js'
import { startHostProcess } from './host-process.mjs'
import { printRows, summary, timed } from './stats.mjs'

const args = process.argv.slice(2)
const count = Number(args[args.indexOf('--sandboxes') + 1]) || 50
const asJson = args.includes('--json')
const inProcess = args.includes('--in-process')

/** The host behind a small interface: in this process, or the bin in a child process (admin routes). */
async function startHost() {
  if (inProcess) {
    const host = await startLocalE2B({ logger: () => {} })
    return {
      opts: { apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl },
      isolation: host.isolation,
      freezer: host.freezer,
      mode: 'in-process',
      getSandbox: async (id) => host.getSandbox(id),
      events: async (type) => host.events.list({ type }),
      close: () => host.close(),
    }
  }
  const host = await startHostProcess()
  return {
    ...host,
    getSandbox: (id) => host.admin(`sandboxes/${id}`),
    events: (type) => host.admin(`events?type=${type}`),
  }
}

const host = await startHost()
const opts = host.opts
const samples = { create: [], pause: [], resume: [], command: [], hostPause: [], hostResume: [] }
const rows = []
try {
  // Warm up the SDK's HTTP connections and the JIT; not measured.
  for (let index = 0; index < 3; index++) {
    const warm = await Sandbox.create(opts)
    await warm.commands.run('true')
    await warm.pause()
    await Sandbox.connect(warm.sandboxId, opts)
    await warm.kill()
  }
  for (let index = 0; index < count; index++) {
    const [createMs, sandbox] = await timed(() => Sandbox.create(opts))
    samples.create.push(createMs)
    for (let run = 0; run < 3; run++) {
      const [commandMs] = await timed(() => sandbox.commands.run('true'))
      samples.command.push(commandMs)
    }
    const [pauseMs] = await timed(() => sandbox.pause())
    samples.pause.push(pauseMs)
    const [resumeMs] = await timed(() => Sandbox.connect(sandbox.sandboxId, opts))
    samples.resume.push(resumeMs)
    const view = await host.getSandbox(sandbox.sandboxId)
    const last = view?.pauses.at(-1)
    if (last) {
      samples.hostPause.push(last.pauseMs)
      if (last.resumeMs !== undefined) samples.hostResume.push(last.resumeMs)
    }
    await sandbox.kill()
  }
  rows.push(summary('create (SDK round trip)', samples.create, 150))
  rows.push(summary('pause (SDK round trip)', samples.pause, 25))
  rows.push(summary('resume = connect of a paused sandbox (SDK round trip)', samples.resume, 25))
  rows.push(summary("commands.run('true') (SDK round trip)", samples.command, 15))
  const starts = (await host.events('process-start')).map((event) => event.detail.spawnMs)
  const drains = (await host.events('process-end')).map((event) => event.detail.drainMs)
  rows.push(summary('  of which: spawn inside the sandbox until its pid is known', starts))
  const runs = (await host.events('process-end')).map((event) => event.detail.runMs)
  rows.push(summary('  of which: pid known to exit (bash -l -c true)', runs))
  rows.push(summary('  of which: exit to end event (pipes drained)', drains))
  rows.push(summary('pause, inside the host (freeze)', samples.hostPause))
  rows.push(summary('resume, inside the host (thaw)', samples.hostResume))

  // Code interpreter: kernel cold start (first cell of a sandbox) and warm round trips.
  let interpreter
  try {
    interpreter = await import('@e2b/code-interpreter')
  } catch {
    interpreter = undefined
  }
  if (interpreter) {
    const coldStarts = []
    const roundTrips = []
    let available = true
    for (let index = 0; index < 5 && available; index++) {
      const sandbox = await interpreter.Sandbox.create({ ...opts, template: 'code-interpreter-v1' })
      try {
        const [coldMs] = await timed(() => sandbox.runCode('1'))
        coldStarts.push(coldMs)
        for (let run = 0; run < 10; run++) {
          const [ms] = await timed(() => sandbox.runCode('x = 1 + 1'))
          roundTrips.push(ms)
        }
      } catch (error) {
        available = false
        rows.push({ name: 'code interpreter', error: String(error?.message ?? error).slice(0, 120) })
      } finally {
        await sandbox.kill()
      }
    }
    if (available) {
      rows.push(summary('runCode round trip (warm kernel)', roundTrips, 10))
      rows.push(summary('kernel cold start (first runCode of a sandbox)', coldStarts, 300))
    }
  }
} catch (error) {
  // Say what the host saw: a benchmark that dies with only the SDK's view is hard to act on.
  console.error('bench failed; host errors:', JSON.stringify(await host.events('host-error'), null, 2))
  throw error
} finally {
  await host.close()
}

printRows(rows, {
  asJson,
  info: {
    package: '@sandkeep/local-e2b',
    host: host.mode,
    isolation: host.isolation,
    freezer: host.freezer,
    sandboxes: count,
  },
  title: `@sandkeep/local-e2b bench: ${count} sandboxes, host ${host.mode}, isolation ${host.isolation}, freezer ${host.freezer} (ms)`,
  nameWidth: 58,
})
