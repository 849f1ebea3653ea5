// The processes of one sandbox. With bubblewrap, one long-lived namespace set (pid, mount, net, ipc, uts)
// per sandbox, started once by a tiny init, which every later process enters with nsenter; a server
// started by one command is then reachable on loopback by the next. Every process is placed in the
// sandbox's freezer cgroup before it execs anything, so a pause freezes all of them at once (SIGSTOP of
// the tracked process groups when no freezer is writable).
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { SandkeepError, SandkeepErrorCode } from '@sandkeep/core'
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
  /**
   * Parent cgroup directories that enforce limits (pids, memory, cpu), besides the freezer's: cgroup v1
   * hierarchies on a hybrid machine. Empty when the freezer's cgroup v2 itself carries the controllers.
   */
  limitParents: Partial<Record<LimitController, string>>
  /** True when the freezer's cgroup v2 has the pids, memory and cpu controllers enabled for its children. */
  limitsInFreezerCgroup: boolean
  /** True when a sandbox's disk can be a loop-mounted ext4 image of a fixed size (root, mkfs.ext4, mount). */
  diskImages: boolean
}

/** cgroup controllers the per-sandbox limits use. */
export type LimitController = 'pids' | 'memory' | 'cpu'

/** Resource limits of one sandbox; the kernel answers a sandbox past one (EAGAIN, OOM kill, ENOSPC). */
export interface SandboxLimits {
  /** Most processes and threads at once (cgroup pids.max). */
  pids: number
  /** Memory in bytes (cgroup memory.max / memory.limit_in_bytes), swap excluded. */
  memoryBytes: number
  /** CPU weight, 1 to 10000, 100 = an equal share (cgroup cpu.weight; cpu.shares = weight * 1024 / 100 on v1). */
  cpuWeight: number
  /** Size in bytes of the disk holding /home/user and /tmp (a loop-mounted ext4 image). */
  diskBytes: number
  /** Size in bytes of each of the sandbox's private tmpfs /var/tmp and /dev/shm. */
  tmpfsBytes: number
}

/** Defaults: E2B's default sandbox size (1 GiB of memory) and a 2 GiB disk. */
export const DEFAULT_LIMITS: SandboxLimits = {
  pids: 512,
  memoryBytes: 1024 * 1024 * 1024,
  cpuWeight: 100,
  diskBytes: 2 * 1024 * 1024 * 1024,
  tmpfsBytes: 256 * 1024 * 1024,
}

/**
 * Host uid and gid of a sandbox's `user`: far above any real account (Debian hands out from 1000, and
 * subordinate id ranges of user namespaces start at 100000 with 65536 ids each), so a sandbox process owns
 * nothing of the host's.
 */
export const SANDBOX_USER_ID = 1_500_000

/** Who a sandbox's processes run as: E2B's `user`, or uid 0 without capabilities when the template asks. */
export type SandboxUser = 'user' | 'root'

const SYSTEM_DIRECTORIES = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']

/**
 * Entries of the host's /etc a sandbox sees: the dynamic loader's cache, TLS roots, alternatives (python3,
 * editors), the interpreters' site configuration, name-service tables, time zone. Nothing with credentials.
 */
const HOST_ETC_ALLOWED = [
  'alternatives',
  'bash.bashrc',
  'ca-certificates',
  'ca-certificates.conf',
  'debian_version',
  'ethertypes',
  'gai.conf',
  'host.conf',
  'inputrc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'locale.alias',
  'localtime',
  'magic',
  'magic.mime',
  'mime.types',
  'networks',
  'os-release',
  'profile.d',
  'protocols',
  'python3',
  'services',
  'shells',
  'ssl',
  'terminfo',
  'timezone',
]

