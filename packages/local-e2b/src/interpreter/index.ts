// The code interpreter of one sandbox: what E2B's code-interpreter server answers on port 49999 (`/execute`,
// `/contexts`, `/health`), with kernels written here (kernels/) instead of Jupyter. Each context owns one kernel
// process, started inside the sandbox through the host's spawner when its first cell arrives (or when the context
// is created or restarted), so the kernel is isolated, frozen and killed with the sandbox.
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { fileURLToPath } from 'node:url'
import { type CellSink, type KernelLanguage, KernelProcess } from './kernel.js'
import type { CodeInterpreter, CreateCodeInterpreter, InterpreterHost } from './types.js'

export type { CellOutcome, CellSink, KernelExit, KernelLanguage } from './kernel.js'
export { KernelProcess } from './kernel.js'
export type { CodeInterpreter, CreateCodeInterpreter, InterpreterHost, KernelSpawner } from './types.js'

/** What contexts report as their default working directory (E2B's home). */
const SANDBOX_HOME = '/home/user'
/** A kernel that has not said `ready` by then failed (generous: tests share two cores). */
const KERNEL_START_TIMEOUT_MS = 20_000
/**
 * After a client abandons a cell, how long the interrupt gets before the kernel is killed and replaced. Generous,
 * because a JavaScript interrupt is a process spawned inside the sandbox, slow on a loaded machine.
 */
const INTERRUPT_GRACE_MS = 5_000
const MAX_CONTEXT_ID_LENGTH = 128
const MAX_CWD_LENGTH = 4096
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/

/**
 * The `kernels/` directory of this package on the host (for a host that runs unisolated, or that binds it into
 * its sandboxes). Works from the sources (src/interpreter/) and from the build (dist/).
 */
export function kernelHostDirectory(): string {
  for (const relative of ['../kernels', '../../kernels']) {
    const candidate = fileURLToPath(new URL(relative, import.meta.url))
    if (existsSync(`${candidate}/python-kernel.py`)) return candidate
  }
  return fileURLToPath(new URL('../kernels', import.meta.url))
}

interface LanguageChoice {
  /** The language reported to the client (E2B's normalized name). */
  language: string
  kernel: KernelLanguage
}

/** E2B's language names and aliases (`js`, `ts`) mapped to the kernels shipped here. */
function chooseLanguage(value: unknown): LanguageChoice | string {
  if (value === undefined || value === null || value === '') return { language: 'python', kernel: 'python' }
  if (typeof value !== 'string') return 'language must be a string'
  const name = value.trim().toLowerCase()
  switch (name) {
    case 'python':
    case 'python3':
    case 'py':
      return { language: 'python', kernel: 'python' }
    case 'javascript':
    case 'js':
    case 'node':
    case 'nodejs':
      return { language: 'javascript', kernel: 'javascript' }
    // TypeScript cells run on the JavaScript kernel: plain JavaScript is valid TypeScript, annotations are not
    // stripped (Node 20 in the sandbox has no type stripping).
    case 'typescript':
    case 'ts':
      return { language: 'typescript', kernel: 'javascript' }
    case 'bash':
    case 'sh':
    case 'shell':
      return { language: 'bash', kernel: 'bash' }
    default:
      return `language ${JSON.stringify(value.slice(0, 64))} is not supported by local-e2b; use python, javascript or bash`
  }
}

interface ContextState {
  id: string
  language: string
  kernelLanguage: KernelLanguage
  /** Reported cwd (a sandbox path). */
  cwd: string
  /** Where the kernel is spawned (the host's home path for the default cwd). */
  spawnCwd: string
  kernel: KernelProcess | undefined
  starting: Promise<KernelProcess> | undefined
  /** Cells of one context run one after the other. */
  queue: Promise<void>
  removed: boolean
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

function sendText(response: ServerResponse, status: number, text: string): void {
  if (response.headersSent) {
    response.end()
    return
  }
  response.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  })
  response.end(text)
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value)
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  })
  response.end(text)
}

function parseBody(body: Buffer): Record<string, unknown> {
  if (body.length === 0) return {}
  let value: unknown
  try {
    value = JSON.parse(body.toString('utf8'))
  } catch {
    throw new HttpError(400, 'the request body is not valid JSON')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HttpError(400, 'the request body must be a JSON object')
  }
  return value as Record<string, unknown>
}

