// The latency a user waits for, with the sandbox platform at a network distance: a delaying TCP proxy
// (delay-proxy.mjs) sits between this client and a local-e2b host in its own process, so that both the
// control-plane calls (connect, pause) and the sandbox traffic (envd, the interpreter) pay the round trip;
// local-e2b's `addLatency` fault makes each resume and each pause take as long as they do on a real platform.
// A scripted model (MockLanguageModelV4 from `ai/test`) thinks before its first tool call and between steps,
// as a real one does. Each round runs one turn of every variant, in a rotating order, with the same resume and
// pause durations, so that the variants are compared turn by turn.
//
// Variants:
// - raw SDK, sandbox running: the reference for the first tool result; the tool calls a sandbox that was
//   connected before the turn and never paused (what "no resume at all" costs).
// - raw SDK: the tool connects (which resumes) on the model's first tool call; after the reply the app pauses.
// - sandkeep lazy: `sandkeepTurn` resuming at the first tool call (its default today).
// - sandkeep eager: `sandkeepTurn({ resume: 'eager' })`, the resume started with the turn; left out when the
//   built package does not know the option.
import { randomUUID } from 'node:crypto'
import { Sandbox } from '@e2b/code-interpreter'
import { sandkeepTurn } from '@sandkeep/ai-sdk'
import { createMemorySessionStore, createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { generateText, stepCountIs, streamText, tool } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import { z } from 'zod'
import { startHostProcess } from '../packages/local-e2b/bench/host-process.mjs'
import { startDelayProxy } from './delay-proxy.mjs'
import { quantile, redisReachable, table, tail } from './stats.mjs'

const CODE = 'sum(range(10))'
/** The shell's answer to the same question, for `firstTool: 'command'`. */
const COMMAND = 'echo $((0+1+2+3+4+5+6+7+8+9))'
/** The file that holds the answer, for `firstTool: 'file'` (written before the measured turns). */
const FILE_PATH = '/home/user/answer.txt'
/** The tool the model calls, and its input, by `firstTool`. */
const TOOL_CALLS = {
  code: { toolName: 'runCode', input: { code: CODE } },
  command: { toolName: 'runCommand', input: { command: COMMAND } },
  file: { toolName: 'readFile', input: { path: FILE_PATH } },
}
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}

const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        reject(signal.reason)
      },
      { once: true },
    )
  })

/** A seeded uniform generator (mulberry32), so that two runs draw the same resume and pause durations. */
function seededRandom(seed) {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * A model that thinks `thinkMs` before its first step's answer (a `runCode` call, or the final text when
 * `useTool` is false) and `stepThinkMs` before each later one. `onFinalStep` gets the time the last step's
 * answer was complete: what the user's wait is measured against.
 */
function thinkingModel({ thinkMs, stepThinkMs, useTool, onFinalStep, firstTool = 'code' }) {
  let step = 0
  const plan = () => {
    const index = step++
    const wait = index === 0 ? thinkMs : stepThinkMs
    return useTool && index === 0 ? { wait, tool: true } : { wait, tool: false }
  }
  const parts = (next) =>
    next.tool
      ? [
          {
            type: 'tool-call',
            toolCallId: `call-${randomUUID()}`,
            toolName: TOOL_CALLS[firstTool].toolName,
            input: JSON.stringify(TOOL_CALLS[firstTool].input),
          },
          { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
        ]
      : [
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'The sum is 45.' },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
        ]
  return new MockLanguageModelV4({
    doGenerate: async ({ abortSignal }) => {
      const next = plan()
      await sleep(next.wait, abortSignal)
      if (!next.tool) onFinalStep(performance.now())
      const content = parts(next)
        .filter((part) => part.type === 'tool-call' || part.type === 'text-delta')
        .map((part) => (part.type === 'tool-call' ? part : { type: 'text', text: part.delta }))
      const finish = parts(next).at(-1)
      return { content, finishReason: finish.finishReason, usage, warnings: [] }
    },
    doStream: async ({ abortSignal }) => {
      const next = plan()
      return {
        stream: new ReadableStream({
          async start(controller) {
            controller.enqueue({ type: 'stream-start', warnings: [] })
            try {
              await sleep(next.wait, abortSignal)
            } catch (error) {
              controller.error(error)
              return
            }
            for (const part of parts(next)) controller.enqueue(part)
            if (!next.tool) onFinalStep(performance.now())
            controller.close()
          },
        }),
      }
    },
  })
}

