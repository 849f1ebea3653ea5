// The processes of one sandbox. With bubblewrap, one long-lived namespace set (pid, mount, net, ipc, uts)
// per sandbox, started once by a tiny init (runtime/namespace.ts), which every later process enters
// (runtime/launch.ts); a server started by one command is then reachable on loopback by the next. Every
// process is placed in the sandbox's cgroups before it execs anything, so a pause freezes all of them at
// once (runtime/freezer.ts) and the limits hold (runtime/limits.ts); home and /tmp live on the sandbox's own
// disk image (runtime/disk-image.ts).
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SANDBOX_HOME } from './paths.js'
import { mountDisk, removeDisk, unmountDisk } from './runtime/disk-image.js'
import { SANDBOX_PATH, SANDBOX_USER_ID, type SandboxUser } from './runtime/etc-files.js'
import {
  cgroupMembers,
  freezeProcesses,
  processesInGroups,
  resetCgroup,
  signalEach,
  thawProcesses,
  waitFor,
} from './runtime/freezer.js'
import { hostIdOf, rebaseOwnership } from './runtime/id-ranges.js'
import { killByGroup, launchCommand, readHandshake, wrapInCgroups } from './runtime/launch.js'
import { applyLimits, DEFAULT_LIMITS, type SandboxLimits } from './runtime/limits.js'
import { BWRAP_COMMAND_LINE, bwrapArguments, setLastPid, startNamespace } from './runtime/namespace.js'
import { connectToInternet } from './runtime/network.js'
import { SANDBOX_SUDO_PATH, SUDO_BROKER_ARGUMENT } from './runtime/sudo-program.js'
import type { RuntimeSupport } from './runtime/support.js'
import { createUserNamespace } from './runtime/user-namespace.js'

/**
 * An empty directory where an unisolated process's mount namespace keeps the host's /home aside (one per
 * host user; nothing is ever mounted there outside such a namespace).
 */
function homeKeepDirectory(): string {
  const dir = join(tmpdir(), `sandkeep-local-e2b-home-${process.getuid?.() ?? 'user'}`)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  return dir
}

/** Options of one sandbox's runtime. */
export interface SandboxRuntimeOptions {
  /** Sandbox id (names the cgroup). */
  id: string
  /** Host directory holding the sandbox's `home/user` and `tmp`. */
  rootDir: string
  /** What the machine offers. */
  support: RuntimeSupport
  /** Internet access (filtered: network.ts); otherwise only the sandbox's own loopback. */
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
  /**
   * The sandbox's host id range (id-ranges.ts; isolated mode): its user namespace maps ids 0-65535 onto it.
   * Required with bubblewrap.
   */
  idRange?: number
  /**
   * Where the sandbox's files were owned before (its earlier range, or `legacy`: a sandbox made before ranges
   * existed); they are given to {@link idRange} at the next boot, then `onRebased` is called.
   */
  rebaseFrom?: number | 'legacy'
  /** Called once the files were given to the new range. */
  onRebased?: () => void
  /** Let processes create user namespaces of their own (default false: `unshare -U` fails inside). */
  nestedUserNamespaces?: boolean
  /**
   * Writes the files of a sandbox made from a snapshot into its disk, once mounted and before its ids are
   * rebased (a no-op after its first call).
   */
  populateDisk?: (rootDir: string) => void
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
  /**
   * Who it runs as (isolated mode; default the template's user): `root` is uid 0 of the sandbox's user
   * namespace with root's capabilities there (enter-helper.ts), `user` uid 1000 without any.
   */
  user?: SandboxUser
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
  #reclaimed = false
  /** An fd of the sandbox's user namespace (isolated, while booted): every launched process joins it. */
  #userNamespace: number | undefined
  /** The boot id the running namespace shows (isolated, while booted). */
  #bootId: string | undefined

  constructor(options: SandboxRuntimeOptions) {
    this.#options = options
  }

