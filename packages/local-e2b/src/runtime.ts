// The processes of one sandbox. With bubblewrap, one long-lived namespace set (pid, mount, net, ipc, uts)
// per sandbox, started once by a tiny init, which every later process enters with nsenter; a server
// started by one command is then reachable on loopback by the next. Every process is placed in the
// sandbox's freezer cgroup before it execs anything, so a pause freezes all of them at once (SIGSTOP of
// the tracked process groups when no freezer is writable).
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { enterHelperPath } from './enter-helper.js'
import { SANDBOX_HOME } from './paths.js'

/** Where the interpreter's kernels are visible inside an isolated sandbox. */
export const SANDBOX_KERNEL_DIR = '/opt/sandkeep/kernels'

/** How pauses are enforced on this machine. */
export type FreezerKind = 'cgroup-v1' | 'cgroup-v2' | 'signals'

/** Machine capabilities, probed once per host. */
export interface RuntimeSupport {
  /** `bubblewrap` when bwrap + nsenter + setpriv are usable, otherwise `none`. */
  isolation: 'bubblewrap' | 'none'
  /** How processes are frozen. */
  freezer: FreezerKind
  /** Parent cgroup directory for sandboxes (when a cgroup freezer is used). */
  cgroupParent?: string
  /** The compiled one-exec launcher (see enter-helper.ts); the shell chain is used without it. */
  enterHelper?: string
}

const SYSTEM_DIRECTORIES = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc']

function which(binary: string): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const candidate = join(dir, binary)
    if (existsSync(candidate)) return candidate
  }
  for (const dir of ['/usr/bin', '/usr/sbin', '/bin', '/sbin']) {
    const candidate = join(dir, binary)
    if (existsSync(candidate)) return candidate
  }
  return undefined
}

/** Probes what this machine offers. `wantIsolation: 'bubblewrap'` throws when it is not available. */
export function probeRuntimeSupport(wantIsolation: 'auto' | 'bubblewrap' | 'none'): RuntimeSupport {
  const support = probeBase(wantIsolation)
  if (support.cgroupParent) removeStaleCgroups(support.cgroupParent)
  const helper = process.env.SANDKEEP_LOCAL_E2B_NO_HELPER === '1' ? undefined : enterHelperPath()
  if (helper) support.enterHelper = helper
  return support
}

/**
 * A host that crashed leaves its sandboxes' cgroups behind. Remove the empty ones older than ten minutes; a
 * younger empty one may belong to another host that is creating a sandbox right now.
 */
function removeStaleCgroups(parent: string): void {
  let names: string[]
  try {
    names = readdirSync(parent, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
  } catch {
    return
  }
  const cutoff = Date.now() - 10 * 60_000
  for (const name of names) {
    const dir = join(parent, name)
    try {
      if (statSync(dir).mtimeMs > cutoff) continue
      if (readFileSync(join(dir, 'cgroup.procs'), 'utf8').trim() !== '') continue
      rmdirSync(dir)
    } catch {}
  }
}

function probeBase(wantIsolation: 'auto' | 'bubblewrap' | 'none'): RuntimeSupport {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0
  let isolation: RuntimeSupport['isolation'] = 'none'
  if (wantIsolation !== 'none') {
    const usable = isRoot && which('bwrap') && which('nsenter') && which('setpriv')
    if (usable) isolation = 'bubblewrap'
    else if (wantIsolation === 'bubblewrap') {
      throw new Error(
        'isolation "bubblewrap" needs root plus bwrap, nsenter and setpriv on PATH (apt-get install bubblewrap util-linux)',
      )
    }
  }
  if (!isRoot) return { isolation, freezer: 'signals' }
  // cgroup v2 first: its freeze needs no controller, and the launcher can fork straight into a v2 cgroup
  // (clone3 CLONE_INTO_CGROUP), whereas joining a cgroup by writing cgroup.procs waits for an RCU grace
  // period (10-20 ms per process on a busy machine). v1's freezer is the fallback. SANDKEEP_LOCAL_E2B_FREEZER
  // (v2 | v1 | signals) forces one, for tests of each path.
  const forced = process.env.SANDKEEP_LOCAL_E2B_FREEZER
  const candidates: Array<[FreezerKind, string]> = []
  const hybrid = '/sys/fs/cgroup/unified'
  const pure = '/sys/fs/cgroup'
  if (forced === undefined || forced === 'v2') {
    if (existsSync(join(hybrid, 'cgroup.procs'))) candidates.push(['cgroup-v2', hybrid])
    else if (existsSync(join(pure, 'cgroup.controllers'))) candidates.push(['cgroup-v2', pure])
  }
  if (forced === undefined || forced === 'v1') candidates.push(['cgroup-v1', '/sys/fs/cgroup/freezer'])
  for (const [kind, root] of candidates) {
    if (!existsSync(join(root, 'cgroup.procs'))) continue
    try {
      const parent = join(root, 'sandkeep')
      mkdirSync(parent, { recursive: true })
      if (kind === 'cgroup-v2' && !existsSync(join(parent, 'cgroup.freeze'))) continue
      return { isolation, freezer: kind, cgroupParent: parent }
    } catch {}
  }
  return { isolation, freezer: 'signals' }
}

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
  /** Host directory made visible read-only at {@link SANDBOX_KERNEL_DIR} (isolated mode). */
  kernelHostDir?: string
  /**
   * Highest pid handed out before (persisted by the host). A cold boot starts a new pid namespace whose pids
   * would restart at 2; continuing above this keeps a restarted process from reusing an old process's pid.
   */
  pidFloor?: () => number
  /** Host file bound read-only over the sandbox's /etc/profile (see {@link SANDBOX_PROFILE}). */
  profilePath?: string
}