/** The raw variants' `runCommand` tool: the same name and input as sandkeep's, on the SDK's sandbox. */
function rawRunCommand(sandbox) {
  return tool({
    description: 'Run a shell command in the sandbox.',
    inputSchema: z.object({ command: z.string() }),
    execute: async ({ command }) => {
      const result = await (await sandbox()).commands.run(command)
      return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }
    },
  })
}

/** A `readFile` tool over `read(path)`: the raw variants' and sandkeep's, with the same name and input. */
function readFileTool(read) {
  return tool({
    description: 'Read a text file in the sandbox.',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => ({ content: await read(path) }),
  })
}

/** The raw variants' tool by `firstTool`, timed. */
function rawTools(firstTool, sandbox, onResult) {
  if (firstTool === 'file')
    return {
      readFile: timed(
        readFileTool(async (path) => (await sandbox()).files.read(path)),
        onResult,
      ),
    }
  return firstTool === 'command'
    ? { runCommand: timed(rawRunCommand(sandbox), onResult) }
    : { runCode: timed(rawRunCode(sandbox), onResult) }
}

/** The `runCode` tool of the raw variants: the same name and input as sandkeep's, on the SDK's sandbox. */
function rawRunCode(sandbox) {
  return tool({
    description: 'Run Python code in the sandbox.',
    inputSchema: z.object({ code: z.string() }),
    execute: async ({ code }) => {
      const execution = await (await sandbox()).runCode(code)
      if (execution.error) throw new Error(`${execution.error.name}: ${execution.error.value}`)
      return { result: execution.text ?? null, stdout: execution.logs.stdout.join(''), stderr: '' }
    },
  })
}

/** `tool` with its `execute` timed: `onResult` gets the time the first result was returned. */
function timed(base, onResult) {
  return {
    ...base,
    execute: async (...args) => {
      const result = await base.execute(...args)
      onResult(performance.now())
      return result
    },
  }
}

/**
 * One turn through the AI SDK: `call` is streamText or generateText (or a sandkeepTurn's), `kind` says
 * which. Resolves with the user-facing times (ms from the user's message).
 */
async function aiCall({ kind, call, model, tools, startedAt }) {
  const options = { model, prompt: 'What is the sum of 0..9?', tools, stopWhen: stepCountIs(3) }
  if (kind === 'stream') {
    const result = call.stream(options)
    for await (const part of result.fullStream) {
      if (part.type === 'error') throw part.error
      if (part.type === 'tool-error') throw part.error
    }
  } else {
    const result = await call.generate(options)
    if (!result.text.includes('45')) throw new Error(`unexpected answer ${result.text}`)
  }
  return performance.now() - startedAt
}

/**
 * Runs the bench. Figures per RTT and variant: first tool result (from the user's message), stream closed
 * and generateText resolved (from the user's message, and after the model's last step), the pause done, and
 * the sandbox's running seconds per turn as the host saw them (from the resume request's arrival to the end
 * of the pause).
 */
