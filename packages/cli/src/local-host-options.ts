// The flags `sandkeep demo` and `sandkeep host` both take for a local-e2b host.
import type { OptionSpec } from './args.js'
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
