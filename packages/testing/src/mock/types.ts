// The mock provider's public types: its options, the state of a mock sandbox, the controls, recorded calls.
import type { SandkeepError, SandkeepErrorCode } from '@sandkeep/core'
import type {
  CodeResult,
  CommandResult,
  CreateSandboxOptions,
  ProcessInfo,
  SandboxNetworkPolicy,
  SandboxProvider,
  SandboxState,
} from '@sandkeep/core/provider'

/** Operations of the provider and of its handles that `failNext` and `calls` name. */
export type MockOperation =
  | 'create'
  | 'connect'
  | 'kill'
  | 'pause'
  | 'setTimeout'
  | 'list'
  | 'getInfo'
  | 'updateNetwork'
  | 'createSnapshot'
  | 'createFromSnapshot'
  | 'deleteSnapshot'
  | 'listSnapshots'
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
  /** Sandbox concerned (absent for create before it has an id, list, and the snapshot calls but createSnapshot). */
  sandboxId?: string
  /**
   * The call's first argument beyond the id (command, code, path; a snapshot's name for createSnapshot, its
   * id for createFromSnapshot and deleteSnapshot), when there is one.
   */
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
  /**
   * Capabilities to leave out, to test code paths for platforms without them (`portEndpoint` is the handles'
   * capability; the others are the provider's).
   */
  without?: Array<
    'pause' | 'setTimeout' | 'list' | 'getInfo' | 'updateNetwork' | 'listSnapshots' | 'portEndpoint'
  >
  /**
   * Snapshots: what one keeps besides the files (`keepsMemory`: interpreter variables and background
   * processes; default false, as local-e2b), or `false` for a platform without snapshots. Default `{}`.
   */
  snapshots?: { keepsMemory?: boolean } | false
  /** Handles commands the built-in mini shell does not know; return undefined to fall through (exit 127). */
  onCommand?: (command: string, sandbox: MockSandbox) => CommandResult | undefined
  /**
   * Handles code the built-in mini interpreter does not know; return undefined to fall through. Return
   * `results` (e.g. `[{ isMainResult: false, png: '<base64>' }]`) to imitate a cell that plots.
   */
  onCode?: (code: string, language: string, sandbox: MockSandbox) => CodeResult | undefined
  /** Added latency per call, ms. Default 0. */
  latencyMs?: number
  /**
   * Answers the session manager's fidelity probe (the memory sentinel and the marker file, asked in one
   * cell); return undefined to let the mock answer from the sandbox's state. See {@link MockProbe}.
   */
  onProbe?: (probe: MockProbe, sandbox: MockSandbox) => MockProbeAnswer | undefined
}

/** The fidelity probe's question, as the mock sees it: one interpreter context, one sentinel, one marker file. */
export interface MockProbe {
  /** The interpreter context the probe ran in, as a key of {@link MockSandbox.memory} (`python:default`). */
  context: string
  /** The memory sentinel's variable in that context. */
  variable: string
  /** The marker file's path. */
  path: string
}

/**
 * The probe's answer: the sentinel's value (null when unset) and the marker file's content (null when
 * missing; `{ unreadable }` when something that is not a regular file sits there, `{ error }` when the read
 * failed), as the real probe reports them.
 */
export interface MockProbeAnswer {
  sentinel: unknown
  marker: string | null | { unreadable: string } | { error: string }
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
  /** The outbound policy `updateNetwork` last set; absent before (the create options' internet access holds). */
  network?: SandboxNetworkPolicy
}

/** A mock snapshot: copies of what its sandbox held when it was taken. */
export interface MockSnapshot {
  /** The id `createFromSnapshot` takes. */
  snapshotId: string
  /** The name it was taken under, if any (a second snapshot under the same name replaces it, as on E2B). */
  names: string[]
  /** The sandbox it was taken of. */
  sandboxId: string
  /** When it was taken. */
  createdAt: Date
  /** The source's template. */
  template: string
  /** The source's environment (a sandbox made from it gets these under its own). */
  envs: Record<string, string>
  /** Files by absolute path. */
  files: Map<string, Uint8Array>
  /** Interpreter globals and background processes; absent when snapshots do not keep memory. */
  memory?: { globals: Map<string, Map<string, unknown>>; processes: ProcessInfo[] }
}

/** The mock provider: a SandboxProvider plus controls. */
export interface MockProvider extends SandboxProvider<MockSandbox> {
  /** Every call, in order. */
  readonly calls: MockProviderCall[]
  /** Calls of one operation. */
  callsOf(operation: MockOperation): MockProviderCall[]
  /** Sandboxes that exist, by id. */
  readonly sandboxes: Map<string, MockSandbox>
  /** Snapshots that exist, by id. */
  readonly snapshots: Map<string, MockSnapshot>
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
  /**
   * Deletes a snapshot behind the provider's back, as another process or the platform could: createFromSnapshot
   * then fails with SNAPSHOT_NOT_FOUND. Returns false when there was none.
   */
  expireSnapshot(snapshotId: string): boolean
  /** Drops a sandbox's interpreter memory and processes, keeping files. */
  dropMemory(sandboxId: string): void
  /** Forgets recorded calls. */
  clearCalls(): void
}