/** The sandbox's /etc/profile: PATH plus /etc/profile.d, without the host profile's per-login subshells. */
export const SANDBOX_PROFILE = `# /etc/profile of a sandkeep local-e2b sandbox
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
for i in /etc/profile.d/*.sh; do
  [ -r "$i" ] && . "$i"
done
unset i
`

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

/** /proc entries a capability-less root could still write; bound read-only over the sandbox's /proc. */
const PROC_COVERS = ['/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus', '/proc/acpi']

/** The sandbox's init: announce readiness on fd 4, then idle (bwrap's own pid 1 reaps orphans). */
const READY_INIT = 'echo ready >&4; exec 4>&-; exec sleep infinity'

const HANDSHAKE = 'echo $$ >&3; exec 3>&-; cd -- "$0" || exit 1; exec "$@"'

export class SandboxRuntime {
  readonly #options: SandboxRuntimeOptions
  #initPid: number | undefined
  #init: ChildProcessWithoutNullStreams | undefined
  #booting: Promise<void> | undefined
  readonly #groups = new Set<number>()
  #frozen = false
  #cgroup: string | undefined

  constructor(options: SandboxRuntimeOptions) {
    this.#options = options
  }

  /** True while the sandbox's namespace (or, unisolated, any process) is alive. */
  get booted(): boolean {
    return this.#options.support.isolation === 'bubblewrap' ? this.#initPid !== undefined : true
  }

  get frozen(): boolean {
    return this.#frozen
  }

  /** Host directory backing the sandbox path `/`-relative writable tree. */
  get rootDir(): string {
    return this.#options.rootDir
  }

  /** Host path of a sandbox working directory, for the unisolated fallback. */
  hostPathOf(sandboxPath: string): string {
    return this.#options.rootDir + sandboxPath
  }

  #cgroupDir(): string | undefined {
    const parent = this.#options.support.cgroupParent
    if (!parent) return undefined
    if (!this.#cgroup) {
      const dir = join(parent, this.#options.id)
      mkdirSync(dir, { recursive: true })
      this.#cgroup = dir
    }
    return this.#cgroup
  }

