// One sandbox: its persisted record, its runtime (processes, freezer), the table of processes envd started,
// its code interpreter, and the lifecycle transitions (pause in each fidelity, resume, reboot, kill).
import { createHmac, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { ConnectError, type ServerStream } from './connect-protocol.js'
import type { HostEventLog } from './events.js'
import type { CodeInterpreter } from './interpreter/types.js'
import { homeOf, normalizeSandboxPath, SANDBOX_HOME } from './paths.js'
import type { PtyTerminal } from './pty-terminal.js'
import type { SandboxUser } from './runtime/etc-files.js'
import { processCpuTicks } from './runtime/freezer.js'
import { SandboxFs } from './sandbox-fs.js'
import type { SandboxRuntime, SpawnedProcess } from './sandbox-runtime.js'
import { UploadNotes } from './upload-notes.js'

/** What a pause keeps (the README's "Pause fidelities" table). */
export type PauseMode = 'memory' | 'filesystem' | 'processes'

/** Metadata key that overrides the host's pause mode for one sandbox (`memory` | `filesystem` | `processes`). */
export const PAUSE_MODE_METADATA_KEY = 'local-e2b/pause-mode'
/** Metadata key naming a sandbox directory kept across a `processes`-mode pause (the persistent volume). */
export const VOLUME_METADATA_KEY = 'local-e2b/volume'
/** Metadata key where a `processes`-mode pause stores its process snapshot (base64 JSON). */
export const SNAPSHOT_METADATA_KEY = 'snapshot'

/** The command line of a process, as envd's ProcessConfig. */
export interface ProcessConfig {
  cmd: string
  args: string[]
  envs: Record<string, string>
  cwd?: string
}

/** One pause and its resume, for introspection. */
export interface PauseRecord {
  /** The fidelity applied. */
  mode: PauseMode
  /** Epoch ms when the pause began. */
  pausedAt: number
  /** How long the pause took (ms). */
  pauseMs: number
  /** Epoch ms when the sandbox was resumed, if it was. */
  resumedAt?: number
  /** How long the resume took (ms). */
  resumeMs?: number
  /** True when the resume was a cold boot (processes and memory lost). */
  coldBoot?: boolean
  /** Why it paused: `api`, `timeout`. */
  reason: string
}

/** The persisted part of a sandbox (stateDir/registry.json). */
export interface SandboxRecord {
  sandboxId: string
  templateId: string
  /**
   * The template whose user and limits the sandbox has, when `templateId` is a snapshot's (a sandbox made
   * from a snapshot or a fork runs as the template its source ran). Absent: `templateId` itself.
   */
  baseTemplateId?: string
  alias?: string
  /** Per-sandbox envd access token (never printed). */
  envdAccessToken: string
  /**
   * The team (a hash of the API key that created it, snapshot-store.ts `teamOf`; never the key): only that
   * key reaches the sandbox through the control plane, also after a restart. Absent in a registry written
   * before owners were kept: the first host to load it adopts it for its key.
   */
  team?: string
  metadata: Record<string, string>
  envVars: Record<string, string>
  /** Epoch ms. */
  startedAt: number
  /** Epoch ms when the timeout fires (while running). */
  endAt: number
  state: 'running' | 'paused'
  /** Epoch ms of the current pause. */
  pausedAt?: number
  autoPause: boolean
  /** False when a timeout-triggered pause should not keep memory. */
  autoPauseMemory: boolean
  autoResume: boolean
  allowInternetAccess: boolean
  /**
   * Who may reach the sandbox's user ports (`network.allowPublicTraffic`, `network.maskRequestHost` at
   * create). Absent: public, as on E2B.
   */
  ingress?: { allowPublicTraffic: boolean; maskRequestHost?: string }
  /** Host directory holding `home/user` and `tmp`. */
  rootDir: string
  /**
   * Host uid/gid the sandbox's processes run as, and that owns what the host creates on the sandbox's behalf
   * (uploads, MakeDir, the interpreter's files). Absent: the host leaves ownership as it is.
   */
  owner?: { uid: number; gid: number }
  /** Index of the sandbox's host id range (id-ranges.ts), which its user namespace maps; isolated only. */
  idRange?: number
  /** Range (or `legacy`) the sandbox's files still belong to, until its next boot gives them to `idRange`. */
  rebaseFrom?: number | 'legacy'
  /** True when the processes were lost while paused (cold boot on resume). */
  memoryLost: boolean
  pauses: PauseRecord[]
  /** Highest sandbox pid reported so far (new pid namespaces continue above it). */
  lastPid?: number
}

/** A process started through envd. */
export interface ManagedProcess {
  pid: number
  tag?: string
  config: ProcessConfig
  spawned: SpawnedProcess
  subscribers: Set<ServerStream>
  /** Events produced before the Start stream attached (held so that none is lost); undefined after. */
  backlog?: unknown[]
  ended: boolean
  startedAt: number
  /** Kill timer from Connect-Timeout-Ms. */
  deadline?: NodeJS.Timeout
  /** The process's terminal, when it was started with one (envd's `pty`). */
  terminal?: PtyTerminal
}

/** Introspection snapshot returned by `host.getSandbox(id)`. */
export interface SandboxView {
  sandboxId: string
  state: 'running' | 'paused'
  templateId: string
  metadata: Record<string, string>
  /** Effective pause mode (host default or the metadata override). */
  pauseMode: PauseMode
  pauseCount: number
  pauses: PauseRecord[]
  /** Processes started through envd that are still running (sandbox pids). */
  processes: Array<{ pid: number; cmd: string; args: string[]; tag?: string }>
  /** Host pids of every live process of the sandbox (envd processes, kernels, the namespace's init). */
  hostPids: number[]
  /** True while the processes are frozen. */
  frozen: boolean
  /** CPU time (clock ticks) used by the live processes. */
  cpuTicks: number
  /** Host directory of the sandbox's `/home/user`. */
  homeDir: string
  /** Host uid/gid the sandbox's processes run as (its own, isolated mode), undefined unisolated. */
  owner: { uid: number; gid: number } | undefined
  startedAt: number
  endAt: number
  isolation: 'bubblewrap' | 'none'
}

/**
 * Whose host ids a sandbox's files carry now: the range they still wait to be moved from, else its own range,
 * else those of the hosts before ranges. A fork or a sandbox made from a snapshot moves them onto its own.
 */
export function filesRangeOf(record: SandboxRecord): number | 'legacy' {
  return record.rebaseFrom ?? record.idRange ?? 'legacy'
}

export function newToken(bytes = 24): string {
  return randomBytes(bytes).toString('base64url')
}

export function parsePauseMode(value: unknown): PauseMode | undefined {
  return value === 'memory' || value === 'filesystem' || value === 'processes' ? value : undefined
}

export class Sandbox {
  record: SandboxRecord
  readonly runtime: SandboxRuntime
  readonly processes = new Map<number, ManagedProcess>()
  interpreter: CodeInterpreter | undefined
  /** Uploads just renamed into place, so that a watch reports them as envd's in-place writes. */
  readonly uploads = new UploadNotes()
  /** Fires when a running sandbox reaches `endAt` (auto-pause or kill); see lifecycle.ts. */
  timeoutTimer: NodeJS.Timeout | undefined
  /** Fires when a paused sandbox passes the host's retention; see lifecycle.ts. */
  retentionTimer: NodeJS.Timeout | undefined
  #queue: Promise<unknown> = Promise.resolve()
  readonly #events: HostEventLog
  readonly #hostPauseMode: PauseMode

  constructor(
    record: SandboxRecord,
    runtime: SandboxRuntime,
    events: HostEventLog,
    hostPauseMode: PauseMode,
  ) {
    this.record = record
    this.runtime = runtime
    this.#events = events
    this.#hostPauseMode = hostPauseMode
  }

  get id(): string {
    return this.record.sandboxId
  }

  get pauseMode(): PauseMode {
    return parsePauseMode(this.record.metadata[PAUSE_MODE_METADATA_KEY]) ?? this.#hostPauseMode
  }

  /** The sandbox's traffic token (port 49999 only), derived so that it never opens envd. */
  get trafficAccessToken(): string {
    return createHmac('sha256', this.record.envdAccessToken).update('traffic-access-token').digest('hex')
  }

  /** Race-free file operations in the sandbox's writable tree; what they create belongs to its user. */
  get fs(): SandboxFs {
    return new SandboxFs(this.record.rootDir, () => this.record.owner, homeOf(this.runtime.defaultUser))
  }

  /**
   * The same for `user` (envd's file calls name one): relative paths start at its home, and what they create
   * belongs to it.
   */
  fsAs(user: SandboxUser): SandboxFs {
    if (user === this.runtime.defaultUser) return this.fs
    return new SandboxFs(this.record.rootDir, () => this.runtime.ownerOf(user), homeOf(user))
  }

  /** Stops the sandbox's timeout and retention timers. */
  clearTimers(): void {
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer)
    if (this.retentionTimer) clearTimeout(this.retentionTimer)
    this.timeoutTimer = undefined
    this.retentionTimer = undefined
  }

  /** Ends every envd stream of the process table (`sandbox <reason>`) and forgets the table. */
  forgetProcesses(reason: string): void {
    for (const entry of this.processes.values()) {
      if (entry.deadline) clearTimeout(entry.deadline)
      for (const stream of entry.subscribers) stream.end(new ConnectError('unavailable', `sandbox ${reason}`))
      entry.subscribers.clear()
    }
    this.processes.clear()
  }

  /**
   * The sandbox is being killed: drop the connection of every stream and interpreter request in flight,
   * as E2B's edge does when a sandbox's machine goes away (no end frame, no error line); the SDKs then find
   * the sandbox gone and raise their "sandbox was killed" TimeoutError.
   */
  dropConnections(): void {
    for (const entry of this.processes.values()) {
      for (const stream of entry.subscribers) stream.abort()
      entry.subscribers.clear()
    }
    this.interpreter?.dropRequests()
  }

  /** Runs lifecycle transitions one at a time per sandbox. */
  serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task)
    this.#queue = run.catch(() => {})
    return run
  }

  /** Kills every process, forgets the process table and the interpreter's kernels. */
  async stopProcesses(reason: string): Promise<void> {
    this.forgetProcesses(reason)
    await this.runtime.stopAll()
    this.interpreter?.reset()
  }

  /** Pauses with the given fidelity. Caller holds the lifecycle lock and checked the state. */
  async pause(mode: PauseMode, reason: string): Promise<PauseRecord> {
    const started = performance.now()
    const pausedAt = Date.now()
    if (mode === 'memory') {
      await this.runtime.freeze()
    } else if (mode === 'filesystem') {
      await this.stopProcesses('paused')
      this.record.memoryLost = true
    } else {
      const snapshot = {
        captured_time: new Date(pausedAt).toISOString(),
        processes: [...this.processes.values()]
          .filter((entry) => !entry.ended)
          .map((entry) => ({
            config: {
              cmd: entry.config.cmd,
              args: entry.config.args,
              cwd: entry.config.cwd ?? SANDBOX_HOME,
              envs: entry.config.envs,
            },
            pid: entry.pid,
            ...(entry.tag === undefined ? {} : { tag: entry.tag }),
          })),
      }
      await this.stopProcesses('paused')
      this.wipeFiles()
      this.record.metadata = {
        ...this.record.metadata,
        [SNAPSHOT_METADATA_KEY]: Buffer.from(JSON.stringify(snapshot)).toString('base64'),
      }
      this.record.memoryLost = true
    }
    const pause: PauseRecord = { mode, pausedAt, pauseMs: performance.now() - started, reason }
    this.record.state = 'paused'
    this.record.pausedAt = pausedAt
    this.record.pauses.push(pause)
    return pause
  }

  /**
   * Resumes. `memory: false` (connect with onResume 'reboot') discards the frozen processes and cold boots.
   * Returns the pause record, completed with the resume's timing.
   */
  async resume(options: {
    memory: boolean
    restartProcesses: (config: ProcessConfig, tag?: string) => Promise<void>
  }) {
    const started = performance.now()
    let coldBoot = false
    if (!options.memory || this.record.memoryLost) {
      coldBoot = true
      if (this.runtime.booted || this.runtime.frozen) await this.stopProcesses('rebooted')
      await this.runtime.boot()
      const snapshot = this.readSnapshot()
      if (snapshot && this.pauseMode === 'processes') {
        for (const process of snapshot.processes) {
          await options.restartProcesses(process.config, process.tag).catch((error: unknown) => {
            this.#events.record('process-restart-fail', this.id, {
              cmd: process.config.cmd,
              error: error instanceof Error ? error.message : String(error),
            })
          })
        }
      }
    } else {
      await this.runtime.thaw()
    }
    this.record.state = 'running'
    this.record.memoryLost = false
    this.record.pausedAt = undefined
    const pause = this.record.pauses.at(-1)
    if (pause && pause.resumedAt === undefined) {
      pause.resumedAt = Date.now()
      pause.resumeMs = performance.now() - started
      pause.coldBoot = coldBoot
    }
    return { pause, coldBoot, resumeMs: performance.now() - started }
  }

  readSnapshot():
    | { captured_time: string; processes: Array<{ config: ProcessConfig; pid: number; tag?: string }> }
    | undefined {
    const raw = this.record.metadata[SNAPSHOT_METADATA_KEY]
    if (!raw) return undefined
    try {
      const parsed = JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as {
        captured_time: string
        processes: Array<{ config: ProcessConfig; pid: number; tag?: string }>
      }
      if (!Array.isArray(parsed.processes)) return undefined
      return parsed
    } catch {
      return undefined
    }
  }

  /** Deletes the sandbox's files except the persistent volume directory (processes-mode pause). */
  wipeFiles(): void {
    const volume = this.record.metadata[VOLUME_METADATA_KEY]
    let keep: string | undefined
    if (volume) {
      try {
        keep = normalizeSandboxPath(volume)
      } catch {
        keep = undefined
      }
    }
    const root = this.record.rootDir
    wipeTree(join(root, 'home/user'), '/home/user', keep)
    wipeTree(join(root, 'tmp'), '/tmp', keep)
    wipeTree(join(root, 'root'), '/root', keep)
  }

  view(isolation: 'bubblewrap' | 'none'): SandboxView {
    const hostPids = this.runtime.hostPids()
    return {
      sandboxId: this.id,
      state: this.record.state,
      templateId: this.record.templateId,
      metadata: { ...this.record.metadata },
      pauseMode: this.pauseMode,
      pauseCount: this.record.pauses.length,
      pauses: this.record.pauses.map((pause) => ({ ...pause })),
      processes: [...this.processes.values()]
        .filter((entry) => !entry.ended)
        .map((entry) => ({
          pid: entry.pid,
          cmd: entry.config.cmd,
          args: [...entry.config.args],
          ...(entry.tag === undefined ? {} : { tag: entry.tag }),
        })),
      hostPids,
      frozen: this.runtime.frozen,
      cpuTicks: hostPids.reduce((sum, pid) => sum + processCpuTicks(pid), 0),
      homeDir: join(this.record.rootDir, 'home/user'),
      owner: this.record.owner ? { ...this.record.owner } : undefined,
      startedAt: this.record.startedAt,
      endAt: this.record.endAt,
      isolation,
    }
  }
}

function wipeTree(hostDir: string, sandboxDir: string, keep: string | undefined): void {
  if (!existsSync(hostDir)) {
    mkdirSync(hostDir, { recursive: true })
    return
  }
  for (const name of readdirSync(hostDir)) {
    const sandboxPath = `${sandboxDir}/${name}`
    const hostPath = join(hostDir, name)
    if (keep !== undefined && (keep === sandboxPath || keep.startsWith(`${sandboxPath}/`))) {
      // An ancestor of the volume: keep it, wipe its other children.
      if (keep !== sandboxPath) wipeTree(hostPath, sandboxPath, keep)
      continue
    }
    rmSync(hostPath, { recursive: true, force: true })
  }
}
