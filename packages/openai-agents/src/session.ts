// The Agents SDK's sandbox session over one sandkeep turn: every call goes to the turn's sandbox, and the
// lifecycle calls the runner makes at a run's end (stop, shutdown, delete, close) end the turn, which pauses
// the sandbox by the manager's policy. The sandbox is killed only when the session is asked to end.
import type { Editor, ToolOutputImage } from '@openai/agents-core'
import {
  type ExecCommandArgs,
  type ExposedPortEndpoint,
  type ListDirectoryArgs,
  type ReadFileArgs,
  recordExposedPortEndpoint,
  type SandboxDirectoryEntry,
  type SandboxExecResult,
  type SandboxSession,
  type SandboxSessionLifecycleOptions,
  type SandboxSessionState,
  type ViewImageArgs,
  type WorkspaceArchiveData,
} from '@openai/agents-core/sandbox'
import {
  elapsedSeconds,
  formatExecResponse,
  imageOutputFromBytes,
  MAX_VIEW_IMAGE_BYTES,
  truncateOutput,
} from '@openai/agents-core/sandbox/internal'
import type {
  CodeLanguage,
  CodeResult,
  ResumeReport,
  SandboxHandle,
  SessionManager,
  Turn,
} from '@sandkeep/core'
import { shellQuote } from '@sandkeep/core/provider'
import { createSandboxEditor } from './editor.js'
import { unsupported } from './errors.js'
import { stateLostNotice } from './notice.js'
import { resolveWorkspacePath } from './paths.js'
import { hydrateWorkspace, persistWorkspace } from './workspace-archive.js'

/** A sandkeep session's state: the SDK's fields plus the conversation it belongs to (what RunState keeps). */
export interface SandkeepSessionState extends SandboxSessionState {
  /** The conversation whose sandbox this is. */
  conversationId: string
  /** Its tenant. */
  tenant: string
}

/** Options of the session's `delete`: the SDK's lifecycle options, plus whether to end the conversation. */
export interface SandkeepDeleteOptions extends SandboxSessionLifecycleOptions {
  /** Kill the sandbox and drop the conversation's session (its journal too). Default false: pause only. */
  endSession?: boolean
}

/** The sandbox session the client hands the runner: one sandkeep turn of one conversation. */
export class SandkeepSandboxSession implements SandboxSession<SandkeepSessionState> {
  state: SandkeepSessionState
  readonly #turn: Turn
  readonly #sessions: SessionManager
  #interpreterAtRoot = false

  constructor(args: { state: SandkeepSessionState; turn: Turn; sessions: SessionManager }) {
    this.state = args.state
    this.#turn = args.turn
    this.#sessions = args.sessions
  }

  /** The sandkeep turn this session is (its sandbox, journal, report). */
  get turn(): Turn {
    return this.#turn
  }

  /** What the resume found (outcome, what survived the pause); `undefined` in a lazy turn not yet used. */
  get report(): ResumeReport | undefined {
    return this.#turn.report
  }

  /** What to tell the model and the user when the sandbox lost state since the previous run; else `undefined`. */
  get notice(): string | undefined {
    return stateLostNotice(this.#turn.report)
  }

  get #sandbox(): SandboxHandle {
    return this.#turn.sandbox
  }

