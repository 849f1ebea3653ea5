import { posix } from 'node:path'
import {
  type CodeLanguage,
  type CodeResult,
  type FileEntry,
  type JournalStep,
  type ResumeReport,
  type SandboxHandle,
  SandkeepError,
  type SessionManager,
  type Turn,
  type TurnEndReport,
  validateConversationId,
  validateTenant,
} from '@sandkeep/core'
import type {
  Experimental_SandboxDirectoryEntry,
  Experimental_SandboxFileStat,
  Experimental_SandboxProcess,
  Experimental_SandboxSession,
} from 'ai'
import { sliceLines, stateLostNotice } from './output.js'

type ReadTextFileOptions = Parameters<Experimental_SandboxSession['readTextFile']>[0]
type WriteFileOptions = Parameters<Experimental_SandboxSession['writeFile']>[0]
type WriteBinaryFileOptions = Parameters<Experimental_SandboxSession['writeBinaryFile']>[0]
type WriteTextFileOptions = Parameters<Experimental_SandboxSession['writeTextFile']>[0]
type PathOptions = Parameters<Experimental_SandboxSession['readBinaryFile']>[0]
type RunOptions = Parameters<Experimental_SandboxSession['run']>[0]
type SpawnOptions = RunOptions & { stdin?: boolean }

const sessionMarker = Symbol.for('sandkeep.ai-sdk.sandbox-session')

/** The directory E2B templates start commands in; relative paths resolve against it. */
export const DEFAULT_WORKING_DIRECTORY = '/home/user'

/** Options of {@link createSandboxSession}. */
export interface SandboxSessionOptions {
  /** The session manager that keeps the conversation's sandbox. */
  sessions: SessionManager
  /** The conversation this sandbox belongs to. Checked before any I/O (INVALID_ARGUMENT). */
  conversationId: string
  /** Tenant; default `'default'`. Checked before any I/O (INVALID_ARGUMENT). */
  tenant?: string
  /** Aborts the turn: the resume and every sandbox call of this session. */
  abortSignal?: AbortSignal
  /**
   * Absolute base directory: where `run`/`spawn` start and what relative paths resolve against.
   * Default `/home/user` (the E2B templates' home).
   */
  workingDirectory?: string
  /** Limit for one `run`/`spawn` command, ms; `0` means none. Default 300 000. */
  commandTimeoutMs?: number
  /** Replaces the default `description` given to the model. */
  description?: string
  /** How long `end()` waits for aborted in-flight calls to settle before ending the turn, ms. Default 10 000. */
  endGraceMs?: number
}

/** Options of {@link SandkeepSandboxSession.runCode}. */
export interface SessionRunCodeOptions {
  /** Default `'python'`. */
  language?: CodeLanguage
  /** Kill the cell after this many ms. Default: the provider's (60 000). */
  timeoutMs?: number
  /** Aborts the cell. */
  abortSignal?: AbortSignal
  /** Called with each stdout chunk as it is printed. */
  onStdout?: (chunk: string) => void
  /** Called with each stderr chunk as it is printed. */
  onStderr?: (chunk: string) => void
}

/** Options of {@link SandkeepSandboxSession.runCommand}. */
export interface SessionRunCommandOptions {
  /** Working directory; relative paths resolve against the session's base directory. */
  workingDirectory?: string
  /** Extra environment variables. */
  env?: Record<string, string>
  /** Kill the command after this many ms; `0` means none. Default: the session's `commandTimeoutMs`. */
  timeoutMs?: number
  /** Aborts the command (it is killed). */
  abortSignal?: AbortSignal
  /** Called with each stdout chunk as it arrives. */
  onStdout?: (chunk: string) => void
  /** Called with each stderr chunk as it arrives. */
  onStderr?: (chunk: string) => void
}

/**
 * AI SDK 7's `Experimental_SandboxSession` backed by one lazy sandkeep turn, plus what sandkeep adds
 * (persistent code interpreter, the resume report, the journal). Pass it as `experimental_sandbox`.
 */
