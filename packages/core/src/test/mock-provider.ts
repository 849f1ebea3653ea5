// A SandboxProvider that keeps its sandboxes in memory, records every call, and fails on demand, so users
// can unit-test agents (and sandkeep tests its manager) without a sandbox platform. It imitates, not runs:
// commands understand a few shell words, code a tiny expression language. Plug in `onCommand`/`onCode` for more.
import { SandkeepError, type SandkeepErrorCode } from '../errors.js'
import { PROBE_CELL_TAG } from '../fidelity.js'
import type {
  CodeResult,
  CommandResult,
  CreateSandboxOptions,
  FileEntry,
  ProcessInfo,
  SandboxHandle,
  SandboxInfo,
  SandboxProvider,
  SandboxState,
} from '../sandbox-provider.js'

/** Operations of the provider and of its handles that `failNext` and `calls` name. */
export type MockOperation =
  | 'create'
  | 'connect'
  | 'kill'
  | 'pause'
  | 'setTimeout'
  | 'list'
  | 'getInfo'
  | 'runCommand'
  | 'startProcess'
  | 'listProcesses'
  | 'killProcess'
  | 'runCode'
  | 'readFile'
  | 'writeFile'
  | 'listDir'
  | 'exists'
  | 'remove'

/** One recorded call. */
export interface MockProviderCall {
  /** The operation. */
  operation: MockOperation
  /** Sandbox concerned (absent for create before it has an id, and list). */
  sandboxId?: string
  /** The call's first argument beyond the id (command, code, path), when there is one. */
  detail?: string
  /** When it was made, epoch ms. */
  at: number
}

/** What a mock pause keeps; `'restart'` restarts background processes with new pids (Kubernetes-style). */
export interface MockPauseFidelity {
  /** Interpreter variables. Default true. */
  memory?: boolean
  /** Files. Default true. */
  filesystem?: boolean
  /** Background processes. Default true. */
  processes?: boolean | 'restart'
}

/** Options of {@link createMockProvider}. */
export interface MockProviderOptions {
  /** `providerId`; default `'mock'`. */
  providerId?: string
  /** What a pause keeps; default everything (like E2B cloud). */
  pauseKeeps?: MockPauseFidelity
  /** Capabilities to leave out, to test code paths for platforms without them. */
  without?: Array<'pause' | 'setTimeout' | 'list' | 'getInfo'>
  /** Handles commands the built-in mini shell does not know; return undefined to fall through (exit 127). */
  onCommand?: (command: string, sandbox: MockSandbox) => CommandResult | undefined
  /**
   * Handles code the built-in mini interpreter does not know; return undefined to fall through. Return
   * `results` (e.g. `[{ isMainResult: false, png: '<base64>' }]`) to imitate a cell that plots.
   */
  onCode?: (code: string, language: string, sandbox: MockSandbox) => CodeResult | undefined
  /** Added latency per call, ms. Default 0. */
  latencyMs?: number
}

/** A mock sandbox's state, open for inspection and arrangement in tests. */
export interface MockSandbox {
  /** Current id. */
  id: string
  /** Running or paused. */
  state: SandboxState
  /** Metadata from create. */
  metadata: Record<string, string>
  /** Environment from create. */
  envs: Record<string, string>
  /** Template from create. */
  template: string
  /** Files by absolute path. */
  files: Map<string, Uint8Array>
  /** Background processes. */
  processes: ProcessInfo[]
  /** Interpreter globals per context (`python:default`, `javascript:<id>`...). */
  memory: Map<string, Map<string, unknown>>
  /** The options create got. */
  createOptions: CreateSandboxOptions
  /** Timeout end, epoch ms. */
  endAt: number
  /** When it started. */
  startedAt: Date
}

/** The mock provider: a SandboxProvider plus controls. */
export interface MockProvider extends SandboxProvider<MockSandbox> {
  /** Every call, in order. */
  readonly calls: MockProviderCall[]
  /** Calls of one operation. */
  callsOf(operation: MockOperation): MockProviderCall[]
  /** Sandboxes that exist, by id. */
  readonly sandboxes: Map<string, MockSandbox>
  /**
   * Makes the next `times` (default 1) calls of `operation` fail. `failure` is a SandkeepError, a code
   * (SANDBOX_UNAVAILABLE is made retryable), or any other error (thrown as is, like a buggy provider).
   */
  failNext(
    operation: MockOperation,
    failure: SandkeepError | SandkeepErrorCode | Error,
    options?: { times?: number; retryAfterMs?: number; message?: string },
  ): void
  /** Makes the next connect to `sandboxId` return the sandbox under a new id (as E2B sometimes does). */
  remapNextConnect(sandboxId: string): void
  /** Deletes a sandbox as a platform past its retention would: connect then fails with SANDBOX_NOT_FOUND. */
  expire(sandboxId: string): void
  /** Drops a sandbox's interpreter memory and processes, keeping files. */
  dropMemory(sandboxId: string): void
  /** Forgets recorded calls. */
  clearCalls(): void
}

