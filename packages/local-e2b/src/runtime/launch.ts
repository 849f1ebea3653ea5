// How a process enters a sandbox: the compiled launcher (enter-helper.ts) in one exec, or the shell chain
// (sh joining the cgroups → nsenter → setpriv → sh) without a compiler, or, unisolated, sh in the sandbox's
// directory. Each reports the pid the sandbox sees on fd 3 before it execs the command.
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { dirname } from 'node:path'

/** `sh -c` script: join the N cgroups named first (their cgroup.procs files), then exec the rest. */
const JOIN_CGROUPS =
  'n=$0; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 126; shift; n=$((n - 1)); done; exec "$@"'

/** `sh -c` script: report the pid on fd 3, close the user namespace's fd 4, cd to $0, exec the rest. */
const HANDSHAKE = 'echo $$ >&3; exec 3>&- 4>&-; cd -- "$0" || exit 1; exec "$@"'

/**
 * `sh -c` script, run as root of a new user and mount namespace (unisolated, `support.sandboxHome`): $0 the
 * sandbox's home on the host, $1 an empty host directory, $2 `unshare`, $3 `user` or `root`, then the
 * command. The host's /home is kept aside at $1, a tmpfs takes its place with every entry of the host's
 * bound back except `user`, which is the sandbox's; then, for `user`, a nested user namespace makes the
 * process uid/gid 1000 (still this host user outside). No mount leaves the namespace.
 */
const SANDBOX_HOME_SCRIPT = [
  'home=$0; keep=$1; unshare=$2; who=$3; shift 3',
  'mount --rbind /home "$keep" && mount -t tmpfs -o mode=0755 tmpfs /home || exit 125',
  'for entry in "$keep"/* "$keep"/.[!.]*; do',
  '  [ -e "$entry" ] || continue; name=$(basename "$entry"); [ "$name" = user ] && continue',
  '  if [ -d "$entry" ]; then mkdir "/home/$name"; else : > "/home/$name"; fi',
  '  mount --rbind "$entry" "/home/$name" || exit 125',
  'done',
  'mkdir /home/user && mount --bind "$home" /home/user || exit 125',
  '[ "$who" = root ] && exec "$@"',
  'exec "$unshare" --user --map-user=1000 --map-group=1000 -- "$@"',
].join('\n')

/** Where a launched process finds the sandbox's user namespace (isolated): its fd 4. */
export const USER_NAMESPACE_FD = 4

/** Prefixes a command so that it joins the cgroups (their `cgroup.procs` files) before it execs. */
export function wrapInCgroups(procsFiles: string[], command: string, args: string[]): [string, string[]] {
  if (procsFiles.length === 0) return [command, args]
  // The shell joins the cgroups and then execs, so every descendant is born inside them (no race with forks).
  return ['/bin/sh', ['-c', JOIN_CGROUPS, String(procsFiles.length), ...procsFiles, command, ...args]]
}

/** Who and where: what every way of entering needs. */
export interface LaunchTarget {
  /** The compiled launcher, when there is one. */
  enterHelper: string | undefined
  /** The namespace's init pid (isolated), undefined unisolated. */
  initPid: number | undefined
  /** `cgroup.procs` files to join: the freezer's first, then the limit hierarchies'. */
  procsFiles: string[]
  /** uid/gid inside the sandbox's user namespace to switch to (isolated); undefined unisolated. */
  ids: { uid: number; gid: number } | undefined
  /** Host path of a sandbox path (unisolated). */
  hostPathOf: (sandboxPath: string) => string
  /** The sandbox's home (cwd of the wrapper when unisolated). */
  home: string
  /**
   * Unisolated with `support.sandboxHome`: the process gets a mount namespace in which the sandbox's
   * directory is `/home/user` (SANDBOX_HOME_SCRIPT); its cwd then stays a sandbox path under /home/user.
   */
  sandboxHome?: { unshare: string; keepDir: string; user: 'user' | 'root' }
}

