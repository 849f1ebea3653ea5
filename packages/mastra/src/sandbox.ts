import {
  type CommandResult,
  type ExecuteCommandOptions,
  MastraSandbox,
  type ProviderStatus,
  type SandboxCloneOptions,
  type SandboxFileInput,
  type SandboxInfo,
  type SandboxNetworking,
  type SandboxStartOptions,
  type SandboxStartResult,
  validateSandboxFileMode,
  type WriteFilesOptions,
} from '@mastra/core/workspace'
import {
  type Checkpoint,
  type CheckpointTree,
  type RestoreResult,
  type ResumeReport,
  type SandboxHandle,
  SandkeepError,
  type SessionManager,
  type Turn,
  type TurnEndReport,
  validateSessionKey,
} from '@sandkeep/core'
import { shellQuote } from '@sandkeep/core/provider'
import { lostState, startOutcomeOf, stateLostNotice } from './notice.js'
import type { SandkeepMastraSandboxOptions } from './options.js'
import { SandkeepProcessManager } from './processes.js'

const invalid = (message: string) => new SandkeepError({ code: 'INVALID_ARGUMENT', message })

/**
 * A Mastra `WorkspaceSandbox` for one thread, kept by a sandkeep session manager. `start()` begins a turn
 * (create, resume or repair through sandkeep's resume ladder), `stop()` ends it (the manager's `onTurnEnd`:
 * pause by default, never a kill), `destroy()` ends the thread's session. Commands, files, background
 * processes and port URLs go to the turn's sandbox; `clone()` forks the session; `snapshot()` takes a
 * checkpoint. Made per thread by {@link createSandkeepSandboxes}; no I/O in the constructor.
 */
export class SandkeepMastraSandbox extends MastraSandbox {
  readonly id: string
  readonly name = 'SandkeepSandbox'
  readonly provider = 'sandkeep'
  status: ProviderStatus = 'pending'
  override readonly supportsCheckpoints: boolean
  /** The thread (sandkeep conversation id). */
  readonly threadId: string
  /** The session's tenant. */
  readonly tenant: string
  override readonly networking: SandboxNetworking
  declare readonly processes: SandkeepProcessManager

  readonly #sessions: SessionManager
  readonly #options: SandkeepMastraSandboxOptions
  #turn: Turn | undefined
  #report: ResumeReport | undefined
  #endReport: TurnEndReport | undefined
  #noticePending = false
  readonly #createdAt = new Date()

