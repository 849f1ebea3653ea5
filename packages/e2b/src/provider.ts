import { type Result, Sandbox } from '@e2b/code-interpreter'
import {
  type CodeOutput,
  type CodeResult,
  type CommandResult,
  type CreateSandboxOptions,
  type FileEntry,
  type ProcessInfo,
  type RunCodeOptions,
  type RunCommandOptions,
  type SandboxHandle,
  type SandboxInfo,
  type SandboxProvider,
  SandkeepError,
  validateSandboxId,
} from '@sandkeep/core'
import { type ErrorContext, fromE2BError } from './errors.js'

/** Options of {@link createE2BProvider}. Each connection option falls back to the SDK's environment variable. */
export interface E2BProviderOptions {
  /** API key; default `E2B_API_KEY`. Never logged or stored by sandkeep. */
  apiKey?: string
  /** Control-plane URL; default `E2B_API_URL`, else `https://api.<domain>`. */
  apiUrl?: string
  /** envd and code-interpreter URL for every sandbox; default `E2B_SANDBOX_URL` (needed for local-e2b). */
  sandboxUrl?: string
  /** E2B domain; default `E2B_DOMAIN`, else `e2b.app`. */
  domain?: string
  /** Timeout of each HTTP request to E2B, ms; default the SDK's 60 000. */
  requestTimeoutMs?: number
  /** Template for `create`; default `'code-interpreter-v1'`. */
  template?: string
  /** Extra HTTP headers sent on every request (never put secrets you would not send to E2B here). */
  headers?: Record<string, string>
}

/** The provider `createE2BProvider` returns: a SandboxProvider whose handles' `native` is the SDK `Sandbox`. */
export type E2BProvider = SandboxProvider<Sandbox> & {
  /** Always `'e2b'`. */
  readonly providerId: 'e2b'
}

const KNOWN = new Set(['apiKey', 'apiUrl', 'sandboxUrl', 'domain', 'requestTimeoutMs', 'template', 'headers'])
const DEFAULT_TEMPLATE = 'code-interpreter-v1'
// The SDK's runCode default cell timeout; sandkeep's contract says the same.
const DEFAULT_TIMEOUT_MS = 60_000

function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}

function checkOptions(options: E2BProviderOptions): void {
  if (typeof options !== 'object' || options === null)
    throw invalid('createE2BProvider options must be an object.')
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key))
      throw invalid(`createE2BProvider has no option '${key}'. Known: ${[...KNOWN].join(', ')}.`)
  }
  for (const key of ['apiKey', 'apiUrl', 'sandboxUrl', 'domain', 'template'] as const) {
    const value = options[key]
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw invalid(`createE2BProvider option '${key}' must be a non-empty string.`)
    }
  }
  for (const key of ['apiUrl', 'sandboxUrl'] as const) {
    const value = options[key]
    if (value !== undefined && !URL.canParse(value))
      throw invalid(`createE2BProvider option '${key}' must be a URL.`)
  }
  const timeout = options.requestTimeoutMs
  if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 0)) {
    throw invalid('createE2BProvider option requestTimeoutMs must be a non-negative integer (ms).')
  }
  if (options.headers !== undefined) {
    if (typeof options.headers !== 'object' || options.headers === null)
      throw invalid('headers must be an object of strings.')
    for (const value of Object.values(options.headers)) {
      if (typeof value !== 'string') throw invalid('headers must be an object of strings.')
    }
  }
}

/** The `bash -l -c <command>` argument when the process was started that way (as startProcess does). */
function commandLine(info: { cmd: string; args: string[] }): string {
  const args = info.args ?? []
  if (/(^|\/)(ba)?sh$/.test(info.cmd) && args.length >= 2 && args.at(-2) === '-c') return args.at(-1) ?? ''
  return [info.cmd, ...args].join(' ')
}

type ConnectOptions = NonNullable<Parameters<typeof Sandbox.connect>[1]>

/**
 * The SDK's `Sandbox.connect` keeps the id it was asked for even when the platform answers with another one
 * (E2B has been seen to re-map a sandbox after repeated pause/resume; local-e2b can inject it). This subclass
 * makes the same connect call and builds the sandbox for the id the platform answered, so that envd calls
 * reach it and the session manager can re-map the session.
 */
class FollowingSandbox extends Sandbox {
  static async connectFollowingId(sandboxId: string, options: ConnectOptions): Promise<Sandbox> {
    const resolved = FollowingSandbox.resolveOpts(options) ?? options
    const answer = await FollowingSandbox.connectSandbox(sandboxId, resolved)
    return new Sandbox({
      ...resolved,
      sandboxId: answer.sandboxId || sandboxId,
      ...(answer.sandboxDomain ? { sandboxDomain: answer.sandboxDomain } : {}),
      envdVersion: answer.envdVersion,
      ...(answer.envdAccessToken ? { envdAccessToken: answer.envdAccessToken } : {}),
      ...(answer.trafficAccessToken ? { trafficAccessToken: answer.trafficAccessToken } : {}),
    })
  }
}

