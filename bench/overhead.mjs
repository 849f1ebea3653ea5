// Per-turn overhead of sandkeep over the raw E2B SDK doing the same connect + pause, against one local-e2b
// host, measured side by side: the variants run round-robin, one turn each per round, so that machine noise
// (other processes on a 2-core box) falls on all of them alike.
import { randomUUID } from 'node:crypto'
import { Sandbox } from '@e2b/code-interpreter'
import { createMemorySessionStore, createSessionManager, processCheck } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { startHostProcess } from '../packages/local-e2b/bench/host-process.mjs'
import { ms, quantile, redisReachable, summary, table } from './stats.mjs'

const WORKER = 'sleep 86400 # sandkeep-bench-worker'

/**
 * The host runs as its own process by default (`hostMode: 'process'`), as a platform is: the client side being
 * measured then has its event loop to itself, and calls sandkeep makes side by side (the lease and a connect)
 * can overlap as they would against E2B. `'in-process'` runs startLocalE2B in this process instead.
 */
async function startHost(hostMode) {
  if (hostMode === 'in-process') {
    const host = await startLocalE2B({ pauseMode: 'memory', logger: () => {} })
    return {
      opts: { apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl },
      isolation: host.isolation,
      freezer: host.freezer,
      mode: 'in-process',
      close: () => host.close(),
    }
  }
  return startHostProcess({ pauseMode: 'memory' })
}

export async function runOverhead({
  iterations = 200,
  warmup = 20,
  redisUrl,
  hostMode = 'process',
  log = console.log,
} = {}) {
  const host = await startHost(hostMode)
  const connection = host.opts
  const closers = []
  try {
    const withRedis = await redisReachable(redisUrl)
    const stores = { memory: () => createMemorySessionStore() }
    if (withRedis) {
      stores.redis = () =>
        createRedisSessionStore({
          redis: redisUrl,
          prefix: `sandkeep-bench-${randomUUID().slice(0, 8)}`,
          ttlMs: 3_600_000,
        })
    } else {
      log(`(Redis not reachable at ${redisUrl}: the Redis rows are left out)`)
    }

    const variants = []
    // The baseline: the raw SDK's connect (which resumes) and pause of one sandbox.
    const raw = await Sandbox.create({ ...connection, timeoutMs: 3_600_000, allowInternetAccess: false })
    await Sandbox.pause(raw.sandboxId, connection)
    variants.push({
      name: 'raw SDK: Sandbox.connect + Sandbox.pause',
      turn: async () => {
        await Sandbox.connect(raw.sandboxId, { ...connection, timeoutMs: 600_000 })
        await Sandbox.pause(raw.sandboxId, connection)
      },
    })

    for (const [storeName, makeStore] of Object.entries(stores)) {
      // checks: 'off' (no probes), 'on' (the built-in probes on a session with a background process, plus a
      // declared processCheck on it), 'code only' (the built-in probes on a session that only ran code, the
      // usual code-interpreter session: one cell answers them, no process list). Extra row, for memory: a
      // turn end that must list processes again (its body hands out the SDK object, which could change
      // them), to show what reusing the list saves.
      const settings = [
        { checks: 'off' },
        { checks: 'on' },
        { checks: 'code only' },
        ...(storeName === 'redis' ? [] : [{ checks: 'on', relist: true }]),
      ]
      for (const { checks, relist = false } of settings) {
        const store = makeStore()
        closers.push(() => store.close())
        const sessions = createSessionManager({
          store,
          provider: createE2BProvider(connection),
          fidelityProbes: checks !== 'off',
          ...(checks === 'on' ? { healthChecks: [processCheck({ name: 'worker', command: WORKER })] } : {}),
        })
        const conversation = `bench-${randomUUID()}`
        // The first turn creates the sandbox (and, with checks on, gives every probe something to compare).
        await sessions.withTurn(conversation, async (turn) => {
          if (checks !== 'off') await turn.sandbox.runCode('state = 1')
          if (checks === 'on') await turn.sandbox.startProcess(WORKER)
        })
        variants.push({
          name: `sandkeep, ${storeName === 'redis' ? 'Redis store' : 'memory store'}, health checks ${checks}${relist ? ', end lists processes again' : ''}`,
          turn: async () => {
            const turn = await sessions.beginTurn(conversation)
            if (relist) void turn.sandbox.native
            const end = await turn.end()
            if (end.action !== 'paused' || end.error)
              throw new Error(`bench turn ended with ${JSON.stringify(end)}`)
          },
        })
      }
    }

    const samples = variants.map(() => [])
    for (let round = 0; round < warmup + iterations; round++) {
      // Rotate the order each round so that no variant always runs first (or right after a given one).
      for (let k = 0; k < variants.length; k++) {
        const index = (round + k) % variants.length
        const started = performance.now()
        await variants[index].turn()
        if (round >= warmup) samples[index].push(performance.now() - started)
      }
    }

    const base = summary(samples[0])
    const rows = variants.map((variant, index) => {
      const stats = summary(samples[index])
      const overhead = stats.p50 - base.p50
      // Paired: the same round's raw turn is the baseline, which cancels slow drifts in machine load.
      const paired = quantile(
        samples[index].map((value, round) => value - samples[0][round]),
        0.5,
      )
      return {
        name: variant.name,
        ...stats,
        overheadMs: index === 0 ? 0 : overhead,
        overheadPct: index === 0 ? 0 : (overhead / base.p50) * 100,
        pairedOverheadMs: index === 0 ? 0 : paired,
        pairedOverheadPct: index === 0 ? 0 : (paired / base.p50) * 100,
      }
    })
    const signed = (value) => `${value >= 0 ? '+' : ''}${value.toFixed(2)} ms`
    log(
      table(
        [
          'variant (begin + end of one turn)',
          'p50',
          'p95',
          'mean',
          'overhead at p50',
          'paired overhead (median)',
        ],
        rows.map((r, i) => [
          r.name,
          ms(r.p50),
          ms(r.p95),
          ms(r.mean),
          i === 0 ? '(baseline)' : `${signed(r.overheadMs)} (${r.overheadPct.toFixed(1)} %)`,
          i === 0 ? '' : `${signed(r.pairedOverheadMs)} (${r.pairedOverheadPct.toFixed(1)} %)`,
        ]),
      ),
    )
    log(
      `\n${iterations} turns per variant after ${warmup} warm-up rounds, round-robin; host ${host.mode}, isolation ${host.isolation}, freezer ${host.freezer}.`,
    )
    return { iterations, warmup, host: host.mode, isolation: host.isolation, freezer: host.freezer, rows }
  } finally {
    for (const close of closers) await close().catch(() => undefined)
    await host.close()
  }
}
