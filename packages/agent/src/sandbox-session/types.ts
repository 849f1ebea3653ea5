import type {
  CodeLanguage,
  CodeResult,
  FileEntry,
  JournalStep,
  PortEndpoint,
  ResumeReport,
  SandboxHandle,
  SessionManager,
  Turn,
  TurnEndReport,
} from '@sandkeep/core'

// The file and process calls follow the shapes of the AI SDK's sandbox contract (an adapter for it passes the
// session on as is), written out here so that this package names no framework.

/** A path to read, inspect or delete, and a signal that aborts the call. */
export interface PathOptions {
  /** Absolute, or relative to the session's base directory. */
  path: string
  abortSignal?: AbortSignal
}
/** `readTextFile`'s options: decoding, a 1-based inclusive line range, and a byte limit. */
export interface ReadTextFileOptions extends PathOptions {
  /** Default `'utf-8'`. */
  encoding?: string
  /** First line returned, 1-based; default 1. */
  startLine?: number
  /** Last line returned, inclusive; past the end reads to the end. */
  endLine?: number
  /** Read at most this many bytes: INVALID_ARGUMENT past it. */
  maxBytes?: number
}
/** `readBinaryFile`'s options, with `maxBytes` as for {@link ReadTextFileOptions}. */
export interface ReadBinaryFileOptions extends PathOptions {
  maxBytes?: number
}
/** A file to write (parent directories are created, an existing file replaced) with its content. */
export interface WriteContentOptions<CONTENT> {
  path: string
  content: CONTENT
  abortSignal?: AbortSignal
}
export type WriteFileOptions = WriteContentOptions<ReadableStream<Uint8Array>>
export type WriteBinaryFileOptions = WriteContentOptions<Uint8Array>
/** A string to write, encoded with `encoding` (default `'utf-8'`). */
export interface WriteTextFileOptions extends WriteContentOptions<string> {
  encoding?: string
}
/** A command of `run` or `spawn`: `bash -l -c command`, in `workingDirectory` (default the base directory). */
export interface RunOptions {
  command: string
  workingDirectory?: string
  env?: Record<string, string>
  abortSignal?: AbortSignal
}
/** `spawn`'s options; `stdin: true` is refused (CAPABILITY_UNSUPPORTED). */
export interface SpawnOptions extends RunOptions {
  stdin?: boolean
}
/** What `stat` says of a path (symbolic links followed). */
export interface SandboxFileStat {
  type: 'file' | 'directory' | 'other'
  /** Bytes. */
  size: number
}
/** One entry of `listDirectory` (symbolic links not followed). */
export interface SandboxDirectoryEntry {
  name: string
  type: 'file' | 'directory' | 'symlink' | 'other'
}
/** A command `spawn` started: its output as byte streams, its exit, and a kill. */
export interface SandboxProcess {
  readonly stdout: ReadableStream<Uint8Array>
  readonly stderr: ReadableStream<Uint8Array>
  /** Resolves with the exit code when it ends; -1 after `kill()`. */
  wait(): Promise<{ exitCode: number }>
  /** Ends it; idempotent. */
  kill(): Promise<void>
}

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
  /**
   * Awaited before the turn begins (before its lease is taken), once, by whichever call begins it; its
   * failure is that call's, and the next call tries again. An adapter moves the conversation's head here
   * (a restore to the checkpoint a time travel names, a chat's branch).
   */
  beforeBegin?: () => Promise<void>
}

/** Options of {@link SandboxSession.runCode}. */
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

/** Options of {@link SandboxSession.runCommand}. */
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
 * A conversation's sandbox for one turn, backed by one lazy sandkeep turn: files, commands, code in a
 * persistent interpreter, background processes, port addresses, the resume report and the journal. Its file
 * and command calls have the shapes of the AI SDK's sandbox contract.
 */