  get #root(): string {
    return this.state.manifest.root
  }

  async exec(args: ExecCommandArgs): Promise<SandboxExecResult> {
    if (args.tty)
      throw unsupported('The sandkeep sandbox session runs commands without a TTY: call exec with tty false.')
    if (args.runAs)
      throw unsupported('The sandkeep sandbox session runs commands as the sandbox user only (no runAs).')
    if (args.shell !== undefined && !/(^|\/)bash$/.test(args.shell)) {
      throw unsupported(`The sandkeep sandbox session runs commands with bash, not ${args.shell}.`)
    }
    const started = Date.now()
    const result = await this.#sandbox.runCommand(args.cmd, {
      cwd: resolveWorkspacePath(this.#root, args.workdir),
      envs: this.state.environment ?? {},
    })
    const { text, originalTokenCount } = truncateOutput(result.stdout + result.stderr, args.maxOutputTokens)
    return {
      output: text,
      stdout: result.stdout,
      stderr: result.stderr,
      wallTimeSeconds: elapsedSeconds(started),
      exitCode: result.exitCode,
      ...(originalTokenCount === undefined ? {} : { originalTokenCount }),
    }
  }

  async execCommand(args: ExecCommandArgs): Promise<string> {
    const result = await this.exec(args)
    return formatExecResponse({
      output: result.output,
      wallTimeSeconds: result.wallTimeSeconds,
      exitCode: result.exitCode ?? null,
      ...(result.originalTokenCount === undefined ? {} : { originalTokenCount: result.originalTokenCount }),
    })
  }

  async readFile(args: ReadFileArgs): Promise<Uint8Array> {
    if (args.runAs)
      throw unsupported('The sandkeep sandbox session reads files as the sandbox user only (no runAs).')
    return await this.#sandbox.readFile(resolveWorkspacePath(this.#root, args.path), {
      format: 'bytes',
      ...(args.maxBytes === undefined ? {} : { maxBytes: args.maxBytes }),
    })
  }

  async listDir(args: ListDirectoryArgs): Promise<SandboxDirectoryEntry[]> {
    const entries = await this.#sandbox.listDir(resolveWorkspacePath(this.#root, args.path))
    return entries.map((entry) => ({
      name: entry.name,
      path: entry.path,
      type: entry.type === 'dir' ? 'dir' : entry.type === 'file' ? 'file' : 'other',
    }))
  }

  async pathExists(path: string): Promise<boolean> {
    return await this.#sandbox.exists(resolveWorkspacePath(this.#root, path))
  }

  async directoryExists(path: string): Promise<boolean> {
    const result = await this.#sandbox.runCommand(
      `test -d ${shellQuote(resolveWorkspacePath(this.#root, path))}`,
    )
    return result.exitCode === 0
  }

  createEditor(): Editor {
    return createSandboxEditor(() => this.#sandbox, this.#root)
  }

  async viewImage(args: ViewImageArgs): Promise<ToolOutputImage> {
    const bytes = await this.readFile({ path: args.path, maxBytes: MAX_VIEW_IMAGE_BYTES })
    return imageOutputFromBytes(args.path, bytes)
  }

  /**
   * Runs code in the sandbox's persistent interpreter: variables stay from one call, and one run, to the next.
   * Python's working directory is the workspace root (set once per run), so relative paths mean what they
   * mean to `exec`.
   */
  async runCode(code: string, options: { language?: CodeLanguage } = {}): Promise<CodeResult> {
    const language = options.language ?? 'python'
    if (language === 'python' && !this.#interpreterAtRoot) {
      const root = JSON.stringify(this.#root)
      await this.#sandbox.runCode(
        `__import__('os').makedirs(${root}, exist_ok=True)\n__import__('os').chdir(${root})`,
      )
      this.#interpreterAtRoot = true
    }
    return await this.#sandbox.runCode(code, { language })
  }

  async resolveExposedPort(port: number): Promise<ExposedPortEndpoint> {
    const sandbox = this.#sandbox
    if (!sandbox.portEndpoint) throw unsupported('This sandbox platform routes no ports to its sandboxes.')
    const { url, headers } = sandbox.portEndpoint(port)
    const parsed = new URL(url)
    const tls = parsed.protocol === 'https:'
    const endpoint: ExposedPortEndpoint = {
      host: parsed.hostname,
      port: parsed.port === '' ? (tls ? 443 : 80) : Number(parsed.port),
      tls,
      url,
      headers,
    }
    return recordExposedPortEndpoint(this.state, endpoint, port)
  }

  async persistWorkspace(): Promise<Uint8Array> {
    return await persistWorkspace(this.#sandbox, this.#root)
  }

  async hydrateWorkspace(data: WorkspaceArchiveData): Promise<void> {
    await hydrateWorkspace(this.#sandbox, this.#root, data)
  }

  supportsPty(): boolean {
    return false
  }

  /** Ends the turn: the sandbox is paused (by the manager's `onTurnEnd`). Idempotent. */
  async stop(): Promise<void> {
    await this.#turn.end()
  }

  /** The same as `stop`: the runner calls stop, shutdown and delete at every run's end. */
  async shutdown(): Promise<void> {
    await this.#turn.end()
  }

  /** Ends the turn; with `{ endSession: true }` also ends the conversation's session (kills its sandbox). */
  async delete(options: SandkeepDeleteOptions = {}): Promise<void> {
    await this.#turn.end()
    if (options.endSession === true) {
      await this.#sessions.endSession(this.state.conversationId, { tenant: this.state.tenant })
    }
  }

  async close(): Promise<void> {
    await this.#turn.end()
  }
}