export async function runLatency({
  rtts = [0, 20, 60],
  turns = 4,
  thinkMs = 1000,
  stepThinkMs = 300,
  resumeMs = [300, 1000],
  pauseMs = [1000, 4000],
  noToolTurns = 2,
  seed = 24,
  firstTool = 'code',
  redisUrl = 'redis://127.0.0.1:6379',
  modes = ['lazy', 'eager', 'auto'],
  log = console.log,
} = {}) {
  if (!TOOL_CALLS[firstTool]) throw new Error(`firstTool must be code, command or file, not ${firstTool}`)
  const host = await startHostProcess({ pauseMode: 'memory' })
  const apiKey = host.opts.apiKey
  const admin = async (method, path, body) => {
    const response = await fetch(`${host.opts.apiUrl}/_local/${path}`, {
      method,
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${await response.text()}`)
    return response.status === 204 ? undefined : response.json()
  }
  const proxy = await startDelayProxy({ target: { port: Number(new URL(host.opts.apiUrl).port) }, rttMs: 0 })
  const via = { apiKey, apiUrl: proxy.url, sandboxUrl: proxy.url }
  const closers = []
  try {
    const withRedis = await redisReachable(redisUrl)
    const store = withRedis
      ? createRedisSessionStore({ redis: redisUrl, prefix: `sandkeep-latency-${randomUUID().slice(0, 8)}` })
      : createMemorySessionStore()
    closers.push(() => store.close())
    if (!withRedis) log(`(Redis not reachable at ${redisUrl}: sandkeep uses the memory store)`)
    const eagerSupported = supportsResumeOption()
    const variants = await setUpVariants({ via, store, eagerSupported, modes, closers, firstTool })

    const random = seededRandom(seed)
    const draw = ([low, high]) => Math.round(low + (high - low) * random())
    // One draw per round: every variant of the round gets the same resume and pause durations.
    const drawRound = () => ({ resume: draw(resumeMs), pause: draw(pauseMs) })
    const runTurn = async (variant, round, useTool, rtt, { resume, pause }) => {
      const sandboxId = await variant.sandboxId()
      if (variant.pauses) {
        await admin('POST', 'faults/latency', { operation: 'connect', ms: resume, sandboxId, count: 1 })
        await admin('POST', 'faults/latency', { operation: 'pause', ms: pause, sandboxId, count: 1 })
      }
      const wallStart = Date.now()
      const since = performance.now()
      const sample = await variant.turn({
        kind: round % 2 === 0 ? 'stream' : 'generate',
        useTool,
        thinkMs,
        stepThinkMs,
        firstTool,
      })
      // A rule a turn did not consume (a turn that never resumed) must not delay the next one.
      if (variant.pauses) await admin('DELETE', 'faults')
      // Requests to the sandbox (envd, the interpreter; not the control plane) sent before the first tool
      // result: the round trips of its own a variant puts on the user's wait.
      const firstAt = sample.firstToolAt
      sample.sandboxRequestsBeforeFirstResult = firstAt
        ? proxy
            .requests()
            .filter(
              (r) =>
                r.at >= since &&
                r.at < firstAt &&
                !r.path.startsWith('/sandboxes') &&
                !r.path.startsWith('/_local'),
            )
            .map((r) => `${r.method} ${r.path.split('?')[0]}`)
        : null
      delete sample.firstToolAt
      sample.rtt = rtt
      sample.resumeMs = resume
      sample.pauseMs = pause
      sample.runningS = variant.pauses ? await runningSeconds(admin, sandboxId, wallStart) : null
      return sample
    }

    // Warm-up at RTT 0: connections, the JIT, the first interpreter cell of each sandbox. Not measured.
    proxy.setRtt(0)
    const warmUp = drawRound()
    for (const variant of variants) await runTurn(variant, 0, true, 0, warmUp)

    const samples = []
    const measured = variants.filter((variant) => !variant.noToolOnly)
    for (const rtt of rtts) {
      proxy.setRtt(rtt)
      for (let round = 0; round < turns; round++) {
        const durations = drawRound()
        for (let k = 0; k < measured.length; k++) {
          const variant = measured[(round + k) % measured.length]
          samples.push({ variant: variant.name, ...(await runTurn(variant, round, true, rtt, durations)) })
        }
      }
    }
    // A model that answers without a tool: what each variant costs then (eager resumes; auto resumes on the
    // first such turn, which follows a turn that used the sandbox, and not on the next).
    const noTool = []
    proxy.setRtt(rtts.at(-1))
    for (let round = 0; round < noToolTurns; round++) {
      const durations = drawRound()
      for (const variant of variants.filter((v) => v.pauses)) {
        noTool.push({
          variant: variant.name,
          ...(await runTurn(variant, round, false, rtts.at(-1), durations)),
        })
      }
    }

    const figures = summarize({ rtts, variants: measured, noToolVariants: variants, samples, noTool, log })
    log(
      `\n${turns} turns per variant and RTT (streamText and generateText alternating), round-robin; model thinks ` +
        `${thinkMs} ms before its first tool call and ${stepThinkMs} ms before the next step; resume ` +
        `${resumeMs.join('-')} ms, pause ${pauseMs.join('-')} ms (local-e2b addLatency, seed ${seed}); ` +
        `host ${host.mode}, isolation ${host.isolation}, freezer ${host.freezer}; store ${withRedis ? 'Redis' : 'memory'}; ` +
        `${proxy.connections()} TCP connections through the proxy.` +
        (eagerSupported ? '' : ' sandkeep eager left out: this build has no `resume` option.'),
    )
    return {
      rtts,
      turns,
      thinkMs,
      stepThinkMs,
      resumeMs,
      pauseMs,
      seed,
      store: withRedis ? 'redis' : 'memory',
      eagerSupported,
      ...figures,
      samples,
      noTool,
    }
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined)
    await proxy.close()
    await host.close()
  }
}

/** True when the built `sandkeepTurn` knows the `resume` option (it then refuses a bad value, with no I/O). */
function supportsResumeOption() {
  const sessions = createSessionManager({
    store: createMemorySessionStore(),
    provider: createE2BProvider({ apiKey: 'x' }),
  })
  try {
    sandkeepTurn({ sessions, conversationId: 'probe', resume: 'not-a-mode' })
    return false
  } catch {
    return true
  }
}

async function setUpVariants({ via, store, eagerSupported, modes: wanted, closers, firstTool }) {
  const variants = []
  // The file the `file` tool reads; the other tools' runs keep the setup they had.
  const seedFile = (write) => (firstTool === 'file' ? write(FILE_PATH, '45') : undefined)

  const running = await Sandbox.create({ ...via, timeoutMs: 3_600_000, allowInternetAccess: false })
  closers.push(() => Sandbox.kill(running.sandboxId, via))
  await seedFile((path, content) => running.files.write(path, content))
  variants.push({
    name: 'raw SDK, sandbox already running',
    pauses: false,
    sandboxId: async () => running.sandboxId,
    turn: (options) => rawTurn({ ...options, sandbox: async () => running, pause: undefined }),
  })

  const paused = await Sandbox.create({ ...via, timeoutMs: 3_600_000, allowInternetAccess: false })
  await paused.runCode('state = 1')
  await seedFile((path, content) => paused.files.write(path, content))
  await Sandbox.pause(paused.sandboxId, via)
  closers.push(() => Sandbox.kill(paused.sandboxId, via))
  variants.push({
    name: 'raw SDK: connect at the first tool call, pause after the reply',
    pauses: true,
    sandboxId: async () => paused.sandboxId,
    turn: (options) => {
      let connecting
      return rawTurn({
        ...options,
        sandbox: () => {
          connecting ??= Sandbox.connect(paused.sandboxId, { ...via, timeoutMs: 600_000 })
          return connecting
        },
        pause: async () => {
          // Only a turn that resumed the sandbox pauses it.
          if (connecting) await Sandbox.pause(paused.sandboxId, via)
        },
      })
    },
  })

  // In the tool-using rounds 'auto' is 'eager' (every previous turn used the sandbox): it is measured only
  // where the two differ, on a model that uses no tool.
  const modes = eagerSupported ? wanted : wanted.filter((mode) => mode === 'lazy')
  for (const mode of modes) {
    const sessions = createSessionManager({ store, provider: createE2BProvider(via) })
    const conversationId = `latency-${mode}-${randomUUID()}`
    closers.push(() => sessions.endSession(conversationId))
    // The first turn creates the sandbox and leaves something for the probes to compare.
    await sessions.withTurn(conversationId, async (turn) => {
      await turn.sandbox.runCode('state = 1')
      await seedFile((path, content) => turn.sandbox.writeFile(path, content))
    })
    let sandboxId
    variants.push({
      name: `sandkeep ${mode}`,
      pauses: true,
      noToolOnly: mode === 'auto',
      sandboxId: async () => {
        sandboxId ??= (await sessions.getSession(conversationId)).sandboxId
        return sandboxId
      },
      turn: (options) => sandkeepTurnSample({ ...options, sessions, conversationId, mode }),
    })
  }
  return variants
}

async function rawTurn({ kind, useTool, thinkMs, stepThinkMs, firstTool, sandbox, pause }) {
  const marks = { firstTool: 0, lastStep: 0 }
  const startedAt = performance.now()
  const onFinalStep = (at) => (marks.lastStep = at)
  const model = thinkingModel({ thinkMs, stepThinkMs, useTool, onFinalStep, firstTool })
  const tools = rawTools(firstTool, sandbox, (at) => {
    marks.firstTool ||= at
  })
  const call = { stream: streamText, generate: generateText }
  const doneMs = await aiCall({ kind, call, model, tools, startedAt })
  const replyAt = performance.now()
  if (pause) await pause()
  return sampleOf({ kind, startedAt, marks, doneMs, replyAt, endedAt: performance.now() })
}

async function sandkeepTurnSample(options) {
  const { kind, useTool, thinkMs, stepThinkMs, firstTool, sessions, conversationId, mode } = options
  const marks = { firstTool: 0, lastStep: 0 }
  const startedAt = performance.now()
  // A build without the option resumes lazily and ignores it.
  const turn = sandkeepTurn({ sessions, conversationId, resume: mode })
  const onFinalStep = (at) => (marks.lastStep = at)
  const model = thinkingModel({ thinkMs, stepThinkMs, useTool, onFinalStep, firstTool })
  const name = TOOL_CALLS[firstTool].toolName
  // The file tool is the session's whole-file read, as the raw SDK's `files.read` (sandkeep's own readFile
  // tool asks the file's size first, with a command).
  const base =
    firstTool === 'file'
      ? readFileTool(async (path) => (await turn.sandbox.readTextFile({ path })) ?? '')
      : turn.tools[name]
  const tools = {
    [name]: timed(base, (at) => {
      marks.firstTool ||= at
    }),
  }
  const call = {
    stream: (options) => turn.streamText(options),
    generate: (options) => turn.generateText(options),
  }
  const doneMs = await aiCall({ kind, call, model, tools, startedAt })
  const replyAt = performance.now()
  const end = await turn.ended
  const endedAt = performance.now()
  const expected =
    useTool || mode === 'eager' ? ['paused'] : mode === 'auto' ? ['paused', undefined] : [undefined]
  if (!expected.includes(end?.action) || end?.error)
    throw new Error(`sandkeep ${mode} turn ended with ${JSON.stringify(end)}`)
  return sampleOf({ kind, startedAt, marks, doneMs, replyAt, endedAt })
}

function sampleOf({ kind, startedAt, marks, doneMs, replyAt, endedAt }) {
  return {
    kind,
    firstToolMs: marks.firstTool ? marks.firstTool - startedAt : null,
    firstToolAt: marks.firstTool || null,
    doneMs,
    afterLastStepMs: replyAt - marks.lastStep,
    endedMs: endedAt - startedAt,
  }
}

/**
 * The sandbox's running time in one turn as the host recorded it: from the resume request's arrival (the
 * injected resume delay included, as a platform bills the resume) to the end of the pause. 0 when the turn
 * did not resume it.
 */
async function runningSeconds(admin, sandboxId, since) {
  const events = (await admin('GET', `events?sandboxId=${encodeURIComponent(sandboxId)}`)).filter(
    (event) => event.at >= since,
  )
  const resumed = events.find(
    (event) =>
      event.type === 'sandbox-connect' ||
      (event.type === 'fault-trigger' && event.detail.operation === 'connect'),
  )
  const paused = events.findLast((event) => event.type === 'sandbox-pause')
  if (!resumed) return 0
  if (!paused || paused.at < resumed.at) return null
  return (paused.at - resumed.at) / 1000
}

function summarize({ rtts, variants, noToolVariants, samples, noTool, log }) {
  const fmt = (value) => (value === null || !Number.isFinite(value) ? '—' : value.toFixed(0))
  const fmtS = (value) => (value === null || !Number.isFinite(value) ? '—' : value.toFixed(2))
  const stat = (values) => {
    if (values.length === 0) return '—'
    const high = tail(values)
    return `${fmt(quantile(values, 0.5))} (${high.label} ${fmt(high.value)})`
  }
  const pick = (list, key) => list.map((sample) => sample[key]).filter((value) => value !== null)
  const rows = []
  const byRtt = {}
  for (const rtt of rtts) {
    log(`\n### RTT ${rtt} ms (each direction delayed ${rtt / 2} ms): ms, p50 (tail)\n`)
    const tableRows = []
    byRtt[rtt] = {}
    for (const variant of variants) {
      const mine = samples.filter((sample) => sample.variant === variant.name && sample.rtt === rtt)
      const streams = mine.filter((sample) => sample.kind === 'stream')
      const generates = mine.filter((sample) => sample.kind === 'generate')
      const running = pick(mine, 'runningS')
      const figures = {
        firstToolMs: quantile(pick(mine, 'firstToolMs'), 0.5),
        streamClosedMs: quantile(pick(streams, 'doneMs'), 0.5),
        streamAfterLastStepMs: quantile(pick(streams, 'afterLastStepMs'), 0.5),
        generateAfterLastStepMs: quantile(pick(generates, 'afterLastStepMs'), 0.5),
        endedMs: quantile(pick(mine, 'endedMs'), 0.5),
        runningS: running.length ? running.reduce((a, b) => a + b, 0) / running.length : null,
      }
      byRtt[rtt][variant.name] = figures
      rows.push({ rtt, variant: variant.name, ...figures })
      tableRows.push([
        variant.name,
        stat(pick(mine, 'firstToolMs')),
        stat(pick(streams, 'doneMs')),
        stat(pick(streams, 'afterLastStepMs')),
        stat(pick(generates, 'afterLastStepMs')),
        stat(pick(mine, 'endedMs')),
        variant.pauses ? fmtS(figures.runningS) : '(always)',
      ])
    }
    log(
      table(
        [
          'variant',
          'first tool result',
          'stream closed',
          'stream closed after last model step',
          'generateText resolved after last model step',
          'pause done',
          'running s per turn (mean)',
        ],
        tableRows,
      ),
    )
  }

  // Paired comparisons: the same round's turns had the same resume and pause durations.
  const paired = (name, reference, key, rtt) => {
    const ours = samples.filter((s) => s.variant === name && s.rtt === rtt)
    const theirs = samples.filter((s) => s.variant === reference && s.rtt === rtt)
    const differences = ours.map((s, i) => s[key] - theirs[i][key]).filter(Number.isFinite)
    return quantile(differences, 0.5)
  }
  const names = variants.map((v) => v.name)
  const [runningName, rawName] = names
  log('\n### Against the targets (p50; paired differences are medians over rounds)\n')
  const targetRows = []
  for (const rtt of rtts) {
    const rttCell = (ms) => (rtt > 0 ? ` (${(ms / rtt).toFixed(2)} RTT)` : '')
    for (const name of names.slice(2)) {
      const overRaw = paired(name, rawName, 'firstToolMs', rtt)
      const reference = byRtt[rtt][runningName].firstToolMs
      const first = byRtt[rtt][name].firstToolMs
      targetRows.push([
        `${rtt} ms`,
        name,
        `${overRaw >= 0 ? '+' : ''}${fmt(overRaw)} ms${rttCell(overRaw)}`,
        `${fmt(first)} vs ${fmt(reference)} (${((first / reference - 1) * 100).toFixed(0)} %)`,
        `${fmt(byRtt[rtt][name].streamAfterLastStepMs)} / ${fmt(byRtt[rtt][name].generateAfterLastStepMs)}`,
      ])
    }
  }
  log(
    table(
      [
        'RTT',
        'variant',
        'first tool result over raw SDK (paired)',
        'first tool result vs raw on a running sandbox',
        'stream closed / generateText resolved after the last model step',
      ],
      targetRows,
    ),
  )

  log('\n### Requests to the sandbox before the first tool result (median count; the most common list)\n')
  const requestRows = []
  for (const rtt of rtts) {
    for (const variant of variants) {
      const lists = samples
        .filter((s) => s.variant === variant.name && s.rtt === rtt && s.sandboxRequestsBeforeFirstResult)
        .map((s) => s.sandboxRequestsBeforeFirstResult)
      if (lists.length === 0) continue
      const counts = {}
      for (const list of lists) counts[list.join(', ')] = (counts[list.join(', ')] ?? 0) + 1
      const common = Object.entries(counts).sort((a, b) => b[1] - a[1])[0]
      requestRows.push([
        `${rtt} ms`,
        variant.name,
        fmt(
          quantile(
            lists.map((l) => l.length),
            0.5,
          ),
        ),
        `${common[0] || '(none)'} (${common[1]} of ${lists.length})`,
      ])
    }
  }
  log(table(['RTT', 'variant', 'requests', 'which'], requestRows))

  const noToolRows = noToolVariants
    .filter((variant) => variant.pauses)
    .map((variant) => {
      const mine = noTool.filter((sample) => sample.variant === variant.name)
      const running = pick(mine, 'runningS')
      return [
        variant.name,
        String(mine.length),
        stat(pick(mine, 'doneMs')),
        stat(pick(mine, 'afterLastStepMs')),
        running.length ? fmtS(running.reduce((a, b) => a + b, 0) / running.length) : '—',
      ]
    })
  if (noTool.length > 0) {
    log(`\n### A model that uses no tool (RTT ${rtts.at(-1)} ms)\n`)
    log(
      table(
        ['variant', 'turns', 'reply done', 'reply done after last model step', 'running s per turn (mean)'],
        noToolRows,
      ),
    )
  }
  return { rows }
}
