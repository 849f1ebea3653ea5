// What this machine offers, probed once per host: isolation (bubblewrap + nsenter + setpriv as root), the
// freezer (cgroup v2, v1, or signals), where the per-sandbox limits live, and disk images.

import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LocalE2BError, LocalE2BErrorCode } from '../errors.js'
import { enterHelperPath } from './enter-helper.js'
import { canFilterInternet } from './network.js'
import { sudoProgramPath } from './sudo-program.js'

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
  /** The compiled `sudo` and its broker (sudo-program.ts); only with the launcher, which gives root its powers. */
  sudoProgram?: string
  /**
   * Parent cgroup directories that enforce limits (pids, memory, cpu), besides the freezer's: cgroup v1
   * hierarchies on a hybrid machine. Empty when the freezer's cgroup v2 itself carries the controllers.
   */
  limitParents: Partial<Record<LimitController, string>>
  /** True when the freezer's cgroup v2 has the pids, memory and cpu controllers enabled for its children. */
  limitsInFreezerCgroup: boolean
  /** True when a sandbox's disk can be a loop-mounted ext4 image of a fixed size (root, mkfs.ext4, mount). */
  diskImages: boolean
  /** True when a sandbox can get filtered internet access (bubblewrap, root, nft, ip; see network.ts). */
  internetFilter: boolean
  /**
   * Unisolated only: true when each process can get a mount namespace of its own (unprivileged user
   * namespaces and util-linux `unshare`) in which the sandbox's directory is `/home/user`, so that absolute
   * sandbox paths mean the same to commands and code as to the files API. False: processes see the host's
   * paths, their HOME and working directory being the sandbox's directory. The value: the `unshare` program.
   */
  sandboxHome?: string
}

/** cgroup controllers the per-sandbox limits use. */
export type LimitController = 'pids' | 'memory' | 'cpu'

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
  const sudo = helper && support.isolation === 'bubblewrap' ? sudoProgramPath() : undefined
  if (sudo) support.sudoProgram = sudo
  support.internetFilter = support.isolation === 'bubblewrap' && canFilterInternet()
  if (support.isolation === 'none') support.sandboxHome = canBindSandboxHome()
  return support
}

/**
 * Whether the unisolated launch chain (launch.ts SANDBOX_HOME_SCRIPT) works here: a user namespace mapping
 * this user to root, a mount namespace, a tmpfs and a bind there, then a nested user namespace as uid 1000.
 * SANDKEEP_LOCAL_E2B_NO_SANDBOX_HOME=1 plays a machine without it.
 */
function canBindSandboxHome(): string | undefined {
  const unshare = which('unshare')
  if (process.env.SANDKEEP_LOCAL_E2B_NO_SANDBOX_HOME === '1' || !unshare || !existsSync('/home'))
    return undefined
  const probe = spawnSync(
    unshare,
    [
      '--user',
      '--map-root-user',
      '--mount',
      '--propagation',
      'private',
      '--',
      '/bin/sh',
      '-c',
      'mount -t tmpfs tmpfs /home && exec "$0" --user --map-user=1000 --map-group=1000 -- /bin/sh -c \'test $(id -u) = 1000\'',
      unshare,
    ],
    { stdio: 'ignore', timeout: 10_000 },
  )
  return probe.status === 0 ? unshare : undefined
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
      throw new LocalE2BError({
        code: LocalE2BErrorCode.UNSUPPORTED,
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
      internetFilter: false,
    }
  const limitFields = {
    limitParents: {},
    limitsInFreezerCgroup: false,
    diskImages: probeDiskImages(),
    internetFilter: false,
  }
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