function readEnvVars(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value))
    throw new HttpError(400, 'env_vars must be an object')
  const env: Record<string, string> = {}
  for (const [key, entry] of Object.entries(value as Record<string, unknown>)) {
    if (!key || key.includes('=') || CONTROL_CHARACTERS.test(key)) {
      throw new HttpError(400, `env_vars has an invalid name ${JSON.stringify(key.slice(0, 64))}`)
    }
    if (typeof entry !== 'string' || entry.includes('\u0000')) {
      throw new HttpError(400, `env_vars.${key.slice(0, 64)} must be a string without NUL characters`)
    }
    env[key] = entry
  }
  return env
}

function readCwd(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined
  if (typeof value !== 'string') throw new HttpError(400, 'cwd must be a string')
  if (!value.startsWith('/') || value.length > MAX_CWD_LENGTH || CONTROL_CHARACTERS.test(value)) {
    throw new HttpError(400, 'cwd must be an absolute sandbox path without control characters')
  }
  return value
}

/** What the upstream server does to `text/plain`: a quoted string repr is shown without its quotes. */
function plainText(text: string): string {
  if (
    text.length >= 2 &&
    ((text.startsWith("'") && text.endsWith("'")) || (text.startsWith('"') && text.endsWith('"')))
  ) {
    return text.slice(1, -1)
  }
  return text
}

const MIME_FIELDS: Record<string, string> = {
  'text/html': 'html',
  'text/markdown': 'markdown',
  'image/svg+xml': 'svg',
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'application/pdf': 'pdf',
  'text/latex': 'latex',
  'application/json': 'json',
  'application/javascript': 'javascript',
  'e2b/data': 'data',
  'e2b/chart': 'chart',
}

/** A kernel's mime bundle as the `result` line of `/execute`. */
function resultLine(data: Record<string, unknown>, main: boolean): Record<string, unknown> {
  const line: Record<string, unknown> = { type: 'result' }
  const extra: Record<string, unknown> = {}
  for (const [mime, value] of Object.entries(data)) {
    if (mime === 'text/plain') {
      if (typeof value === 'string') line.text = plainText(value)
    } else if (MIME_FIELDS[mime]) {
      line[MIME_FIELDS[mime]] = value
    } else {
      extra[mime] = value
    }
  }
  if (Object.keys(extra).length > 0) line.extra = extra
  line.is_main_result = main
  return line
}

/**
 * The code interpreter of one sandbox (the server behind port 49999). Synchronous and without I/O: kernels start
 * with the first cell of their context. `host.spawner` is the only way it starts processes.
 */
