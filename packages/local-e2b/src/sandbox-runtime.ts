// The processes of one sandbox. With bubblewrap, one long-lived namespace set (pid, mount, net, ipc, uts)
// per sandbox, started once by a tiny init (runtime/namespace.ts), which every later process enters
// (runtime/launch.ts); a server started by one command is then reachable on loopback by the next. Every
// process is placed in the sandbox's cgroups before it execs anything, so a pause freezes all of them at
// once (runtime/freezer.ts) and the limits hold (runtime/limits.ts); home and /tmp live on the sandbox's own
// disk image (runtime/disk-image.ts).
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, rmdirSync } from 'node:fs'
import { join } from 'node:path'
import { SANDBOX_HOME } from './paths.js'
import { mountDisk, removeDisk, unmountDisk } from './runtime/disk-image.js'
import { SANDBOX_USER_ID, type SandboxUser } from './runtime/etc-files.js'
import {
  cgroupMembers,
  freezeProcesses,
  processesInGroups,
  signalEach,
  thawProcesses,
  waitFor,
} from './runtime/freezer.js'
import { killByGroup, launchCommand, readHandshake, wrapInCgroups } from './runtime/launch.js'
import { applyLimits, DEFAULT_LIMITS, type SandboxLimits } from './runtime/limits.js'
import { bwrapArguments, setLastPid, startNamespace } from './runtime/namespace.js'
import type { RuntimeSupport } from './runtime/support.js'

/** Options of one sandbox's runtime. */
export interface SandboxRuntimeOptions {
  /** Sandbox id (names the cgroup). */
  id: string
  /** Host directory holding the sandbox's `home/user` and `tmp`. */
  rootDir: string
  /** What the machine offers. */
  support: RuntimeSupport
  /** Share the host's network namespace (internet access); otherwise only the sandbox's own loopback. */
  allowInternet: boolean
  /** Host directory made visible read-only at /opt/sandkeep/kernels (isolated mode). */
  kernelHostDir?: string
  /**
   * Highest pid handed out before (persisted by the host). A cold boot starts a new pid namespace whose pids
   * would restart at 2; continuing above this keeps a restarted process from reusing an old process's pid.
   */
  pidFloor?: () => number
  /** Who processes run as (isolated mode; default `user`). */
  user?: SandboxUser
  /** Resource limits (default {@link DEFAULT_LIMITS}). */
  limits?: SandboxLimits
  /** Where warnings go. */
  logger?: (line: string) => void
}

/** A process started inside the sandbox. */
export interface SpawnedProcess {
  /** The node child (the wrapper: nsenter in isolated mode); its stdio are the process's stdio. */
  child: ChildProcessWithoutNullStreams
  /** The pid the sandbox's own processes see (pid namespace pid; host pid when unisolated). */
  pid: number
  /** Process group on the host that holds the process and its children (signal with a negative pid). */
  hostGroup: number
}

/** Spawn options. */
export interface RuntimeSpawnOptions {
  /** Sandbox path of the working directory (must exist). */
  cwd: string
  /** The complete environment of the process (nothing of the host's leaks in). */
  env: Record<string, string>
}

export class SandboxRuntime {
  readonly #options: SandboxRuntimeOptions
  #initPid: number | undefined
  #init: ChildProcessWithoutNullStreams | undefined
  #booting: Promise<void> | undefined
  readonly #groups = new Set<number>()
  #frozen = false
  #cgroup: string | undefined
  #limitDirs: string[] = []
  #diskMounted = false

  constructor(options: SandboxRuntimeOptions) {
    this.#options = options
  }

