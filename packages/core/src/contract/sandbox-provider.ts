import type { CodeLanguage } from './journal.js'

/** Sandbox state as the platform reports it. */
export type SandboxState = 'running' | 'paused'

/** Lifecycle the platform applies when a sandbox's timeout expires. */
export interface SandboxLifecycle {
  /** `'pause'`: the platform pauses the sandbox at timeout (auto-pause); `'kill'` (the usual default) kills it. */
  onTimeout: 'pause' | 'kill'
  /** With `onTimeout: 'pause'`: traffic to the paused sandbox resumes it. Default false. */
  autoResume?: boolean
}

/**
 * Who may reach a new sandbox and where it may send traffic, fixed at creation (E2B's create `network`).
 * `allowOut`/`denyOut` can change later through {@link SandboxProvider.updateNetwork}; the rest cannot.
 */
export interface SandboxCreateNetwork {
  /** `false`: the sandbox's port URLs need its traffic access token. Default true (E2B's default). */
  allowPublicTraffic?: boolean
  /** Destinations allowed (CIDR block, IP, or host name with an optional `*.` prefix); wins over `denyOut`. */
  allowOut?: string[]
  /** Destinations denied (CIDR block or IP; `0.0.0.0/0` for everything not in `allowOut`). */
  denyOut?: string[]
  /** The Host header requests to the sandbox's ports carry; `${PORT}` is replaced with the port. */
  maskRequestHost?: string
}

/** Create options past the basic ones that a provider may or may not honour ({@link SandboxProvider.createCapabilities}). */
export type CreateCapability = 'lifecycle' | 'network' | 'secure'

/** Options of {@link SandboxProvider.create}. */
export interface CreateSandboxOptions {
  /** Template to create from; default the provider's template. */
  template?: string
  /** Sandbox timeout, ms: the platform kills (or pauses) it this long after the last reset. */
  timeoutMs?: number
  /** Metadata kept on the sandbox. sandkeep writes `sandkeep.tenant`, `sandkeep.session`, `sandkeep.version`. */
  metadata: Record<string, string>
  /** Environment variables for every process in the sandbox. */
  envs?: Record<string, string>
  /** Outbound internet access. sandkeep's default is false. */
  allowInternetAccess?: boolean
  /** Timeout behaviour (capability `'lifecycle'`). */
  lifecycle?: SandboxLifecycle
  /** Ingress and egress fixed at creation (capability `'network'`). */
  network?: SandboxCreateNetwork
  /**
   * `true`: the sandbox's envd answers only requests carrying its access token (capability `'secure'`; on E2B
   * with SDK 2 every sandbox is secured, so `false` is refused).
   */
  secure?: boolean
  /** Aborts the call. */
  signal?: AbortSignal
}

/** Options of {@link SandboxProvider.connect}. */
export interface ConnectSandboxOptions {
  /** Sandbox timeout to set on connect, ms. */
  timeoutMs?: number
  /** Aborts the call. */
  signal?: AbortSignal
}

/** What a provider knows of a sandbox without connecting to it. */
export interface SandboxInfo {
  /** Sandbox id. */
  sandboxId: string
  /** Template id, when known. */
  templateId?: string
  /** Metadata set at creation. */
  metadata: Record<string, string>
  /** Running or paused. */
  state: SandboxState
  /** When it started, when known. */
  startedAt?: Date
  /** When its timeout expires, when known. */
  endAt?: Date
}

/** What a platform snapshot of a sandbox keeps, as the provider knows its platform. */
export interface SnapshotKeeps {
  /** The sandbox's files (its home, /tmp, installed packages). */
  files: boolean
  /** Its memory: running processes and interpreter state. A sandbox made from a snapshot without it boots cold. */
  memory: boolean
}

