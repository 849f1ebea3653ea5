// The flags `sandkeep demo` and `sandkeep host` both take for a local-e2b host.
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
