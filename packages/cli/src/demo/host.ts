import { readFileSync } from 'node:fs'
import type { E2BConnection } from '../config.js'
import { startLocalHost } from '../local-host-options.js'
import type { FaultName, Isolation, PauseMode } from './events.js'

type LocalHost = Awaited<ReturnType<typeof import('@sandkeep/local-e2b')['startLocalE2B']>>

/** The in-process local-e2b host the demo runs on. */
export interface EmbeddedHost {
  /** How the E2B provider reaches it (the key stays in memory, never printed). */
  connection: E2BConnection
  /** `bubblewrap` or `none`. */
  isolation: string
  /** The host itself, for fault injection. */
  host: LocalHost
  /** Stops it (kills its sandboxes). */
  close(): Promise<void>
}

/** Starts local-e2b in this process on an ephemeral loopback port. */
export async function startEmbeddedHost(options: {
  pauseMode: PauseMode
  stateDir: string
  isolation?: Isolation
}): Promise<EmbeddedHost> {
  const host = await startLocalHost({
    port: 0,
    stateDir: options.stateDir,
    pauseMode: options.pauseMode,
    ...(options.isolation ? { isolation: options.isolation } : {}),
  })
  return {
    connection: {
      apiKey: host.apiKey,
      apiUrl: host.apiUrl,
      sandboxUrl: host.sandboxUrl,
      // local-e2b's snapshots keep the files, not the memory: checkpoints must say so.
      snapshots: { keepsMemory: false },
    },
    isolation: host.isolation,
    host,
    close: () => host.close(),
  }
}

/**
 * Injects a fault into the paused sandbox of the conversation, between two turns, and says what it did.
 * `serverCommands` are the commands that start the transcript's servers (for `kill-server`).
 */
export async function injectFault(
  embedded: EmbeddedHost,
  fault: FaultName,
  context: { sandboxId: string | undefined; serverCommands: string[] },
): Promise<string> {
  const { host } = embedded
  const sandboxId = context.sandboxId
  if (!sandboxId) throw new Error(`fault ${fault}: no sandbox yet (inject it from turn 2 on)`)
  switch (fault) {
    case 'expire-retention':
      await host.faults.expire(sandboxId)
      return `the paused sandbox ${sandboxId} passed the platform's retention and was deleted; connect will answer 404`
    case 'host-restart':
      await host.faults.restart()
      return 'the host restarted on the same state directory: files are kept, every process and all memory are gone'
    case 'kill-server': {
      const view = host.getSandbox(sandboxId)
      if (!view) return `the host has no sandbox ${sandboxId}`
      const matches = (line: string) => context.serverCommands.some((command) => line.includes(command))
      // A server the platform started (a repair, a background process) is killed through the host's fault
      // API; one the model started from a shell (`nohup … &`) is only known by its command line.
      const managed = view.processes.find((process) => matches([process.cmd, ...process.args].join(' ')))
      if (managed) {
        await host.faults.killProcess(sandboxId, managed.pid)
        return `killed the server (sandbox pid ${managed.pid}) inside the paused sandbox`
      }
      // The host lists every process of the sandbox: its cgroup, or without one the members of its process
      // groups (found in /proc by local-e2b).
      for (const hostPid of view.hostPids) {
        const line = commandLine(hostPid)
        if (line && matches(line)) {
          process.kill(hostPid, 'SIGKILL')
          return `killed the server (${line}, host pid ${hostPid}) inside the paused sandbox`
        }
      }
      return 'no server process was running in the sandbox; nothing to kill'
    }
    case 'drop-memory':
      await host.faults.dropMemory(sandboxId)
      return 'the sandbox lost its memory (interpreter and processes killed); files are kept'
    case 'connect-5xx':
      host.faults.failNext('connect', { count: 2, status: 503 })
      return 'the next 2 connects answer 503 Service Unavailable'
    case 'id-change':
      await host.faults.changeIdOnNextConnect(sandboxId)
      return `the next connect of ${sandboxId} answers with a different sandbox id`
  }
}

/** The command line of a host process, or `undefined` when it is gone. */
function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ')
  } catch {
    return undefined
  }
}