  /** Starts the sandbox's namespace (isolated mode). Idempotent; concurrent callers share one boot. */
  async boot(): Promise<void> {
    if (this.#options.support.isolation !== 'bubblewrap' || this.#initPid !== undefined) {
      this.#cgroupDir()
      return
    }
    this.#booting ??= this.#bootNamespace().finally(() => {
      this.#booting = undefined
    })
    return this.#booting
  }

  async #bootNamespace(): Promise<void> {
    const { rootDir, allowInternet, kernelHostDir } = this.#options
    mkdirSync(join(rootDir, 'home/user'), { recursive: true })
    mkdirSync(join(rootDir, 'tmp'), { recursive: true, mode: 0o1777 })
    const args = [
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--die-with-parent',
      '--hostname',
      'sandbox',
    ]
    if (!allowInternet) args.push('--unshare-net')
    for (const dir of SYSTEM_DIRECTORIES) {
      let stat: ReturnType<typeof lstatSync>
      try {
        stat = lstatSync(dir)
      } catch {
        continue
      }
      if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir)
      else if (stat.isDirectory()) args.push('--ro-bind', dir, dir)
    }
    // The SDK runs every command as `bash -l -c`: a login shell reads /etc/profile, whose `$(id -u)` costs
    // a fork+exec per command. The sandbox gets a lean profile with the same effect for its root user.
    if (this.#options.profilePath) args.push('--ro-bind', this.#options.profilePath, '/etc/profile')
    args.push('--tmpfs', '/home', '--bind', join(rootDir, 'home/user'), SANDBOX_HOME)
    args.push('--bind', join(rootDir, 'tmp'), '/tmp', '--tmpfs', '/var', '--dir', '/var/tmp')
    args.push('--proc', '/proc', '--dev', '/dev')
    // Sandbox processes are uid 0 without capabilities, and uid 0 may still write most sysctls (core_pattern
    // would run a program on the host) and /proc/sysrq-trigger: cover them read-only.
    for (const dir of PROC_COVERS) if (existsSync(dir)) args.push('--ro-bind', dir, dir)
    if (kernelHostDir && existsSync(kernelHostDir)) args.push('--ro-bind', kernelHostDir, SANDBOX_KERNEL_DIR)
    // bwrap reports its child's pid before the child finished building the mount namespace; entering it then
    // would land in a half-built root. The init therefore says `ready` on fd 4 once it runs inside the
    // finished sandbox, and only then may processes enter.
    args.push('--chdir', SANDBOX_HOME, '--info-fd', '3', '--', '/bin/sh', '-c', READY_INIT)
    const cgroup = this.#cgroupDir()
    const [command, commandArgs] = this.#wrapInCgroup(cgroup, 'bwrap', args)
    const init = spawn(command, commandArgs, {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
      detached: true,
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    }) as unknown as ChildProcessWithoutNullStreams
    const readyStream = init.stdio[4] as NodeJS.ReadableStream
    const ready = new Promise<void>((resolve, reject) => {
      let text = ''
      readyStream.on('data', (chunk: Buffer) => {
        text += chunk.toString()
        if (text.includes('ready')) resolve()
      })
      readyStream.on('end', () => {
        if (!text.includes('ready')) reject(new Error(`sandbox init did not start: ${stderr.trim()}`))
      })
    })
    let stderr = ''
    init.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    const infoStream = init.stdio[3] as NodeJS.ReadableStream
    const info = await new Promise<string>((resolve, reject) => {
      let text = ''
      infoStream.on('data', (chunk: Buffer) => {
        text += chunk.toString()
      })
      infoStream.on('end', () => resolve(text))
      init.on('error', reject)
      init.on('exit', (code) => {
        if (!text) reject(new Error(`bubblewrap exited with ${code}: ${stderr.trim()}`))
      })
    })
    const childPid = (JSON.parse(info) as { 'child-pid'?: number })['child-pid']
    if (typeof childPid !== 'number')
      throw new Error(`bubblewrap did not report its child pid: ${stderr.trim()}`)
    await ready
    this.#init = init
    // Without a cgroup, the init's process group is how its descendants are found, frozen and killed.
    if (init.pid !== undefined) {
      const group = init.pid
      this.#groups.add(group)
      init.on('exit', () => this.#groups.delete(group))
    }
    this.#initPid = childPid
    init.on('exit', () => {
      if (this.#init === init) {
        this.#init = undefined
        this.#initPid = undefined
      }
    })
    const floor = this.#options.pidFloor?.() ?? 0
    if (floor > 0) await this.#setLastPid(childPid, floor)
  }

  /** Sets ns_last_pid of the new pid namespace (needs the capabilities sandbox processes lack). */
  async #setLastPid(initPid: number, floor: number): Promise<void> {
    const writer = spawn(
      'nsenter',
      [
        '-t',
        String(initPid),
        // The sandbox's /proc/sys is read-only; the host's is not, and ns_last_pid acts on the writer's pid
        // namespace, so enter only the pid namespace.
        '-p',
        '--',
        '/bin/sh',
        '-c',
        `echo ${Math.floor(floor)} > /proc/sys/kernel/ns_last_pid`,
      ],
      { stdio: 'ignore', env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } },
    )
    await new Promise((resolve) => {
      writer.on('exit', resolve)
      writer.on('error', resolve)
    })
  }

  #wrapInCgroup(cgroup: string | undefined, command: string, args: string[]): [string, string[]] {
    if (!cgroup) return [command, args]
    const procs = join(cgroup, 'cgroup.procs')
    // The shell joins the cgroup and then execs, so every descendant is born inside it (no race with forks).
    return ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', procs, command, ...args]]
  }

  /**
   * Spawns `command args` inside the sandbox with piped stdio, resolving once the process reported its pid
   * (it has then joined the namespaces and the cgroup and is about to exec the command).
   */
  async spawn(command: string, args: string[], options: RuntimeSpawnOptions): Promise<SpawnedProcess> {
    const child = this.spawnNow(command, args, options)
    const pid = await this.#readHandshake(child)
    return { child, pid, hostGroup: child.pid ?? -1 }
  }

  /** Synchronous spawn for the kernel seam; the pid handshake is drained in the background. */
  spawnNow(command: string, args: string[], options: RuntimeSpawnOptions): ChildProcessWithoutNullStreams {
    if (this.#options.support.isolation === 'bubblewrap' && this.#initPid === undefined) {
      throw new Error('sandbox namespace is not running; call boot() first')
    }
    const cgroup = this.#cgroupDir()
    let full: [string, string[]]
    let cwd: string | undefined
    const helper = this.#options.support.enterHelper
    if (helper) {
      const isolated = this.#options.support.isolation === 'bubblewrap'
      full = [
        helper,
        [
          cgroup ?? '-',
          isolated ? String(this.#initPid) : '-',
          isolated ? options.cwd : this.hostPathOf(options.cwd),
          command,
          ...args,
        ],
      ]
      if (!isolated) cwd = this.hostPathOf(SANDBOX_HOME)
    } else if (this.#options.support.isolation === 'bubblewrap') {
      const entered = [
        '-t',
        String(this.#initPid),
        '-m',
        '-p',
        '-n',
        '-i',
        '-u',
        '-r',
        '-w',
        '--',
        'setpriv',
        '--bounding-set=-all',
        '--inh-caps=-all',
        '--no-new-privs',
        '--',
        '/bin/sh',
        '-c',
        HANDSHAKE,
        options.cwd,
        command,
        ...args,
      ]
      full = this.#wrapInCgroup(cgroup, 'nsenter', entered)
    } else {
      full = this.#wrapInCgroup(cgroup, '/bin/sh', [
        '-c',
        HANDSHAKE,
        this.hostPathOf(options.cwd),
        command,
        ...args,
      ])
      cwd = this.hostPathOf(SANDBOX_HOME)
    }
    const env =
      this.#options.support.isolation === 'bubblewrap'
        ? options.env
        : { ...options.env, HOME: this.hostPathOf(SANDBOX_HOME) }
    const child = spawn(full[0], full[1], {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      detached: true,
      env,
      cwd,
    }) as unknown as ChildProcessWithoutNullStreams
    if (child.pid !== undefined) {
      const group = child.pid
      this.#groups.add(group)
      child.on('exit', () => this.#groups.delete(group))
    }
    // Signals meant for the process go to its whole group: the wrapper (nsenter) does not forward them.
    const originalKill = child.kill.bind(child)
    child.kill = (signal?: NodeJS.Signals | number) => {
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null)
        return originalKill(signal)
      try {
        process.kill(-child.pid, signal ?? 'SIGTERM')
        return true
      } catch {
        return originalKill(signal)
      }
    }
    return child
  }

  #readHandshake(child: ChildProcessWithoutNullStreams): Promise<number> {
    const stream = child.stdio[3] as NodeJS.ReadableStream
    // Only the pipe decides: a fast command (`true`) can exit before its pid line is read, and the exit event
    // may come first; the line is still in the pipe, which ends once every writer closed it.
    return new Promise<number>((resolve, reject) => {
      let text = ''
      const onData = (chunk: Buffer) => {
        text += chunk.toString()
        const newline = text.indexOf('\n')
        if (newline >= 0) {
          cleanup()
          const pid = Number.parseInt(text.slice(0, newline), 10)
          if (Number.isFinite(pid)) resolve(pid)
          else reject(new Error('process did not report its pid'))
        }
      }
      const onEnd = () => {
        cleanup()
        // Say why: the wrapper's own complaint (nsenter, setpriv, cd) is on stderr, still buffered.
        const done = () => {
          const stderr = (child.stderr.read() as Buffer | null)?.toString().trim().slice(0, 500) ?? ''
          const status = child.exitCode ?? child.signalCode ?? 'unknown'
          reject(new Error(`process ended before it started (exit ${status})${stderr ? `: ${stderr}` : ''}`))
        }
        if (child.exitCode !== null || child.signalCode !== null) done()
        else {
          const timer = setTimeout(done, 500)
          child.once('exit', () => {
            clearTimeout(timer)
            setImmediate(done)
          })
        }
      }
      const onError = (error: Error) => {
        cleanup()
        reject(error)
      }
      const cleanup = () => {
        stream.off('data', onData)
        stream.off('end', onEnd)
        child.off('error', onError)
      }
      stream.on('data', onData)
      stream.on('end', onEnd)
      child.on('error', onError)
    })
  }

  /** Host pids of every process of the sandbox (the cgroup's members, or the tracked groups' members). */
  hostPids(): number[] {
    const cgroup = this.#cgroup
    if (cgroup) {
      try {
        return readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number)
      } catch {
        return []
      }
    }
    return processesInGroups(
      new Set([...this.#groups, ...(this.#init?.pid === undefined ? [] : [this.#init.pid])]),
    )
  }

  /** Freezes every process of the sandbox; resolves once the kernel reports them frozen. */
  async freeze(): Promise<void> {
    if (this.#frozen) return
    const { freezer } = this.#options.support
    const cgroup = this.#cgroup
    if (freezer === 'cgroup-v1' && cgroup) {
      writeFileSync(join(cgroup, 'freezer.state'), 'FROZEN')
      await this.#waitFor(() => readFileSync(join(cgroup, 'freezer.state'), 'utf8').trim() === 'FROZEN')
    } else if (freezer === 'cgroup-v2' && cgroup) {
      writeFileSync(join(cgroup, 'cgroup.freeze'), '1')
      await this.#waitFor(() => /frozen 1/.test(readFileSync(join(cgroup, 'cgroup.events'), 'utf8')))
    } else {
      this.#signalAll('SIGSTOP')
    }
    this.#frozen = true
  }

  /** Thaws the sandbox. */
  async thaw(): Promise<void> {
    if (!this.#frozen) return
    const { freezer } = this.#options.support
    const cgroup = this.#cgroup
    if (freezer === 'cgroup-v1' && cgroup) writeFileSync(join(cgroup, 'freezer.state'), 'THAWED')
    else if (freezer === 'cgroup-v2' && cgroup) writeFileSync(join(cgroup, 'cgroup.freeze'), '0')
    else this.#signalAll('SIGCONT')
    this.#frozen = false
  }

  #signalAll(signal: NodeJS.Signals): void {
    if (this.#initPid !== undefined) {
      try {
        process.kill(this.#initPid, signal)
      } catch {}
    }
    for (const group of this.#groups) {
      try {
        process.kill(-group, signal)
      } catch {}
    }
  }

  async #waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!condition()) {
      if (Date.now() > deadline) throw new Error('timed out waiting for the freezer')
      await sleep(1)
    }
  }

  /** Kills every process of the sandbox (and its namespace); the next spawn needs a new boot(). */
  async stopAll(): Promise<void> {
    const pids = new Set(this.hostPids())
    if (this.#initPid !== undefined) pids.add(this.#initPid)
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    for (const group of this.#groups) {
      try {
        process.kill(-group, 'SIGKILL')
      } catch {}
    }
    this.#init?.kill('SIGKILL')
    // Killed processes of a frozen cgroup only die once thawed.
    await this.thaw()
    this.#initPid = undefined
    this.#init = undefined
    if (this.#cgroup) {
      const cgroup = this.#cgroup
      await this.#waitFor(() => this.hostPids().length === 0, 5000).catch(() => {
        for (const pid of this.hostPids()) {
          try {
            process.kill(pid, 'SIGKILL')
          } catch {}
        }
      })
      void cgroup
    }
  }

  /** Stops everything and removes the cgroup. */
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
      await this.#waitFor(removed, 500).catch(() => {})
    }
  }

  /** CPU time (clock ticks, user + system) used so far by the sandbox's live processes. */
  cpuTicks(): number {
    let total = 0
    for (const pid of this.hostPids()) total += processCpuTicks(pid)
    return total
  }
}

/** Live processes whose process group is one of `groups` (scan of /proc; the fallback without a cgroup). */
function processesInGroups(groups: Set<number>): number[] {
  if (groups.size === 0) return []
  const pids: number[] = []
  let names: string[]
  try {
    names = readdirSync('/proc')
  } catch {
    return [...groups]
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      // After the command: state, ppid, pgrp.
      if (fields[0] !== 'Z' && groups.has(Number(fields[2]))) pids.push(Number(name))
    } catch {}
  }
  return pids
}

/** utime + stime of one process in clock ticks (0 when it is gone). */
export function processCpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // After the command field: state is field 3, utime 14, stime 15 (1-based in proc(5)).
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0
  }
}