export interface SandkeepSandboxSession extends Experimental_SandboxSession, AsyncDisposable {
  /** Conversation id. */
  readonly conversationId: string
  /** Tenant. */
  readonly tenant: string
  /** Absolute base directory of commands and relative paths. */
  readonly workingDirectory: string
  /** True once the turn has begun (the first sandbox call was made). */
  readonly started: boolean
  /** True once `end()` was called. */
  readonly ended: boolean
  /** What the resume found; `undefined` until the first sandbox call has resumed the sandbox. */
  readonly report: ResumeReport | undefined
  /** Fires when the session ends or its `abortSignal` fires. */
  readonly signal: AbortSignal
  /** Begins the turn now (no-op when begun) and resolves when the sandbox is ready. */
  ready(options?: { abortSignal?: AbortSignal }): Promise<SandboxHandle>
  /** The underlying sandkeep turn once begun. */
  readonly turn: Turn | undefined
  /** Runs a code cell in the sandbox's persistent interpreter (variables survive across calls and turns). */
  runCode(code: string, options?: SessionRunCodeOptions): Promise<CodeResult>
  /** Like `run`, with a timeout option. A non-zero exit is a result. */
  runCommand(
    command: string,
    options?: SessionRunCommandOptions,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }>
  /**
   * Starts `bash -l -c command` in the background through the platform's process API: it outlives the call
   * and the turn, shows in the process list (so the resume probes see it), and is restarted by platforms that
   * restart processes after a pause.
   */
  startProcess(
    command: string,
    options?: { cwd?: string; envs?: Record<string, string>; abortSignal?: AbortSignal },
  ): Promise<{ pid: number }>
  /** Lists a directory (`depth` default 1); `null` when it does not exist. */
  listDir(path: string, options?: { depth?: number; abortSignal?: AbortSignal }): Promise<FileEntry[] | null>
  /** Records a setup step in the session's journal, replayed if the sandbox must be recreated. */
  recordSetupStep(step: JournalStep): Promise<void>
  /**
   * The note telling the model that earlier sandbox state is gone, once per turn: returns it on the first
   * call after a resume whose report says `stateLost`, then `undefined`.
   */
  takeStateNotice(): string | undefined
  /** Resolves `path` against the base directory. */
  resolvePath(path: string): string
  /**
   * Ends the turn: aborts calls still in flight (spawned processes are killed), waits for them briefly,
   * then ends the sandkeep turn (pause/keep/kill as the manager is configured). Idempotent; resolves to
   * `undefined` when the turn never began.
   */
  end(): Promise<TurnEndReport | undefined>
}

/** True when `value` is a session made by {@link createSandboxSession} (works across package copies). */
export function isSandkeepSandboxSession(value: unknown): value is SandkeepSandboxSession {
  return (
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[sessionMarker] === true
  )
}

/**
 * Makes an `Experimental_SandboxSession` for one turn of a conversation. Synchronous and free: the turn
 * begins, and the sandbox resumes, on the first call that needs it; `end()` (or `await using`) ends it.
 * @throws SandkeepError INVALID_ARGUMENT for a bad conversation id, tenant or option, before any I/O.
 */
