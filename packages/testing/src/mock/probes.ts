// The fidelity probe, answered from the mock sandbox's state. The session manager asks, in one Python cell,
// for the memory sentinel and the marker file: the mock recognises that cell by its tag and reads the two
// from its structured state (a variable set by an earlier cell, a file written earlier), or asks the
// `onProbe` hook. It never reads the cell's code: what is asked is fidelity's exported constants.

import {
  CARRIED_KEPT_LINE,
  CARRIED_LOST_ERROR,
  CARRIED_LOST_EXIT,
  CARRIED_PROBE_TAG,
  type CodeResult,
  type CommandResult,
  MARKER_PATH,
  PROBE_CELL_TAG,
  SENTINEL_VARIABLE,
} from '@sandkeep/core/provider'
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

/** A cell whose first line carries the probes (fidelity-carried.ts): what it compares, and the user's code. */
export interface CarriedProbe {
  probe: MockProbe
  expected: { sentinel: string | null; marker: string | null }
  rest: string
}

/** The carried probe of `code` run in `context`, or undefined when its first line carries none. */
export function carriedProbeOf(code: string, context: string): CarriedProbe | undefined {
  const newline = code.indexOf('\n')
  const first = newline < 0 ? code : code.slice(0, newline)
  const at = first.indexOf(`  ${CARRIED_PROBE_TAG}`)
  if (at < 0) return undefined
  const parameters = JSON.parse(first.slice(at + 2 + CARRIED_PROBE_TAG.length)) as {
    variable: string | null
    value: string | null
    path: string | null
    marker: string | null
  }
  return {
    probe: {
      context,
      variable: parameters.variable ?? SENTINEL_VARIABLE,
      path: parameters.path ?? MARKER_PATH,
    },
    expected: {
      sentinel: parameters.variable === null ? null : parameters.value,
      marker: parameters.path === null ? null : parameters.marker,
    },
    rest: newline < 0 ? '' : code.slice(newline + 1),
  }
}

/**
 * Runs a carried probe's first line as the real one does: when what it compares was kept, the kept line on
 * stdout and `run(rest)` after it; otherwise the error it raises, and nothing of the rest.
 */
export function runCarriedProbe(
  carried: CarriedProbe,
  sandbox: MockSandbox,
  options: MockProviderOptions,
  run: (code: string) => CodeResult,
): CodeResult {
  const answer = options.onProbe?.(carried.probe, sandbox) ?? answerFromState(carried.probe, sandbox)
  const kept =
    (carried.expected.sentinel === null || answer.sentinel === carried.expected.sentinel) &&
    (carried.expected.marker === null || answer.marker === carried.expected.marker)
  if (!kept) {
    const value = 'state changed since the last turn'
    return {
      text: null,
      results: [],
      stdout: '',
      stderr: '',
      error: { name: CARRIED_LOST_ERROR, value, traceback: `${CARRIED_LOST_ERROR}: ${value}` },
    }
  }
  const result = run(carried.rest)
  return { ...result, stdout: `${CARRIED_KEPT_LINE}\n${result.stdout}` }
}

/**
 * Runs a carried command's first line as the real one does: when the marker was kept, the kept line on stdout
 * and `run(rest)` after it; otherwise the test's own exit, and nothing of the rest.
 */
export function runCarriedCommand(
  carried: CarriedProbe,
  sandbox: MockSandbox,
  options: MockProviderOptions,
  run: (command: string) => CommandResult,
): CommandResult {
  const answer = options.onProbe?.(carried.probe, sandbox) ?? answerFromState(carried.probe, sandbox)
  if (answer.marker !== carried.expected.marker) {
    return { exitCode: CARRIED_LOST_EXIT, stdout: '', stderr: `${CARRIED_LOST_ERROR}\n` }
  }
  const result = run(carried.rest)
  return { ...result, stdout: `${CARRIED_KEPT_LINE}\n${result.stdout}` }
}
