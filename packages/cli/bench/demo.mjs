// Replays the default demo transcript several times through the BUILT CLI (`sandkeep demo --json`) on the
// embedded defaults and reports what a user of the demo waits for: per resumed turn the store, resume
// (connect), health and ready times and the pause at turn end, as p50/p95 (bench/stats.mjs; a p95 of fewer
// than 20 samples is shown as max), plus the wall time of a run.
//   pnpm --filter sandkeep... build && node packages/cli/bench/demo.mjs [runs] [pause-mode]
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { percentile, tail } from '../../../bench/stats.mjs'

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
// 8 runs = 32 resumed turns: enough for a p95 that is not simply the largest sample.
const runs = Number(process.argv[2] ?? 8)
const pauseMode = process.argv[3] ?? 'memory'
const env = { ...process.env }
for (const key of Object.keys(env)) if (key.startsWith('E2B_') || key === 'REDIS_URL') delete env[key]

const turns = []
const walls = []
for (let run = 0; run < runs; run++) {
  const started = performance.now()
  const result = spawnSync(
    process.execPath,
    [bin, 'demo', '--json', '--idle', '0', '--pause-mode', pauseMode],
    {
      env,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    },
  )
  walls.push(performance.now() - started)
  if (result.status !== 0) {
    console.error(result.stdout.slice(-2000), result.stderr.slice(-2000))
    throw new Error(`demo run ${run + 1} exited with ${result.status}`)
  }
  for (const line of result.stdout.trim().split('\n')) {
    const event = JSON.parse(line)
    if (event.type === 'turn-end' && event.report && event.report.outcome !== 'created') turns.push(event)
  }
}

const row = (name, pick) => {
  const values = turns.map(pick)
  // With fewer than 20 samples a "p95" is the maximum: it is labelled so.
  const high = tail(values, 95)
  return `${name.padEnd(22)} p50 ${percentile(values, 50).toFixed(1).padStart(7)} ms   ${high.label.padEnd(3)} ${high.value.toFixed(1).padStart(7)} ms`
}
console.log(
  `sandkeep demo, pause mode ${pauseMode}: ${runs} runs, ${turns.length} resumed turns (node ${process.version})`,
)
console.log(row('store at turn start', (t) => t.report.timings.storeMs))
console.log(row('resume (connect)', (t) => t.report.timings.connectMs))
console.log(row('health checks', (t) => t.report.timings.healthMs))
console.log(row('rehydrate', (t) => t.report.timings.rehydrateMs))
console.log(row('sandbox ready', (t) => t.report.timings.totalMs))
console.log(row('pause at turn end', (t) => t.end.timings.pauseMs))
console.log(
  `${'whole run (5 turns)'.padEnd(22)} p50 ${(percentile(walls, 50) / 1000).toFixed(2).padStart(7)} s`,
)
