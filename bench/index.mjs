// Root benchmarks (`pnpm bench` runs the packages' benches first, then this). Uses the BUILT packages: run
// `pnpm build` before. Options: --iterations N (overhead turns per variant, default 200), --rows N (seed data
// set rows, default 200000), --think-ms N (user think time between seed turns, default 2000), --only
// overhead|seed|latency|branching, --host process|in-process (where the local-e2b host of the overhead bench runs,
// default its own process), --json FILE (write the figures as JSON too). The latency bench: --rtts 0,20,60
// (round-trip times through the delaying proxy), --latency-turns N (turns per variant and RTT, default 4),
// --model-think-ms N (before the first tool call, default 1000), --step-think-ms N (before each later step,
// default 300), --resume-ms LOW-HIGH (default 300-1000), --pause-ms LOW-HIGH (default 1000-4000),
// --no-tool-turns N (turns whose model uses no tool, at the largest RTT, default 2), --seed N, --latency-modes
// lazy,eager,auto (the sandkeep variants), --latency-tool code|command|file (the model's first tool: a runCode
// cell, a runCommand or a whole-file read, default code). The branching
// bench: --branching-turns N (turns per variant, default 20), --rewinds N (rewinds per variant, default 8). The
// checkpoints bench (local-e2b snapshots by content vs whole copies): --checkpoint-turns N (default 20). The
// scale bench (paused conversations on one host): --scale-conversations N (default 200), --scale-in-flight N
// (default 16).
import { writeFile } from 'node:fs/promises'
import { cpus, loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { runOverhead } from './overhead.mjs'
import { runSeedWorkload } from './seed-workload.mjs'

const { values } = parseArgs({
  options: {
    iterations: { type: 'string', default: '200' },
    rows: { type: 'string', default: '200000' },
    'think-ms': { type: 'string', default: '2000' },
    only: { type: 'string' },
    host: { type: 'string', default: 'process' },
    json: { type: 'string' },
    rtts: { type: 'string', default: '0,20,60' },
    'latency-turns': { type: 'string', default: '4' },
    'model-think-ms': { type: 'string', default: '1000' },
    'step-think-ms': { type: 'string', default: '300' },
    'resume-ms': { type: 'string', default: '300-1000' },
    'pause-ms': { type: 'string', default: '1000-4000' },
    'no-tool-turns': { type: 'string', default: '2' },
    seed: { type: 'string', default: '24' },
    'latency-modes': { type: 'string', default: 'lazy,eager,auto' },
    'latency-tool': { type: 'string', default: 'code' },
    'branching-turns': { type: 'string', default: '20' },
    rewinds: { type: 'string', default: '8' },
    'checkpoint-turns': { type: 'string', default: '20' },
    'scale-conversations': { type: 'string', default: '200' },
    'scale-in-flight': { type: 'string', default: '16' },
  },
})
const only = values.only
const benches = ['overhead', 'seed', 'latency', 'branching', 'checkpoints', 'scale']
if (only !== undefined && !benches.includes(only)) {
  console.error(`--only must be one of ${benches.join(', ')}, got ${only}`)
  process.exit(2)
}
/** A `LOW-HIGH` range of ms. */
function range(text, name) {
  const match = /^(\d+)-(\d+)$/.exec(text)
  if (!match || Number(match[1]) > Number(match[2])) {
    console.error(`--${name} must be LOW-HIGH in ms (e.g. 300-1000), got ${text}`)
    process.exit(2)
  }
  return [Number(match[1]), Number(match[2])]
}
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const figures = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  loadAverage: loadavg(),
}
console.log(
  `node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} at start`,
)

if (only === undefined || only === 'overhead') {
  console.log('\n## Per-turn overhead: sandkeep begin + end vs the raw SDK connect + pause (local-e2b)\n')
  figures.overhead = await runOverhead({
    iterations: Number(values.iterations),
    redisUrl,
    hostMode: values.host,
  })
}
if (only === undefined || only === 'seed') {
  console.log('\n## Seed workload: install a package, load a data set, then 5 turns\n')
  figures.seed = await runSeedWorkload({
    rows: Number(values.rows),
    thinkMs: Number(values['think-ms']),
    redisUrl,
  })
}
if (only === undefined || only === 'latency') {
  console.log(
    '\n## Latency a user waits for, the platform at a network distance (delaying proxy + addLatency)\n',
  )
  // Imported only here: it loads the AI SDK, which the other benches' process should not carry.
  const { runLatency } = await import('./latency.mjs')
  figures.latency = await runLatency({
    rtts: values.rtts.split(',').map(Number),
    turns: Number(values['latency-turns']),
    thinkMs: Number(values['model-think-ms']),
    stepThinkMs: Number(values['step-think-ms']),
    resumeMs: range(values['resume-ms'], 'resume-ms'),
    pauseMs: range(values['pause-ms'], 'pause-ms'),
    noToolTurns: Number(values['no-tool-turns']),
    seed: Number(values.seed),
    firstTool: values['latency-tool'],
    redisUrl,
    modes: values['latency-modes'].split(','),
  })
}
if (only === undefined || only === 'branching') {
  console.log(
    '\n## Branching: checkpoints at turn end, and a rewind restored from a snapshot vs the journal\n',
  )
  const { runBranching } = await import('./branching.mjs')
  figures.branching = await runBranching({
    turns: Number(values['branching-turns']),
    rewinds: Number(values.rewinds),
  })
}
if (only === undefined || only === 'checkpoints') {
  console.log('\n## Checkpoints on local-e2b: snapshots stored by content vs whole copies of the disk\n')
  const { runCheckpointStorage } = await import('./checkpoint-storage.mjs')
  figures.checkpoints = await runCheckpointStorage({ turns: Number(values['checkpoint-turns']) })
}
if (only === undefined || only === 'scale') {
  console.log('\n## Scale: paused conversations on one local-e2b host, a turn of each in random order\n')
  const { runScale } = await import('./scale.mjs')
  figures.scale = await runScale({
    conversations: Number(values['scale-conversations']),
    inFlight: Number(values['scale-in-flight']),
  })
}
figures.loadAverageAtEnd = loadavg()
console.log(
  `\nload average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} at the end`,
)
if (values.json) await writeFile(values.json, `${JSON.stringify(figures, null, 2)}\n`)
