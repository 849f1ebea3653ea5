// The flags `sandkeep demo` and `sandkeep host` both take for a local-e2b host.
import type { LocalE2BOptions } from '@sandkeep/local-e2b'
import { type OptionSpec, type ParsedArgs, stringOption, UsageError } from './args.js'
import { ISOLATIONS, PAUSE_MODES } from './demo/events.js'

/** `--pause-mode`, described for the command that takes it. */
export function pauseModeOption(description: string): OptionSpec {
  return { type: 'string', valueName: '<mode>', choices: PAUSE_MODES, description, defaultText: 'memory' }
}

/** `--isolation`; `host` names the host the command runs (`the host`, `the embedded local host`). */
export function isolationOption(host: string): OptionSpec {
  return {
    type: 'string',
    valueName: '<mode>',
    choices: ISOLATIONS,
    description: `How ${host} isolates sandboxes: auto needs bubblewrap; none runs them unisolated (warns).`,
    defaultText: 'auto',
  }
}

/**
 * Starts local-e2b for a command. The library's refusal to run without bubblewrap names its option
 * (`isolation: 'none'`); a CLI user is told the flag instead, and why.
 */
export async function startLocalHost(options: LocalE2BOptions) {
  const { startLocalE2B, LocalE2BError } = await import('@sandkeep/local-e2b')
  try {
    return await startLocalE2B(options)
  } catch (error) {
    if (LocalE2BError.isInstance(error) && error.code === 'UNSUPPORTED' && /isolation/.test(error.message)) {
      const uid = typeof process.getuid === 'function' ? process.getuid() : undefined
      const why =
        uid === 0 ? 'bubblewrap, nsenter or setpriv is missing' : `this runs as uid ${uid}, not root`
      throw Object.assign(
        new Error(
          `isolated sandboxes need root plus bubblewrap, nsenter and setpriv (apt-get install bubblewrap util-linux), and ${why}; to run them unisolated on this machine (each in a directory of its own, as this user, with no isolation), pass --isolation none`,
        ),
        { code: 'UNSUPPORTED' },
      )
    }
    throw error
  }
}

/** The addresses `--hostname` takes: the host runs any code for whoever holds its key, so loopback only. */
const LOOPBACK_HOSTNAMES = ['127.0.0.1', '::1', 'localhost']

/**
 * `--hostname`, checked before anything starts (default 127.0.0.1).
 * @throws UsageError for an address that is not loopback: the CLI has no flag to expose the host
 */
export function loopbackHostname(args: ParsedArgs, command: string): string {
  const hostname = stringOption(args, 'hostname') ?? '127.0.0.1'
  if (LOOPBACK_HOSTNAMES.includes(hostname)) return hostname
  throw new UsageError(
    command,
    `--hostname must be a loopback address (${LOOPBACK_HOSTNAMES.join(', ')}), got ${JSON.stringify(hostname.slice(0, 60))}: the host runs any code for whoever holds its API key. To serve other machines, start it from code: startLocalE2B({ hostname, allowRemote: true }) from @sandkeep/local-e2b`,
  )
}
