// Many paused conversations on one local-e2b host (in a process of its own): N conversations each get a first
// turn (create, a command, pause), then one turn of each in random order with K in flight: how long the resume
// and the first command's result take, and how much memory (RSS) the host and the sandboxes' processes hold per
// paused sandbox. Then a sweep of in-flight counts over the same paused set shows where the latency bends.
// Bounded: the conversations, the turns and every wait are counted; the host is stopped however the run ends.
import { spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createMemorySessionStore, createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { ms, quantile, table } from './stats.mjs'

const MiB = 1024 * 1024

/** Starts scale-host.mjs; resolves with its URLs and pid. */
async function startHost(options) {
  const apiKey = `e2b_${randomBytes(20).toString('hex')}`
  const child = spawn(
    process.execPath,
    [fileURLToPath(new URL('./scale-host.mjs', import.meta.url)), JSON.stringify(options)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SANDKEEP_BENCH_API_KEY: apiKey },
    },
  )
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk.toString()).slice(-2000)
  })
  const info = await new Promise((resolve, reject) => {
    let out = ''
    child.once('exit', (code) => reject(new Error(`scale host exited with ${code}: ${stderr}`)))
    child.stdout.on('data', (chunk) => {
      out += chunk.toString()
      const line = out.split('\n').find((candidate) => candidate.startsWith('{'))
      if (line) resolve(JSON.parse(line))
    })
  })
  child.removeAllListeners('exit')
  return {
    ...info,
    connection: { apiKey, apiUrl: info.apiUrl, sandboxUrl: info.sandboxUrl },
    close: () =>
      new Promise((resolve) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
        child.once('exit', () => {
          clearTimeout(timer)
          resolve()
        })
        child.kill('SIGTERM')
      }),
  }
}

/** RSS (bytes) of `pid` and of all its descendants, from /proc. */
function rssOf(pid) {
  const parents = new Map()
  const rss = new Map()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8')
      parents.set(Number(name), Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0))
      rss.set(Number(name), Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024)
    } catch {}
  }
  const descends = (candidate) => {
    for (let current = candidate, depth = 0; current > 1 && depth < 64; depth++) {
      current = parents.get(current) ?? 0
      if (current === pid) return true
    }
    return false
  }
  let children = 0
  for (const [candidate, bytes] of rss) if (descends(candidate)) children += bytes
  return { host: rss.get(pid) ?? 0, sandboxes: children }
}

/** An error's message with its causes' (a `fetch failed` says why only in its cause), one line. */
function describe(error) {
  const parts = []
  for (let current = error, depth = 0; current && depth < 4; current = current.cause, depth++)
    parts.push(`${current.code ?? current.name ?? ''}: ${current.message ?? String(current)}`)
  return parts.join(' <- ').slice(0, 600)
}

/** Runs `task` over `items` with at most `limit` at once; resolves with one result per item. */
async function pool(items, limit, task) {
  const results = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await task(items[index], index).catch((error) => ({ error }))
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

/** A seeded shuffle (mulberry32), so a rerun visits the conversations in the same order. */
function shuffled(items, seed) {
  let state = seed >>> 0
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const copy = [...items]
  for (let index = copy.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1))
    ;[copy[index], copy[other]] = [copy[other], copy[index]]
  }
  return copy
}