export function createSandboxSession(options: SandboxSessionOptions): SandkeepSandboxSession {
  if (typeof options !== 'object' || options === null) {
    throw invalid('createSandboxSession needs an options object: { sessions, conversationId, tenant? }.')
  }
  const { sessions } = options
  if (typeof sessions !== 'object' || sessions === null || typeof sessions.beginTurn !== 'function') {
    throw invalid('createSandboxSession: `sessions` must be a SessionManager (from createSessionManager).')
  }
  const conversationId = validateConversationId(options.conversationId)
  const tenant = validateTenant(options.tenant)
  const workingDirectory = options.workingDirectory ?? DEFAULT_WORKING_DIRECTORY
  if (
    typeof workingDirectory !== 'string' ||
    !posix.isAbsolute(workingDirectory) ||
    hasNul(workingDirectory)
  ) {
    throw invalid('createSandboxSession: `workingDirectory` must be an absolute path such as /home/user.')
  }
  const commandTimeoutMs = checkMs(options.commandTimeoutMs, 'commandTimeoutMs', 300_000)
  const endGraceMs = checkMs(options.endGraceMs, 'endGraceMs', 10_000)
  if (options.description !== undefined && typeof options.description !== 'string') {
    throw invalid('createSandboxSession: `description` must be a string.')
  }
  const description = options.description ?? defaultDescription(workingDirectory)

  // Aborted by end() (so in-flight calls stop) or by the caller's signal.
  const lifetime = new AbortController()
  const onCallerAbort = () => lifetime.abort(options.abortSignal?.reason)
  if (options.abortSignal?.aborted) lifetime.abort(options.abortSignal.reason)
  else options.abortSignal?.addEventListener('abort', onCallerAbort, { once: true })

  let turnPromise: Promise<Turn> | undefined
  let turn: Turn | undefined
  let ended = false
  let endPromise: Promise<TurnEndReport | undefined> | undefined
  let noticeGiven = false
  const inFlight = new Set<Promise<unknown>>()

  const turnEnded = () =>
    new SandkeepError({
      code: 'TURN_ENDED',
      message: 'This sandbox session has ended (its turn is over); make a new one for the next turn.',
      conversationId,
      tenant,
    })

  function beginTurn(): Promise<Turn> {
    if (turnPromise === undefined) {
      turnPromise = sessions
        .beginTurn(conversationId, {
          tenant,
          lazy: true,
          ...(options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal }),
        })
        .then((begun) => {
          turn = begun
          return begun
        })
      // A failed begin took no lease: forget it so the next call tries again.
      turnPromise.catch(() => {
        turnPromise = undefined
      })
    }
    return turnPromise
  }

  async function readyHandle(signal: AbortSignal): Promise<SandboxHandle> {
    const begun = await raceAbort(beginTurn(), signal)
    return raceAbort(begun.ready(), signal)
  }

  /** Runs one sandbox operation: checks state, links signals, resumes lazily, tracks it for end(). */
  function operation<T>(
    abortSignal: AbortSignal | undefined,
    fn: (handle: SandboxHandle, signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    if (ended) return Promise.reject(turnEnded())
    if (abortSignal?.aborted) return Promise.reject(abortSignal.reason)
    if (lifetime.signal.aborted) return Promise.reject(lifetime.signal.reason ?? turnEnded())
    const signal = abortSignal ? AbortSignal.any([lifetime.signal, abortSignal]) : lifetime.signal
    const run = (async () => fn(await readyHandle(signal), signal))()
    track(run)
    return run
  }

  function track(promise: Promise<unknown>): void {
    inFlight.add(promise)
    const forget = () => inFlight.delete(promise)
    promise.then(forget, forget)
  }

  async function readBytes(path: string, abortSignal?: AbortSignal): Promise<Uint8Array | null> {
    const resolved = resolvePath(path)
    return operation(abortSignal, async (handle, signal) => {
      try {
        return await handle.readFile(resolved, { format: 'bytes', signal })
      } catch (error) {
        if (SandkeepError.hasCode(error, 'FILE_NOT_FOUND')) return null
        throw error
      }
    })
  }

  async function writeBytes(
    path: string,
    data: Uint8Array | string,
    abortSignal?: AbortSignal,
  ): Promise<void> {
    const resolved = resolvePath(path)
    return operation(abortSignal, (handle, signal) => handle.writeFile(resolved, data, { signal }))
  }

  function resolvePath(path: string): string {
    if (typeof path !== 'string' || path.length === 0)
      throw invalid('A sandbox path must be a non-empty string.')
    if (hasNul(path)) throw invalid('A sandbox path must not contain a NUL character.')
    return posix.resolve(workingDirectory, path)
  }

  function commandOptions(
    run: Pick<SessionRunCommandOptions, 'workingDirectory' | 'env' | 'onStdout' | 'onStderr'>,
    timeoutMs: number,
    signal: AbortSignal,
  ) {
    return {
      cwd: run.workingDirectory === undefined ? workingDirectory : resolvePath(run.workingDirectory),
      ...(run.env === undefined ? {} : { envs: run.env }),
      timeoutMs,
      signal,
      ...(run.onStdout ? { onStdout: run.onStdout } : {}),
      ...(run.onStderr ? { onStderr: run.onStderr } : {}),
    }
  }

  function checkCommand(command: unknown): string {
    if (typeof command !== 'string' || command.trim().length === 0) {
      throw invalid('A sandbox command must be a non-empty string.')
    }
    return command
  }

  const runCommand: SandkeepSandboxSession['runCommand'] = (command, runOptions = {}) => {
    checkCommand(command)
    const timeoutMs = checkMs(runOptions.timeoutMs, 'timeoutMs', commandTimeoutMs)
    return operation(runOptions.abortSignal, (handle, signal) =>
      handle.runCommand(command, commandOptions(runOptions, timeoutMs, signal)),
    )
  }

  async function spawn(spawnOptions: SpawnOptions): Promise<Experimental_SandboxProcess> {
    if (spawnOptions?.stdin === true) {
      // The contract asks implementations without writable stdin to refuse before starting anything.
      throw new SandkeepError({
        code: 'CAPABILITY_UNSUPPORTED',
        message:
          'spawn({ stdin: true }) is not supported by sandkeep sessions: write the input to a file and redirect it, or use run().',
        conversationId,
        tenant,
      })
    }
    const command = checkCommand(spawnOptions?.command)
    const callerSignal = spawnOptions.abortSignal
    const kill = new AbortController()
    let killed = false
    const encoder = new TextEncoder()
    let stdoutController!: ReadableStreamDefaultController<Uint8Array>
    let stderrController!: ReadableStreamDefaultController<Uint8Array>
    const stdout = new ReadableStream<Uint8Array>({
      start(controller) {
        stdoutController = controller
      },
    })
    const stderr = new ReadableStream<Uint8Array>({
      start(controller) {
        stderrController = controller
      },
    })
    const push = (controller: ReadableStreamDefaultController<Uint8Array>, chunk: string) => {
      try {
        controller.enqueue(encoder.encode(chunk))
      } catch {
        // The reader cancelled its stream; the process keeps running and its output is dropped.
      }
    }
    const close = () => {
      for (const controller of [stdoutController, stderrController]) {
        try {
          controller.close()
        } catch {
          // Already closed or cancelled.
        }
      }
    }

    // Resume first so the returned handle means "the command is starting", not "the sandbox is resuming".
    await operation(callerSignal, async () => undefined)
    let started!: () => void
    const startedPromise = new Promise<void>((resolve) => {
      started = resolve
    })
    const done = operation(callerSignal, (handle, signal) => {
      started()
      return handle.runCommand(command, {
        ...commandOptions(spawnOptions, commandTimeoutMs, AbortSignal.any([signal, kill.signal])),
        onStdout: (chunk) => push(stdoutController, chunk),
        onStderr: (chunk) => push(stderrController, chunk),
      })
    })
    const exit: Promise<{ exitCode: number }> = done.then(
      (result) => {
        close()
        return { exitCode: result.exitCode }
      },
      (error: unknown) => {
        close()
        // kill() is a normal way for a process to end: report it like a signal death, not as an error.
        if (killed && !callerSignal?.aborted) return { exitCode: -1 }
        throw callerSignal?.aborted ? callerSignal.reason : error
      },
    )
    exit.catch(() => {})
    await Promise.race([startedPromise, exit.then(() => undefined)])
    return {
      stdout,
      stderr,
      wait: () => exit,
      kill: async () => {
        if (!killed) {
          killed = true
          kill.abort(
            new SandkeepError({
              code: 'ABORTED',
              message: 'The process was killed.',
              conversationId,
              tenant,
            }),
          )
        }
        await exit.then(
          () => undefined,
          () => undefined,
        )
      },
    }
  }

  async function end(): Promise<TurnEndReport | undefined> {
    if (endPromise) return endPromise
    ended = true
    options.abortSignal?.removeEventListener('abort', onCallerAbort)
    endPromise = (async () => {
      lifetime.abort(turnEnded())
      if (inFlight.size > 0) {
        let timer: NodeJS.Timeout | undefined
        await Promise.race([
          Promise.allSettled([...inFlight]),
          new Promise((resolve) => {
            timer = setTimeout(resolve, endGraceMs)
          }),
        ])
        clearTimeout(timer)
      }
      const begun = await turnPromise?.catch(() => undefined)
      return begun ? begun.end() : undefined
    })()
    return endPromise
  }

  const session: SandkeepSandboxSession & { readonly [sessionMarker]: true } = {
    [sessionMarker]: true,
    conversationId,
    tenant,
    workingDirectory,
    description,
    get started() {
      return turn?.started ?? false
    },
    get ended() {
      return ended
    },
    get report() {
      return turn?.report
    },
    get turn() {
      return turn
    },
    signal: lifetime.signal,
    ready: (readyOptions) => operation(readyOptions?.abortSignal, async (handle) => handle),
    readFile: async ({ path, abortSignal }: PathOptions) => {
      const bytes = await readBytes(path, abortSignal)
      if (bytes === null) return null
      return new ReadableStream<Uint8Array>({
        start(controller) {
          if (bytes.byteLength > 0) controller.enqueue(bytes)
          controller.close()
        },
      })
    },
    readBinaryFile: ({ path, abortSignal }: PathOptions) => readBytes(path, abortSignal),
    readTextFile: async ({ path, abortSignal, encoding, startLine, endLine }: ReadTextFileOptions) => {
      checkLine(startLine, 'startLine')
      checkLine(endLine, 'endLine')
      const decoder = makeDecoder(encoding)
      const bytes = await readBytes(path, abortSignal)
      if (bytes === null) return null
      return sliceLines(decoder.decode(bytes), startLine ?? 1, endLine)
    },
    writeFile: async ({ path, content, abortSignal }: WriteFileOptions) => {
      resolvePath(path)
      const bytes = await collectBytes(content, abortSignal)
      await writeBytes(path, bytes, abortSignal)
    },
    writeBinaryFile: ({ path, content, abortSignal }: WriteBinaryFileOptions) => {
      if (!(content instanceof Uint8Array))
        return Promise.reject(invalid('writeBinaryFile needs Uint8Array content.'))
      return writeBytes(path, content, abortSignal)
    },
    writeTextFile: ({ path, content, abortSignal, encoding }: WriteTextFileOptions) => {
      if (typeof content !== 'string') return Promise.reject(invalid('writeTextFile needs string content.'))
      return writeBytes(path, encodeText(content, encoding), abortSignal)
    },
    stat: ({ path, abortSignal }: PathOptions) => {
      const resolved = resolvePath(path)
      return operation(abortSignal, async (handle, signal): Promise<Experimental_SandboxFileStat | null> => {
        // SandboxHandle has no stat; GNU stat in the sandbox follows symlinks (-L) as the contract asks.
        const result = await handle.runCommand(`stat -L -c '%F|%s' -- ${shellQuote(resolved)}`, {
          timeoutMs: 30_000,
          signal,
        })
        if (result.exitCode !== 0) {
          if (/No such file|cannot statx?/i.test(result.stderr)) return null
          throw providerError(`stat ${resolved} failed: ${result.stderr.trim()}`)
        }
        const [kind = '', size = '0'] = result.stdout.trim().split('|')
        const type = kind.includes('directory') ? 'directory' : kind.includes('regular') ? 'file' : 'other'
        return { type, size: Number(size) }
      })
    },
    listDirectory: ({ path, abortSignal }: PathOptions) => {
      const resolved = resolvePath(path)
      return operation(
        abortSignal,
        async (handle, signal): Promise<Experimental_SandboxDirectoryEntry[] | null> => {
          try {
            const entries = await handle.listDir(resolved, { depth: 1, signal })
            return entries.map((entry) => ({
              name: entry.name,
              type: entry.type === 'dir' ? 'directory' : entry.type,
            }))
          } catch (error) {
            if (SandkeepError.hasCode(error, 'FILE_NOT_FOUND')) return null
            throw error
          }
        },
      )
    },
    deleteFile: ({ path, abortSignal }: PathOptions) => {
      const resolved = resolvePath(path)
      return operation(abortSignal, async (handle, signal) => {
        // One round trip that tells "deleted", "missing" and "is a directory" apart; a symlink to a
        // directory is a file here (it is removed, not followed).
        const quoted = shellQuote(resolved)
        const script =
          `if [ -d ${quoted} ] && [ ! -L ${quoted} ]; then exit 21; fi; ` +
          `if [ -e ${quoted} ] || [ -L ${quoted} ]; then rm -f -- ${quoted} && echo deleted; else echo missing; fi`
        const result = await handle.runCommand(script, { timeoutMs: 30_000, signal })
        if (result.exitCode === 21) throw invalid(`deleteFile: ${resolved} is a directory.`)
        if (result.exitCode !== 0)
          throw providerError(`deleteFile ${resolved} failed: ${result.stderr.trim()}`)
        return result.stdout.trim() === 'deleted'
      })
    },
    run: ({ command, workingDirectory: cwd, env, abortSignal }: RunOptions) =>
      runCommand(command, {
        ...(cwd === undefined ? {} : { workingDirectory: cwd }),
        ...(env === undefined ? {} : { env }),
        ...(abortSignal === undefined ? {} : { abortSignal }),
      }),
    spawn: spawn as unknown as Experimental_SandboxSession['spawn'],
    runCode: (code, codeOptions = {}) => {
      if (typeof code !== 'string') return Promise.reject(invalid('runCode needs the code as a string.'))
      const language = codeOptions.language ?? 'python'
      if (language !== 'python' && language !== 'javascript') {
        return Promise.reject(
          invalid(`runCode: language must be 'python' or 'javascript', got ${String(language)}.`),
        )
      }
      return operation(codeOptions.abortSignal, (handle, signal) =>
        handle.runCode(code, {
          language,
          signal,
          ...(codeOptions.timeoutMs === undefined ? {} : { timeoutMs: codeOptions.timeoutMs }),
          ...(codeOptions.onStdout ? { onStdout: codeOptions.onStdout } : {}),
          ...(codeOptions.onStderr ? { onStderr: codeOptions.onStderr } : {}),
        }),
      )
    },
    runCommand,
    startProcess: (command, processOptions = {}) => {
      if (typeof command !== 'string' || command.length === 0)
        return Promise.reject(invalid('startProcess needs a non-empty command string.'))
      const cwd = processOptions.cwd === undefined ? undefined : resolvePath(processOptions.cwd)
      return operation(processOptions.abortSignal, (handle) =>
        handle.startProcess(command, {
          ...(cwd === undefined ? {} : { cwd }),
          ...(processOptions.envs === undefined ? {} : { envs: processOptions.envs }),
        }),
      )
    },
    listDir: (path, listOptions = {}) => {
      const resolved = resolvePath(path)
      const depth = listOptions.depth ?? 1
      if (!Number.isInteger(depth) || depth < 1)
        return Promise.reject(invalid('listDir: depth must be an integer >= 1.'))
      return operation(listOptions.abortSignal, async (handle, signal) => {
        try {
          return await handle.listDir(resolved, { depth, signal })
        } catch (error) {
          if (SandkeepError.hasCode(error, 'FILE_NOT_FOUND')) return null
          throw error
        }
      })
    },
    recordSetupStep: async (step) => {
      if (ended) throw turnEnded()
      const begun = await beginTurn()
      await begun.journal.record(step)
    },
    takeStateNotice: () => {
      if (noticeGiven || turn?.report === undefined) return undefined
      noticeGiven = true
      return stateLostNotice(turn.report)
    },
    resolvePath,
    end,
    [Symbol.asyncDispose]: async () => {
      await end()
    },
  }
  return session
}