/** The host /etc entries bound into a sandbox (the allowed ones that exist, plus python3.X directories). */
function hostEtcEntries(): string[] {
  let names: string[]
  try {
    names = readdirSync('/etc')
  } catch {
    return []
  }
  return names.filter((name) => HOST_ETC_ALLOWED.includes(name) || /^python3\.\d+$/.test(name))
}

/** The generated part of a sandbox's /etc: its own users, hosts and name service, the lean profile. */
export function sandboxEtcFiles(): Record<string, string> {
  const id = SANDBOX_USER_ID
  let resolv = 'nameserver 127.0.0.1\n'
  try {
    // Name servers only: the host's file may carry search domains and options that say where it runs.
    const servers = readFileSync('/etc/resolv.conf', 'utf8')
      .split('\n')
      .filter((line) => /^nameserver\s/.test(line))
    if (servers.length > 0) resolv = `${servers.join('\n')}\n`
  } catch {}
  return {
    passwd: [
      'root:x:0:0:root:/root:/bin/bash',
      // A root template still names its files' owner `user` (the host may have created them as it).
      `user:x:${id}:${id}:user:/home/user:/bin/bash`,
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
      '',
    ].join('\n'),
    group: ['root:x:0:', `user:x:${id}:`, 'nogroup:x:65534:', ''].join('\n'),
    hosts: '127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n',
    hostname: 'sandbox\n',
    'resolv.conf': resolv,
    'nsswitch.conf':
      'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n',
    profile: SANDBOX_PROFILE,
  }
}

/** First file descriptor of the files handed to bwrap (0-2 stdio, 3 info, 4 ready). */
const DATA_FD_BASE = 5

/** `sh -c` script: join the N cgroups named first (their cgroup.procs files), then exec the rest. */
const JOIN_CGROUPS =
  'n=$0; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 126; shift; n=$((n - 1)); done; exec "$@"'

function isMountPoint(path: string): boolean {
  try {
    return statSync(path).dev !== statSync(dirname(path)).dev
  } catch {
    return false
  }
}

/** The disk image of a sandbox, beside its directory. */
function diskImageOf(rootDir: string): string {
  return `${rootDir}.img`
}

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
  for (const parent of Object.values(support.limitParents)) removeStaleCgroups(parent)
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
    // SANDKEEP_LOCAL_E2B_NO_BWRAP=1 plays a machine without bubblewrap, for the test of the refusal below.
    const bwrap = process.env.SANDKEEP_LOCAL_E2B_NO_BWRAP === '1' ? undefined : which('bwrap')
    const usable = isRoot && bwrap && which('nsenter') && which('setpriv')
    if (usable) isolation = 'bubblewrap'
    else {
      // Unisolated, sandbox code runs as this user on this machine: only when asked for by name.
      throw new SandkeepError({
        code: SandkeepErrorCode.CAPABILITY_UNSUPPORTED,
        message: `isolation "${wantIsolation}" needs root plus bwrap, nsenter and setpriv on PATH (apt-get install bubblewrap util-linux); to run sandboxes unisolated on this machine anyway, pass isolation: 'none'`,
      })
    }
  }
  if (!isRoot)
    return {
      isolation,
      freezer: 'signals',
      limitParents: {},
      limitsInFreezerCgroup: false,
      diskImages: false,
    }
  const limitFields = { limitParents: {}, limitsInFreezerCgroup: false, diskImages: probeDiskImages() }
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
      return {
        isolation,
        freezer: kind,
        cgroupParent: parent,
        ...limitFields,
        ...probeLimits(kind, root, parent),
      }
    } catch {}
  }
  return { isolation, freezer: 'signals', ...limitFields, ...probeLimits(undefined, undefined, undefined) }
}

const LIMIT_CONTROLLERS: LimitController[] = ['pids', 'memory', 'cpu']

/**
 * Where the limits live. A pure cgroup v2 machine: the freezer's own cgroup, once the controllers are enabled
 * for its children. A hybrid machine (v2 mounted beside v1, the controllers bound to v1): one v1 cgroup per
 * controller, which every process joins besides the freezer's.
 */