const OUTPUT_STRINGS = [
  'text',
  'html',
  'markdown',
  'svg',
  'png',
  'jpeg',
  'pdf',
  'latex',
  'javascript',
] as const

/** The SDK's `Result` as a provider-neutral CodeOutput (only the formats present; no SDK class leaks out). */
function toCodeOutput(result: Result): CodeOutput {
  const output: CodeOutput = { isMainResult: result.isMainResult }
  for (const key of OUTPUT_STRINGS) {
    const value = result[key]
    if (typeof value === 'string') output[key] = value
  }
  // Typed as a string by the SDK, but the server sends the JSON value itself (Jupyter's application/json).
  if (result.json !== undefined && result.json !== null) output.json = result.json
  if (result.data !== undefined && result.data !== null) output.data = result.data
  if (result.chart !== undefined && result.chart !== null)
    output.chart = result.chart as unknown as Record<string, unknown>
  // The SDK's `extra` holds unknown top-level keys only; the server's own `extra` object stays in `raw`.
  const rawExtra = (result.raw as Record<string, unknown>).extra
  const extra = {
    ...(typeof rawExtra === 'object' && rawExtra !== null ? (rawExtra as Record<string, unknown>) : {}),
    ...(result.extra ?? {}),
  }
  if (Object.keys(extra).length > 0) output.extra = extra
  return output
}

function toBuffer(data: Uint8Array): ArrayBuffer {
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer
}

/**
 * A SandboxProvider on the real E2B SDK (`@e2b/code-interpreter`'s `Sandbox`), for E2B cloud and any
 * E2B-compatible host (local-e2b, self-hosted). Synchronous: nothing is sent until the first call.
 * Connection options not given fall back to `E2B_API_KEY`, `E2B_API_URL`, `E2B_SANDBOX_URL`, `E2B_DOMAIN`.
 * @throws SandkeepError INVALID_ARGUMENT on bad options.
 */
