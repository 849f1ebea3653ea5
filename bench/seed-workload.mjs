// The seed workload: install a package and load a data set, then five turns that use both, under three
// strategies: a fresh sandbox each turn (setup redone), one sandbox kept running, and sandkeep pause/resume.
// Everything runs in local-e2b sandboxes through the same E2B provider. No network: "install a package" is a
// real `pip install` (no index, no build isolation) of a small pure-Python package whose source the setup
// writes into the sandbox; "load a data set" generates a seeded CSV in the sandbox and parses it into the
// interpreter's memory.
import { randomUUID } from 'node:crypto'
import { createMemorySessionStore, createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { redisReachable, s, table } from './stats.mjs'

const PACKAGE_SETUP = `from setuptools import setup
setup(name='skstats', version='0.1.0', packages=['skstats'])
`

const PACKAGE_INIT = `"""Tiny statistics over trip records: the package the seed workload installs."""
import csv

def load_csv(path):
    with open(path, newline='') as handle:
        return [
            (row['zone'], int(row['hour']), float(row['distance_km']), float(row['fare']))
            for row in csv.DictReader(handle)
        ]

def by_zone(rows, value=3):
    totals, counts = {}, {}
    for row in rows:
        totals[row[0]] = totals.get(row[0], 0.0) + row[value]
        counts[row[0]] = counts.get(row[0], 0) + 1
    return {zone: round(totals[zone] / counts[zone], 3) for zone in sorted(totals)}

def busiest_hours(rows, top=3):
    counts = {}
    for row in rows:
        counts[row[1]] = counts.get(row[1], 0) + 1
    return sorted(counts, key=counts.get, reverse=True)[:top]

def fare_per_km(rows):
    return round(sum(r[3] for r in rows) / sum(r[2] for r in rows), 4)
`

const GENERATOR = `import csv, random, sys, os
path, count = sys.argv[1], int(sys.argv[2])
os.makedirs(os.path.dirname(path), exist_ok=True)
rng = random.Random(42)
zones = ['Z%02d' % i for i in range(40)]
with open(path, 'w', newline='') as handle:
    out = csv.writer(handle)
    out.writerow(['zone', 'hour', 'distance_km', 'fare'])
    for _ in range(count):
        km = round(rng.expovariate(1 / 4.0), 2)
        out.writerow([rng.choice(zones), rng.randrange(24), km, round(3 + km * 1.9 + rng.random(), 2)])
`

/** The setup, as journal steps (sandkeep records exactly these; the other strategies run the same steps). */
export function setupSteps(rows) {
  return [
    { kind: 'file', path: '/home/user/pkg/setup.py', content: PACKAGE_SETUP },
    { kind: 'file', path: '/home/user/pkg/skstats/__init__.py', content: PACKAGE_INIT },
    {
      kind: 'command',
      command:
        'python3 -m pip install --user --no-index --no-build-isolation --break-system-packages --quiet /home/user/pkg',
    },
    { kind: 'file', path: '/home/user/gen_data.py', content: GENERATOR },
    { kind: 'command', command: `python3 /home/user/gen_data.py /home/user/data/trips.csv ${rows}` },
    { kind: 'code', code: "import skstats\nrows = skstats.load_csv('/home/user/data/trips.csv')\nlen(rows)" },
  ]
}

/** What each of the five turns asks of the loaded data. */
const TURNS = [
  'skstats.by_zone(rows)["Z07"]',
  'skstats.busiest_hours(rows)',
  'skstats.fare_per_km(rows)',
  'len([r for r in rows if r[2] > 10])',
  'max(skstats.by_zone(rows, value=2).values())',
]

async function runSteps(sandbox, steps) {
  for (const step of steps) {
    if (step.kind === 'file') await sandbox.writeFile(step.path, step.content)
    else if (step.kind === 'command') {
      const result = await sandbox.runCommand(step.command, { timeoutMs: 300_000 })
      if (result.exitCode !== 0)
        throw new Error(`setup command failed (${result.exitCode}): ${result.stderr.slice(0, 500)}`)
    } else {
      const result = await sandbox.runCode(step.code, { timeoutMs: 300_000 })
      if (result.error) throw new Error(`setup code failed: ${result.error.name}: ${result.error.value}`)
    }
  }
}

async function work(sandbox, index) {
  const result = await sandbox.runCode(TURNS[index], { timeoutMs: 120_000 })
  if (result.error || result.text === null) {
    throw new Error(
      `turn ${index + 1} failed: ${result.error ? `${result.error.name}: ${result.error.value}` : 'no result'}`,
    )
  }
  return result.text
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const seconds = (since) => (performance.now() - since) / 1000

export async function runSeedWorkload({ rows = 200_000, thinkMs = 2000, redisUrl, log = console.log } = {}) {
  const steps = setupSteps(rows)
  const hosts = {}
  const hostFor = async (pauseMode) => {
    hosts[pauseMode] ??= await startLocalE2B({ pauseMode, logger: () => {} })
    const host = hosts[pauseMode]
    return createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl })
  }
  const useRedis = await redisReachable(redisUrl)
  const results = []
  const answers = []
  try {
    // 1. A fresh sandbox every turn: create, redo the setup, answer, kill.
    {
      const provider = await hostFor('memory')
      const turns = []
      let running = 0
      for (let i = 0; i < TURNS.length; i++) {
        if (i > 0) await sleep(thinkMs)
        const started = performance.now()
        const sandbox = await provider.create({ metadata: { bench: 'fresh' }, timeoutMs: 600_000 })
        await runSteps(sandbox, steps)
        answers.push(['fresh', i, await work(sandbox, i)])
        turns.push(seconds(started))
        await provider.kill(sandbox.id)
        running += seconds(started)
      }
      results.push({ strategy: 'fresh sandbox each turn (setup redone)', turns, running })
    }

    // 2. One sandbox kept running for the whole conversation, idle while the user thinks.
    {
      const provider = await hostFor('memory')
      const turns = []
      const born = performance.now()
      const sandbox = await provider.create({ metadata: { bench: 'kept' }, timeoutMs: 600_000 })
      for (let i = 0; i < TURNS.length; i++) {
        if (i > 0) await sleep(thinkMs)
        const started = i === 0 ? born : performance.now()
        if (i === 0) await runSteps(sandbox, steps)
        answers.push(['kept', i, await work(sandbox, i)])
        turns.push(seconds(started))
      }
      const running = seconds(born)
      await provider.kill(sandbox.id)
      results.push({ strategy: 'one sandbox kept running', turns, running })
    }

    // 3. sandkeep: the setup is journaled in turn 1; every turn resumes, checks, works, pauses.
    for (const pauseMode of ['memory', 'filesystem']) {
      const provider = await hostFor(pauseMode)
      const store = useRedis
        ? createRedisSessionStore({
            redis: redisUrl,
            prefix: `sandkeep-bench-${randomUUID().slice(0, 8)}`,
            ttlMs: 3_600_000,
          })
        : createMemorySessionStore()
      const sessions = createSessionManager({ store, provider })
      const conversation = `seed-${randomUUID()}`
      const turns = []
      const pauses = []
      let running = 0
      try {
        for (let i = 0; i < TURNS.length; i++) {
          if (i > 0) await sleep(thinkMs)
          const started = performance.now()
          const turn = await sessions.beginTurn(conversation)
          try {
            if (i === 0) {
              await runSteps(turn.sandbox, steps)
              for (const step of steps) await turn.journal.record(step)
            }
            answers.push([`sandkeep-${pauseMode}`, i, await work(turn.sandbox, i)])
            turns.push(seconds(started))
          } finally {
            const end = await turn.end()
            pauses.push(end.timings.pauseMs / 1000)
          }
          running += seconds(started)
        }
        const record = await sessions.getSession(conversation)
        results.push({
          strategy:
            pauseMode === 'memory'
              ? 'sandkeep pause/resume (memory-keeping pause, E2B cloud-like)'
              : 'sandkeep pause/resume (filesystem-only pause: memory rehydrated from the journal)',
          turns,
          running,
          recordRunning: record?.runningSeconds,
          pauseMean: pauses.reduce((a, b) => a + b, 0) / pauses.length,
        })
        await sessions.endSession(conversation)
      } finally {
        await store.close()
      }
    }
  } finally {
    for (const host of Object.values(hosts)) await host.close()
  }

  // Every strategy must have computed the same answers, or the comparison means nothing.
  for (let i = 0; i < TURNS.length; i++) {
    const distinct = new Set(answers.filter((a) => a[1] === i).map((a) => a[2]))
    if (distinct.size !== 1)
      throw new Error(`turn ${i + 1} answers differ between strategies: ${[...distinct].join(' / ')}`)
  }

  log(
    table(
      ['strategy', 'turn 1', 'turns 2-5 (mean)', 'all 5 turns', 'sandbox running-seconds'],
      results.map((r) => {
        const later = r.turns.slice(1)
        return [
          r.strategy,
          s(r.turns[0]),
          s(later.reduce((a, b) => a + b, 0) / later.length),
          s(r.turns.reduce((a, b) => a + b, 0)),
          s(r.running),
        ]
      }),
    ),
  )
  log(
    `\n${rows} rows, ${thinkMs} ms of user think time between turns, store: ${useRedis ? 'Redis' : 'memory'}. ` +
      'Turn time = from the start of the turn to the answer (create/resume, checks, setup or rehydration, the cell); ' +
      'running-seconds = time a sandbox was running (create or resume until kill or pause done).',
  )
  return { rows, thinkMs, store: useRedis ? 'redis' : 'memory', results }
}
