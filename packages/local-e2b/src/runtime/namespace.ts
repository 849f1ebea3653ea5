// The sandbox's long-lived namespace set (pid, mount, net, ipc, uts): the bubblewrap command line (read-only
// system, minimal /etc, home and /tmp from the sandbox's disk, private tmpfs, covered /proc entries, the
// kernels) and the start of its init, which every later process enters.
import { type ChildProcess, type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import { SANDBOX_HOME, SANDBOX_ROOT_HOME } from '../paths.js'
import { hostEtcEntries, SANDBOX_ALIAS_DIR, sandboxEtcFiles } from './etc-files.js'
import { SANDBOX_SUDO_PATH } from './sudo-program.js'

/** Where the interpreter's kernels are visible inside an isolated sandbox. */
export const SANDBOX_KERNEL_DIR = '/opt/sandkeep/kernels'

const SYSTEM_DIRECTORIES = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']

/** /proc entries a capability-less root could still write; bound read-only over the sandbox's /proc. */
const PROC_COVERS = ['/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus', '/proc/acpi']

/** bwrap's file descriptors: 3 its info (the child pid), 4 the init's `ready`, 5 its arguments. */
const INFO_FD = 3
const READY_FD = 4
const ARGS_FD = 5
/** First file descriptor of the files handed to bwrap. */
const DATA_FD_BASE = 6

/** The sandbox's init: announce readiness on fd 4, then idle (bwrap's own pid 1 reaps orphans). */
const READY_INIT = `echo ready >&${READY_FD}; exec ${READY_FD}>&-; exec sleep infinity`

/**
 * bwrap's own command line: its options come through {@link ARGS_FD} (bwrap wants only the command itself
 * on the command line). bwrap's pid 1 inside the sandbox is a fork of it, whose /proc/1/cmdline every sandbox
 * process can read, and the options name host paths.
 */
export const BWRAP_COMMAND_LINE = ['--args', String(ARGS_FD), '--', '/bin/sh', '-c', READY_INIT]

/** What the namespace is built from. */
export interface NamespaceSpec {
  /** Host directory holding the sandbox's `home/user` and `tmp`. */
  rootDir: string
  /** Host directory made visible read-only at {@link SANDBOX_KERNEL_DIR}. */
  kernelHostDir: string | undefined
  /** Size of each private tmpfs (/var/tmp, /dev/shm). */
  tmpfsBytes: number
  /** This boot's id, what the sandbox reads at {@link BOOT_ID_PATH} (a VM's kernel makes one per boot). */
  bootId: string
  /** The compiled `sudo` (sudo-program.ts), bound at {@link SANDBOX_SUDO_PATH}; none without a compiler. */
  sudoProgram?: Buffer
}

/**
 * /proc files that describe the host machine, with what the sandbox reads instead: no block device (the
 * sandbox's disk is a directory to it), and a kernel command line that names nothing of the host's.
 */
const MASKED_PROC_FILES: Record<string, string> = {
  '/proc/partitions': 'major minor  #blocks  name\n\n',
  '/proc/cmdline': 'console=hvc0 quiet\n',
}

/** Where Linux tells the id of the running boot; the sandbox shares the host's kernel, so it is covered. */
export const BOOT_ID_PATH = '/proc/sys/kernel/random/boot_id'

/** bwrap's options (sent through ARGS_FD), and the contents of the files it reads from DATA_FD_BASE up. */
export function bwrapArguments(spec: NamespaceSpec): { args: string[]; data: Array<string | Buffer> } {
  // A network namespace of its own always: with internet access, network.ts connects it to the host.
  const args = ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--die-with-parent']
  args.push('--cap-drop', 'ALL', '--hostname', 'sandbox')
  for (const dir of SYSTEM_DIRECTORIES) bindHostPath(args, dir, false)
  // Files handed to bwrap through pipes (--ro-bind-data) instead of host paths: nothing in the sandbox's
  // mount table then names a host directory.
  const data: Array<string | Buffer> = []
  const bindData = (content: string | Buffer, destination: string, mode = '0644') => {
    args.push('--perms', mode, '--ro-bind-data', String(DATA_FD_BASE + data.length), destination)
    data.push(content)
  }
  // A minimal /etc: the generated identity files plus what the interpreters and TLS need from the host's,
  // never shadow, gshadow, ssh keys or the host's package-manager credentials (pip.conf, npmrc, gitconfig).
  args.push('--tmpfs', '/etc')
  for (const [name, content] of Object.entries(sandboxEtcFiles())) bindData(content, `/etc/${name}`)
  for (const name of hostEtcEntries()) bindHostPath(args, join('/etc', name), true)
  args.push('--remount-ro', '/etc')
  // The disk image holds home and /tmp: its mount root is the image, so the binds name `/home/user` and
  // `/tmp` of the image, not the host directory they live in.
  args.push('--tmpfs', '/home', '--bind', join(spec.rootDir, 'home/user'), SANDBOX_HOME)
  args.push('--bind', join(spec.rootDir, 'root'), SANDBOX_ROOT_HOME)
  args.push('--bind', join(spec.rootDir, 'tmp'), '/tmp', '--tmpfs', '/var')
  args.push('--perms', '1777', '--size', String(spec.tmpfsBytes), '--tmpfs', '/var/tmp')
  args.push('--proc', '/proc', '--dev', '/dev')
  args.push('--perms', '1777', '--size', String(spec.tmpfsBytes), '--tmpfs', '/dev/shm')
  // Sandbox processes lack every capability, and a root template's uid 0 may still write most sysctls
  // (core_pattern would run a program on the host) and /proc/sysrq-trigger: cover them read-only.
  for (const dir of PROC_COVERS) if (existsSync(dir)) args.push('--ro-bind', dir, dir)
  // E2B's sandboxes are VMs, each boot with an id of its own; here the kernel is the host's, whose boot id
  // survives a cold boot. A file of the boot's own, read-only like the rest of /proc/sys, stands in for it.
  if (existsSync(BOOT_ID_PATH)) bindData(`${spec.bootId}\n`, BOOT_ID_PATH, '0444')
  // The host's block devices and its kernel's command line (which names the host's boot, its init and
  // options) are the machine's, not the sandbox's: files of the sandbox's own stand in for them.
  for (const [path, content] of Object.entries(MASKED_PROC_FILES))
    if (existsSync(path)) bindData(content, path, '0444')
  const { kernelHostDir } = spec
  if (kernelHostDir && existsSync(kernelHostDir)) {
    for (const entry of readdirSync(kernelHostDir, { withFileTypes: true })) {
      if (!entry.isFile()) continue
      bindData(readFileSync(join(kernelHostDir, entry.name), 'utf8'), `${SANDBOX_KERNEL_DIR}/${entry.name}`)
    }
  }
  args.push('--perms', '0755', '--dir', SANDBOX_ALIAS_DIR)
  // E2B's base template runs `python`; a host with only python3 gets the name as a link.
  if (!existsSync('/usr/bin/python') && existsSync('/usr/bin/python3')) {
    args.push('--symlink', '/usr/bin/python3', `${SANDBOX_ALIAS_DIR}/python`)
  }
  if (spec.sudoProgram) {
    bindData(spec.sudoProgram, SANDBOX_SUDO_PATH, '0755')
    // A host's own sudo would win on PATH and cannot work inside (setuid is void under no_new_privs).
    if (existsSync('/usr/bin/sudo')) bindData(spec.sudoProgram, '/usr/bin/sudo', '0755')
  }
  // The root itself is bwrap's tmpfs: read-only too, so that even a root template writes only its own dirs.
  args.push('--remount-ro', '/')
  // bwrap reports its child's pid before the child finished building the mount namespace; entering it then
  // would land in a half-built root. The init therefore says `ready` on fd 4 once it runs inside the
  // finished sandbox, and only then may processes enter.
  args.push('--chdir', SANDBOX_HOME, '--info-fd', String(INFO_FD))
  return { args, data }
}

/** Binds a host path at the same place, read-only (a symlink is recreated); `mustExist`: throw when absent. */
function bindHostPath(args: string[], path: string, mustExist: boolean): void {
  let stat: ReturnType<typeof lstatSync>
  try {
    stat = lstatSync(path)
  } catch (error) {
    if (mustExist) throw error
    return
  }
  if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path)
  else if (mustExist || stat.isDirectory()) args.push('--ro-bind', path, path)
}