function defaultDescription(workingDirectory: string): string {
  return (
    `A Linux sandbox that belongs to this conversation and is kept between its turns (paused while the ` +
    `user is away). Commands run with bash in ${workingDirectory}; relative paths resolve against it. ` +
    `Files, installed packages and, usually, interpreter variables survive from one turn to the next; ` +
    `if they did not, the first tool result of the turn says so.`
  )
}

function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}

function providerError(message: string): SandkeepError {
  return new SandkeepError({ code: 'PROVIDER_ERROR', message })
}

function hasNul(value: string): boolean {
  return value.includes('\u0000')
}

function checkMs(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalid(`\`${name}\` must be a number of milliseconds >= 0, got ${String(value)}.`)
  }
  return value
}

function checkLine(value: unknown, name: string): void {
  if (value === undefined) return
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw invalid(
      `readTextFile: \`${name}\` must be an integer >= 1 (lines are 1-based), got ${String(value)}.`,
    )
  }
}

function makeDecoder(encoding: string | undefined): { decode(bytes: Uint8Array): string } {
  try {
    return new TextDecoder(encoding ?? 'utf-8')
  } catch {
    throw invalid(`readTextFile: unknown encoding ${JSON.stringify(encoding)}.`)
  }
}

function encodeText(content: string, encoding: string | undefined): Uint8Array {
  const name = (encoding ?? 'utf-8').toLowerCase()
  if (name === 'utf-8' || name === 'utf8') return new TextEncoder().encode(content)
  if (Buffer.isEncoding(name)) return new Uint8Array(Buffer.from(content, name))
  throw invalid(`writeTextFile: unsupported encoding ${JSON.stringify(encoding)}.`)
}

async function collectBytes(stream: ReadableStream<Uint8Array>, signal?: AbortSignal): Promise<Uint8Array> {
  if (!(stream instanceof ReadableStream))
    throw invalid('writeFile needs a ReadableStream<Uint8Array> as content.')
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = stream.getReader()
  try {
    for (;;) {
      signal?.throwIfAborted()
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      total += value.byteLength
    }
  } finally {
    reader.releaseLock()
  }
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/** Quotes a string for bash so it is always one word, whatever it contains. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}
