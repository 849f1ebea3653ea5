// The fidelity probe, answered from the mock sandbox's state. The session manager asks, in one Python cell,
// for the memory sentinel and the marker file: the mock recognises that cell by its tag and reads the two
// from its structured state (a variable set by an earlier cell, a file written earlier), or asks the
// `onProbe` hook. It never reads the cell's code: what is asked is fidelity's exported constants.
import { MARKER_PATH, PROBE_CELL_TAG, SENTINEL_VARIABLE } from '../../fidelity.js'
import type { CodeResult } from '../../sandbox-provider.js'
import type { MockProbe, MockProbeAnswer, MockProviderOptions, MockSandbox } from './types.js'

const decoder = new TextDecoder()

/** The question of a probe cell run in `context`, or undefined when `code` is not the fidelity probe. */
export function probeOf(code: string, context: string): MockProbe | undefined {
  if (!code.startsWith(PROBE_CELL_TAG)) return undefined
  return { context, variable: SENTINEL_VARIABLE, path: MARKER_PATH }
}

/** What the sandbox's state answers: the sentinel from the context's globals, the marker from the files. */
export function answerFromState(probe: MockProbe, sandbox: MockSandbox): MockProbeAnswer {
  const file = sandbox.files.get(probe.path)
  return {
    sentinel: sandbox.memory.get(probe.context)?.get(probe.variable) ?? null,
    marker: file ? decoder.decode(file) : null,
  }
}

/** Runs the probe: the hook's answer or the state's, printed as the real cell prints it (one JSON line). */
export function runProbe(probe: MockProbe, sandbox: MockSandbox, options: MockProviderOptions): CodeResult {
  const answer = options.onProbe?.(probe, sandbox) ?? answerFromState(probe, sandbox)
  const stdout = `${JSON.stringify(answer)}\n`
  return { text: null, results: [], stdout, stderr: '', error: null }
}
