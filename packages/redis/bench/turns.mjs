// Turn-cycle benchmark of the built @sandkeep/redis against a local Redis.
//
//   pnpm --filter @sandkeep/redis build && pnpm --filter @sandkeep/redis bench
//
// 1. Counts, for real, the round trips and commands of one turn on the common path (session exists,
//    sandbox mapped): every command the client sends is recorded by wrapping its sendCommand, a round trip
//    being a batch of commands sent while none of the same turn's commands is awaiting its reply; the
//    server's own EVALSHA counter (INFO commandstats) cross-checks the count.
// 2. Runs begin+end cycles over 1,000 sessions with 50 turns in flight, for the store and, in the same run
//    and on the same Redis, a naive GET/SET/DEL implementation of the same turn (not atomic: it is the
//    baseline, not an alternative).
//
// Environment: REDIS_URL (default redis://127.0.0.1:6379), BENCH_SECONDS (default 5 per phase).
import { randomUUID } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import { createRedisSessionStore } from '@sandkeep/redis'
import { Redis } from 'ioredis'
import { quantile } from '../../../bench/stats.mjs'

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const seconds = Number(process.env.BENCH_SECONDS ?? 5)
const SESSIONS = 1000
const IN_FLIGHT = 50
const prefix = `sandkeep-bench-${randomUUID().slice(0, 8)}`
const tenant = 'bench'

const key = (index) => ({ tenant, conversationId: `conversation-${index}` })
const manifest = (sandboxId) => ({
  writtenAt: Date.now(),
  sandboxId,
  memory: [{ language: 'python', contextId: null, variable: '__sandkeep_sentinel', value: randomUUID() }],
  filesystem: { path: '/home/user/.sandkeep-marker', value: randomUUID() },
  processes: [{ pid: 42, command: 'python -m http.server 8000', cwd: '/home/user' }],
})

/** A client whose sent commands and round trips are counted. */
function countingClient() {
  const client = new Redis(url)
  const counter = { commands: [], roundTrips: 0, inFlight: 0 }
  const send = client.sendCommand.bind(client)
  client.sendCommand = (command, ...rest) => {
    if (counter.inFlight === 0) counter.roundTrips += 1
    counter.inFlight += 1
    counter.commands.push(command.name)
    const settle = () => {
      counter.inFlight -= 1
    }
    command.promise.then(settle, settle)
    return send(command, ...rest)
  }
  return { client, counter }
}

async function evalshaCalls(admin) {
  const info = await admin.info('commandstats')
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0)
}

/** The store's turn: begin (acquire) and end (release with manifest and counters). */
function storeTurn(store) {
  return {
    async begin(index, holderId) {
      const begun = await store.acquire(key(index), { holderId, leaseMs: 30_000 })
      if (begun.create || begun.record?.sandboxId == null)
        throw new Error('common path expected a mapped session')
      return begun
    },
    async end(index, begun) {
      const ended = await store.release(key(index), begun.lease, {
        turnEndedAt: Date.now(),
        manifest: manifest(begun.record.sandboxId),
        runningSeconds: 1.5,
        stateIfLast: 'paused',
      })
      if (!ended.record) throw new Error('record vanished')
    },
  }
}

/**
 * The naive implementation: read the record, write a lease key; at the end read the record again, write it
 * back with the counters and delete the lease key. Not atomic and not fenced: the baseline.
 */
function naiveTurn(redis) {
  const recordKey = (index) => `${prefix}:naive:${index}:record`
  const leaseKey = (index, holderId) => `${prefix}:naive:${index}:lease:${holderId}`
  return {
    async setUp(index) {
      await redis.set(
        recordKey(index),
        JSON.stringify({
          conversationId: key(index).conversationId,
          sandboxId: `sbx-${index}`,
          turnCount: 0,
        }),
      )
    },
    async begin(index, holderId) {
      const record = JSON.parse(await redis.get(recordKey(index)))
      await redis.set(leaseKey(index, holderId), '1', 'PX', 30_000)
      return { record, holderId }
    },
    async end(index, begun) {
      const record = JSON.parse(await redis.get(recordKey(index)))
      record.turnCount += 1
      record.manifest = manifest(record.sandboxId)
      record.lastTurnEndedAt = Date.now()
      await redis.set(recordKey(index), JSON.stringify(record))
      await redis.del(leaseKey(index, begun.holderId))
    },
  }
}