function probeLimits(
  freezer: FreezerKind | undefined,
  root: string | undefined,
  parent: string | undefined,
): Pick<RuntimeSupport, 'limitParents' | 'limitsInFreezerCgroup'> {
  if (freezer === 'cgroup-v2' && root && parent) {
    try {
      const available = readFileSync(join(root, 'cgroup.controllers'), 'utf8').split(/\s+/)
      if (LIMIT_CONTROLLERS.every((name) => available.includes(name))) {
        for (const dir of [root, parent])
          writeFileSync(join(dir, 'cgroup.subtree_control'), '+pids +memory +cpu')
        return { limitParents: {}, limitsInFreezerCgroup: true }
      }
    } catch {}
  }
  const limitParents: Partial<Record<LimitController, string>> = {}
  for (const name of LIMIT_CONTROLLERS) {
    const hierarchy = join('/sys/fs/cgroup', name)
    if (!existsSync(join(hierarchy, 'cgroup.procs'))) continue
    try {
      const dir = join(hierarchy, 'sandkeep')
      mkdirSync(dir, { recursive: true })
      limitParents[name] = dir
    } catch {}
  }
  return { limitParents, limitsInFreezerCgroup: false }
}

function probeDiskImages(): boolean {
  return Boolean(which('mkfs.ext4') && which('mount') && which('umount') && existsSync('/dev/loop-control'))
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
  /** Who processes run as (isolated mode; default `user`). */
  user?: SandboxUser
  /** Resource limits (default {@link DEFAULT_LIMITS}). */
  limits?: SandboxLimits
  /** Where warnings go. */
  logger?: (line: string) => void
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
  readonly #limitDirs: string[] = []
  #diskMounted = false

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
      this.#applyLimits(dir)
    }
    return this.#cgroup
  }

  /** Limits through the cgroups; a machine without a controller keeps going without that limit. */
  #applyLimits(freezerDir: string): void {
    const { support } = this.#options
    const limits = this.#limits()
    const write = (dir: string, file: string, value: string) => {
      try {
        writeFileSync(join(dir, file), value)
      } catch (error) {
        this.#options.logger?.(
          `[sandkeep-local-e2b] could not set ${file} of sandbox ${this.#options.id}: ${(error as Error).message}`,
        )
      }
    }
    if (support.limitsInFreezerCgroup) {
      write(freezerDir, 'pids.max', String(limits.pids))
      write(freezerDir, 'memory.max', String(limits.memoryBytes))
      // Swap would let a sandbox past its memory limit slow the whole machine down instead of being killed.
      if (existsSync(join(freezerDir, 'memory.swap.max'))) write(freezerDir, 'memory.swap.max', '0')
      write(freezerDir, 'cpu.weight', String(limits.cpuWeight))
      return
    }
    for (const [controller, parent] of Object.entries(support.limitParents) as Array<
      [LimitController, string]
    >) {
      const dir = join(parent, this.#options.id)
      try {
        mkdirSync(dir, { recursive: true })
      } catch {
        continue
      }
      this.#limitDirs.push(dir)
      if (controller === 'pids') write(dir, 'pids.max', String(limits.pids))
      else if (controller === 'memory') {
        write(dir, 'memory.limit_in_bytes', String(limits.memoryBytes))
        if (existsSync(join(dir, 'memory.memsw.limit_in_bytes')))
          write(dir, 'memory.memsw.limit_in_bytes', String(limits.memoryBytes))
      } else write(dir, 'cpu.shares', String(Math.max(2, Math.round((limits.cpuWeight * 1024) / 100))))
    }
  }

  #limits(): SandboxLimits {
    return this.#options.limits ?? DEFAULT_LIMITS
  }

  /** Host uid/gid of the sandbox's processes (isolated mode), undefined for root. */
  get owner(): { uid: number; gid: number } | undefined {
    if (this.#options.support.isolation !== 'bubblewrap' || this.#options.user === 'root') return undefined
    return { uid: SANDBOX_USER_ID, gid: SANDBOX_USER_ID }
  }

  /** Cgroup `cgroup.procs` files a process joins: the freezer's first, then the limit hierarchies'. */
  #procsFiles(cgroup: string | undefined): string[] {
    if (!cgroup) return []
    return [cgroup, ...this.#limitDirs].map((dir) => join(dir, 'cgroup.procs'))
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
    this.#ensureDisk()
    mkdirSync(join(rootDir, 'home/user'), { recursive: true })
    mkdirSync(join(rootDir, 'tmp'), { recursive: true })
    // mkdir's mode passes through the umask; /tmp must be world-writable and sticky for `user`.
    chmodSync(join(rootDir, 'tmp'), 0o1777)
    const owner = this.owner
    if (owner) chownSync(join(rootDir, 'home/user'), owner.uid, owner.gid)
    const limits = this.#limits()
    const args = [
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--die-with-parent',
      '--cap-drop',
      'ALL',
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
    // Files handed to bwrap through pipes (--ro-bind-data) instead of host paths: nothing in the sandbox's
    // mount table then names a host directory.
    const data: string[] = []
    const bindData = (content: string, destination: string) => {
      args.push('--perms', '0644', '--ro-bind-data', String(DATA_FD_BASE + data.length), destination)
      data.push(content)
    }
    // A minimal /etc: the generated identity files plus what the interpreters and TLS need from the host's,
    // never shadow, gshadow, ssh keys or the host's package-manager credentials (pip.conf, npmrc, gitconfig).
    args.push('--tmpfs', '/etc')
    for (const [name, content] of Object.entries(sandboxEtcFiles())) {
      bindData(content, `/etc/${name}`)
    }
    for (const name of hostEtcEntries()) {
      const path = join('/etc', name)
      const stat = lstatSync(path)
      if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path)
      else args.push('--ro-bind', path, path)
    }
    args.push('--remount-ro', '/etc')
    // The disk image holds home and /tmp: its mount root is the image, so the binds name `/home/user` and
    // `/tmp` of the image, not the host directory they live in.
    args.push('--tmpfs', '/home', '--bind', join(rootDir, 'home/user'), SANDBOX_HOME)
    args.push('--bind', join(rootDir, 'tmp'), '/tmp', '--tmpfs', '/var')
    args.push('--perms', '1777', '--size', String(limits.tmpfsBytes), '--tmpfs', '/var/tmp')
    args.push('--proc', '/proc', '--dev', '/dev')
    args.push('--perms', '1777', '--size', String(limits.tmpfsBytes), '--tmpfs', '/dev/shm')
    // Sandbox processes lack every capability, and a root template's uid 0 may still write most sysctls
    // (core_pattern would run a program on the host) and /proc/sysrq-trigger: cover them read-only.
    for (const dir of PROC_COVERS) if (existsSync(dir)) args.push('--ro-bind', dir, dir)
    if (kernelHostDir && existsSync(kernelHostDir)) {
      for (const entry of readdirSync(kernelHostDir, { withFileTypes: true })) {
        if (entry.isFile())
          bindData(
            readFileSync(join(kernelHostDir, entry.name), 'utf8'),
            `${SANDBOX_KERNEL_DIR}/${entry.name}`,
          )
      }
    }
    // The root itself is bwrap's tmpfs: read-only too, so that even a root template writes only its own dirs.
    args.push('--remount-ro', '/')
    // bwrap reports its child's pid before the child finished building the mount namespace; entering it then
    // would land in a half-built root. The init therefore says `ready` on fd 4 once it runs inside the
    // finished sandbox, and only then may processes enter.
    args.push('--chdir', SANDBOX_HOME, '--info-fd', '3', '--', '/bin/sh', '-c', READY_INIT)
    const cgroup = this.#cgroupDir()
    const [command, commandArgs] = this.#wrapInCgroup(cgroup, 'bwrap', args)
    const init = spawn(command, commandArgs, {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe', ...data.map(() => 'pipe' as const)],
      detached: true,
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    }) as unknown as ChildProcessWithoutNullStreams
    // Each file is far below a pipe's buffer; bwrap reads them while it builds the mount namespace.
    data.forEach((content, index) => {
      const stream = init.stdio[DATA_FD_BASE + index] as NodeJS.WritableStream
      stream.on('error', () => {})
      stream.end(content)
    })
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
    const procs = this.#procsFiles(cgroup)
    if (procs.length === 0) return [command, args]
    // The shell joins the cgroups and then execs, so every descendant is born inside them (no race with forks).
    return ['/bin/sh', ['-c', JOIN_CGROUPS, String(procs.length), ...procs, command, ...args]]
  }

  /**
   * Gives the sandbox a disk of its own size: an ext4 image loop-mounted over `rootDir`, so that a full disk
   * is the sandbox's ENOSPC and not the host's. The image sits beside `rootDir` and outlives pauses, cold
   * boots and host restarts; {@link removeStorage} deletes it.
   */
  #ensureDisk(): void {
    const { rootDir, support } = this.#options
    const bytes = this.#limits().diskBytes
    if (support.isolation !== 'bubblewrap' || !support.diskImages || bytes <= 0) return
    if (isMountPoint(rootDir)) {
      this.#diskMounted = true
      return
    }
    const image = diskImageOf(rootDir)
    if (!existsSync(image)) {
      // A sandbox made before disk images existed keeps its files on the host's disk rather than losing them.
      const home = join(rootDir, 'home/user')
      if (existsSync(home) && readdirSync(home).length > 0) return
      writeFileSync(image, '')
      truncateSync(image, bytes)
      execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', '-O', '^has_journal', '-E', 'nodiscard', image], {
        stdio: 'ignore',
        timeout: 30_000,
      })
    }
    mkdirSync(rootDir, { recursive: true })
    execFileSync('mount', ['-o', 'loop,nosuid,nodev', image, rootDir], { stdio: 'pipe', timeout: 30_000 })
    this.#diskMounted = true
  }

  #unmountDisk(): void {
    const { rootDir } = this.#options
    if (!this.#diskMounted && !(existsSync(diskImageOf(rootDir)) && isMountPoint(rootDir))) return
    this.#diskMounted = false
    try {
      execFileSync('umount', [rootDir], { stdio: 'ignore', timeout: 30_000 })
    } catch {
      // A process still holds a file open: detach now, the kernel frees the loop device once it is released.
      try {
        execFileSync('umount', ['-l', rootDir], { stdio: 'ignore', timeout: 30_000 })
      } catch {}
    }
  }

  /** Deletes the sandbox's files (its directory and disk image); call after {@link destroy}. */
  removeStorage(): void {
    this.#unmountDisk()
    const { rootDir } = this.#options
    // Never recurse into a still-mounted image: that would wipe it without freeing anything.
    if (!isMountPoint(rootDir)) rmSync(rootDir, { recursive: true, force: true })
    rmSync(diskImageOf(rootDir), { force: true })
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
      const procs = this.#procsFiles(cgroup).map(dirname)
      const owner = this.owner
      full = [
        helper,
        [
          procs.length > 0 ? procs.join(':') : '-',
          isolated ? String(this.#initPid) : '-',
          owner ? `${owner.uid}:${owner.gid}` : '-',
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
        ...(this.owner ? [`--reuid=${this.owner.uid}`, `--regid=${this.owner.gid}`, '--clear-groups'] : []),
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
    for (const dir of this.#limitDirs.splice(0)) {
      try {
        rmdirSync(dir)
      } catch {}
    }
    this.#unmountDisk()
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