/** A platform snapshot, as {@link SandboxProvider.listSnapshots} lists it. */
export interface SnapshotInfo {
  /** The id `createFromSnapshot` and `deleteSnapshot` take. */
  snapshotId: string
  /** The names it was created under, when the platform keeps names. */
  names?: string[]
  /** The sandbox it was taken of, when the platform says. */
  sandboxId?: string
  /** When it was taken, when the platform says. */
  createdAt?: Date
}

/** What {@link SandboxProvider.createSnapshot} returns. */
export interface TakenSnapshot {
  /** The id `createFromSnapshot` and `deleteSnapshot` take. */
  snapshotId: string
  /**
   * What this snapshot added to the platform's storage, bytes, when the platform says (the per-tenant
   * `maxSnapshotBytes` limit adds these up); absent when not known. Bytes it shares with snapshots taken
   * before it (content stored once) are not in it: they were counted by the snapshot that stored them.
   */
  bytes?: number
}

/** Options of {@link SandboxProvider.createSnapshot}. */
export interface CreateSnapshotOptions {
  /**
   * A name to find it by in `listSnapshots` (1 to 128 characters from A-Z, a-z, 0-9, `.`, `_`, `-`,
   * starting with a letter or digit). sandkeep names checkpoint snapshots `sandkeep-<session hash>-<turn>-…`.
   */
  name?: string
  /** Aborts the call. */
  signal?: AbortSignal
}

/** Result of {@link SandboxHandle.runCommand}. A non-zero exit code is a result, not an error. */
export interface CommandResult {
  /** Exit code; `-1` when the process was killed by a signal or timed out. */
  exitCode: number
  /** Standard output, UTF-8. */
  stdout: string
  /** Standard error, UTF-8. */
  stderr: string
}

/** Options of {@link SandboxHandle.runCommand}. */
export interface RunCommandOptions {
  /** Working directory; default the sandbox's home. */
  cwd?: string
  /** Extra environment variables. */
  envs?: Record<string, string>
  /** Kill the command after this many ms; default 60 000. `0` means no limit. */
  timeoutMs?: number
  /** Aborts the command (it is killed). */
  signal?: AbortSignal
  /** Called with each stdout chunk as it arrives. */
  onStdout?: (chunk: string) => void
  /** Called with each stderr chunk as it arrives. */
  onStderr?: (chunk: string) => void
  /** Data written to standard input, which is then closed. */
  stdin?: string
}

/** A process running in the sandbox. */
export interface ProcessInfo {
  /** Pid inside the sandbox. */
  pid: number
  /** The command line it was started with (for E2B: the `bash -l -c` argument when started that way). */
  command: string
  /** Executable and arguments as the platform reports them, when known. */
  cmd?: string
  /** Arguments, when known. */
  args?: string[]
  /** Working directory, when known. */
  cwd?: string
}

/**
 * One rich output of a code cell: the last expression's value (`isMainResult`) or a `display()` call, as a
 * notebook MIME bundle (E2B's `Result`). Each format is present only when the object offered it.
 */
export interface CodeOutput {
  /** True for the value of the cell's last expression; false for a `display()` call (a plot, a table). */
  isMainResult: boolean
  /** `text/plain`, as a notebook shows it. */
  text?: string
  /** `text/html`. */
  html?: string
  /** `text/markdown`. */
  markdown?: string
  /** `image/svg+xml`, the SVG source. */
  svg?: string
  /** `image/png`, base64. */
  png?: string
  /** `image/jpeg`, base64. */
  jpeg?: string
  /** `application/pdf`, base64. */
  pdf?: string
  /** `text/latex`. */
  latex?: string
  /** `application/json`: the JSON value itself (an object or array), not its text. */
  json?: unknown
  /** `application/javascript`. */
  javascript?: string
  /** Tabular data (E2B's `e2b/data`, e.g. a DataFrame), when the platform extracts it. */
  data?: Record<string, unknown>
  /** Chart data (E2B's `e2b/chart`, e.g. a matplotlib figure's series), when the platform extracts it. */
  chart?: Record<string, unknown>
  /** Other MIME types the object offered, keyed by MIME type. */
  extra?: Record<string, unknown>
}

