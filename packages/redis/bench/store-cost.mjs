// What one resumed turn costs the Redis store, measured on a redis-server of the bench's own (a free loopback
// port, nothing else on it): the server's CPU per turn and its commands (`INFO commandstats` after `CONFIG
// RESETSTAT`, so the figures are the server's own accounting, not a client's guess), the client's throughput
// on one connection, and the memory and keys one session takes (`MEMORY USAGE`).
//
//   pnpm --filter @sandkeep/redis build && node packages/redis/bench/store-cost.mjs [--baseline DIR]
//
// A turn is what an app's turn does through the session manager with the mock provider: begin (the lease),
// one code cell (so the turn used the sandbox and its end writes a manifest with a memory sentinel), end (the
// release holding the session through the pause, the pause, the hold's release). 5,000 sessions, each set up by
// a first turn; then every session gets one more turn, one at a time, while the server's counters run.
//
// --baseline DIR: the root of another checkout of this repository with core and redis built (e.g. the code
// before a change, `git worktree add /tmp/base <commit>`, `pnpm install`, `pnpm -F @sandkeep/core -F
// @sandkeep/redis build`). Both trees then run in this process against the same server, alternating, twice
// each, so that their figures are side by side. Environment: STORE_COST_SESSIONS (default 5000),
// STORE_COST_SECONDS (throughput phase, default 4), STORE_COST_ROUNDS (rounds of each tree with a baseline,
// default 2; with --scripts, the lowest median of each script over the rounds is printed last).
//
// --scripts: also splits the scripts' time by script (the server's SLOWLOG, every top-level command logged
// with its duration while the turns run, a script's own commands too; the SHA of each call named from the
// tree's own .lua files).
import { spawn } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { cpus, loadavg } from 'node:os'
import { resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'

const { values } = parseArgs({
  options: { baseline: { type: 'string' }, json: { type: 'boolean' }, scripts: { type: 'boolean' } },
})
const SESSIONS = Number(process.env.STORE_COST_SESSIONS ?? 5000)
const SECONDS = Number(process.env.STORE_COST_SECONDS ?? 4)
const IN_FLIGHT = 32
const here = resolve(fileURLToPath(import.meta.url), '../../../..')

/** A loopback port nothing listens on now. */
async function freePort() {
  const server = createServer()
  await new Promise((done) => server.listen(0, '127.0.0.1', done))
  const { port } = server.address()
  await new Promise((done) => server.close(done))
  return port
}

/** A redis-server of this bench's own: no persistence, loopback only; stopped by the returned close(). */
async function startRedis() {
  const port = await freePort()
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'yes',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const url = `redis://127.0.0.1:${port}`
  // Ready once it says so on stdout (or gone, with what it said).
  await new Promise((ready, fail) => {
    let said = ''
    const onData = (chunk) => {
      said += chunk
      if (said.includes('Ready to accept connections')) {
        child.stdout.off('data', onData)
        ready()
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', (chunk) => {
      said += chunk
    })
    child.once('exit', (code) =>
      fail(new Error(`redis-server on ${port} exited (${code}): ${said.slice(-500)}`)),
    )
  })
  child.stdout.resume()
  const admin = new Redis(url)
  return {
    url,
    admin,
    close: async () => {
      admin.disconnect()
      child.kill('SIGTERM')
      await new Promise((done) => child.once('exit', done))
    },
  }
}

/** The built core (manager, mock provider) and redis store of the checkout at `root`. */
async function loadTree(root, name) {
  const at = (path) => import(pathToFileURL(resolve(root, path)).href)
  // The mock provider is @sandkeep/testing's; a baseline from before that package has it in core.
  const testing = existsSync(resolve(root, 'packages/testing/dist/mock-provider.js'))
  const [core, mock, redis] = await Promise.all([
    at('packages/core/dist/index.js'),
    at(testing ? 'packages/testing/dist/mock-provider.js' : 'packages/core/dist/test/mock-provider.js'),
    at('packages/redis/dist/index.js'),
  ])
  return { name, core, mock, redis, scriptNames: scriptNames(root) }
}

/** SHA1 of each script as the loader inlines it (scripts.ts: `--- @include "name"`) → its file name. */
function scriptNames(root) {
  const directory = resolve(root, 'packages/redis/src/commands')
  const names = new Map()
  for (const file of readdirSync(directory).filter((f) => f.endsWith('.lua'))) {
    const lua = readFileSync(resolve(directory, file), 'utf8').replace(
      /^--- @include "([a-z-]+)"$/gm,
      (_, name) => readFileSync(resolve(directory, 'includes', `${name}.lua`), 'utf8'),
    )
    names.set(createHash('sha1').update(lua).digest('hex'), file.slice(0, -4))
  }
  return names
}

/** Every top-level command logged from now on, with its duration (SLOWLOG), when --scripts asks. */
async function startScriptLog(admin) {
  if (!values.scripts) return
  await admin.config('SET', 'slowlog-max-len', String(SESSIONS * 40))
  await admin.config('SET', 'slowlog-log-slower-than', '0')
  await admin.slowlog('RESET')
}

/** The logged EVALSHA calls as { script: { calls, usec, median } }; stops logging. */
async function readScriptLog(admin, names) {
  if (!values.scripts) return undefined
  await admin.config('SET', 'slowlog-log-slower-than', '10000')
  const entries = await admin.slowlog('GET', String(SESSIONS * 40))
  await admin.slowlog('RESET')
  const byScript = {}
  for (const [, , usec, args] of entries) {
    if (String(args[0]).toLowerCase() !== 'evalsha') continue
    const name = names.get(String(args[1])) ?? String(args[1]).slice(0, 8)
    byScript[name] ??= { calls: 0, usec: 0, each: [] }
    byScript[name].calls++
    byScript[name].usec += Number(usec)
    byScript[name].each.push(Number(usec))
  }
  // The median call besides the mean: on a loaded machine a few calls descheduled mid-script weigh on the
  // mean, not on the median.
  for (const script of Object.values(byScript)) {
    script.each.sort((a, b) => a - b)
    script.median = script.each[Math.floor(script.each.length / 2)]
    delete script.each
  }
  return byScript
}

/** `INFO commandstats` as { command: { calls, usec } }. */
async function commandStats(admin) {
  const stats = {}
  for (const line of (await admin.info('commandstats')).split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim())
    if (match) stats[match[1]] = { calls: Number(match[2]), usec: Number(match[3]) }
  }
  return stats
}