async function countRoundTrips(makeTurn, counter, admin, turns = 200) {
  // Warm-up turns first: connecting (ready check) and loading the scripts on the server happen once per
  // connection, not per turn.
  for (let turn = 0; turn < 20; turn += 1)
    await makeTurn.end(turn, await makeTurn.begin(turn, `warm-${turn}`))
  let beginTrips = 0
  let endTrips = 0
  let beginCommands = 0
  let endCommands = 0
  const before = await evalshaCalls(admin)
  for (let turn = 0; turn < turns; turn += 1) {
    const index = turn % SESSIONS
    counter.roundTrips = 0
    counter.commands = []
    const begun = await makeTurn.begin(index, `count-${turn}`)
    beginTrips += counter.roundTrips
    beginCommands += counter.commands.length
    counter.roundTrips = 0
    counter.commands = []
    await makeTurn.end(index, begun)
    endTrips += counter.roundTrips
    endCommands += counter.commands.length
  }
  const evalsha = (await evalshaCalls(admin)) - before
  return {
    beginRoundTrips: beginTrips / turns,
    endRoundTrips: endTrips / turns,
    beginCommands: beginCommands / turns,
    endCommands: endCommands / turns,
    serverEvalshaPerTurn: evalsha / turns,
  }
}

async function redisCpuSeconds(admin) {
  const info = await admin.info('cpu')
  const user = Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1] ?? 0)
  const system = Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1] ?? 0)
  return user + system
}

async function cycles(turn, admin, inFlight = IN_FLIGHT, runSeconds = seconds) {
  const redisBefore = await redisCpuSeconds(admin)
  const clientBefore = process.cpuUsage()
  let next = 0
  let done = 0
  const latencies = []
  const deadline = performance.now() + runSeconds * 1000
  const started = performance.now()
  const worker = async (workerIndex) => {
    let local = 0
    while (performance.now() < deadline) {
      const index = next
      next = (next + 1) % SESSIONS
      const t0 = performance.now()
      const begun = await turn.begin(index, `w${workerIndex}-${local++}`)
      await turn.end(index, begun)
      latencies.push(performance.now() - t0)
      done += 1
    }
  }
  await Promise.all(Array.from({ length: inFlight }, (_, index) => worker(index)))
  const elapsed = (performance.now() - started) / 1000
  const client = process.cpuUsage(clientBefore)
  const redisCpu = (await redisCpuSeconds(admin)) - redisBefore
  const at = (q) => quantile(latencies, q)
  return {
    cycles: done,
    seconds: Number(elapsed.toFixed(2)),
    cyclesPerSecond: Math.round(done / elapsed),
    p50Ms: Number(at(0.5).toFixed(2)),
    p99Ms: Number(at(0.99).toFixed(2)),
    // CPU time per cycle, not wall time: what the work costs whatever else the machine is doing.
    redisCpuUsPerCycle: Math.round((redisCpu * 1e6) / done),
    clientCpuUsPerCycle: Math.round((client.user + client.system) / done),
  }
}

async function deletePrefix(redis) {
  let cursor = '0'
  do {
    const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
    cursor = nextCursor
    if (keys.length > 0) await redis.del(...keys)
  } while (cursor !== '0')
}