let counter = 0

function notFound(sandboxId: string): SandkeepError {
  return new SandkeepError({
    code: 'SANDBOX_NOT_FOUND',
    message: `Mock sandbox ${sandboxId} does not exist.`,
    sandboxId,
  })
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** Creates a {@link MockProvider}. */
export function createMockProvider(options: MockProviderOptions = {}): MockProvider {
  const providerId = options.providerId ?? 'mock'
  const keeps = {
    memory: true,
    filesystem: true,
    processes: true as boolean | 'restart',
    ...options.pauseKeeps,
  }
  const sandboxes = new Map<string, MockSandbox>()
  const calls: MockProviderCall[] = []
  const failures = new Map<MockOperation, Array<() => Error>>()
  const remaps = new Set<string>()
  let nextPid = 100

  async function enter(operation: MockOperation, sandboxId?: string, detail?: string): Promise<void> {
    calls.push({
      operation,
      at: Date.now(),
      ...(sandboxId ? { sandboxId } : {}),
      ...(detail !== undefined ? { detail } : {}),
    })
    if (options.latencyMs) await new Promise((resolve) => setTimeout(resolve, options.latencyMs))
    else await Promise.resolve()
    const queue = failures.get(operation)
    const make = queue?.shift()
    if (make) throw make()
  }

  function running(sandboxId: string): MockSandbox {
    const sandbox = sandboxes.get(sandboxId)
    if (!sandbox) throw notFound(sandboxId)
    if (sandbox.state === 'paused') {
      throw new SandkeepError({
        code: 'SANDBOX_UNAVAILABLE',
        message: `Mock sandbox ${sandboxId} is paused: connect to it first.`,
        sandboxId,
      })
    }
    return sandbox
  }

  function info(sandbox: MockSandbox): SandboxInfo {
    return {
      sandboxId: sandbox.id,
      templateId: sandbox.template,
      metadata: { ...sandbox.metadata },
      state: sandbox.state,
      startedAt: sandbox.startedAt,
      endAt: new Date(sandbox.endAt),
    }
  }

  function handleFor(initial: MockSandbox): SandboxHandle<MockSandbox> {
    // A handle is bound to the id it was made for: after a re-map the old id is gone, as on E2B.
    const sandbox = initial
    const id = initial.id
    const op = async (operation: MockOperation, detail?: string) => {
      await enter(operation, id, detail)
      return running(id)
    }
    const handle: SandboxHandle<MockSandbox> = {
      id,
      providerId,
      native: sandbox,
      async runCommand(command, commandOptions) {
        const target = await op('runCommand', command)
        const result =
          options.onCommand?.(command, target) ?? miniShell(command, target, commandOptions?.stdin)
        if (result.stdout) commandOptions?.onStdout?.(result.stdout)
        if (result.stderr) commandOptions?.onStderr?.(result.stderr)
        return result
      },
      async startProcess(command, processOptions) {
        const target = await op('startProcess', command)
        const pid = nextPid++
        target.processes.push({ pid, command, ...(processOptions?.cwd ? { cwd: processOptions.cwd } : {}) })
        return { pid }
      },
      async listProcesses() {
        const target = await op('listProcesses')
        return target.processes.map((p) => ({ ...p }))
      },
      async killProcess(pid) {
        const target = await op('killProcess', String(pid))
        const index = target.processes.findIndex((p) => p.pid === pid)
        if (index < 0) return false
        target.processes.splice(index, 1)
        return true
      },
      async runCode(code, codeOptions) {
        const target = await op('runCode', code)
        const language = codeOptions?.language ?? 'python'
        const custom = options.onCode?.(code, language, target)
        if (custom) {
          // Streamed like a real cell, so code under test that watches output sees it.
          if (custom.stdout) codeOptions?.onStdout?.(custom.stdout)
          if (custom.stderr) codeOptions?.onStderr?.(custom.stderr)
          return custom
        }
        const contextKey = `${language}:${codeOptions?.contextId ?? 'default'}`
        let globals = target.memory.get(contextKey)
        if (!globals) {
          globals = new Map()
          target.memory.set(contextKey, globals)
        }
        if (code.startsWith(PROBE_CELL_TAG)) {
          // The combined fidelity probe cell: the sentinel and the marker file, printed as one JSON line.
          const { variable, path } = JSON.parse(code.slice(PROBE_CELL_TAG.length).split('\n')[0] as string)
          const file = target.files.get(path)
          const answer = {
            sentinel: globals.get(variable) ?? null,
            marker: file ? decoder.decode(file) : null,
          }
          const stdout = `${JSON.stringify(answer)}\n`
          codeOptions?.onStdout?.(stdout)
          return { text: null, results: [], stdout, stderr: '', error: null }
        }
        const result = miniInterpreter(code, language, globals)
        if (result.stdout) codeOptions?.onStdout?.(result.stdout)
        return result
      },
      readFile: (async (path: string, readOptions?: { format?: 'text' | 'bytes' }) => {
        const target = await op('readFile', path)
        const data = target.files.get(path)
        if (!data) {
          throw new SandkeepError({
            code: 'FILE_NOT_FOUND',
            message: `${path} does not exist in the mock sandbox.`,
            sandboxId: sandbox.id,
          })
        }
        return readOptions?.format === 'bytes' ? data.slice() : decoder.decode(data)
      }) as SandboxHandle['readFile'],
      async writeFile(path, data) {
        const target = await op('writeFile', path)
        target.files.set(path, typeof data === 'string' ? encoder.encode(data) : data.slice())
      },
      async listDir(path, listOptions) {
        const target = await op('listDir', path)
        const depth = listOptions?.depth ?? 1
        const prefix = path.endsWith('/') ? path : `${path}/`
        const entries = new Map<string, FileEntry>()
        for (const [file, data] of target.files) {
          if (!file.startsWith(prefix)) continue
          const parts = file.slice(prefix.length).split('/')
          for (let i = 0; i < Math.min(depth, parts.length); i++) {
            const entryPath = prefix + parts.slice(0, i + 1).join('/')
            const isFile = i === parts.length - 1
            entries.set(entryPath, {
              name: parts[i] ?? '',
              path: entryPath,
              type: isFile ? 'file' : 'dir',
              ...(isFile ? { size: data.byteLength } : {}),
            })
          }
        }
        if (entries.size === 0 && ![...target.files.keys()].some((f) => f.startsWith(prefix))) {
          throw new SandkeepError({
            code: 'FILE_NOT_FOUND',
            message: `${path} does not exist in the mock sandbox.`,
            sandboxId: sandbox.id,
          })
        }
        return [...entries.values()]
      },
      async exists(path) {
        const target = await op('exists', path)
        const prefix = path.endsWith('/') ? path : `${path}/`
        return target.files.has(path) || [...target.files.keys()].some((f) => f.startsWith(prefix))
      },
      async remove(path) {
        const target = await op('remove', path)
        const prefix = path.endsWith('/') ? path : `${path}/`
        for (const file of [...target.files.keys()]) {
          if (file === path || file.startsWith(prefix)) target.files.delete(file)
        }
      },
    }
    return handle
  }

  const provider: MockProvider = {
    specificationVersion: 'v1',
    providerId,
    defaultTemplate: 'mock-template',
    calls,
    sandboxes,
    callsOf: (operation) => calls.filter((c) => c.operation === operation),
    async create(createOptions) {
      await enter('create', undefined, createOptions.template)
      const id = `mock-${process.pid}-${++counter}`
      const sandbox: MockSandbox = {
        id,
        state: 'running',
        metadata: { ...createOptions.metadata },
        envs: { ...createOptions.envs },
        template: createOptions.template ?? 'mock-template',
        files: new Map(),
        processes: [],
        memory: new Map(),
        createOptions,
        endAt: Date.now() + (createOptions.timeoutMs ?? 300_000),
        startedAt: new Date(),
      }
      sandboxes.set(id, sandbox)
      return handleFor(sandbox)
    },
    async connect(sandboxId, connectOptions) {
      await enter('connect', sandboxId)
      const sandbox = sandboxes.get(sandboxId)
      if (!sandbox) throw notFound(sandboxId)
      if (sandbox.state === 'paused') {
        sandbox.state = 'running'
        if (keeps.processes === 'restart') {
          sandbox.processes = sandbox.processes.map((p) => ({ ...p, pid: nextPid++ }))
        }
      }
      if (connectOptions?.timeoutMs) sandbox.endAt = Date.now() + connectOptions.timeoutMs
      if (remaps.delete(sandboxId)) {
        sandboxes.delete(sandboxId)
        sandbox.id = `${sandboxId}-r${++counter}`
        sandboxes.set(sandbox.id, sandbox)
      }
      return handleFor(sandbox)
    },
    async kill(sandboxId) {
      await enter('kill', sandboxId)
      return sandboxes.delete(sandboxId)
    },
    async pause(sandboxId) {
      await enter('pause', sandboxId)
      const sandbox = sandboxes.get(sandboxId)
      if (!sandbox) throw notFound(sandboxId)
      if (sandbox.state === 'paused') return false
      sandbox.state = 'paused'
      if (!keeps.memory) sandbox.memory.clear()
      if (keeps.processes === false) sandbox.processes = []
      if (!keeps.filesystem) sandbox.files.clear()
      return true
    },
    async setTimeout(sandboxId, timeoutMs) {
      await enter('setTimeout', sandboxId, String(timeoutMs))
      const sandbox = sandboxes.get(sandboxId)
      if (!sandbox) throw notFound(sandboxId)
      sandbox.endAt = Date.now() + timeoutMs
    },
    async list(listOptions) {
      await enter('list')
      const matches = [...sandboxes.values()].filter(
        (s) =>
          Object.entries(listOptions?.metadata ?? {}).every(([k, v]) => s.metadata[k] === v) &&
          (!listOptions?.state || listOptions.state.includes(s.state)),
      )
      const start = listOptions?.cursor ? Number(listOptions.cursor) : 0
      const limit = listOptions?.limit ?? 100
      const page = matches.slice(start, start + limit).map(info)
      return start + limit < matches.length
        ? { sandboxes: page, cursor: String(start + limit) }
        : { sandboxes: page }
    },
    async getInfo(sandboxId) {
      await enter('getInfo', sandboxId)
      const sandbox = sandboxes.get(sandboxId)
      if (!sandbox) throw notFound(sandboxId)
      return info(sandbox)
    },
    failNext(operation, failure, failOptions = {}) {
      const make = (): Error => {
        if (failure instanceof Error) return failure
        return new SandkeepError({
          code: failure,
          message: failOptions.message ?? `Injected ${failure} on ${operation}.`,
          retryable: failure === 'SANDBOX_UNAVAILABLE' || failure === 'STORE_UNAVAILABLE',
          ...(failOptions.retryAfterMs !== undefined ? { retryAfterMs: failOptions.retryAfterMs } : {}),
        })
      }
      const queue = failures.get(operation) ?? []
      for (let i = 0; i < (failOptions.times ?? 1); i++) queue.push(make)
      failures.set(operation, queue)
    },
    remapNextConnect(sandboxId) {
      remaps.add(sandboxId)
    },
    expire(sandboxId) {
      sandboxes.delete(sandboxId)
    },
    dropMemory(sandboxId) {
      const sandbox = sandboxes.get(sandboxId)
      if (!sandbox) throw notFound(sandboxId)
      sandbox.memory.clear()
      sandbox.processes = []
    },
    clearCalls() {
      calls.length = 0
    },
  }
  for (const capability of options.without ?? []) {
    delete (provider as unknown as Record<string, unknown>)[capability]
  }
  return provider
}

// --- a very small shell -------------------------------------------------------------------------------------

function miniShell(command: string, sandbox: MockSandbox, stdin?: string): CommandResult {
  const ok = (stdout = ''): CommandResult => ({ exitCode: 0, stdout, stderr: '' })
  const trimmed = command.trim()
  // Port probes (bash /dev/tcp): a port is open when a background process mentions it as its port.
  const port = /\/dev\/tcp\/127\.0\.0\.1\/(\d+)/.exec(trimmed)
  if (port) {
    const open = sandbox.processes.some((p) =>
      new RegExp(`(?:^|[^0-9])${port[1]}(?:[^0-9]|$)`).test(p.command),
    )
    if (!open) return { exitCode: 1, stdout: 'closed\n', stderr: '' }
    return ok(trimmed.includes('GET') ? 'status 200\n' : 'open\n')
  }
  if (trimmed === 'true' || trimmed === '') return ok()
  if (trimmed === 'false') return { exitCode: 1, stdout: '', stderr: '' }
  if (trimmed === 'cat' && stdin !== undefined) return ok(stdin)
  const exit = /^exit (\d+)$/.exec(trimmed)
  if (exit) return { exitCode: Number(exit[1]), stdout: '', stderr: '' }
  if (trimmed.startsWith('echo ')) return ok(`${unquoteShell(trimmed.slice(5))}\n`)
  if (trimmed.startsWith('cat ')) {
    const path = unquoteShell(trimmed.slice(4))
    const data = sandbox.files.get(path)
    if (!data) return { exitCode: 1, stdout: '', stderr: `cat: ${path}: No such file or directory\n` }
    return ok(decoder.decode(data))
  }
  return { exitCode: 127, stdout: '', stderr: `mock: command not understood: ${trimmed.slice(0, 80)}\n` }
}

function unquoteShell(text: string): string {
  const value = text.trim()
  if (value.length >= 2 && (value[0] === "'" || value[0] === '"') && value.at(-1) === value[0])
    return value.slice(1, -1)
  return value
}

// --- a very small interpreter: assignments, names, literals, `+`, print(), globals().get() -------------------

class MockNameError extends Error {}

function miniInterpreter(code: string, language: string, globals: Map<string, unknown>): CodeResult {
  let stdout = ''
  let last: unknown
  const statements = code
    .split('\n')
    .flatMap((line) => line.split(/;\s*(?=(?:[^'"]|'[^']*'|"[^"]*")*$)/))
    .map((s) => s.trim())
    .filter((s) => s && !s.startsWith('#') && !s.startsWith('//'))
  try {
    for (const [index, statement] of statements.entries()) {
      const isLast = index === statements.length - 1
      const assign = /^(?:globalThis\.|const |let |var )?([A-Za-z_$][\w$]*)\s*=(?!=)\s*(.+)$/.exec(statement)
      if (assign) {
        globals.set(assign[1] as string, evaluate(assign[2] as string, language, globals))
        last = undefined
        continue
      }
      const print = /^(?:print|console\.log)\((.*)\)$/.exec(statement)
      if (print) {
        stdout += `${display(evaluate(print[1] as string, language, globals), language, false)}\n`
        last = undefined
        continue
      }
      const value = evaluate(statement, language, globals)
      last = isLast ? value : undefined
    }
  } catch (error) {
    const name =
      error instanceof MockNameError
        ? language === 'python'
          ? 'NameError'
          : 'ReferenceError'
        : 'SyntaxError'
    const value = error instanceof Error ? error.message : String(error)
    return {
      text: null,
      results: [],
      stdout,
      stderr: '',
      error: { name, value, traceback: `${name}: ${value}` },
    }
  }
  const text = last === undefined || last === null ? null : display(last, language, true)
  // As a notebook platform reports it: the last value is the cell's main result.
  return {
    text,
    results: text === null ? [] : [{ isMainResult: true, text }],
    stdout,
    stderr: '',
    error: null,
  }
}

function evaluate(expression: string, language: string, globals: Map<string, unknown>): unknown {
  const terms = expression.split(/\s+\+\s+/)
  const values = terms.map((term) => evaluateTerm(term.trim(), language, globals))
  return values.reduce(
    (sum: unknown, value) => (sum === undefined ? value : (sum as number) + (value as number)),
    undefined,
  )
}

function evaluateTerm(term: string, language: string, globals: Map<string, unknown>): unknown {
  if (/^-?\d+(\.\d+)?$/.test(term)) return Number(term)
  if (term.length >= 2 && (term[0] === "'" || term[0] === '"') && term.at(-1) === term[0])
    return term.slice(1, -1)
  if (term === 'None' || term === 'null') return null
  if (term === 'undefined') return undefined
  if (term === 'True' || term === 'true') return true
  if (term === 'False' || term === 'false') return false
  const get = /^globals\(\)\.get\(['"]([\w$]+)['"](?:,\s*(.+))?\)$/.exec(term)
  if (get)
    return globals.has(get[1] as string)
      ? globals.get(get[1] as string)
      : get[2]
        ? evaluateTerm(get[2], language, globals)
        : null
  const global = /^globalThis\.([\w$]+)$/.exec(term)
  if (global) return globals.get(global[1] as string)
  if (/^[A-Za-z_$][\w$]*$/.test(term)) {
    if (!globals.has(term)) throw new MockNameError(`name '${term}' is not defined`)
    return globals.get(term)
  }
  throw new Error(`the mock interpreter does not understand ${JSON.stringify(term.slice(0, 60))}`)
}

function display(value: unknown, language: string, repr: boolean): string {
  if (typeof value === 'string') return repr ? (language === 'python' ? `'${value}'` : `'${value}'`) : value
  if (typeof value === 'boolean' && language === 'python') return value ? 'True' : 'False'
  if (value === null) return language === 'python' ? 'None' : 'null'
  return String(value)
}
