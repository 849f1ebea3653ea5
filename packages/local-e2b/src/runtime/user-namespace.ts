// A sandbox's own user namespace: its ids 0-65535 map onto the sandbox's host id range (id-ranges.ts), so
// its `user` and even a root template's uid 0 are host uids that nobody else has. Only the sandbox's
// processes live in it: each joins it last, after the other namespaces (which stay the host's root's, so
// that even a process with every capability of the user namespace can mount nothing and owns nothing of the
// host). The host holds it by an fd, handed to every process it launches into the sandbox. Nested user
// namespaces are refused inside (its max_user_namespaces is 0) unless the template asks for them.
import { spawn } from 'node:child_process'
import { openSync, writeFileSync } from 'node:fs'
import { hostIdOf, ID_RANGE_SIZE } from './id-ranges.js'

/** Runs inside the new namespace (unshare execs it once the namespace exists): says so, then holds it. */
const HOLDER = 'echo ready; exec cat'

const PATH = '/usr/sbin:/usr/bin:/sbin:/bin'

/** Runs a process to its end; rejects with its stderr when it fails. */
function run(command: string, args: string[], what: string): Promise<void> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH } })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`could not ${what}: ${stderr.trim()}`)),
    )
  })
}

/**
 * Makes the user namespace of the sandbox with id range `index`; resolves with an fd of it, which the caller
 * keeps (and closes) for as long as the sandbox's namespaces live. `allowNested`: leave nested user
 * namespaces allowed inside. With the compiled launcher (`enterHelper`) in one exec, otherwise with
 * setpriv, unshare and nsenter.
 */
export function createUserNamespace(
  index: number,
  allowNested: boolean,
  enterHelper: string | undefined,
): Promise<number> {
  if (enterHelper) return createWithLauncher(enterHelper, index, allowNested)
  return createWithTools(index, allowNested)
}

/** The launcher's `--user-namespace` mode: it prints the holder's pid and holds until its stdin closes. */
async function createWithLauncher(enterHelper: string, index: number, allowNested: boolean): Promise<number> {
  const args = [
    '--user-namespace',
    String(hostIdOf(index, 0)),
    String(ID_RANGE_SIZE),
    allowNested ? '1' : '0',
  ]
  const launcher = spawn(enterHelper, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH } })
  let stderr = ''
  launcher.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  launcher.stdin.on('error', () => {})
  try {
    const holder = await new Promise<number>((resolve, reject) => {
      let text = ''
      launcher.once('error', reject)
      launcher.stdout.on('data', (chunk: Buffer) => {
        text += chunk.toString()
        const pid = Number.parseInt(text, 10)
        if (text.includes('\n') && Number.isInteger(pid)) resolve(pid)
      })
      launcher.stdout.once('end', () =>
        reject(new Error(`could not make the sandbox's user namespace: ${stderr.trim()}`)),
      )
    })
    return openSync(`/proc/${holder}/ns/user`, 'r')
  } finally {
    launcher.stdin.end()
  }
}

async function createWithTools(index: number, allowNested: boolean): Promise<number> {
  // Made by the sandbox's own host uid, not by root: the kernel charges every per-user count of a user
  // namespace (inotify instances, ...) to its creator in the parent namespace too. Made by root, all
  // sandboxes would share root's budget, and the host's.
  const creator = hostIdOf(index, 0)
  const setpriv = [`--reuid=${creator}`, `--regid=${creator}`, '--clear-groups', '--']
  const holder = spawn('setpriv', [...setpriv, 'unshare', '--user', '--', '/bin/sh', '-c', HOLDER], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH },
  })
  let stderr = ''
  holder.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  try {
    await new Promise<void>((resolve, reject) => {
      let text = ''
      holder.once('error', reject)
      holder.stdout.on('data', (chunk: Buffer) => {
        text += chunk.toString()
        if (text.includes('ready\n')) resolve()
      })
      holder.stdout.once('end', () =>
        reject(new Error(`could not make the sandbox's user namespace: ${stderr.trim()}`)),
      )
    })
    const map = `0 ${creator} ${ID_RANGE_SIZE}\n`
    writeFileSync(`/proc/${holder.pid}/uid_map`, map)
    writeFileSync(`/proc/${holder.pid}/gid_map`, map)
    if (!allowNested) {
      // Only the namespace's root holds CAP_SYS_RESOURCE there; nsenter -U joins it as uid 0 (the holder
      // itself lost its capabilities when unshare exec'd it, before the namespace had a root).
      const limit = 'echo 0 > /proc/sys/user/max_user_namespaces'
      const args = ['-U', '-t', String(holder.pid), '--', '/bin/sh', '-c', limit]
      await run('nsenter', args, 'forbid nested user namespaces')
    }
    return openSync(`/proc/${holder.pid}/ns/user`, 'r')
  } finally {
    holder.kill('SIGKILL')
  }
}