/** The commands the bench's own reading adds (INFO, CONFIG, MEMORY, SCAN...), left out of a turn's cost. */
const OWN = new Set([
  'slowlog|get',
  'slowlog|reset',
  'slowlog',
  'config|set',
  'info',
  'config|resetstat',
  'config',
  'memory|usage',
  'memory',
  'scan',
  'ping',
  'dbsize',
  'client|setinfo',
  'client',
  'select',
  'flushall',
  'hello',
  'script|load',
  'script',
])

async function measureTree(tree, server) {
  const { core, mock, redis } = tree
  const prefix = `sk-cost-${randomUUID().slice(0, 8)}`
  // The store's one connection, its sent commands counted: what the client sends at the top level (the
  // server's commandstats also count the commands a script runs, under their own names).
  const client = new Redis(server.url)
  const sent = new Map()
  const send = client.sendCommand.bind(client)
  client.sendCommand = (command, ...rest) => {
    sent.set(command.name.toLowerCase(), (sent.get(command.name.toLowerCase()) ?? 0) + 1)
    return send(command, ...rest)
  }
  const store = redis.createRedisSessionStore({ redis: client, prefix })
  const provider = mock.createMockProvider()
  const sessions = core.createSessionManager({ store, provider, onTurnEnd: 'pause' })
  const id = (index) => `conversation-${index}`
  const turn = async (index, code) => {
    await sessions.withTurn(id(index), async (begun) => {
      await begun.sandbox.runCode(code)
    })
  }
  try {
    // Set-up: every session created by a turn that used the sandbox.
    for (let start = 0; start < SESSIONS; start += IN_FLIGHT) {
      await Promise.all(
        Array.from({ length: Math.min(IN_FLIGHT, SESSIONS - start) }, (_, k) => turn(start + k, 'x = 1')),
      )
    }
    // Memory per session, on a sample spread over the sessions (every key the session holds).
    const keys = []
    let cursor = '0'
    do {
      const [next, batch] = await server.admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
      cursor = next
      keys.push(...batch)
    } while (cursor !== '0')
    // Mean MEMORY USAGE of up to 100 keys of each kind (record, lease, journal...), times how many of that
    // kind there are per session.
    const sessionKeys = keys.filter((key) => !key.endsWith(':index'))
    const kinds = new Map()
    for (const key of sessionKeys) {
      const kind = key.slice(key.lastIndexOf(':') + 1)
      if (!kinds.has(kind)) kinds.set(kind, [])
      kinds.get(kind).push(key)
    }
    let bytesPerSession = 0
    for (const list of kinds.values()) {
      const sample = list.filter((_, k) => k % Math.max(1, Math.floor(list.length / 100)) === 0).slice(0, 100)
      let bytes = 0
      for (const key of sample) bytes += Number(await server.admin.memory('USAGE', key, 'SAMPLES', '0'))
      bytesPerSession += (bytes / sample.length) * (list.length / SESSIONS)
    }
    const keysPerSession = sessionKeys.length / SESSIONS
    const index = keys.find((key) => key.endsWith(':index'))
    const indexBytes = index ? Number(await server.admin.memory('USAGE', index, 'SAMPLES', '0')) : 0

    // The server's cost of one resumed turn: every session once more, one turn at a time.
    await server.admin.config('RESETSTAT')
    sent.clear()
    await startScriptLog(server.admin)
    const cpuBefore = await redisCpu(server.admin)
    for (let k = 0; k < SESSIONS; k++) await turn(k, 'x += 1')
    const cpu = (await redisCpu(server.admin)) - cpuBefore
    const scripts = await readScriptLog(server.admin, tree.scriptNames)
    const stats = await commandStats(server.admin)
    // Two sums: every row (a script's commands counted in the script's time and again under their names,
    // as issue 35 first measured it), and the top level only (the commands the client sent, each at its
    // mean time: a script's time includes the commands it ran).
    let calls = 0
    let usec = 0
    const perCommand = {}
    for (const [name, stat] of Object.entries(stats)) {
      if (OWN.has(name)) continue
      calls += stat.calls
      usec += stat.usec
      perCommand[name] = { perTurn: stat.calls / SESSIONS, usecPerCall: stat.usec / Math.max(1, stat.calls) }
    }
    let topUsec = 0
    let topCalls = 0
    for (const [name, count] of sent) {
      const stat = stats[name]
      if (!stat || OWN.has(name)) continue
      topCalls += count
      topUsec += (stat.usec / stat.calls) * Math.min(count, stat.calls)
    }

    // Client throughput on one connection: turns in flight over the sessions, for SECONDS.
    const deadline = performance.now() + SECONDS * 1000
    let next = 0
    let done = 0
    const started = performance.now()
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (performance.now() < deadline) {
          const k = next
          next = (next + 1) % SESSIONS
          await turn(k, 'x += 1')
          done++
        }
      }),
    )
    const turnsPerSecond = done / ((performance.now() - started) / 1000)
    return {
      tree: tree.name,
      redisUsecPerTurn: usec / SESSIONS,
      redisTopUsecPerTurn: topUsec / SESSIONS,
      topCommandsPerTurn: topCalls / SESSIONS,
      redisProcessCpuUsecPerTurn: (cpu * 1e6) / SESSIONS,
      commandsPerTurn: calls / SESSIONS,
      perCommand,
      scripts,
      turnsPerSecond,
      bytesPerSession,
      keysPerSession,
      indexBytesPerSession: indexBytes / SESSIONS,
    }
  } finally {
    for (let start = 0; start < SESSIONS; start += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, SESSIONS - start) }, (_, k) =>
          sessions.endSession(id(start + k)).catch(() => undefined),
        ),
      )
    }
    await store.close()
    client.disconnect()
  }
}

