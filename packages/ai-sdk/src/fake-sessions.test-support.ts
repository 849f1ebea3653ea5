// A small SessionManager double for unit tests: one "sandbox" that is a temporary directory on this
// machine, commands run by the local bash, a JavaScript interpreter with persistent state (node:vm).
// Integration tests use the real manager, Redis and local-e2b instead.
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createContext, runInContext } from 'node:vm'
import {
  type CodeResult,
  type FileEntry,
  type JournalStep,
  type ResumeReport,
  type RunCommandOptions,
  type SandboxHandle,
  SandkeepError,
  type SessionManager,
  type Turn,
  type TurnEndReport,
  type TurnOptions,
} from '@sandkeep/core'
import { readLimitError } from '@sandkeep/core/provider'

export interface FakeSessions {
  sessions: SessionManager
  /** The sandbox's home directory on this machine. */
  home: string
  /** Calls of beginTurn. */
  begins: Array<{ conversationId: string; options: TurnOptions | undefined }>
  /** Turns ended (end() calls that did work). */
  ends: number
  /** Times a turn resumed the sandbox. */
  resumes: number
  /** `running` between a resume and the end of the last turn. */
  state: 'running' | 'paused'
  /** Journal steps recorded. */
  journal: JournalStep[]
  /** The next resume reports state lost. */
  loseStateOnNextResume(): void
  /** Delay of each resume, ms. */
  resumeDelayMs: number
  /** When set, a turn end that pauses waits for this promise first (the sandbox stays running until then). */
  endGate: Promise<void> | undefined
  /** Turn ends that started and have not finished. */
  endsInFlight: number
  /** Whether the last turn that ended ran something in the sandbox (what `prewarm: 'auto'` follows). */
  lastTurnUsedSandbox: boolean
  cleanup(): Promise<void>
}