/** Result of {@link SandboxHandle.runCode}. An exception in the code is a result (`error`), not a throw. */
export interface CodeResult {
  /** The last expression's value as a notebook shows it; `null` when there is none. */
  text: string | null
  /**
   * Rich outputs in the order the cell produced them: `display()` calls and the last expression's value
   * (`isMainResult`, whose `text` is `text` above). Absent when the provider does not report them.
   */
  results?: CodeOutput[]
  /** Everything printed to stdout. */
  stdout: string
  /** Everything printed to stderr. */
  stderr: string
  /** The exception raised by the code, or `null`. */
  error: { name: string; value: string; traceback: string } | null
}

/** Options of {@link SandboxHandle.runCode}. */
export interface RunCodeOptions {
  /** Default `'python'`. */
  language?: CodeLanguage
  /** Interpreter context id; default the language's default context. */
  contextId?: string
  /** Kill the cell after this many ms; default 60 000. */
  timeoutMs?: number
  /** Aborts the cell. */
  signal?: AbortSignal
  /** Called with each stdout chunk as it is printed. */
  onStdout?: (chunk: string) => void
  /** Called with each stderr chunk as it is printed. */
  onStderr?: (chunk: string) => void
}

/** An entry of {@link SandboxHandle.listDir}. */
export interface FileEntry {
  /** Base name. */
  name: string
  /** Absolute path inside the sandbox. */
  path: string
  /** Entry type. */
  type: 'file' | 'dir' | 'symlink' | 'other'
  /** Size in bytes, when known. */
  size?: number
}

/** Options of `SandboxHandle.readFile`. */
export interface ReadFileOptions {
  /** Aborts the read. */
  signal?: AbortSignal
  /** Most bytes to read; past it the read stops and fails with INVALID_ARGUMENT. Default: no limit. */
  maxBytes?: number
}

/** Options of {@link SandboxHandle.portEndpoint}. */
export interface PortEndpointOptions {
  /**
   * `'http'` (default) or `'ws'` (WebSocket). Whether the scheme is the secure one (`https`, `wss`) is the
   * platform's to say: E2B terminates TLS at its edge, so its URLs always are.
   */
  protocol?: 'http' | 'ws'
}

/** How a client outside the sandbox reaches a server the sandbox runs on one of its ports. */
export interface PortEndpoint {
  /** The port's root URL (`http(s)://` or `ws(s)://`, no path): append the request path to it. */
  url: string
  /**
   * Headers every request to `url` must carry: the platform's routing headers (a local host routes by them
   * when its host names do not resolve), a private sandbox's traffic token. `{}` when none are needed.
   */
  headers: Record<string, string>
  /**
   * The port's address without headers, to give a person: E2B's `https://<port>-<id>.<domain>` (a local
   * host's `http://<port>-<id>.localhost:<port>`, which browsers and curl resolve to loopback). It opens in a
   * browser when the sandbox takes public traffic, as sandkeep creates them. Absent on platforms without one.
   */
  previewUrl?: string
}

/** A running sandbox's outbound network policy, as {@link SandboxProvider.updateNetwork} sets it. */
export interface SandboxNetworkPolicy {
  /** `false` denies all outbound traffic; `true` allows it (unless `allowOut`/`denyOut` say otherwise). */
  allowInternetAccess?: boolean
  /** Destinations allowed (CIDR block, IP, or host name with an optional `*.` prefix); wins over `denyOut`. */
  allowOut?: string[]
  /** Destinations denied (CIDR block or IP; `0.0.0.0/0` for everything not in `allowOut`). */
  denyOut?: string[]
}

/**
 * A connected sandbox, provider-neutral. Used by the session manager, health checks and integrations.
 * Methods throw SandkeepError: FILE_NOT_FOUND, TIMEOUT, ABORTED, SANDBOX_NOT_FOUND (killed meanwhile),
 * SANDBOX_UNAVAILABLE, PROVIDER_ERROR.
 */