  constructor(options: SandkeepMastraSandboxOptions) {
    const key = validateSessionKey(options?.threadId, options?.tenant)
    if (!options.sessions || typeof options.sessions.beginTurn !== 'function') {
      throw invalid('SandkeepMastraSandbox needs `sessions`: a session manager from createSessionManager().')
    }
    if (options.forkFrom !== undefined) validateSessionKey(options.forkFrom.threadId, key.tenant)
    const { sessions, threadId: _thread, tenant: _tenant, checkpoints, forkFrom: _fork, ...base } = options
    super({ name: 'SandkeepSandbox', ...base, processes: new SandkeepProcessManager() })
    this.#sessions = sessions
    this.#options = options
    this.threadId = key.conversationId
    this.tenant = key.tenant
    this.id = `sandkeep:${key.tenant}:${key.conversationId}`
    this.supportsCheckpoints = checkpoints ?? true
    this.networking = { getPortUrl: (port) => this.#portUrl(port) }
  }

  /** The running turn's sandbox; SANDBOX_UNAVAILABLE when the sandbox is not started. */
  get handle(): SandboxHandle {
    if (this.#turn === undefined) {
      throw new SandkeepError({
        code: 'SANDBOX_UNAVAILABLE',
        message: `The sandbox of thread ${this.threadId} is not started: call start() (or run a command, which starts it).`,
        tenant: this.tenant,
        conversationId: this.threadId,
      })
    }
    return this.#turn.sandbox
  }

  /** What the latest `start()` found (outcome, timings, what survived); `undefined` before the first one. */
  get report(): ResumeReport | undefined {
    return this.#report
  }

  /** What the latest `stop()` did (paused, kept, ...); `undefined` before the first one. */
  get endReport(): TurnEndReport | undefined {
    return this.#endReport
  }

  /** The notice for the model when the latest start found state lost; `undefined` when nothing was lost. */
  get notice(): string | undefined {
    return stateLostNotice(this.#report)
  }

  /** Begins a turn of the thread's session (Mastra calls it through `_start()`, once per stop/start). */
  override async start(options?: SandboxStartOptions): Promise<SandboxStartResult> {
    // A start after a failed onStart hook (status 'error') goes on with the turn it began, not a second one.
    if (this.#turn !== undefined && this.#report !== undefined)
      return { outcome: startOutcomeOf(this.#report) }
    if (this.#options.forkFrom !== undefined) await this.#forkOnce(this.#options.forkFrom)
    const turn = await this.#sessions.beginTurn(this.threadId, {
      tenant: this.tenant,
      ...(options?.abortSignal ? { abortSignal: options.abortSignal } : {}),
    })
    if (turn.report === undefined) await turn.ready()
    const report = turn.report
    if (report === undefined) throw new Error('sandkeep: a begun turn has no resume report')
    this.#turn = turn
    this.#report = report
    this.#noticePending = lostState(report) && (this.#options.announceStateLoss ?? true)
    this.status = 'running'
    return { outcome: startOutcomeOf(report) }
  }

  /** Ends the turn: the manager pauses (or keeps, or lets the platform auto-pause) the sandbox. Never kills. */
  override async stop(): Promise<void> {
    const turn = this.#turn
    this.#turn = undefined
    if (turn !== undefined) this.#endReport = await turn.end()
    this.status = 'stopped'
  }

  /** Ends the thread's session: its sandbox is killed and its journal and checkpoints are dropped. */
  override async destroy(): Promise<void> {
    await this.stop()
    await this.#sessions.endSession(this.threadId, { tenant: this.tenant })
    this.status = 'destroyed'
  }

  override async executeCommand(
    command: string,
    args: string[] = [],
    options: ExecuteCommandOptions = {},
  ): Promise<CommandResult> {
    if (typeof command !== 'string' || command.length === 0) throw invalid('executeCommand needs a command.')
    await this.ensureRunning()
    const full = args.length > 0 ? `${command} ${args.map((arg) => shellQuote(arg)).join(' ')}` : command
    const notice = this.#takeNotice()
    if (notice !== undefined) options.onStdout?.(`${notice}\n`)
    const startedAt = Date.now()
    const result = await this.handle.runCommand(full, {
      envs: this.#envFor(options.env),
      ...this.#cwdFor(options.cwd),
      ...(options.timeout !== undefined ? { timeoutMs: options.timeout } : {}),
      ...(options.abortSignal ? { signal: options.abortSignal } : {}),
      ...(options.onStdout ? { onStdout: options.onStdout } : {}),
      ...(options.onStderr ? { onStderr: options.onStderr } : {}),
    })
    return {
      success: result.exitCode === 0,
      exitCode: result.exitCode,
      stdout: notice === undefined ? result.stdout : `${notice}\n${result.stdout}`,
      stderr: result.stderr,
      executionTimeMs: Date.now() - startedAt,
      command: full,
      ...(args.length > 0 ? { args: [...args] } : {}),
    }
  }

  override async writeFiles(files: SandboxFileInput[], options: WriteFilesOptions = {}): Promise<void> {
    if (!Array.isArray(files)) throw invalid('writeFiles needs an array of { path, content }.')
    for (const file of files) {
      if (typeof file?.path !== 'string' || file.path.length === 0)
        throw invalid('writeFiles: every file needs a path.')
      if (file.mode !== undefined) validateSandboxFileMode(file.mode)
    }
    await this.ensureRunning()
    for (const file of files) {
      options.abortSignal?.throwIfAborted()
      const content = typeof file.content === 'string' ? file.content : new Uint8Array(file.content)
      await this.handle.writeFile(
        file.path,
        content,
        options.abortSignal ? { signal: options.abortSignal } : {},
      )
      if (file.mode !== undefined) {
        const chmod = await this.handle.runCommand(`chmod ${file.mode.toString(8)} ${shellQuote(file.path)}`)
        if (chmod.exitCode !== 0) throw new Error(`chmod of ${file.path} failed: ${chmod.stderr.trim()}`)
      }
    }
  }

  /** Reads a file of the sandbox as text (starts the sandbox when needed). FILE_NOT_FOUND when missing. */
  async readFile(path: string): Promise<string> {
    if (typeof path !== 'string' || path.length === 0) throw invalid('readFile needs a path.')
    await this.ensureRunning()
    return this.handle.readFile(path)
  }

  /**
   * Takes a checkpoint of the running turn (a snapshot where the platform has them, and the journal so far);
   * it becomes the thread's head. Starts the sandbox when needed. Does nothing with `checkpoints: false`.
   */
  override async snapshot(): Promise<void> {
    await this.checkpoint()
  }

  /** Like `snapshot()`, returning the checkpoint (its `id` is what `restore` and `clone` take). */
  async checkpoint(): Promise<Checkpoint | undefined> {
    if (!this.supportsCheckpoints) return undefined
    await this.ensureRunning()
    if (this.#turn === undefined) throw new Error('sandkeep: the sandbox is running without a turn')
    return this.#turn.checkpoint()
  }

  /** The thread's checkpoint tree: its head and kept checkpoints, newest first. */
  listCheckpoints(): Promise<CheckpointTree> {
    return this.#sessions.listCheckpoints(this.threadId, { tenant: this.tenant })
  }

  /**
   * Moves the thread's head to a checkpoint (`null`: the root): the next `start()` builds the sandbox from it.
   * Stops the running turn first. CHECKPOINT_NOT_FOUND when the thread has no such kept checkpoint.
   */
  async restore(checkpoint: string | null): Promise<RestoreResult> {
    if (checkpoint !== null && (typeof checkpoint !== 'string' || checkpoint.length === 0)) {
      throw invalid('restore needs a checkpoint id (or null for the root).')
    }
    await this._stop()
    return this.#sessions.restore(this.threadId, { checkpoint, tenant: this.tenant })
  }

  /**
   * A sandbox for another thread that starts from this one's state: its first `start()` forks this thread's
   * session (at `checkpointName`, a checkpoint id, or else `seedCheckpointName`, or else the head) unless the
   * new thread already has a session. No I/O here. `id` is the new thread id (default a random one);
   * `sandboxId` is refused (a sandkeep session owns its sandbox and is not attached to another).
   */
  clone(options: SandboxCloneOptions = {}): SandkeepMastraSandbox {
    if (options.sandboxId !== undefined) {
      throw invalid(
        'clone({ sandboxId }) is not supported: a sandkeep thread owns its sandbox; clone by thread id.',
      )
    }
    const threadId = options.id ?? `${this.threadId}-clone-${crypto.randomUUID().slice(0, 8)}`
    const checkpoint = options.checkpointName ?? options.seedCheckpointName
    return new SandkeepMastraSandbox({
      ...this.#options,
      threadId,
      ...(options.env ? { env: { ...this.getEnv(), ...options.env } } : {}),
      ...(options.workingDirectory ? { workingDirectory: options.workingDirectory } : {}),
      forkFrom: { threadId: this.threadId, ...(checkpoint !== undefined ? { checkpoint } : {}) },
    })
  }

  override getInstructions(): string {
    const notice = this.notice
    return (
      `A sandbox kept for this conversation thread by sandkeep: files, installed packages and background ` +
      `processes stay between turns (it is paused while the user is away).${notice ? ` ${notice}` : ''}`
    )
  }

  override getInfo(): SandboxInfo {
    return {
      id: this.id,
      name: this.name,
      provider: this.provider,
      status: this.status,
      createdAt: this.#createdAt,
      metadata: {
        threadId: this.threadId,
        tenant: this.tenant,
        ...(this.#report
          ? {
              sandboxId: this.#report.sandboxId,
              outcome: this.#report.outcome,
              stateLost: this.#report.stateLost,
            }
          : {}),
      },
    }
  }

  async #forkOnce(source: { threadId: string; checkpoint?: string | null }): Promise<void> {
    if ((await this.#sessions.getSession(this.threadId, { tenant: this.tenant })) !== null) return
    if ((await this.#sessions.getSession(source.threadId, { tenant: this.tenant })) === null) return
    await this.#sessions
      .fork(source.threadId, this.threadId, {
        tenant: this.tenant,
        ...(source.checkpoint !== undefined ? { checkpoint: source.checkpoint } : {}),
      })
      .catch((error: unknown) => {
        // Another process's start of the same clone forked first: its session is the one to use.
        if (!SandkeepError.hasCode(error, 'SESSION_EXISTS')) throw error
      })
  }

  async #portUrl(port: number): Promise<string | null> {
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw invalid(`port must be 1 to 65535, got ${port}.`)
    const handle = this.#turn?.sandbox
    if (handle?.portEndpoint === undefined || this.status !== 'running') return null
    const endpoint = handle.portEndpoint(port)
    return endpoint.previewUrl ?? endpoint.url
  }

  #takeNotice(): string | undefined {
    if (!this.#noticePending) return undefined
    this.#noticePending = false
    return this.notice
  }

  /** The sandbox's env overlay under the command's own variables, without unset ones. */
  #envFor(extra: NodeJS.ProcessEnv | undefined): Record<string, string> {
    const envs: Record<string, string> = {}
    for (const [name, value] of Object.entries({ ...this.getEnv(), ...extra })) {
      if (value !== undefined) envs[name] = value
    }
    return envs
  }

  #cwdFor(cwd: string | undefined): { cwd?: string } {
    const dir = cwd ?? this.workingDirectory
    return dir === undefined ? {} : { cwd: dir }
  }
}