/** What bwrap reads besides its command line: its options and the data files. */
export interface NamespaceInputs {
  /** bwrap's options (bwrapArguments), sent through {@link ARGS_FD}. */
  args: string[]
  /** Contents of the files bound from fds {@link DATA_FD_BASE} and up. */
  data: Array<string | Buffer>
}

/**
 * Spawns `command commandArgs` (bwrap with {@link BWRAP_COMMAND_LINE}, possibly wrapped to join cgroups
 * first), feeds it its arguments and data files and waits until the init runs inside the finished namespace.
 * Resolves with the spawned process and the init's pid.
 */
export async function startNamespace(
  command: string,
  commandArgs: string[],
  inputs: NamespaceInputs,
): Promise<{ init: ChildProcessWithoutNullStreams; initPid: number }> {
  const { data } = inputs
  const init = spawn(command, commandArgs, {
    // stderr, info, ready and the options as pipes, then one pipe per data file.
    stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe', 'pipe', ...data.map(() => 'pipe' as const)],
    detached: true,
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
  }) as unknown as ChildProcessWithoutNullStreams
  // A spawn that failed (EMFILE/ENFILE when the host is out of descriptors, EAGAIN out of processes) has no
  // pid and no pipes; its error comes as an event.
  if (init.pid === undefined) throw await spawnFailure(init, 'the sandbox namespace (bubblewrap)')
  // Each file is far below a pipe's buffer; bwrap reads them while it builds the mount namespace.
  const feed = (fd: number, content: string | Buffer) => {
    const stream = init.stdio[fd] as NodeJS.WritableStream
    stream.on('error', () => {})
    stream.end(content)
  }
  feed(ARGS_FD, inputs.args.map((arg) => `${arg}\0`).join(''))
  for (const [index, content] of data.entries()) feed(DATA_FD_BASE + index, content)
  let stderr = ''
  init.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const ready = readUntilEnd(init.stdio[READY_FD] as NodeJS.ReadableStream, 'ready').then((text) => {
    if (!text.includes('ready')) throw new Error(`sandbox init did not start: ${stderr.trim()}`)
  })
  // Awaited below once the pid is known; an init that fails first must not leave it unhandled.
  ready.catch(() => {})
  const info = await new Promise<string>((resolve, reject) => {
    let text = ''
    const stream = init.stdio[INFO_FD] as NodeJS.ReadableStream
    stream.on('data', (chunk: Buffer) => {
      text += chunk.toString()
    })
    init.on('error', reject)
    // bwrap closes the info fd when it fails too: wait for its exit then, so that its complaint is read.
    stream.on('end', () => {
      if (text) return resolve(text)
      const failed = () => reject(new Error(`bubblewrap exited with ${init.exitCode}: ${stderr.trim()}`))
      if (init.exitCode !== null) failed()
      else init.once('exit', failed)
    })
  })
  const initPid = (JSON.parse(info) as { 'child-pid'?: number })['child-pid']
  if (typeof initPid !== 'number')
    throw new Error(`bubblewrap did not report its child pid: ${stderr.trim()}`)
  await ready
  return { init, initPid }
}

