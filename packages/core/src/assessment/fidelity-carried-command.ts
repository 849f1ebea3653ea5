// The built-in probes carried by a lazy turn's first command: the marker test runs as the first line of the
// user's own shell script, so that a resume where the files were kept costs no round trip of its own. When the
// marker is gone the line exits before any of the user's script ran, and the turn probes, repairs and runs the
// command again. A shell cannot read the interpreter's memory: when the plan has a sentinel, a probe cell of
// the sentinel alone follows as soon as the command has begun. The command's result does not wait for that
// cell (a command reads no interpreter variable; the cell needs a connection of its own, a round trip more):
// the memory verdict only has to come before the turn's next call, which waits for the resume as usual.

import type { CommandResult, RunCommandOptions, SandboxHandle } from '../contract/sandbox-provider.js'
import {
  CARRIED_KEPT_LINE,
  CARRIED_LOST_ERROR,
  CARRIED_PROBE_TAG,
  type CarriedVerdict,
  type CarryPlan,
  runCarried,
} from './fidelity-carried.js'

/** Exit code of a carried command whose marker test failed (the user's script did not start). */
export const CARRIED_LOST_EXIT = 86

/** Single-quoted for a POSIX shell: nothing inside is expanded. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}

/**
 * The user's command with the marker test as its first line. The test reads the marker only when it is a
 * regular file and no symlink (a FIFO would block), compares it byte for byte (the `x` keeps a trailing
 * newline from being dropped by the substitution), and either prints {@link CARRIED_KEPT_LINE} and lets the
 * script go on, or names {@link CARRIED_LOST_ERROR} on stderr and exits {@link CARRIED_LOST_EXIT}.
 */
export function carriedCommand(marker: { path: string; value: string }, command: string): string {
  const path = shellQuote(marker.path)
  const test = `[ -f ${path} ] && [ ! -L ${path} ] && [ "$(cat -- ${path} 2>/dev/null; printf x)" = ${shellQuote(`${marker.value}x`)} ]`
  const lost = `{ printf '%s\\n' ${CARRIED_LOST_ERROR} >&2; exit ${CARRIED_LOST_EXIT}; }`
  const kept = `printf '\\001${CARRIED_KEPT_LINE.slice(1)}\\n'`
  const parameters = { variable: null, value: null, path: marker.path, marker: marker.value }
  return `{ ${test}; } || ${lost}; ${kept}  ${CARRIED_PROBE_TAG}${JSON.stringify(parameters)}\n${command}`
}

/** A carried command under way: the probes' verdicts as soon as they are known, and the user's result. */
export interface CarriedCommandRun {
  /** The marker test's verdict alone: what the user's command needs (it ran on kept files, or not at all). */
  files: Promise<CarriedVerdict>
  /** Both probes' verdict (the sentinel's cell too): what the resume's report needs. */
  verdict: Promise<CarriedVerdict>
  /** The user's result (the kept line taken out of stdout); rejects when the call failed. */
  result: Promise<CommandResult>
}

/** Strips the kept line from the head of a stream; `onVerdict` learns whether it came first. */
function keptLineFilter(forward: ((chunk: string) => void) | undefined, onKept: () => void) {
  const expected = `${CARRIED_KEPT_LINE}\n`
  let head = ''
  let seen: boolean | undefined
  return (chunk: string) => {
    if (seen !== undefined) return forward?.(chunk)
    head += chunk
    if (head.length < expected.length && expected.startsWith(head)) return
    seen = head.startsWith(expected)
    if (seen) onKept()
    const rest = seen ? head.slice(expected.length) : head
    if (rest) forward?.(rest)
  }
}

/** How the command answered: kept (its line came first), not kept (the test's own exit), else unknown. */
function commandVerdict(raw: CommandResult): CarriedVerdict {
  if (raw.stdout.startsWith(`${CARRIED_KEPT_LINE}\n`)) return 'kept'
  const lost = raw.exitCode === CARRIED_LOST_EXIT && raw.stderr.trim() === CARRIED_LOST_ERROR
  return lost ? 'not-kept' : 'unknown'
}

/**
 * Runs the user's command with the marker test as its first line, and the sentinel's probe cell once the test
 * passed, when the plan has one. The verdict is `not-kept` when the marker test failed (nothing of the command ran),
 * `kept` when both found what they compared, `unknown` otherwise: the command may have run, so its result is
 * the user's and the full probes decide what survived.
 */
export function runCarriedCommand(
  sandbox: SandboxHandle,
  plan: CarryPlan & { marker: { path: string; value: string } },
  command: string,
  options: RunCommandOptions,
): CarriedCommandRun {
  const own = Promise.withResolvers<CarriedVerdict>()
  const onStdout = keptLineFilter(options.onStdout, () => own.resolve('kept'))
  const result = sandbox.runCommand(carriedCommand(plan.marker, command), { ...options, onStdout }).then(
    (raw) => {
      const verdict = commandVerdict(raw)
      own.resolve(verdict)
      return verdict === 'kept' ? { ...raw, stdout: raw.stdout.slice(CARRIED_KEPT_LINE.length + 1) } : raw
    },
    (error: unknown) => {
      own.resolve('unknown')
      throw error
    },
  )
  result.catch(() => {})
  // The sentinel's cell leaves once the command has begun (its kept line came): sent at once, it would take
  // the connection the command was to reuse, and the command would wait for a new one.
  const sentinel = plan.sentinel
  const verdict = own.promise.then(async (files) => {
    if (files !== 'kept' || !sentinel) return files
    const cell = runCarried(sandbox, { sentinel, marker: null }, '', {
      ...(options.signal ? { signal: options.signal } : {}),
    })
    return (await cell.verdict) === 'kept' ? 'kept' : 'unknown'
  })
  return { files: own.promise, verdict, result }
}