async function redisCpu(admin) {
  const info = await admin.info('cpu')
  const user = Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1] ?? 0)
  const system = Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1] ?? 0)
  return user + system
}

const fmt = (value, digits = 0) => value.toFixed(digits)

async function main() {
  const trees = [await loadTree(here, 'this tree')]
  if (values.baseline) trees.push(await loadTree(resolve(values.baseline), `baseline (${values.baseline})`))
  const server = await startRedis()
  const version = /redis_version:(\S+)/.exec(await server.admin.info('server'))?.[1]
  const results = []
  try {
    // Alternating, twice each when there is a baseline, so neither gets the warmer half of the run.
    const rounds = trees.length > 1 ? Number(process.env.STORE_COST_ROUNDS ?? 2) : 1
    for (let round = 0; round < rounds; round++) {
      for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
        results.push(await measureTree(tree, server))
      }
    }
  } finally {
    await server.close()
  }
  console.log(
    `@sandkeep/redis cost of a resumed turn (manager + mock provider, a turn that used the sandbox, pause) — ` +
      `Redis ${version} of the bench's own, ${SESSIONS} sessions; ${cpus().length} CPUs, load average ` +
      `${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  )
  console.log('')
  console.log(
    '| tree | Redis µs per turn, top level (commandstats) | all commandstats rows summed | Redis process CPU µs per turn | commands sent per turn | commands run per turn | EVALSHA per turn (µs each) | turns/s on one connection | bytes per session | keys per session |',
  )
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
  for (const r of results) {
    const evalsha = r.perCommand.evalsha ?? { perTurn: 0, usecPerCall: 0 }
    console.log(
      `| ${r.tree} | ${fmt(r.redisTopUsecPerTurn)} | ${fmt(r.redisUsecPerTurn)} | ${fmt(r.redisProcessCpuUsecPerTurn)} | ` +
        `${fmt(r.topCommandsPerTurn, 1)} | ${fmt(r.commandsPerTurn, 1)} | ` +
        `${fmt(evalsha.perTurn, 1)} (${fmt(evalsha.usecPerCall, 1)}) | ${fmt(r.turnsPerSecond)} | ` +
        `${fmt(r.bytesPerSession)} (+${fmt(r.indexBytesPerSession)} in the tenant index) | ${fmt(r.keysPerSession, 1)} |`,
    )
  }
  console.log('')
  for (const r of results.slice(0, trees.length)) {
    console.log(
      `commands per turn, ${r.tree}: ${Object.entries(r.perCommand)
        .map(([name, c]) => `${name} ${fmt(c.perTurn, 2)} × ${fmt(c.usecPerCall, 1)} µs`)
        .join(', ')}`,
    )
  }
  for (const r of results.filter((r) => r.scripts)) {
    console.log(
      `scripts per turn (SLOWLOG), ${r.tree}: ${Object.entries(r.scripts)
        .map(
          ([name, c]) => `${name} ${fmt(c.usec / c.calls, 1)} µs (median ${c.median}) over ${c.calls} calls`,
        )
        .join(', ')}`,
    )
  }
  // The quietest round of each script per tree: on a loaded machine the lowest median is the closest to the
  // script's own cost.
  for (const tree of trees) {
    const best = {}
    for (const r of results.filter((r) => r.tree === tree.name && r.scripts)) {
      for (const [name, c] of Object.entries(r.scripts))
        best[name] = Math.min(best[name] ?? Infinity, c.median)
    }
    const names = Object.keys(best)
    if (names.length === 0) continue
    const sum = names.reduce((total, name) => total + best[name], 0)
    console.log(
      `lowest median per script over the rounds, ${tree.name}: ${names.map((n) => `${n} ${best[n]} µs`).join(', ')} (sum ${sum} µs)`,
    )
  }
  if (values.json) console.log(JSON.stringify(results))
}

await main()