/** The program, its arguments and the host cwd that run `command args` in `cwd` (a sandbox path). */
export function launchCommand(
  target: LaunchTarget,
  cwd: string,
  command: string,
  args: string[],
): { file: string; args: string[]; cwd: string | undefined } {
  const isolated = target.initPid !== undefined
  const hostCwd = isolated ? undefined : target.hostPathOf(target.home)
  const { sandboxHome } = target
  if (!isolated && sandboxHome) {
    const inHome = cwd === target.home || cwd.startsWith(`${target.home}/`)
    const shell = ['-c', HANDSHAKE, inHome ? cwd : target.hostPathOf(cwd), command, ...args]
    const chain = [
      '--user',
      '--map-root-user',
      '--mount',
      '--propagation',
      'private',
      '--',
      '/bin/sh',
      '-c',
      SANDBOX_HOME_SCRIPT,
      target.hostPathOf(target.home),
      sandboxHome.keepDir,
      sandboxHome.unshare,
      sandboxHome.user,
      '/bin/sh',
      ...shell,
    ]
    const [file, wrapped] = wrapInCgroups(target.procsFiles, sandboxHome.unshare, chain)
    return { file, args: wrapped, cwd: hostCwd }
  }
  if (target.enterHelper) {
    const { ids } = target
    const cgroups = target.procsFiles.map(dirname)
    const helperArgs = [
      cgroups.length > 0 ? cgroups.join(':') : '-',
      isolated ? String(target.initPid) : '-',
      ids ? `${ids.uid}:${ids.gid}` : '-',
      isolated ? cwd : target.hostPathOf(cwd),
      command,
      ...args,
    ]
    return { file: target.enterHelper, args: helperArgs, cwd: hostCwd }
  }
  if (!isolated) {
    const shell = ['-c', HANDSHAKE, target.hostPathOf(cwd), command, ...args]
    const [file, wrapped] = wrapInCgroups(target.procsFiles, '/bin/sh', shell)
    return { file, args: wrapped, cwd: hostCwd }
  }
  const { ids } = target
  // nsenter joins the user namespace last (the others belong to the host's root), as its uid 0.
  const userNamespace = `--user=/proc/self/fd/${USER_NAMESPACE_FD}`
  const entered = ['-t', String(target.initPid), '-m', '-p', '-n', '-i', '-u', userNamespace, '-r', '-w']
  entered.push('--', 'setpriv')
  if (ids) entered.push(`--reuid=${ids.uid}`, `--regid=${ids.gid}`, '--clear-groups')
  entered.push('--bounding-set=-all', '--inh-caps=-all', '--no-new-privs', '--')
  entered.push('/bin/sh', '-c', HANDSHAKE, cwd, command, ...args)
  const [file, wrapped] = wrapInCgroups(target.procsFiles, 'nsenter', entered)
  return { file, args: wrapped, cwd: undefined }
}

/** Makes `child.kill` signal the child's whole process group: the wrapper (nsenter) does not forward them. */
export function killByGroup(child: ChildProcessWithoutNullStreams): void {
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
}

/** Reads the pid a launched process reported on fd 3; rejects (saying why) when it ended first. */
export function readHandshake(child: ChildProcessWithoutNullStreams): Promise<number> {
  const stream = child.stdio[3] as NodeJS.ReadableStream
  // Only the pipe decides: a fast command (`true`) can exit before its pid line is read, and the exit event
  // may come first; the line is still in the pipe, which ends once every writer closed it.
  return new Promise<number>((resolve, reject) => {
    let text = ''
    const onData = (chunk: Buffer) => {
      text += chunk.toString()
      const newline = text.indexOf('\n')
      if (newline < 0) return
      cleanup()
      const pid = Number.parseInt(text.slice(0, newline), 10)
      if (Number.isFinite(pid)) resolve(pid)
      else reject(new Error('process did not report its pid'))
    }
    const onEnd = () => {
      cleanup()
      endedBeforeStart(child).then(reject)
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

/** The error of a process that ended before it reported its pid, with the wrapper's own complaint. */
function endedBeforeStart(child: ChildProcessWithoutNullStreams): Promise<Error> {
  return new Promise((resolve) => {
    // Say why: the wrapper's own complaint (nsenter, setpriv, cd) is on stderr, still buffered.
    const done = () => {
      const stderr = (child.stderr.read() as Buffer | null)?.toString().trim().slice(0, 500) ?? ''
      const status = child.exitCode ?? child.signalCode ?? 'unknown'
      resolve(new Error(`process ended before it started (exit ${status})${stderr ? `: ${stderr}` : ''}`))
    }
    if (child.exitCode !== null || child.signalCode !== null) return done()
    const timer = setTimeout(done, 500)
    child.once('exit', () => {
      clearTimeout(timer)
      setImmediate(done)
    })
  })
}