export async function runScale({
  conversations = 200,
  inFlight = 16,
  sweep = [1, 4, 16, 32],
  sweepTurns = 32,
  seed = 35,
  log = console.log,
} = {}) {
  const host = await startHost({ pauseMode: 'memory', maxSandboxes: conversations + 50, maxSnapshots: 0 })
  const provider = createE2BProvider({ ...host.connection })
  const store = createMemorySessionStore()
  // Commands only, no built-in probes: no sandbox starts an interpreter kernel, so what is measured is the
  // host's resume path (the probes' cost is the latency bench's subject).
  const sessions = createSessionManager({ store, provider, onTurnEnd: 'pause', fidelityProbes: false })
  const ids = Array.from({ length: conversations }, () => `scale-${randomUUID()}`)
  const failures = []
  try {
    const idle = rssOf(host.pid)
    const setupStarted = performance.now()
    const setup = await pool(ids, inFlight, async (id, index) => {
      const started = performance.now()
      const turn = await sessions.beginTurn(id)
      const wrote = await turn.sandbox.runCommand(`echo ${index} > /home/user/state.txt`)
      const end = await turn.end()
      if (wrote.exitCode !== 0)
        throw new Error(
          `conversation ${index}: the first command exited ${wrote.exitCode}: ${wrote.stderr.slice(0, 200)}`,
        )
      if (end.error) throw new Error(`turn end failed: ${JSON.stringify(end.error)}`)
      return { ms: performance.now() - started }
    })
    const setupMs = performance.now() - setupStarted
    for (const result of setup) if (result.error) failures.push(`setup: ${describe(result.error)}`)
    const paused = rssOf(host.pid)
    const perPaused = {
      host: (paused.host - idle.host) / conversations,
      sandboxes: (paused.sandboxes - idle.sandboxes) / conversations,
    }

    /** One turn: the resume, then the first command's result (checked), then the end (pause). */
    const turnOf = async (id) => {
      const index = ids.indexOf(id)
      const started = performance.now()
      const turn = await sessions.beginTurn(id)
      const resumed = performance.now()
      const answer = await turn.sandbox.runCommand('cat /home/user/state.txt')
      const first = performance.now()
      if (answer.stdout.trim() !== String(index)) {
        // Tell a file that lost its content from an answer that lost its output: ask again, another way.
        const again = await turn.sandbox
          .runCommand('wc -c < /home/user/state.txt; cat /home/user/state.txt')
          .catch((error) => ({ stdout: `(failed: ${error.message})`, exitCode: -1 }))
        await turn.end()
        throw new Error(
          `conversation ${index} read ${JSON.stringify(answer.stdout)} (exit ${answer.exitCode}, stderr ${JSON.stringify(answer.stderr.slice(0, 200))}, outcome ${turn.report?.outcome}, survived ${JSON.stringify(turn.report?.survived)}); asked again: ${JSON.stringify(again.stdout)} (exit ${again.exitCode})`,
        )
      }
      const end = await turn.end()
      if (end.error) throw new Error(`turn end failed: ${JSON.stringify(end.error)}`)
      if (turn.report?.outcome !== 'resumed')
        throw new Error(`conversation ${index} was ${turn.report?.outcome}, not resumed`)
      return { resume: resumed - started, first: first - started }
    }
    const mainStarted = performance.now()
    const main = await pool(shuffled(ids, seed), inFlight, turnOf)
    const mainMs = performance.now() - mainStarted
    for (const result of main) if (result.error) failures.push(`turn: ${describe(result.error)}`)
    const ok = main.filter((result) => !result.error)
    const resume = ok.map((result) => result.resume)
    const first = ok.map((result) => result.first)

    const sweepRows = []
    for (const level of sweep) {
      const chosen = shuffled(ids, seed + level).slice(0, sweepTurns)
      const started = performance.now()
      const results = await pool(chosen, level, turnOf)
      const elapsed = performance.now() - started
      const good = results.filter((result) => !result.error)
      for (const result of results)
        if (result.error) failures.push(`sweep ${level}: ${describe(result.error)}`)
      const firsts = good.map((result) => result.first)
      sweepRows.push({
        inFlight: level,
        turns: chosen.length,
        p50: quantile(firsts, 0.5),
        p99: quantile(firsts, 0.99),
        turnsPerSecond: good.length / (elapsed / 1000),
      })
    }
    const after = rssOf(host.pid)

    const setupTimes = setup.filter((result) => !result.error).map((result) => result.ms)
    const quarter = Math.max(1, Math.floor(setupTimes.length / 4))
    log(
      table(
        [
          `${conversations} paused conversations, one turn each, random order, ${inFlight} in flight`,
          'p50',
          'p99',
          'max',
        ],
        [
          [
            'resume (beginTurn)',
            ms(quantile(resume, 0.5)),
            ms(quantile(resume, 0.99)),
            ms(Math.max(...resume)),
          ],
          [
            'resume + first command result',
            ms(quantile(first, 0.5)),
            ms(quantile(first, 0.99)),
            ms(Math.max(...first)),
          ],
        ],
      ),
    )
    log(
      `\n${ok.length}/${conversations} turns succeeded in ${(mainMs / 1000).toFixed(1)} s (${(ok.length / (mainMs / 1000)).toFixed(1)} turns/s); failures: ${failures.length}.` +
        `\nRSS per paused sandbox: host process ${(perPaused.host / MiB).toFixed(2)} MiB, the sandbox's own processes ${(perPaused.sandboxes / MiB).toFixed(2)} MiB` +
        ` (host ${(idle.host / MiB).toFixed(0)} → ${(paused.host / MiB).toFixed(0)} MiB idle → ${conversations} paused, ${(after.host / MiB).toFixed(0)} MiB after all turns; sandboxes' processes ${(paused.sandboxes / MiB).toFixed(0)} MiB).` +
        `\nFirst turns (create + command + pause), in order of creation: p50 of the first quarter ${ms(quantile(setupTimes.slice(0, quarter), 0.5))}, of the last ${ms(quantile(setupTimes.slice(-quarter), 0.5))} (${(setupMs / 1000).toFixed(1)} s in all).\n`,
    )
    log(
      table(
        ['in flight', 'turns', 'first result p50', 'first result p99', 'turns/s'],
        sweepRows.map((row) => [
          String(row.inFlight),
          String(row.turns),
          ms(row.p50),
          ms(row.p99),
          row.turnsPerSecond.toFixed(1),
        ]),
      ),
    )
    for (const failure of failures) log(`- failure: ${failure}`)
    log(
      `\nisolation ${host.isolation}; pause mode memory (processes stay resident, frozen); fidelity probes off.`,
    )
    return {
      conversations,
      inFlight,
      isolation: host.isolation,
      failures,
      resume: { p50: quantile(resume, 0.5), p99: quantile(resume, 0.99) },
      firstResult: { p50: quantile(first, 0.5), p99: quantile(first, 0.99) },
      turnsPerSecond: ok.length / (mainMs / 1000),
      rss: { idle, paused, after, perPaused },
      setupMs,
      sweep: sweepRows,
    }
  } finally {
    await pool(ids, 16, (id) => sessions.endSession(id).catch(() => false))
    await store.close()
    await host.close()
  }
}