export async function createFakeSessions(): Promise<FakeSessions> {
  const home = await mkdtemp(join(tmpdir(), 'sandkeep-ai-sdk-'))
  const contexts = new Map<string, ReturnType<typeof createContext>>()
  let loseState = false
  let open = 0

  const handle: SandboxHandle = {
    id: 'fake-sandbox',
    providerId: 'fake',
    native: undefined,
    runCommand: (command, options) => runLocal(command, home, options),
    startProcess: async () => ({ pid: 1 }),
    listProcesses: async () => [],
    killProcess: async () => false,
    runCode: async (code, options): Promise<CodeResult> => {
      const language = options?.language ?? 'python'
      let context = contexts.get(language)
      if (!context) {
        context = createContext({})
        contexts.set(language, context)
      }
      const stdout: string[] = []
      context.print = (...args: unknown[]) => stdout.push(`${args.join(' ')}\n`)
      try {
        const value = runInContext(code, context)
        return {
          text: value === undefined ? null : String(value),
          stdout: stdout.join(''),
          stderr: '',
          error: null,
        }
      } catch (error) {
        const e = error as Error
        return {
          text: null,
          stdout: stdout.join(''),
          stderr: '',
          error: { name: e.name, value: e.message, traceback: '' },
        }
      }
    },
    readFile: (async (path: string, options?: { format?: 'text' | 'bytes'; maxBytes?: number }) => {
      let bytes: Buffer
      try {
        bytes = await readFile(path)
      } catch (error) {
        throw mapFsError(error, path)
      }
      if (options?.maxBytes !== undefined && bytes.byteLength > options.maxBytes) {
        throw readLimitError(path, options.maxBytes)
      }
      return options?.format === 'bytes' ? new Uint8Array(bytes) : bytes.toString('utf8')
    }) as SandboxHandle['readFile'],
    writeFile: async (path, data) => {
      await mkdir(dirname(path), { recursive: true })
      await writeFile(path, data)
    },
    listDir: async (path, options) => {
      const depth = options?.depth ?? 1
      const out: FileEntry[] = []
      const walk = async (dir: string, level: number) => {
        let entries: import('node:fs').Dirent[]
        try {
          entries = await readdir(dir, { withFileTypes: true })
        } catch (error) {
          throw mapFsError(error, dir)
        }
        for (const entry of entries) {
          const full = join(dir, entry.name)
          const type = entry.isDirectory()
            ? 'dir'
            : entry.isFile()
              ? 'file'
              : entry.isSymbolicLink()
                ? 'symlink'
                : 'other'
          out.push({
            name: entry.name,
            path: full,
            type,
            ...(type === 'file' ? { size: (await stat(full)).size } : {}),
          })
          if (type === 'dir' && level < depth) await walk(full, level + 1)
        }
      }
      await walk(path, 1)
      return out
    },
    exists: async (path) =>
      stat(path).then(
        () => true,
        () => false,
      ),
    remove: (path) => rm(path, { recursive: true, force: true }),
    // The "sandbox" is this machine: its ports are this machine's.
    portEndpoint: (port) => ({
      url: `http://127.0.0.1:${port}`,
      headers: {},
      previewUrl: `http://127.0.0.1:${port}`,
    }),
  }

  const fake: FakeSessions = {
    home,
    begins: [],
    ends: 0,
    resumes: 0,
    state: 'paused',
    journal: [],
    resumeDelayMs: 0,
    endGate: undefined,
    endsInFlight: 0,
    lastTurnUsedSandbox: false,
    loseStateOnNextResume: () => {
      loseState = true
    },
    cleanup: () => rm(home, { recursive: true, force: true }),
    sessions: undefined as unknown as SessionManager,
  }

  // Calls on the sandbox so far, to tell whether a turn used it.
  let sandboxCalls = 0
  const counted = new Proxy(handle, {
    get(target, property) {
      const value = Reflect.get(target, property, target)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        sandboxCalls += 1
        return value.apply(target, args)
      }
    },
  })

  const beginTurn = async (conversationId: string, options?: TurnOptions): Promise<Turn> => {
    fake.begins.push({ conversationId, options })
    open += 1
    const callsAtBegin = sandboxCalls
    let report: ResumeReport | undefined
    let readyPromise: Promise<SandboxHandle> | undefined
    let endReport: TurnEndReport | undefined
    let ending: Promise<TurnEndReport> | undefined
    const controller = new AbortController()
    // The fake keeps no checkpoints: its release says none, once the end got that far.
    const released = Promise.withResolvers<undefined>()
    // As a real turn's handle: a call on it resumes a lazy turn first (its address alone does not).
    const lazyHandle = new Proxy(counted, {
      get(target, property) {
        const value = Reflect.get(target, property, target)
        if (typeof value !== 'function' || property === 'portEndpoint') return value
        return async (...args: unknown[]) => {
          await turn.ready()
          return (value as (...a: unknown[]) => unknown).apply(target, args)
        }
      },
    })
    const turn: Turn = {
      checkpoint: async () => {
        throw new SandkeepError({
          code: 'CAPABILITY_UNSUPPORTED',
          message: 'The fake sessions keep no checkpoints.',
        })
      },
      conversationId,
      tenant: options?.tenant ?? 'default',
      get sandbox() {
        return lazyHandle
      },
      get report() {
        return report
      },
      get started() {
        return report !== undefined
      },
      get endReport() {
        return endReport
      },
      checkpointed: released.promise,
      signal: controller.signal,
      journal: {
        record: async (step) => {
          fake.journal.push(step)
        },
        list: async () => [...fake.journal],
      },
      ready: () => {
        if (endReport) return Promise.reject(new SandkeepError({ code: 'TURN_ENDED', message: 'ended' }))
        readyPromise ??= (async () => {
          if (fake.resumeDelayMs > 0) await new Promise((r) => setTimeout(r, fake.resumeDelayMs))
          fake.resumes += 1
          fake.state = 'running'
          const lost = loseState
          loseState = false
          if (lost) contexts.clear()
          report = {
            conversationId,
            tenant: options?.tenant ?? 'default',
            sandboxId: handle.id,
            outcome: fake.resumes === 1 ? 'created' : 'resumed',
            timings: { storeMs: 0, connectMs: 0, healthMs: 0, rehydrateMs: 0, totalMs: 0 },
            survived: { memory: lost ? false : null, filesystem: null, processes: null },
            checks: [],
            stateLost: lost,
            retries: 0,
            rehydratedSteps: 0,
          }
          return counted
        })()
        return readyPromise
      },
      end: () => {
        ending ??= (async () => {
          open -= 1
          fake.ends += 1
          released.resolve(undefined)
          const last = open === 0
          const action = report === undefined ? 'none' : last ? 'paused' : 'left-running-for-other-holders'
          if (last && report !== undefined && fake.endGate) {
            fake.endsInFlight += 1
            await fake.endGate
            fake.endsInFlight -= 1
          }
          if (last) fake.state = 'paused'
          fake.lastTurnUsedSandbox = sandboxCalls > callsAtBegin
          endReport = { action, last, timings: { workMs: 0, storeMs: 0, pauseMs: 0 } }
          controller.abort()
          return endReport
        })()
        return ending
      },
      [Symbol.asyncDispose]: async () => {
        await turn.end()
      },
    }
    if (options?.prewarm === true || (options?.prewarm === 'auto' && fake.lastTurnUsedSandbox)) {
      turn.ready().catch(() => {})
    }
    return turn
  }

  fake.sessions = {
    beginTurn,
    withTurn: async (conversationId, fn, options) => {
      const turn = await beginTurn(conversationId, options)
      try {
        return await fn(turn)
      } finally {
        await turn.end()
      }
    },
    endSession: async () => false,
    getSession: async () => null,
    listSessions: async () => ({ sessions: [] }),
    gc: async () => ({ killedSandboxes: [], keptSessions: [], deletedSessions: [], deletedSnapshots: [] }),
    rewind: async () => {
      throw new SandkeepError({ code: 'CAPABILITY_UNSUPPORTED', message: 'The fake sessions do not rewind.' })
    },
    fork: async () => {
      throw new SandkeepError({ code: 'CAPABILITY_UNSUPPORTED', message: 'The fake sessions do not fork.' })
    },
    restore: async () => {
      throw new SandkeepError({
        code: 'CAPABILITY_UNSUPPORTED',
        message: 'The fake sessions do not restore.',
      })
    },
    listCheckpoints: async () => ({ head: null, checkpoints: [] }),
    close: async () => ({ drained: true, openTurns: 0, storeClosed: false, ms: 0 }),
    on: () => () => {},
    store: undefined as never,
    provider: { specificationVersion: 'v1', providerId: 'fake' } as never,
  } as SessionManager
  return fake
}