export interface SandboxHandle<Native = unknown> {
  /** The sandbox id (may differ from the id passed to `connect` when the platform re-mapped it). */
  readonly id: string
  /** `providerId` of the provider that made this handle. */
  readonly providerId: string
  /** Runs `bash -l -c command` to completion. */
  runCommand(command: string, options?: RunCommandOptions): Promise<CommandResult>
  /** Starts `bash -l -c command` in the background; it outlives this call and the turn. */
  startProcess(
    command: string,
    options?: { cwd?: string; envs?: Record<string, string> },
  ): Promise<{ pid: number }>
  /** Processes running in the sandbox (started through the platform's process API). */
  listProcesses(): Promise<ProcessInfo[]>
  /** Kills a process (SIGKILL). Returns false when it was not running. */
  killProcess(pid: number): Promise<boolean>
  /** Runs a code cell in a persistent interpreter. */
  runCode(code: string, options?: RunCodeOptions): Promise<CodeResult>
  /**
   * Reads a file as UTF-8 text. `maxBytes` (a positive integer): read at most that many bytes; a file that
   * holds more fails with INVALID_ARGUMENT as soon as more arrived, and the rest is neither transferred
   * nor held (the bound is on the read itself, whatever the file's size was a moment before).
   */
  readFile(path: string, options?: ReadFileOptions & { format?: 'text' }): Promise<string>
  /** Reads a file as bytes; `maxBytes` as for text. */
  readFile(path: string, options: ReadFileOptions & { format: 'bytes' }): Promise<Uint8Array>
  /** Writes a file, creating parent directories. */
  writeFile(path: string, data: string | Uint8Array, options?: { signal?: AbortSignal }): Promise<void>
  /** Lists a directory; `depth` default 1. */
  listDir(path: string, options?: { depth?: number; signal?: AbortSignal }): Promise<FileEntry[]>
  /** True when the path exists. */
  exists(path: string): Promise<boolean>
  /** Removes a file or directory (recursively). */
  remove(path: string): Promise<void>
  /**
   * Optional capability: how to reach `port` from outside the sandbox. No I/O; the answer stays the same for
   * as long as the sandbox keeps its id, paused or not (a sandbox re-mapped or recreated has a new one).
   * Absent on platforms that route no ports to their sandboxes.
   * @throws SandkeepError INVALID_ARGUMENT for a port that is not an integer from 1 to 65535.
   */
  portEndpoint?(port: number, options?: PortEndpointOptions): PortEndpoint
  /** The provider's own SDK object (for E2B: the code-interpreter `Sandbox`). */
  readonly native: Native
}

/**
 * A sandbox platform. `create`, `connect` and `kill` are required; the rest are capabilities the session
 * manager uses when present and reports as CAPABILITY_UNSUPPORTED when a configuration needs one that is
 * missing (for example `onTurnEnd: 'pause'` without `pause`). Run `sandboxProviderConformance` from
 * `@sandkeep/testing` against any new implementation.
 */