export function createE2BProvider(options: E2BProviderOptions = {}): E2BProvider {
  checkOptions(options)
  // Kept in this closure only: the provider object exposes no field holding the key.
  const connection = {
    ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    ...(options.apiUrl !== undefined ? { apiUrl: options.apiUrl } : {}),
    ...(options.sandboxUrl !== undefined ? { sandboxUrl: options.sandboxUrl } : {}),
    ...(options.domain !== undefined ? { domain: options.domain } : {}),
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    ...(options.headers !== undefined ? { headers: options.headers } : {}),
  }
  const template = options.template ?? DEFAULT_TEMPLATE

  async function guard<T>(context: ErrorContext, work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (error) {
      throw fromE2BError(error, context)
    }
  }

  function withSignal(signal: AbortSignal | undefined) {
    return signal ? { ...connection, signal } : connection
  }

  function handleFor(sandbox: Sandbox): SandboxHandle<Sandbox> {
    const sandboxId = sandbox.sandboxId
    const at = (operation: string, path?: string): ErrorContext => ({
      operation,
      sandboxId,
      ...(path !== undefined ? { path } : {}),
    })

    async function runCommand(
      command: string,
      commandOptions: RunCommandOptions = {},
    ): Promise<CommandResult> {
      return guard(at('commands.run'), async () => {
        const { signal, stdin } = commandOptions
        if (signal?.aborted)
          throw new SandkeepError({ code: 'ABORTED', message: 'runCommand was aborted.', sandboxId })
        // Output so far, kept for a command that times out (its result then says what it printed).
        let stdout = ''
        let stderr = ''
        const timeoutMs = commandOptions.timeoutMs ?? DEFAULT_TIMEOUT_MS
        // Started in the background so that stdin can be written and an abort can kill it.
        const handle = await sandbox.commands.run(command, {
          background: true,
          stdin: stdin !== undefined,
          ...(commandOptions.cwd ? { cwd: commandOptions.cwd } : {}),
          ...(commandOptions.envs ? { envs: commandOptions.envs } : {}),
          timeoutMs,
          onStdout: (chunk: string) => {
            stdout += chunk
            commandOptions.onStdout?.(chunk)
          },
          onStderr: (chunk: string) => {
            stderr += chunk
            commandOptions.onStderr?.(chunk)
          },
        })
        const onAbort = () => void handle.kill().catch(() => undefined)
        signal?.addEventListener('abort', onAbort, { once: true })
        try {
          if (stdin !== undefined) {
            if (stdin.length > 0) await sandbox.commands.sendStdin(handle.pid, stdin)
            await sandbox.commands.closeStdin(handle.pid)
          }
          const result = await handle.wait()
          return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }
        } catch (error) {
          // A non-zero exit is a result, not an error.
          const names = [error?.constructor?.name, (error as Error)?.name]
          if (names.includes('CommandExitError')) {
            const exit = error as { exitCode: number; stdout: string; stderr: string }
            if (signal?.aborted)
              throw new SandkeepError({
                code: 'ABORTED',
                message: 'runCommand was aborted.',
                sandboxId,
                cause: error,
              })
            return { exitCode: exit.exitCode, stdout: exit.stdout, stderr: exit.stderr }
          }
          if (signal?.aborted)
            throw new SandkeepError({
              code: 'ABORTED',
              message: 'runCommand was aborted.',
              sandboxId,
              cause: error,
            })
          // The contract: a command killed at its time limit is a result with exit code -1.
          if (names.includes('TimeoutError') && timeoutMs > 0) {
            return {
              exitCode: -1,
              stdout,
              stderr: `${stderr}sandkeep: command timed out after ${timeoutMs} ms\n`,
            }
          }
          throw error
        } finally {
          signal?.removeEventListener('abort', onAbort)
        }
      })
    }

    async function runCode(code: string, codeOptions: RunCodeOptions = {}): Promise<CodeResult> {
      return guard(at('runCode'), async () => {
        const language = codeOptions.language ?? 'python'
        const common = {
          timeoutMs: codeOptions.timeoutMs ?? DEFAULT_TIMEOUT_MS,
          ...(codeOptions.onStdout
            ? { onStdout: (m: { line: string }) => codeOptions.onStdout?.(m.line) }
            : {}),
          ...(codeOptions.onStderr
            ? { onStderr: (m: { line: string }) => codeOptions.onStderr?.(m.line) }
            : {}),
        }
        if (codeOptions.signal?.aborted)
          throw new SandkeepError({ code: 'ABORTED', message: 'runCode was aborted.', sandboxId })
        const execution = codeOptions.contextId
          ? await sandbox.runCode(code, {
              ...common,
              context: { id: codeOptions.contextId, language, cwd: '/home/user' },
            })
          : await sandbox.runCode(code, { ...common, language })
        return {
          text: execution.text ?? null,
          results: execution.results.map(toCodeOutput),
          stdout: execution.logs.stdout.join(''),
          stderr: execution.logs.stderr.join(''),
          error: execution.error
            ? {
                name: execution.error.name,
                value: execution.error.value,
                traceback: execution.error.traceback,
              }
            : null,
        }
      })
    }

    async function readFile(path: string, readOptions?: { format?: 'text' | 'bytes'; signal?: AbortSignal }) {
      return guard(at('files.read', path), async () => {
        const signal = readOptions?.signal ? { signal: readOptions.signal } : {}
        if (readOptions?.format === 'bytes') return sandbox.files.read(path, { format: 'bytes', ...signal })
        return sandbox.files.read(path, { format: 'text', ...signal })
      })
    }

    return {
      id: sandboxId,
      providerId: 'e2b',
      native: sandbox,
      runCommand,
      startProcess: (command, processOptions) =>
        guard(at('commands.run'), async () => {
          const handle = await sandbox.commands.run(command, {
            background: true,
            // No limit: a background process must outlive the turn (the sandbox timeout still bounds it).
            timeoutMs: 0,
            ...(processOptions?.cwd ? { cwd: processOptions.cwd } : {}),
            ...(processOptions?.envs ? { envs: processOptions.envs } : {}),
          })
          // Stop streaming its output to us; the process keeps running in the sandbox.
          await handle.disconnect()
          return { pid: handle.pid }
        }),
      listProcesses: () =>
        guard(at('commands.list'), async () => {
          const list = await sandbox.commands.list()
          return list.map(
            (p): ProcessInfo => ({
              pid: p.pid,
              command: commandLine(p),
              cmd: p.cmd,
              args: p.args,
              ...(p.cwd ? { cwd: p.cwd } : {}),
            }),
          )
        }),
      killProcess: (pid) => guard(at('commands.kill'), () => sandbox.commands.kill(pid)),
      runCode,
      readFile: readFile as SandboxHandle['readFile'],
      writeFile: (path, data, writeOptions) =>
        guard(at('files.write', path), async () => {
          await sandbox.files.write(path, typeof data === 'string' ? data : toBuffer(data), {
            ...(writeOptions?.signal ? { signal: writeOptions.signal } : {}),
          })
        }),
      listDir: (path, listOptions) =>
        guard(at('files.list', path), async () => {
          const entries = await sandbox.files.list(path, { depth: listOptions?.depth ?? 1 })
          return entries.map(
            (e): FileEntry => ({
              name: e.name,
              path: e.path,
              type:
                e.type === 'file' ? 'file' : e.type === 'dir' ? 'dir' : e.symlinkTarget ? 'symlink' : 'other',
              size: e.size,
            }),
          )
        }),
      exists: (path) => guard(at('files.exists', path), () => sandbox.files.exists(path)),
      remove: (path) => guard(at('files.remove', path), () => sandbox.files.remove(path)),
    }
  }

  function info(raw: {
    sandboxId: string
    templateId?: string
    metadata?: Record<string, string>
    state: string
    startedAt?: Date
    endAt?: Date
  }): SandboxInfo {
    return {
      sandboxId: raw.sandboxId,
      ...(raw.templateId ? { templateId: raw.templateId } : {}),
      metadata: { ...(raw.metadata ?? {}) },
      state: raw.state === 'paused' ? 'paused' : 'running',
      ...(raw.startedAt ? { startedAt: new Date(raw.startedAt) } : {}),
      ...(raw.endAt ? { endAt: new Date(raw.endAt) } : {}),
    }
  }

  const provider: E2BProvider = {
    specificationVersion: 'v1',
    providerId: 'e2b',
    defaultTemplate: template,
    create: (createOptions: CreateSandboxOptions) =>
      guard({ operation: 'create' }, async () => {
        const sandbox = await Sandbox.create(createOptions.template ?? template, {
          ...withSignal(createOptions.signal),
          metadata: createOptions.metadata,
          ...(createOptions.timeoutMs !== undefined ? { timeoutMs: createOptions.timeoutMs } : {}),
          ...(createOptions.envs ? { envs: createOptions.envs } : {}),
          // sandkeep's default is no internet; the SDK's is on.
          allowInternetAccess: createOptions.allowInternetAccess ?? false,
          ...(createOptions.lifecycle
            ? {
                lifecycle: {
                  onTimeout: createOptions.lifecycle.onTimeout,
                  autoResume: createOptions.lifecycle.autoResume ?? false,
                },
              }
            : {}),
        })
        return handleFor(sandbox)
      }),
    connect: (sandboxId, connectOptions) =>
      guard({ operation: 'connect', sandboxId }, async () => {
        validateSandboxId(sandboxId)
        const sandbox = await FollowingSandbox.connectFollowingId(sandboxId, {
          ...withSignal(connectOptions?.signal),
          ...(connectOptions?.timeoutMs !== undefined ? { timeoutMs: connectOptions.timeoutMs } : {}),
        })
        return handleFor(sandbox)
      }),
    kill: (sandboxId, killOptions) =>
      guard({ operation: 'kill', sandboxId }, async () => {
        validateSandboxId(sandboxId)
        return Sandbox.kill(sandboxId, withSignal(killOptions?.signal))
      }),
    pause: (sandboxId, pauseOptions) =>
      guard({ operation: 'pause', sandboxId }, async () => {
        validateSandboxId(sandboxId)
        return Sandbox.pause(sandboxId, withSignal(pauseOptions?.signal))
      }),
    setTimeout: (sandboxId, timeoutMs, timeoutOptions) =>
      guard({ operation: 'setTimeout', sandboxId }, async () => {
        validateSandboxId(sandboxId)
        await Sandbox.setTimeout(sandboxId, timeoutMs, withSignal(timeoutOptions?.signal))
      }),
    getInfo: (sandboxId, infoOptions) =>
      guard({ operation: 'getInfo', sandboxId }, async () => {
        validateSandboxId(sandboxId)
        return info(await Sandbox.getInfo(sandboxId, withSignal(infoOptions?.signal)))
      }),
    list: (listOptions = {}) =>
      guard({ operation: 'list' }, async () => {
        const paginator = Sandbox.list({
          ...connection,
          query: {
            ...(listOptions.metadata ? { metadata: listOptions.metadata } : {}),
            ...(listOptions.state ? { state: listOptions.state } : {}),
          },
          ...(listOptions.limit !== undefined ? { limit: listOptions.limit } : {}),
          ...(listOptions.cursor !== undefined ? { nextToken: listOptions.cursor } : {}),
        })
        const items = await paginator.nextItems(withSignal(listOptions.signal))
        const cursor = paginator.hasNext ? paginator.nextToken : undefined
        return { sandboxes: items.map(info), ...(cursor ? { cursor } : {}) }
      }),
  }
  return provider
}