async function main() {
  const admin = new Redis(url)
  const server = (await admin.info('server')).match(/redis_version:(\S+)/)?.[1]
  const results = {
    cpus: cpus().length,
    loadAverage: loadavg()
      .map((load) => load.toFixed(2))
      .join(' '),
    redis: server,
    url: url.replace(/\/\/[^@]*@/, '//***@'),
    sessions: SESSIONS,
    inFlight: IN_FLIGHT,
  }
  try {
    // Set-up: 1,000 sessions with a mapped sandbox (the common path is a session that exists).
    const setupStore = createRedisSessionStore({ redis: url, prefix })
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, index) => {
        const begun = await setupStore.acquire(key(index), { holderId: `setup-${index}`, leaseMs: 30_000 })
        await setupStore.setSandbox(key(index), begun.lease, {
          sandboxId: `sbx-${index}`,
          expectedSandboxId: null,
          providerId: 'bench',
        })
        await setupStore.release(key(index), begun.lease, {
          turnEndedAt: Date.now(),
          manifest: manifest(`sbx-${index}`),
        })
      }),
    )
    await setupStore.close()

    // 1. Round trips per turn, counted on the wire.
    const counted = countingClient()
    const countedStore = createRedisSessionStore({ redis: counted.client, prefix })
    results.storeRoundTrips = await countRoundTrips(storeTurn(countedStore), counted.counter, admin)
    const naiveCounted = naiveTurn(counted.client)
    await Promise.all(Array.from({ length: SESSIONS }, (_, index) => naiveCounted.setUp(index)))
    results.naiveRoundTrips = await countRoundTrips(naiveCounted, counted.counter, admin)
    await countedStore.close()
    counted.client.disconnect()

    // 2. Throughput: the store (its own client from the URL, as users get it), the naive baseline on a
    //    client with the same settings (no auto-pipelining), and, for reference, both on an auto-pipelined
    //    client; alternated twice so none gets the warmer half.
    const store = createRedisSessionStore({ redis: url, prefix })
    const pipelinedStore = createRedisSessionStore({
      redis: url,
      prefix,
      redisOptions: { enableAutoPipelining: true },
    })
    const naiveClient = new Redis(url)
    const naive = naiveTurn(naiveClient)
    const pipelinedNaiveClient = new Redis(url, { enableAutoPipelining: true })
    const pipelinedNaive = naiveTurn(pipelinedNaiveClient)
    await cycles(storeTurn(store), admin) // warm-up: connections, script cache, JIT
    await cycles(storeTurn(pipelinedStore), admin, IN_FLIGHT, 1)
    const runs = { store: [], naive: [], pipelinedStore: [], pipelinedNaive: [] }
    for (let round = 0; round < 2; round += 1) {
      runs.store.push(await cycles(storeTurn(store), admin))
      runs.naive.push(await cycles(naive, admin))
      runs.pipelinedStore.push(await cycles(storeTurn(pipelinedStore), admin))
      runs.pipelinedNaive.push(await cycles(pipelinedNaive, admin))
    }
    const best = (list) => list.reduce((a, b) => (b.cyclesPerSecond > a.cyclesPerSecond ? b : a))
    for (const [name, list] of Object.entries(runs)) results[name] = { best: best(list), runs: list }
    await pipelinedStore.close()
    pipelinedNaiveClient.disconnect()
    // One turn at a time: here the latency of a turn is its round trips.
    results.storeSequential = await cycles(storeTurn(store), admin, 1, Math.min(seconds, 3))
    results.naiveSequential = await cycles(naive, admin, 1, Math.min(seconds, 3))
    await store.close()
    naiveClient.disconnect()

    // The store's records are whole: every session still maps its sandbox and counted its turns.
    const check = createRedisSessionStore({ redis: url, prefix })
    const sample = await Promise.all([0, 499, 999].map((index) => check.get(key(index))))
    results.sampleTurnCounts = sample.map((record) => record?.turnCount)
    if (sample.some((record, i) => record?.sandboxId !== `sbx-${[0, 499, 999][i]}`))
      throw new Error('mapping lost')
    await check.close()
  } finally {
    await deletePrefix(admin)
    admin.disconnect()
  }

  const rt = results.storeRoundTrips
  const nrt = results.naiveRoundTrips
  console.log(
    `@sandkeep/redis turn benchmark — Redis ${results.redis}, ${SESSIONS} sessions, ${IN_FLIGHT} in flight`,
  )
  console.log('')
  console.log(
    'store / baseline       round trips  commands  cycles/s  p50 ms  p99 ms  Redis CPU µs/cycle  client CPU µs/cycle',
  )
  const row = (name, trips, best) =>
    console.log(
      [
        name.padEnd(22),
        `${trips.beginRoundTrips} + ${trips.endRoundTrips}`.padEnd(12),
        `${trips.beginCommands} + ${trips.endCommands}`.padEnd(9),
        String(best.cyclesPerSecond).padStart(8),
        String(best.p50Ms).padStart(6),
        String(best.p99Ms).padStart(6),
        String(best.redisCpuUsPerCycle).padStart(18),
        String(best.clientCpuUsPerCycle).padStart(19),
      ].join('  '),
    )
  row('sandkeep store', rt, results.store.best)
  row('naive GET/SET/DEL', nrt, results.naive.best)
  row('store, auto-pipelined', rt, results.pipelinedStore.best)
  row('naive, auto-pipelined', nrt, results.pipelinedNaive.best)
  console.log('')
  console.log(
    `one turn at a time: store ${results.storeSequential.cyclesPerSecond} cycles/s (p50 ${results.storeSequential.p50Ms} ms), naive ${results.naiveSequential.cyclesPerSecond} cycles/s (p50 ${results.naiveSequential.p50Ms} ms)`,
  )
  console.log(
    `server EVALSHA per store turn: ${rt.serverEvalshaPerTurn}; ${results.cpus} CPUs, load average ${results.loadAverage} at start`,
  )
  console.log(
    `all runs (cycles/s): ${['store', 'naive', 'pipelinedStore', 'pipelinedNaive']
      .map((name) => `${name} ${results[name].runs.map((r) => r.cyclesPerSecond).join(', ')}`)
      .join('; ')}`,
  )
  const target = 10_000
  console.log(
    `target: at least ${target} begin+end cycles/s for the store: ${results.store.best.cyclesPerSecond >= target ? 'met' : 'MISSED'}`,
  )
  if (process.env.BENCH_JSON) console.log(JSON.stringify(results))
  const ok = rt.beginRoundTrips === 1 && rt.endRoundTrips === 1
  if (!ok) {
    console.error('FAIL: the common path must cost 1 + 1 round trips')
    process.exitCode = 1
  }
}

await main()