export interface SandboxProvider<Native = unknown> {
  /** Contract version. */
  readonly specificationVersion: 'v1'
  /** Short stable name, e.g. `'e2b'`; stored in session records. */
  readonly providerId: string
  /** Template used when `create` names none. */
  readonly defaultTemplate?: string
  /**
   * Creates a sandbox.
   * @throws SandkeepError PROVIDER_AUTH, INVALID_ARGUMENT (unknown template), SANDBOX_UNAVAILABLE (retryable).
   */
  create(options: CreateSandboxOptions): Promise<SandboxHandle<Native>>
  /**
   * The create options past the basic ones (template, timeoutMs, metadata, envs, allowInternetAccess) that
   * this provider honours. A session manager configured with one not listed fails with CAPABILITY_UNSUPPORTED
   * before any I/O. Absent: none (a provider written before the list; `onTurnEnd: 'auto-pause'` still passes
   * its `lifecycle`).
   */
  readonly createCapabilities?: readonly CreateCapability[]
  /**
   * Connects to a sandbox, resuming it when paused. The returned handle's `id` may differ from `sandboxId`.
   * @throws SandkeepError SANDBOX_NOT_FOUND (killed or past retention), PROVIDER_AUTH, SANDBOX_UNAVAILABLE
   *   (retryable: 5xx, network, 409 still transitioning, 429).
   */
  connect(sandboxId: string, options?: ConnectSandboxOptions): Promise<SandboxHandle<Native>>
  /** Kills a sandbox. Returns false when it did not exist. */
  kill(sandboxId: string, options?: { signal?: AbortSignal }): Promise<boolean>
  /** Pauses a sandbox. Returns false when it was already paused. SANDBOX_NOT_FOUND when it is gone. */
  pause?(sandboxId: string, options?: { signal?: AbortSignal }): Promise<boolean>
  /** Sets the sandbox's timeout to now + `timeoutMs`. */
  setTimeout?(sandboxId: string, timeoutMs: number, options?: { signal?: AbortSignal }): Promise<void>
  /** Lists sandboxes, filtered by metadata (all pairs must match) and state. */
  list?(options?: {
    metadata?: Record<string, string>
    state?: SandboxState[]
    limit?: number
    cursor?: string
    signal?: AbortSignal
  }): Promise<{ sandboxes: SandboxInfo[]; cursor?: string }>
  /**
   * Replaces a running sandbox's whole outbound network policy (what is not given is cleared).
   * @throws SandkeepError CAPABILITY_UNSUPPORTED when the platform cannot change it on a running sandbox,
   *   SANDBOX_NOT_FOUND when the sandbox is gone.
   */
  updateNetwork?(
    sandboxId: string,
    policy: SandboxNetworkPolicy,
    options?: { signal?: AbortSignal },
  ): Promise<void>
  /** Reads a sandbox's info. SANDBOX_NOT_FOUND when it is gone. */
  getInfo?(sandboxId: string, options?: { signal?: AbortSignal }): Promise<SandboxInfo>
  /**
   * Snapshot capability: what a snapshot keeps on this platform. Present exactly when `createSnapshot`,
   * `createFromSnapshot` and `deleteSnapshot` are (the session manager's checkpoints use them together).
   */
  readonly snapshotKeeps?: SnapshotKeeps
  /**
   * Takes a snapshot of a running sandbox; the sandbox goes on running (the platform may freeze it for the
   * copy). The snapshot outlives the sandbox until `deleteSnapshot`.
   * @throws SandkeepError SANDBOX_NOT_FOUND (gone), SANDBOX_UNAVAILABLE (retryable: 5xx, 409 paused or
   *   transitioning, 429 rate limited), QUOTA_EXCEEDED (not retryable: the platform's snapshot quota is full)
   */
  createSnapshot?(sandboxId: string, options?: CreateSnapshotOptions): Promise<TakenSnapshot>
  /**
   * Creates a new sandbox from a snapshot (its own copy: deleting the snapshot later does not touch it).
   * `options.template` is ignored: the snapshot decides. What the snapshot did not keep (`snapshotKeeps`)
   * starts empty.
   * @throws SandkeepError SNAPSHOT_NOT_FOUND (deleted, never made, another team's), and as `create`
   */
  createFromSnapshot?(snapshotId: string, options: CreateSandboxOptions): Promise<SandboxHandle<Native>>
  /** Deletes a snapshot. Returns false when it did not exist. */
  deleteSnapshot?(snapshotId: string, options?: { signal?: AbortSignal }): Promise<boolean>
  /**
   * Lists snapshots, optionally only those with a name starting with `namePrefix`. Optional even with the
   * other snapshot methods; `gc` sweeps leaked checkpoint snapshots with it.
   */
  listSnapshots?(options?: {
    namePrefix?: string
    limit?: number
    cursor?: string
    signal?: AbortSignal
  }): Promise<{ snapshots: SnapshotInfo[]; cursor?: string }>
}