export interface SandboxSession extends AsyncDisposable {
  /** Describes the sandbox to the model (where commands run, what survives between turns). */
  readonly description: string
  /** Reads a file as a byte stream; `null` when it does not exist. */
  readFile(options: PathOptions): Promise<ReadableStream<Uint8Array> | null>
  /** Writes a file from a byte stream (read to its end first). */
  writeFile(options: WriteFileOptions): Promise<void>
  /** Writes a file from bytes. */
  writeBinaryFile(options: WriteBinaryFileOptions): Promise<void>
  /** Writes a file from a string. */
  writeTextFile(options: WriteTextFileOptions): Promise<void>
  /** Type and size of a path; `null` when it does not exist. */
  stat(options: PathOptions): Promise<SandboxFileStat | null>
  /** One directory's entries; `null` when it does not exist. */
  listDirectory(options: PathOptions): Promise<SandboxDirectoryEntry[] | null>
  /** Deletes a file: `true` when deleted, `false` when missing; INVALID_ARGUMENT for a directory. */
  deleteFile(options: PathOptions): Promise<boolean>
  /** Runs a command to its end. A non-zero exit is a result. */
  run(options: RunOptions): Promise<{ exitCode: number; stdout: string; stderr: string }>
  /** Starts a command whose output streams while it runs; it ends with the turn (unlike `startProcess`). */
  spawn(options: SpawnOptions): Promise<SandboxProcess>
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
  /**
   * Settles once the turn has ended (by whoever called `end()`), with what the end did (`undefined` when the
   * turn never began); rejects when the end failed. Pending until `end()` is called.
   */
  readonly whenEnded: Promise<TurnEndReport | undefined>
  /** What the end did, once it is done (`undefined` before, and when the turn never began). */
  readonly endReport: TurnEndReport | undefined
  /** What the resume found; `undefined` until the first sandbox call has resumed the sandbox. */
  readonly report: ResumeReport | undefined
  /** Fires when the session ends or its `abortSignal` fires. */
  readonly signal: AbortSignal
  /** Begins the turn now (no-op when begun) and resolves when the sandbox is ready. */
  ready(options?: { abortSignal?: AbortSignal }): Promise<SandboxHandle>
  /**
   * Begins the turn now and starts the resume in the background, while the caller does something else (the
   * model's first call): `true` (default), or `'auto'` to resume only when the conversation's previous turn
   * used the sandbox. Returns at once; calls on the session wait for the resume, and a failed one reaches
   * the first of them. A no-op once the turn has begun or the session has ended.
   * @throws SandkeepError INVALID_ARGUMENT for another mode
   */
  prewarm(mode?: true | 'auto'): void
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
  /**
   * Reads a text file (`null` when missing). With `maxBytes`, at most that many bytes are read: a larger
   * file fails with INVALID_ARGUMENT as soon as more arrived, whatever its size was a moment before.
   */
  readTextFile(options: ReadTextFileOptions): Promise<string | null>
  /** Reads a file's bytes (`null` when missing); `maxBytes` as for `readTextFile`. */
  readBinaryFile(options: ReadBinaryFileOptions): Promise<Uint8Array | null>
  /** Lists a directory (`depth` default 1); `null` when it does not exist. */
  listDir(path: string, options?: { depth?: number; abortSignal?: AbortSignal }): Promise<FileEntry[] | null>
  /**
   * How a client outside the sandbox reaches `port` (`{ url, headers, previewUrl }`): resumes the sandbox
   * first, like every call. The address stays the same across pauses while the sandbox keeps its id.
   * @throws SandkeepError INVALID_ARGUMENT for a bad port (before any I/O), CAPABILITY_UNSUPPORTED when the
   *   provider routes no ports.
   */
  portEndpoint(
    port: number,
    options?: { protocol?: 'http' | 'ws'; abortSignal?: AbortSignal },
  ): Promise<PortEndpoint>
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

/** What the operation modules of a session share: its settings, its paths and its turn. */
export interface SessionContext {
  readonly conversationId: string
  readonly tenant: string
  /** Absolute base directory of commands and relative paths. */
  readonly workingDirectory: string
  /** Default limit of one `run`/`spawn` command, ms; `0` means none. */
  readonly commandTimeoutMs: number
  /**
   * Runs one sandbox operation: checks state, links signals, resumes lazily, tracks it for `end()`. With
   * `early`, `fn` gets the turn's handle as soon as the turn is begun, before its resume is over (the handle's
   * calls wait for the resume themselves; a code cell or a command may then carry the resume's probes).
   */
  operation<T>(
    abortSignal: AbortSignal | undefined,
    fn: (handle: SandboxHandle, signal: AbortSignal) => Promise<T>,
    early?: boolean,
  ): Promise<T>
  /** Resolves `path` against the base directory; INVALID_ARGUMENT for an empty path or a NUL. */
  resolvePath(path: string): string
}
