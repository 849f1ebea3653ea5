// The checkpoint tree on Redis, measured side by side in one run on a private redis-server (so its CPU
// counters are this bench's alone):
//
//   pnpm --filter @sandkeep/core build && pnpm --filter @sandkeep/redis build && pnpm --filter @sandkeep/redis bench
//
// 1. Per turn (begin, two journal steps, end), checkpoints off vs on: round trips and commands the client
//    sends (its sendCommand wrapped), and Redis CPU (INFO cpu, user + sys) per turn over TURNS turns.
// 2. A mid-turn checkpoint (`store.checkpoint`, what `turn.checkpoint()` sends): round trips and Redis CPU.
// 3. Store bytes: the checkpoints hash (MEMORY USAGE and the sum of its field lengths) per checkpoint of
//    a linear conversation, and per extra branch (a regenerate: a sibling of the last turn), against the
//    journal bytes the branches hold: branches share their prefix, so a branch costs its own steps only.
// 4. Through the session manager (the mock provider, so the platform costs nothing): restore to a sibling
//    vs to the parent, then the next turn until its sandbox is ready, with snapshots and journal-only.
//
// Environment: BENCH_TURNS (default 300), BENCH_REDIS_PORT (default a free port from 6400).
import { execFileSync, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:net'
import { createSessionManager } from '@sandkeep/core'
import { createRedisSessionStore } from '@sandkeep/redis'
import { createMockProvider } from '@sandkeep/testing'
import { Redis } from 'ioredis'
import { quantile } from '../../../bench/stats.mjs'

const TURNS = Number(process.env.BENCH_TURNS ?? 300)
const STEP = (n) => ({ kind: 'command', command: `pip install package-${n} >/dev/null # ${'x'.repeat(40)}` })

async function freePort(from) {
  for (let port = from; port < from + 200; port++) {
    const free = await new Promise((resolve) => {
      const server = createServer()
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
  throw new Error('no free port')
}

async function startRedis() {
  const port = Number(process.env.BENCH_REDIS_PORT ?? (await freePort(6400)))
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  )
  const url = `redis://127.0.0.1:${port}`
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      execFileSync('redis-cli', ['-p', String(port), 'ping'], { stdio: 'ignore' })
      return { url, stop: () => child.kill('SIGTERM') }
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  child.kill('SIGKILL')
  throw new Error('redis-server did not start')
}

/** A client whose commands and round trips are counted (a round trip: commands sent while none awaits). */
function countingClient(url) {
  const client = new Redis(url)
  const counter = { commands: 0, roundTrips: 0, inFlight: 0 }
  const send = client.sendCommand.bind(client)
  client.sendCommand = (command, ...rest) => {
    if (counter.inFlight === 0) counter.roundTrips += 1
    counter.inFlight += 1
    counter.commands += 1
    const settle = () => {
      counter.inFlight -= 1
    }
    command.promise.then(settle, settle)
    return send(command, ...rest)
  }
  return { client, counter }
}

async function redisCpuMs(admin) {
  const info = await admin.info('cpu')
  const user = Number(/used_cpu_user:([\d.]+)/.exec(info)[1])
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(info)[1])
  return (user + sys) * 1000
}

const manifest = (sandboxId) => ({
  writtenAt: Date.now(),
  sandboxId,
  memory: [{ language: 'python', contextId: null, variable: '__sandkeep_sentinel', value: randomUUID() }],
  filesystem: { path: '/home/user/.sandkeep-marker', value: randomUUID() },
  processes: null,
})
const snapshot = () => ({ snapshotId: `snap-${randomUUID()}`, keeps: { files: true, memory: false } })

/** One turn on the store: begin, two journal steps (fenced), end with or without a checkpoint. */
async function storeTurn(store, key, n, withCheckpoint) {
  const { lease } = await store.acquire(key, { holderId: randomUUID(), leaseMs: 60_000 })
  await store.appendJournal(key, STEP(2 * n), { lease })
  await store.appendJournal(key, STEP(2 * n + 1), { lease })
  await store.release(key, lease, {
    turnEndedAt: Date.now(),
    manifest: manifest('sbx-bench'),
    ...(withCheckpoint ? { checkpoint: { sandboxId: 'sbx-bench', snapshot: snapshot(), keep: 10 } } : {}),
  })
}

async function newSession(store, key) {
  const { lease } = await store.acquire(key, { holderId: randomUUID(), leaseMs: 60_000 })
  await store.setSandbox(key, lease, { sandboxId: 'sbx-bench', expectedSandboxId: null, providerId: 'bench' })
  await store.release(key, lease, { turnEndedAt: Date.now() })
}

async function perTurn(url, admin, prefix, withCheckpoint) {
  const { client, counter } = countingClient(url)
  const store = createRedisSessionStore({ redis: client, prefix })
  const key = { tenant: 'bench', conversationId: `turns-${withCheckpoint}-${randomUUID()}` }
  await newSession(store, key)
  await storeTurn(store, key, 0, withCheckpoint) // scripts loaded
  const before = { ...counter }
  const cpu = await redisCpuMs(admin)
  const times = []
  for (let n = 1; n <= TURNS; n++) {
    const started = performance.now()
    await storeTurn(store, key, n, withCheckpoint)
    times.push(performance.now() - started)
  }
  const cpuMs = (await redisCpuMs(admin)) - cpu
  const result = {
    roundTrips: (counter.roundTrips - before.roundTrips) / TURNS,
    commands: (counter.commands - before.commands) / TURNS,
    redisCpuUs: (cpuMs * 1000) / TURNS,
    p50Ms: quantile(times, 0.5),
  }
  await store.close()
  client.disconnect()
  return result
}

async function midTurn(url, admin, prefix) {
  const { client, counter } = countingClient(url)
  const store = createRedisSessionStore({ redis: client, prefix })
  const key = { tenant: 'bench', conversationId: `mid-${randomUUID()}` }
  await newSession(store, key)
  const { lease } = await store.acquire(key, { holderId: randomUUID(), leaseMs: 600_000 })
  const input = () => ({ sandboxId: 'sbx-bench', snapshot: snapshot(), keep: 10, manifest: null })
  await store.checkpoint(key, lease, input())
  const before = { ...counter }
  const cpu = await redisCpuMs(admin)
  const times = []
  for (let n = 1; n <= TURNS; n++) {
    await store.appendJournal(key, STEP(n), { lease })
    const started = performance.now()
    await store.checkpoint(key, lease, input())
    times.push(performance.now() - started)
  }
  const cpuMs = (await redisCpuMs(admin)) - cpu
  const result = {
    roundTrips: (counter.roundTrips - before.roundTrips) / TURNS / 2,
    redisCpuUs: (cpuMs * 1000) / TURNS,
    p50Ms: quantile(times, 0.5),
  }
  await store.close()
  client.disconnect()
  return result
}

/** Bytes of a session's checkpoints hash: MEMORY USAGE, and the sum of field names and values. */
async function hashBytes(admin, key) {
  const usage = Number(await admin.memory('USAGE', key, 'SAMPLES', '0'))
  const flat = await admin.hgetall(key)
  const raw = Object.entries(flat).reduce((sum, [field, value]) => sum + field.length + value.length, 0)
  return { usage, raw }
}

async function storeBytes(url, admin, prefix) {
  const store = createRedisSessionStore({ redis: url, prefix })
  const key = { tenant: 'bench', conversationId: `bytes-${randomUUID()}` }
  const hash = `${prefix}:{${key.tenant}:${(await import('@sandkeep/core/store')).conversationHash(key.conversationId)}}:checkpoints`
  await newSession(store, key)
  const linear = 10
  for (let n = 1; n <= linear; n++) {
    const { lease } = await store.acquire(key, { holderId: randomUUID(), leaseMs: 60_000 })
    await store.appendJournal(key, STEP(n), { lease })
    await store.release(key, lease, {
      turnEndedAt: Date.now(),
      manifest: manifest('sbx-bench'),
      checkpoint: { sandboxId: 'sbx-bench', snapshot: snapshot(), keep: 1000 },
    })
  }
  const afterLinear = await hashBytes(admin, hash)
  const journalBytes = (await store.readJournal(key)).reduce((sum, e) => sum + JSON.stringify(e).length, 0)
  // Regenerates of the last answer: each a sibling of turn 10 under turn 9, one journal step of its own.
  const tree = (await store.readCheckpoints(key)).at(-2)
  const branches = 10
  for (let b = 0; b < branches; b++) {
    await store.rewind(key, {
      checkpoint: tree.id,
      expectedSandboxId: b === 0 ? 'sbx-bench' : `sbx-${b - 1}`,
    })
    const { lease } = await store.acquire(key, { holderId: randomUUID(), leaseMs: 60_000 })
    await store.setSandbox(key, lease, {
      sandboxId: `sbx-${b}`,
      expectedSandboxId: null,
      providerId: 'bench',
    })
    await store.appendJournal(key, STEP(100 + b), { lease })
    await store.release(key, lease, {
      turnEndedAt: Date.now(),
      manifest: manifest(`sbx-${b}`),
      checkpoint: { sandboxId: `sbx-${b}`, snapshot: snapshot(), keep: 1000 },
    })
  }
  const afterBranches = await hashBytes(admin, hash)
  await store.close()
  return {
    perCheckpoint: { usage: afterLinear.usage / linear, raw: afterLinear.raw / linear },
    perBranch: {
      usage: (afterBranches.usage - afterLinear.usage) / branches,
      raw: (afterBranches.raw - afterLinear.raw) / branches,
    },
    branchJournalBytes: journalBytes,
  }
}

/** restore + the next turn until ready, through the manager with the mock provider. */
async function restores(url, prefix, snapshots) {
  const store = createRedisSessionStore({ redis: url, prefix })
  const provider = createMockProvider(snapshots ? {} : { snapshots: false })
  const sessions = createSessionManager({ store, provider, checkpoints: { every: 'turn', keep: 1000 } })
  const id = `restore-${randomUUID()}`
  const turn = async (x) => {
    const t = await sessions.beginTurn(id)
    for (let s = 0; s < 5; s++) {
      await t.sandbox.runCode(`x${s} = ${x}`)
      await t.journal.record({ kind: 'code', code: `x${s} = ${x}` })
    }
    return (await t.end()).checkpoint
  }
  for (let n = 1; n <= 5; n++) await turn(n)
  const tree = await sessions.listCheckpoints(id)
  const last = tree.checkpoints[0]
  const parent = tree.checkpoints[1]
  await sessions.restore(id, { checkpoint: parent.id })
  const sibling = await turn(50)
  const rounds = 30
  const times = { sibling: [], parent: [] }
  const timed = async (name, target) => {
    const started = performance.now()
    await sessions.restore(id, { checkpoint: target.id })
    const t = await sessions.beginTurn(id)
    await t.ready()
    times[name].push(performance.now() - started)
    await t.end()
  }
  // Two leaves on sibling branches; each turn end adds a child of the checkpoint restored, so restoring
  // that checkpoint again is a restore to the head's parent, and the other leaf is a sibling branch.
  let current = last
  for (let r = 0; r < rounds; r++) {
    const other = current === last ? sibling : last
    await timed('sibling', other)
    await timed('parent', other)
    current = other
  }
  await store.close()
  return { siblingP50Ms: quantile(times.sibling, 0.5), parentP50Ms: quantile(times.parent, 0.5) }
}

const redis = await startRedis()
try {
  const admin = new Redis(redis.url)
  const prefix = `tree-bench-${randomUUID().slice(0, 8)}`
  const off = await perTurn(redis.url, admin, prefix, false)
  const on = await perTurn(redis.url, admin, prefix, true)
  const mid = await midTurn(redis.url, admin, prefix)
  const bytes = await storeBytes(redis.url, admin, prefix)
  const snapshot = await restores(redis.url, prefix, true)
  const journal = await restores(redis.url, prefix, false)
  const figures = { turns: TURNS, off, on, midTurn: mid, bytes, restore: { snapshot, journal } }
  console.log(JSON.stringify(figures, null, 2))
  const f = (value, digits = 1) => Number(value).toFixed(digits)
  console.log(`
| per turn (begin, 2 journal steps, end) | round trips | commands | Redis CPU µs | p50 ms |
| --- | ---: | ---: | ---: | ---: |
| checkpoints off | ${f(off.roundTrips)} | ${f(off.commands)} | ${f(off.redisCpuUs)} | ${f(off.p50Ms, 2)} |
| checkpoints on (keep 10) | ${f(on.roundTrips)} | ${f(on.commands)} | ${f(on.redisCpuUs)} | ${f(on.p50Ms, 2)} |
| turn.checkpoint() (store part) | ${f(mid.roundTrips)} | | ${f(mid.redisCpuUs)} | ${f(mid.p50Ms, 2)} |

| store bytes | MEMORY USAGE | field bytes |
| --- | ---: | ---: |
| per checkpoint (linear, 1 step each) | ${f(bytes.perCheckpoint.usage, 0)} | ${f(bytes.perCheckpoint.raw, 0)} |
| per extra branch (a regenerate, 1 step) | ${f(bytes.perBranch.usage, 0)} | ${f(bytes.perBranch.raw, 0)} |
| (one branch's whole journal, 10 steps) | | ${bytes.branchJournalBytes} |

| restore + next turn ready (mock provider), p50 ms | to a sibling | to the parent |
| --- | ---: | ---: |
| snapshot | ${f(snapshot.siblingP50Ms, 2)} | ${f(snapshot.parentP50Ms, 2)} |
| journal | ${f(journal.siblingP50Ms, 2)} | ${f(journal.parentP50Ms, 2)} |
`)
  admin.disconnect()
} finally {
  redis.stop()
}