function mapFsError(error: unknown, path: string): unknown {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
    return new SandkeepError({ code: 'FILE_NOT_FOUND', message: `No such file or directory: ${path}` })
  }
  return error
}

function runLocal(command: string, home: string, options: RunCommandOptions = {}) {
  return new Promise<{ exitCode: number; stdout: string; stderr: string }>((resolve, reject) => {
    if (options.signal?.aborted) {
      reject(options.signal.reason)
      return
    }
    const child = spawn('bash', ['-c', command], {
      cwd: options.cwd ?? home,
      env: { ...process.env, HOME: home, ...options.envs },
      detached: true,
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      options.onStdout?.(chunk)
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
      options.onStderr?.(chunk)
    })
    let aborted = false
    const onAbort = () => {
      aborted = true
      try {
        process.kill(-child.pid!, 'SIGKILL')
      } catch {}
    }
    options.signal?.addEventListener('abort', onAbort, { once: true })
    child.on('error', (error) => {
      options.signal?.removeEventListener('abort', onAbort)
      reject(error)
    })
    child.on('close', (code) => {
      options.signal?.removeEventListener('abort', onAbort)
      if (aborted) reject(new SandkeepError({ code: 'ABORTED', message: 'aborted' }))
      else resolve({ exitCode: code ?? -1, stdout, stderr })
    })
  })
}