  get #isolated(): boolean {
    return this.#options.support.isolation === 'bubblewrap'
  }

  /** True when processes run in the sandbox's own namespaces (bubblewrap), false when unisolated. */
  get isolated(): boolean {
    return this.#isolated
  }

  /** True while the sandbox's namespace (or, unisolated, any process) is alive. */
  get booted(): boolean {
    return this.#isolated ? this.#initPid !== undefined : true
  }

  get frozen(): boolean {
    return this.#frozen
  }

  /** Host pid of the namespace's init while booted (isolated mode): whose namespaces a helper joins. */
  get namespacePid(): number | undefined {
    return this.#initPid
  }

  /** Host directory backing the sandbox path `/`-relative writable tree. */
  get rootDir(): string {
    return this.#options.rootDir
  }

  /** Host path of a sandbox working directory, for the unisolated fallback. */
  hostPathOf(sandboxPath: string): string {
    return this.#options.rootDir + sandboxPath
  }

  /** Host uid/gid of the sandbox's processes (isolated mode), undefined for root. */
  get owner(): { uid: number; gid: number } | undefined {
    if (!this.#isolated || this.#options.user === 'root') return undefined
    return { uid: SANDBOX_USER_ID, gid: SANDBOX_USER_ID }
  }

  #limits(): SandboxLimits {
    return this.#options.limits ?? DEFAULT_LIMITS
  }

  /** The sandbox's freezer cgroup, made (with its limits) on first use; undefined without a cgroup freezer. */
  #cgroupDir(): string | undefined {
    const parent = this.#options.support.cgroupParent
    if (!parent) return undefined
    if (!this.#cgroup) {
      const dir = join(parent, this.#options.id)
      mkdirSync(dir, { recursive: true })
      this.#cgroup = dir
      const { support, id, logger } = this.#options
      this.#limitDirs = applyLimits(support, id, dir, this.#limits(), logger)
    }
    return this.#cgroup
  }

  /** Cgroup `cgroup.procs` files a process joins: the freezer's first, then the limit hierarchies'. */
  #procsFiles(cgroup: string | undefined): string[] {
    if (!cgroup) return []
    return [cgroup, ...this.#limitDirs].map((dir) => join(dir, 'cgroup.procs'))
  }

  /** Tracks a host process group (how processes are found, frozen and killed without a cgroup). */
  #track(child: ChildProcessWithoutNullStreams): void {
    if (child.pid === undefined) return
    const group = child.pid
    this.#groups.add(group)
    child.on('exit', () => this.#groups.delete(group))
  }

  /** Starts the sandbox's namespace (isolated mode). Idempotent; concurrent callers share one boot. */
  async boot(): Promise<void> {
    if (!this.#isolated || this.#initPid !== undefined) {
      this.#cgroupDir()
      return
    }
    this.#booting ??= this.#bootNamespace().finally(() => {
      this.#booting = undefined
    })
    return this.#booting
  }

  async #bootNamespace(): Promise<void> {
    const { rootDir, allowInternet, kernelHostDir, support } = this.#options
    const limits = this.#limits()
    if (support.diskImages && limits.diskBytes > 0) {
      this.#diskMounted = mountDisk(rootDir, limits.diskBytes) || this.#diskMounted
    }
    mkdirSync(join(rootDir, 'home/user'), { recursive: true })
    mkdirSync(join(rootDir, 'tmp'), { recursive: true })
    // mkdir's mode passes through the umask; /tmp must be world-writable and sticky for `user`.
    chmodSync(join(rootDir, 'tmp'), 0o1777)
    const owner = this.owner
    if (owner) chownSync(join(rootDir, 'home/user'), owner.uid, owner.gid)
    const spec = { rootDir, allowInternet, kernelHostDir, tmpfsBytes: limits.tmpfsBytes }
    const { args, data } = bwrapArguments(spec)
    const [command, commandArgs] = wrapInCgroups(this.#procsFiles(this.#cgroupDir()), 'bwrap', args)
    const { init, initPid } = await startNamespace(command, commandArgs, data)
    this.#init = init
    // Without a cgroup, the init's process group is how its descendants are found, frozen and killed.
    this.#track(init)
    this.#initPid = initPid
    init.on('exit', () => {
      if (this.#init === init) {
        this.#init = undefined
        this.#initPid = undefined
      }
    })
    const floor = this.#options.pidFloor?.() ?? 0
    if (floor > 0) await setLastPid(initPid, floor)
  }

  /** Deletes the sandbox's files (its directory and disk image); call after {@link destroy}. */
  removeStorage(): void {
    this.#unmountDisk()
    removeDisk(this.#options.rootDir)
  }

  #unmountDisk(): void {
    unmountDisk(this.#options.rootDir, this.#diskMounted)
    this.#diskMounted = false
  }

  /**
   * Spawns `command args` inside the sandbox with piped stdio, resolving once the process reported its pid
   * (it has then joined the namespaces and the cgroup and is about to exec the command).
   */
  async spawn(
    command: string,
    args: string[],
    options: RuntimeSpawnOptions,
    /**
     * Called with the child before the pid handshake is awaited: listen to its output there. A fast command
     * exits during the handshake, and Node then drains (discards) every stdio stream nobody listens to.
     */
    onChild?: (child: ChildProcessWithoutNullStreams) => void,
  ): Promise<SpawnedProcess> {
    const child = this.spawnNow(command, args, options)
    onChild?.(child)
    const pid = await readHandshake(child)
    return { child, pid, hostGroup: child.pid ?? -1 }
  }

  /** Synchronous spawn for the kernel seam; the pid handshake is drained in the background. */
  spawnNow(command: string, args: string[], options: RuntimeSpawnOptions): ChildProcessWithoutNullStreams {
    const isolated = this.#isolated
    if (isolated && this.#initPid === undefined) {
      throw new Error('sandbox namespace is not running; call boot() first')
    }
    const launch = launchCommand(
      {
        enterHelper: this.#options.support.enterHelper,
        initPid: isolated ? this.#initPid : undefined,
        procsFiles: this.#procsFiles(this.#cgroupDir()),
        owner: this.owner,
        hostPathOf: (path) => this.hostPathOf(path),
        home: SANDBOX_HOME,
      },
      options.cwd,
      command,
      args,
    )
    const env = isolated ? options.env : { ...options.env, HOME: this.hostPathOf(SANDBOX_HOME) }
    const child = spawn(launch.file, launch.args, {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      detached: true,
      env,
      cwd: launch.cwd,
    }) as unknown as ChildProcessWithoutNullStreams
    this.#track(child)
    killByGroup(child)
    return child
  }

  /** The sandbox's cgroup directories (the freezer's first, then the limit hierarchies'); [] without cgroups. */
  get cgroupDirs(): string[] {
    return this.#cgroup ? [this.#cgroup, ...this.#limitDirs] : []
  }

  /** Host pids of every process of the sandbox (the cgroup's members, or the tracked groups' members). */
  hostPids(): number[] {
    if (this.#cgroup) return cgroupMembers(this.#cgroup)
    const init = this.#init?.pid
    return processesInGroups(new Set([...this.#groups, ...(init === undefined ? [] : [init])]))
  }

  /** Freezes every process of the sandbox; resolves once the kernel reports them frozen. */
  async freeze(): Promise<void> {
    if (this.#frozen) return
    await freezeProcesses(this.#options.support.freezer, this.#cgroup, (signal) => this.#signalAll(signal))
    this.#frozen = true
  }

  /** Thaws the sandbox. */
  async thaw(): Promise<void> {
    if (!this.#frozen) return
    thawProcesses(this.#options.support.freezer, this.#cgroup, (signal) => this.#signalAll(signal))
    this.#frozen = false
  }

  /** Signals the init and every tracked process group. */
  #signalAll(signal: NodeJS.Signals): void {
    if (this.#initPid !== undefined) signalEach([this.#initPid], signal)
    signalEach(
      [...this.#groups].map((group) => -group),
      signal,
    )
  }

  /** Kills every process of the sandbox (and its namespace); the next spawn needs a new boot(). */
  async stopAll(): Promise<void> {
    const pids = new Set(this.hostPids())
    if (this.#initPid !== undefined) pids.add(this.#initPid)
    signalEach(pids, 'SIGKILL')
    signalEach(
      [...this.#groups].map((group) => -group),
      'SIGKILL',
    )
    this.#init?.kill('SIGKILL')
    // Killed processes of a frozen cgroup only die once thawed.
    await this.thaw()
    this.#initPid = undefined
    this.#init = undefined
    if (this.#cgroup) {
      await waitFor(() => this.hostPids().length === 0, 5000).catch(() =>
        signalEach(this.hostPids(), 'SIGKILL'),
      )
    }
  }

  /** Stops everything and removes the cgroups. */
  async destroy(): Promise<void> {
    await this.stopAll()
    if (this.#cgroup) {
      const cgroup = this.#cgroup
      this.#cgroup = undefined
      // Killed processes leave the cgroup once the kernel has finished with them; until then rmdir says EBUSY.
      const removed = () => {
        try {
          rmdirSync(cgroup)
          return true
        } catch (error) {
          return (error as NodeJS.ErrnoException).code !== 'EBUSY'
        }
      }
      await waitFor(removed, 500).catch(() => {})
    }
    for (const dir of this.#limitDirs.splice(0)) {
      try {
        rmdirSync(dir)
      } catch {}
    }
    this.#unmountDisk()
  }
}