/** A spawn that failed to start: its error, said as what the host ran short of when it is a resource. */
export async function spawnFailure(child: ChildProcess, what: string): Promise<Error> {
  const error = await new Promise<NodeJS.ErrnoException>((resolve) => {
    child.once('error', resolve)
    // Spawn errors are emitted on the next tick; an error that never comes must not hang the create.
    setTimeout(() => resolve(Object.assign(new Error('spawn failed'), { code: 'UNKNOWN' })), 1000).unref()
  })
  return new HostResourceError(what, error)
}

/**
 * The host ran out of something every new process needs (file descriptors, processes): nothing wrong with
 * the request, retry once connections or sandboxes are closed. `code` is the errno name.
 */
export class HostResourceError extends Error {
  override readonly name = 'HostResourceError'
  readonly code: string

  constructor(what: string, cause: NodeJS.ErrnoException) {
    const code = cause.code ?? 'UNKNOWN'
    const short = RESOURCE_ERRNOS[code]
    super(
      short
        ? `could not start ${what}: the host is out of ${short} (${code}); close connections or sandboxes, or raise the limit (ulimit -n / -u), and retry`
        : `could not start ${what}: ${cause.message}`,
      { cause },
    )
    this.code = code
  }

  /** True when the host ran short of a resource (a retry can succeed), not when the program is missing. */
  get isResource(): boolean {
    return this.code in RESOURCE_ERRNOS
  }
}

/** errno names of a host short of resources, with what it is short of. */
const RESOURCE_ERRNOS: Record<string, string> = {
  EMFILE: 'file descriptors',
  ENFILE: 'file descriptors (system-wide)',
  EAGAIN: 'processes or memory',
  ENOMEM: 'memory',
}

/** Reads a stream until `marker` shows up (resolves early) or it ends; resolves with what was read. */
function readUntilEnd(stream: NodeJS.ReadableStream, marker: string): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    stream.on('data', (chunk: Buffer) => {
      text += chunk.toString()
      if (text.includes(marker)) resolve(text)
    })
    stream.on('end', () => resolve(text))
  })
}

/**
 * Sets ns_last_pid of a new pid namespace (needs the capabilities sandbox processes lack), so that its pids
 * continue above `floor`.
 */
export async function setLastPid(initPid: number, floor: number): Promise<void> {
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
