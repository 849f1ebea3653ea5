// Root benchmarks (`pnpm bench` runs the packages' benches first, then this). Uses the BUILT packages: run
// `pnpm build` before. Options: --iterations N (overhead turns per variant, default 200), --rows N (seed data
// set rows, default 200000), --think-ms N (user think time between seed turns, default 2000), --only
// overhead|seed, --host process|in-process (where the local-e2b host of the overhead bench runs, default its
// own process), --json FILE (write the figures as JSON too).
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
  },
})
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

if (values.only !== 'seed') {
  console.log('\n## Per-turn overhead: sandkeep begin + end vs the raw SDK connect + pause (local-e2b)\n')
  figures.overhead = await runOverhead({
    iterations: Number(values.iterations),
    redisUrl,
    hostMode: values.host,
  })
}
if (values.only !== 'overhead') {
  console.log('\n## Seed workload: install a package, load a data set, then 5 turns\n')
  figures.seed = await runSeedWorkload({
    rows: Number(values.rows),
    thinkMs: Number(values['think-ms']),
    redisUrl,
  })
}
figures.loadAverageAtEnd = loadavg()
console.log(
  `\nload average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} at the end`,
)
if (values.json) await writeFile(values.json, `${JSON.stringify(figures, null, 2)}\n`)