  get #isolated(): boolean {
    return this.#options.support.isolation === 'bubblewrap'
  }

  /**
   * True when the sandbox's processes see sandbox paths: isolated, or unisolated with a mount namespace of
   * their own in which its directory is `/home/user` (support.sandboxHome).
   */
  get sandboxHome(): boolean {
    return this.#isolated || this.#options.support.sandboxHome !== undefined
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

  /**
   * The id of the running boot, as the sandbox reads it in /proc/sys/kernel/random/boot_id: new at every boot
   * of its namespace (create, cold boot, a sandbox from a snapshot or a fork), kept by a memory pause. Isolated
   * mode while booted; undefined otherwise (unisolated processes read the host's).
   */
  get bootId(): string | undefined {
    return this.#initPid === undefined ? undefined : this.#bootId
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

  /** Who the sandbox's processes run as unless a request names another user: its template's user. */
  get defaultUser(): SandboxUser {
    return this.#options.user ?? 'user'
  }

  /** uid/gid of `user` inside the sandbox's user namespace (isolated mode). */
  #insideIds(user: SandboxUser): { uid: number; gid: number } | undefined {
    if (!this.#isolated) return undefined
    const id = user === 'root' ? 0 : SANDBOX_USER_ID
    return { uid: id, gid: id }
  }

  #idRange(): number {
    const range = this.#options.idRange
    if (range === undefined) throw new Error(`sandbox ${this.#options.id} has no host id range`)
    return range
  }

  /**
   * Host uid/gid of `user` (default: the template's) inside the sandbox (isolated mode): what the host gives
   * the files it creates for it. Undefined unisolated (the host leaves ownership as it is).
   */
  ownerOf(user: SandboxUser = this.defaultUser): { uid: number; gid: number } | undefined {
    const inside = this.#insideIds(user)
    if (!inside) return undefined
    const range = this.#idRange()
    return { uid: hostIdOf(range, inside.uid), gid: hostIdOf(range, inside.gid) }
  }

  /** Host uid/gid of the template's user: see {@link ownerOf}. */
  get owner(): { uid: number; gid: number } | undefined {
    return this.ownerOf()
  }

  #limits(): SandboxLimits {
    return this.#options.limits ?? DEFAULT_LIMITS
  }

  /**
   * The memory cap the kernel holds the sandbox to (bytes): its `memoryBytes` limit where this machine can set
   * one on its cgroups, undefined where it cannot (the sandbox then has the machine's memory).
   */
  get memoryLimitBytes(): number | undefined {
    const { support } = this.#options
    const enforced = support.limitsInFreezerCgroup
      ? support.cgroupParent !== undefined
      : support.limitParents.memory !== undefined
    return enforced ? this.#limits().memoryBytes : undefined
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

  /** Every cgroup directory this sandbox has, or had under an earlier host: the freezer's and the limits'. */
  #cgroupPaths(): string[] {
    const { support, id } = this.#options
    const parents = [support.cgroupParent, ...Object.values(support.limitParents)]
    return parents.filter((parent) => parent !== undefined).map((parent) => join(parent, id))
  }

  /**
   * Takes the sandbox's cgroups back from an earlier host that died without tearing it down (SIGKILL, a
   * crash): thawed and emptied, so that the next boot does not start inside a frozen cgroup and hang. Once per
   * runtime (a runtime made by this host never inherits anything after that); resolves within seconds.
   */
  async reclaim(): Promise<void> {
    if (this.#reclaimed) return
    this.#reclaimed = true
    const dirs = this.#cgroupPaths().filter((dir) => existsSync(dir))
    if (dirs.length === 0) return
    for (const dir of dirs) resetCgroup(dir)
    await waitFor(() => dirs.every((dir) => cgroupMembers(dir).length === 0), 5000).catch(() => {
      this.#options.logger?.(
        `[sandkeep-local-e2b] processes an earlier host left in sandbox ${this.#options.id} did not all die within 5 s`,
      )
    })
    // Fresh cgroups for the next boot: on this kernel a v2 cgroup that was once killed through cgroup.kill
    // also kills every process later forked straight into it (clone3 CLONE_INTO_CGROUP), and old limits go too.
    await removeCgroups(dirs)
  }

  /** Starts the sandbox's namespace (isolated mode). Idempotent; concurrent callers share one boot. */
  async boot(): Promise<void> {
    await this.reclaim()
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
    const range = this.#idRange()
    if (support.diskImages && limits.diskBytes > 0) {
      this.#diskMounted = mountDisk(rootDir, limits.diskBytes) || this.#diskMounted
    }
    this.#options.populateDisk?.(rootDir)
    const home = join(rootDir, 'home/user')
    const tmp = join(rootDir, 'tmp')
    // Root's home, on the sandbox's disk like the others (a sandbox made before it existed gets it now).
    const rootHome = join(rootDir, 'root')
    for (const dir of [home, tmp, rootHome]) mkdirSync(dir, { recursive: true })
    const { rebaseFrom, onRebased } = this.#options
    if (rebaseFrom !== undefined) {
      const failed = rebaseOwnership([home, tmp, rootHome], rebaseFrom, range)
      if (failed.length > 0) {
        this.#options.logger?.(
          `[sandkeep-local-e2b] sandbox ${this.#options.id}: ${failed.length} entries kept their old owner (first: ${failed[0]?.message.slice(0, 200)})`,
        )
      }
      onRebased?.()
    }
    // mkdir's mode passes through the umask; /tmp must be world-writable and sticky for `user`.
    chmodSync(tmp, 0o1777)
    chmodSync(rootHome, 0o700)
    for (const dir of [tmp, rootHome]) chownSync(dir, hostIdOf(range, 0), hostIdOf(range, 0))
    const owner = this.owner
    if (owner) chownSync(home, owner.uid, owner.gid)
    const bootId = randomUUID()
    const sudoProgram = support.sudoProgram ? readFileSync(support.sudoProgram) : undefined
    const spec = {
      rootDir,
      kernelHostDir,
      tmpfsBytes: limits.tmpfsBytes,
      bootId,
      ...(sudoProgram ? { sudoProgram } : {}),
    }
    const { args, data } = bwrapArguments(spec)
    const [command, commandArgs] = wrapInCgroups(
      this.#procsFiles(this.#cgroupDir()),
      'bwrap',
      BWRAP_COMMAND_LINE,
    )
    const userNamespace = await createUserNamespace(
      range,
      this.#options.nestedUserNamespaces === true,
      support.enterHelper,
    )
    let started: Awaited<ReturnType<typeof startNamespace>>
    try {
      started = await startNamespace(command, commandArgs, { args, data })
    } catch (error) {
      closeSync(userNamespace)
      throw error
    }
    this.#closeUserNamespace()
    this.#userNamespace = userNamespace
    const { init, initPid } = started
    this.#init = init
    this.#bootId = bootId
    // Without a cgroup, the init's process group is how its descendants are found, frozen and killed.
    this.#track(init)
    this.#initPid = initPid
    init.on('exit', () => {
      if (this.#init === init) {
        this.#init = undefined
        this.#initPid = undefined
      }
    })
    if (allowInternet) {
      await connectToInternet(initPid, range).catch(async (error: unknown) => {
        // Never a sandbox that asked for a way out and runs without one, half set up.
        await this.stopAll()
        throw error
      })
    }
    const floor = this.#options.pidFloor?.() ?? 0
    if (floor > 0) await setLastPid(initPid, floor)
    if (support.sudoProgram) this.#startSudoBroker(initPid)
  }

  /**
   * Starts the broker `sudo` asks (sudo-program.ts) as the sandbox's root, for the boot of `initPid`: again
   * when it ends while that boot lives on (root inside may kill it), at most once a second.
   */
  #startSudoBroker(initPid: number): void {
    if (this.#initPid !== initPid) return
    let child: ChildProcessWithoutNullStreams
    try {
      child = this.spawnNow(SANDBOX_SUDO_PATH, [SUDO_BROKER_ARGUMENT], {
        cwd: '/',
        env: { PATH: SANDBOX_PATH, LANG: 'C.UTF-8' },
        user: 'root',
      })
    } catch (error) {
      this.#options.logger?.(
        `[sandkeep-local-e2b] sudo of sandbox ${this.#options.id} is unavailable: ${(error as Error).message}`,
      )
      return
    }
    child.stdin.end()
    child.stdout.resume()
    child.stderr.resume()
    ;(child.stdio[3] as NodeJS.ReadableStream | undefined)?.resume()
    child.once('exit', () => {
      if (this.#initPid !== initPid) return
      setTimeout(() => this.#startSudoBroker(initPid), 1000).unref()
    })
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
        ids: this.#insideIds(options.user ?? this.defaultUser),
        hostPathOf: (path) => this.hostPathOf(path),
        home: SANDBOX_HOME,
        ...(this.sandboxHome
          ? {
              sandboxHome: {
                unshare: this.#options.support.sandboxHome as string,
                keepDir: homeKeepDirectory(),
                user: options.user ?? this.defaultUser,
              },
            }
          : {}),
      },
      options.cwd,
      command,
      args,
    )
    const env =
      isolated || this.sandboxHome ? options.env : { ...options.env, HOME: this.hostPathOf(SANDBOX_HOME) }
    // fd 3 carries the pid handshake; fd 4 (isolated) the user namespace the process joins.
    const userNamespace = isolated ? this.#userNamespace : undefined
    if (isolated && userNamespace === undefined) throw new Error('sandbox user namespace is gone')
    const child = spawn(launch.file, launch.args, {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe', ...(userNamespace === undefined ? [] : [userNamespace])],
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
    this.#closeUserNamespace()
    if (this.#cgroup) {
      await waitFor(() => this.hostPids().length === 0, 5000).catch(() =>
        signalEach(this.hostPids(), 'SIGKILL'),
      )
    }
  }

  #closeUserNamespace(): void {
    if (this.#userNamespace !== undefined) closeSync(this.#userNamespace)
    this.#userNamespace = undefined
  }

  /** Stops everything and removes the cgroups (also those an earlier host made for this sandbox). */
  async destroy(): Promise<void> {
    await this.reclaim()
    await this.stopAll()
    this.#cgroup = undefined
    this.#limitDirs = []
    await removeCgroups(this.#cgroupPaths())
    this.#unmountDisk()
  }
}

/** Removes cgroup directories (those already gone are skipped), waiting up to 500 ms for their last members. */
async function removeCgroups(dirs: string[]): Promise<void> {
  // Killed processes leave the cgroup once the kernel has finished with them; until then rmdir says EBUSY.
  const remaining = new Set(dirs)
  const removeAll = () => {
    for (const dir of remaining) {
      try {
        rmdirSync(dir)
        remaining.delete(dir)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EBUSY') remaining.delete(dir)
      }
    }
    return remaining.size === 0
  }
  await waitFor(removeAll, 500).catch(() => {})
}