export const createCodeInterpreter: CreateCodeInterpreter = (host: InterpreterHost): CodeInterpreter => {
  const contexts = new Map<string, ContextState>()
  const defaults = new Map<string, string>()
  let closed = false

  const emit = (type: string, detail: Record<string, unknown>) => {
    try {
      host.emit?.(type, detail)
    } catch {
      // The event log is the host's; a failing listener must not break a cell.
    }
  }

  function addContext(choice: LanguageChoice, cwd: string | undefined): ContextState {
    const context: ContextState = {
      id: randomUUID(),
      language: choice.language,
      kernelLanguage: choice.kernel,
      cwd: cwd ?? SANDBOX_HOME,
      spawnCwd: cwd === undefined || cwd === SANDBOX_HOME ? host.homeDir : cwd,
      kernel: undefined,
      starting: undefined,
      queue: Promise.resolve(),
      removed: false,
    }
    contexts.set(context.id, context)
    return context
  }

  /** E2B has a default context per language from the start (python and javascript), listed like any other. */
  function defaultContext(choice: LanguageChoice): ContextState {
    const existing = defaults.get(choice.language)
    const context = existing === undefined ? undefined : contexts.get(existing)
    if (context) return context
    const created = addContext(choice, undefined)
    defaults.set(choice.language, created.id)
    return created
  }

  function ensureDefaults(): void {
    defaultContext({ language: 'python', kernel: 'python' })
    defaultContext({ language: 'javascript', kernel: 'javascript' })
  }

  function forgetKernel(context: ContextState, reason: string): void {
    const kernel = context.kernel
    context.kernel = undefined
    context.starting = undefined
    if (kernel?.alive) {
      emit('kernel-kill', { contextId: context.id, language: context.language, pid: kernel.pid, reason })
      kernel.kill()
    }
  }

  /** The context's kernel, cold-starting one when there is none (first cell, after a restart, a reset or a crash). */
  function ensureKernel(context: ContextState): Promise<KernelProcess> {
    if (context.kernel?.alive) return Promise.resolve(context.kernel)
    if (context.starting) return context.starting
    if (closed) return Promise.reject(new HttpError(502, 'the sandbox is gone'))
    const starting = KernelProcess.start({
      language: context.kernelLanguage,
      spawner: host.spawner,
      kernelDir: host.kernelDir,
      cwd: context.spawnCwd,
      env: { ...host.envs },
      startTimeoutMs: KERNEL_START_TIMEOUT_MS,
      onExit: (exit) => {
        if (context.kernel === kernel) context.kernel = undefined
        emit('kernel-exit', {
          contextId: context.id,
          language: context.language,
          pid: kernel?.pid,
          code: exit.code,
          signal: exit.signal,
          expected: exit.expected,
        })
      },
    })
    let kernel: KernelProcess | undefined
    const tracked = starting.then(
      (started) => {
        kernel = started
        if (context.starting !== tracked || context.removed || closed) {
          // reset(), a restart or a delete happened while it was starting: this kernel is not wanted anymore.
          started.kill()
          if (context.removed || closed) throw new HttpError(404, `Context ${context.id} not found`)
          return ensureKernel(context)
        }
        context.starting = undefined
        context.kernel = started
        emit('kernel-start', {
          contextId: context.id,
          language: context.language,
          pid: started.pid,
          coldStartMs: Math.round(started.coldStartMs * 10) / 10,
        })
        return started
      },
      (error: unknown) => {
        if (context.starting === tracked) context.starting = undefined
        throw error
      },
    )
    context.starting = tracked
    return tracked
  }

  function enqueue(context: ContextState, task: () => Promise<void>): Promise<void> {
    const run = context.queue.then(task, task)
    context.queue = run.catch(() => {})
    return run
  }

  function findContext(id: string): ContextState {
    const context = id.length <= MAX_CONTEXT_ID_LENGTH ? contexts.get(id) : undefined
    if (!context) throw new HttpError(404, `Context ${id.slice(0, MAX_CONTEXT_ID_LENGTH)} not found`)
    return context
  }

  async function execute(response: ServerResponse, body: Buffer): Promise<void> {
    const input = parseBody(body)
    if (typeof input.code !== 'string') throw new HttpError(400, 'code must be a string')
    const code = input.code
    const env = readEnvVars(input.env_vars)
    const contextId = input.context_id
    if (contextId !== undefined && contextId !== null && typeof contextId !== 'string') {
      throw new HttpError(400, 'context_id must be a string')
    }
    if (contextId && input.language)
      throw new HttpError(400, 'Only one of context_id or language can be provided')
    let context: ContextState
    ensureDefaults()
    if (contextId) {
      context = findContext(contextId)
    } else {
      const choice = chooseLanguage(input.language)
      if (typeof choice === 'string') throw new HttpError(400, choice)
      context = defaultContext(choice)
    }

    // The client may go away (its timeoutMs, an abort): then the cell is interrupted, and if it does not stop
    // in time its kernel is replaced, so the context is never wedged behind an abandoned cell.
    let abandoned = false
    let onAbandon: (() => void) | undefined
    response.on('close', () => {
      if (response.writableEnded) return
      abandoned = true
      onAbandon?.()
    })

    await enqueue(context, async () => {
      if (abandoned || context.removed) {
        if (context.removed) sendText(response, 404, `Context ${context.id} not found`)
        return
      }
      let kernel: KernelProcess
      try {
        kernel = await ensureKernel(context)
      } catch (error) {
        const status = error instanceof HttpError ? error.status : 500
        sendText(response, status, error instanceof Error ? error.message : String(error))
        return
      }
      if (abandoned) return
      response.writeHead(200, { 'content-type': 'application/x-ndjson' })
      const write = (line: Record<string, unknown>) => {
        if (!response.writableEnded && !response.destroyed) response.write(`${JSON.stringify(line)}\n`)
      }
      let failed = false
      const sink: CellSink = {
        start: (count) => write({ type: 'number_of_executions', execution_count: count }),
        stdout: (text) => write({ type: 'stdout', text, timestamp: new Date().toISOString() }),
        stderr: (text) => write({ type: 'stderr', text, timestamp: new Date().toISOString() }),
        result: (data, main) => write(resultLine(data, main)),
        error: (name, value, traceback) => {
          failed = true
          write({ type: 'error', name, value, traceback })
        },
      }
      let graceTimer: NodeJS.Timeout | undefined
      onAbandon = () => {
        emit('kernel-interrupt', {
          contextId: context.id,
          language: context.language,
          reason: 'client went away',
        })
        kernel.interrupt()
        graceTimer = setTimeout(() => {
          if (kernel.busy && context.kernel === kernel)
            forgetKernel(context, 'abandoned cell ignored the interrupt')
        }, INTERRUPT_GRACE_MS)
        graceTimer.unref()
      }
      const startedAt = performance.now()
      const outcome = await kernel.run(code, env, sink)
      onAbandon = undefined
      if (graceTimer) clearTimeout(graceTimer)
      emit('cell-run', {
        contextId: context.id,
        language: context.language,
        ms: Math.round((performance.now() - startedAt) * 10) / 10,
        error: failed,
        outcome,
      })
      write({ type: 'end_of_execution' })
      response.end()
    })
  }

  async function createContext(response: ServerResponse, body: Buffer): Promise<void> {
    const input = parseBody(body)
    const choice = chooseLanguage(input.language)
    if (typeof choice === 'string') throw new HttpError(400, choice)
    const cwd = readCwd(input.cwd)
    ensureDefaults()
    const context = addContext(choice, cwd)
    // Like Jupyter, a new context has a running kernel at once; a cwd that cannot be used fails here.
    try {
      await ensureKernel(context)
    } catch (error) {
      contexts.delete(context.id)
      context.removed = true
      throw new HttpError(
        500,
        `Failed to create the context: ${error instanceof Error ? error.message : error}`,
      )
    }
    sendJson(response, 200, { id: context.id, language: context.language, cwd: context.cwd })
  }

  async function restartContext(response: ServerResponse, id: string): Promise<void> {
    const context = findContext(id)
    const previous = context.kernel
    forgetKernel(context, 'restart')
    if (previous) await Promise.race([previous.exited, new Promise((resolve) => setTimeout(resolve, 2_000))])
    try {
      await ensureKernel(context)
    } catch (error) {
      throw new HttpError(
        500,
        `Failed to restart context ${id}: ${error instanceof Error ? error.message : error}`,
      )
    }
    sendJson(response, 200, null)
  }

  function removeContext(response: ServerResponse, id: string): void {
    const context = findContext(id)
    context.removed = true
    contexts.delete(id)
    for (const [language, contextId] of defaults) if (contextId === id) defaults.delete(language)
    forgetKernel(context, 'context removed')
    sendJson(response, 200, null)
  }

  async function route(request: IncomingMessage, response: ServerResponse, body: Buffer): Promise<void> {
    const method = request.method ?? 'GET'
    const path = new URL(request.url ?? '/', 'http://interpreter').pathname
    if (path === '/health') {
      if (method !== 'GET') throw new HttpError(405, 'Method Not Allowed')
      sendJson(response, 200, 'OK')
      return
    }
    if (closed) throw new HttpError(502, 'the sandbox is gone')
    if (path === '/execute') {
      if (method !== 'POST') throw new HttpError(405, 'Method Not Allowed')
      await execute(response, body)
      return
    }
    if (path === '/contexts') {
      if (method === 'GET') {
        ensureDefaults()
        sendJson(
          response,
          200,
          [...contexts.values()].map((context) => ({
            id: context.id,
            language: context.language,
            cwd: context.cwd,
          })),
        )
        return
      }
      if (method === 'POST') {
        await createContext(response, body)
        return
      }
      throw new HttpError(405, 'Method Not Allowed')
    }
    const match = /^\/contexts\/([^/]+)(\/restart)?$/.exec(path)
    if (match?.[1] !== undefined) {
      let id: string
      try {
        id = decodeURIComponent(match[1])
      } catch {
        throw new HttpError(404, 'Context not found')
      }
      if (match[2]) {
        if (method !== 'POST') throw new HttpError(405, 'Method Not Allowed')
        await restartContext(response, id)
        return
      }
      if (method !== 'DELETE') throw new HttpError(405, 'Method Not Allowed')
      removeContext(response, id)
      return
    }
    throw new HttpError(404, 'Not Found')
  }

  return {
    async handle(request, response, body) {
      try {
        await route(request, response, body)
      } catch (error) {
        if (error instanceof HttpError) sendText(response, error.status, error.message)
        else sendText(response, 500, error instanceof Error ? error.message : String(error))
      }
    },

    reset() {
      for (const context of contexts.values()) forgetKernel(context, 'sandbox processes stopped')
    },

    async close() {
      closed = true
      const exits: Promise<unknown>[] = []
      for (const context of contexts.values()) {
        if (context.kernel) exits.push(context.kernel.exited)
        forgetKernel(context, 'sandbox killed')
      }
      await Promise.race([Promise.all(exits), new Promise((resolve) => setTimeout(resolve, 2_000))])
    },
  }
}
