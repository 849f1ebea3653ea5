// The built-in probes carried by a lazy turn's first code cell: the memory sentinel and marker tests run as
// the first line of the user's own cell, so that a resume where nothing was lost costs no round trip of its
// own. When something was lost the line raises before any of the user's code ran, and the turn probes,
// repairs and runs the cell again, as if it had never been sent.

import type { HealthCheckResult } from '../contract/health.js'
import type { CodeResult, RunCodeOptions, SandboxHandle } from '../contract/sandbox-provider.js'
import type { TurnManifest } from '../contract/session-store.js'
import type { FidelityOutcome } from './fidelity.js'

/** Marks the carried probe's line: the rest of that line is its parameters as JSON (the mock reads them). */
export const CARRIED_PROBE_TAG = '# sandkeep:carried-probe '
/** First stdout line of a carried cell whose probe found everything kept; taken out before the user sees it. */
export const CARRIED_KEPT_LINE = '\u0001sandkeep:state-kept'
/** Name of the error the carried line raises when something was lost (nothing of the user's cell ran). */
export const CARRIED_LOST_ERROR = 'SandkeepStateChanged'

/** What a carried probe compares: the default Python context's sentinel and the marker, either may be absent. */
export interface CarryPlan {
  sentinel: { variable: string; value: string } | null
  marker: { path: string; value: string } | null
}

/**
 * The plan when one line of Python can answer every built-in probe the manifest asks for: memory only in the
 * default Python context, no background process recorded (listing them is a call of its own). Undefined when
 * the manifest asks for more, or for nothing.
 */
export function carryPlan(manifest: TurnManifest): CarryPlan | undefined {
  if ((manifest.processes?.length ?? 0) > 0) return undefined
  const memory = manifest.memory ?? []
  if (memory.length > 1) return undefined
  const entry = memory[0]
  if (entry && (entry.language !== 'python' || entry.contextId !== null)) return undefined
  const marker = manifest.filesystem ?? null
  if (!entry && !marker) return undefined
  return {
    sentinel: entry ? { variable: entry.variable, value: entry.value } : null,
    marker: marker ? { path: marker.path, value: marker.value } : null,
  }
}

/**
 * The user's cell with the probe as its first line. The line defines no name in the user's namespace (its own
 * globals dict) and, when everything was kept, prints {@link CARRIED_KEPT_LINE} (flushed, so the turn knows at
 * once) and lets the cell go on; otherwise it raises {@link CARRIED_LOST_ERROR} and the cell stops there. The
 * user's code starts on line 2 of the cell.
 */
export function carriedCell(plan: CarryPlan, code: string): string {
  const body = [
    'import os, stat, sys',
    'ok = S is None or G.get(S) == V',
    'if ok and P is not None:',
    '    try:',
    '        st = os.lstat(P)',
    // A FIFO would block the read, a directory or a symlink is not our marker: not kept, the full probe decides.
    '        if not stat.S_ISREG(st.st_mode):',
    '            ok = False',
    '        else:',
    '            fd = os.open(P, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))',
    '            try: ok = os.read(fd, 65536).decode("utf-8") == M',
    '            finally: os.close(fd)',
    '    except Exception:',
    '        ok = False',
    'if not ok:',
    `    raise type(${JSON.stringify(CARRIED_LOST_ERROR)}, (Exception,), {})("state changed since the last turn")`,
    `sys.stdout.write(${JSON.stringify(`${CARRIED_KEPT_LINE}\n`)})`,
    'sys.stdout.flush()',
  ].join('\n')
  const parameters = {
    variable: plan.sentinel?.variable ?? null,
    value: plan.sentinel?.value ?? null,
    path: plan.marker?.path ?? null,
    marker: plan.marker?.value ?? null,
  }
  const globals = `{'G': globals(), 'S': ${pyString(parameters.variable)}, 'V': ${pyString(parameters.value)}, 'P': ${pyString(parameters.path)}, 'M': ${pyString(parameters.marker)}}`
  const line = `__import__('builtins').exec(${JSON.stringify(body)}, ${globals})  ${CARRIED_PROBE_TAG}${JSON.stringify(parameters)}`
  return `${line}\n${code}`
}

/** A JSON string is a Python string literal too; null is None. */
function pyString(value: string | null): string {
  return value === null ? 'None' : JSON.stringify(value)
}

/**
 * How a carried cell went:
 * - `kept`: the probe found everything kept (the user's cell ran, or is running: `result`);
 * - `not-kept`: the cell answered an error without the probe's line (the line raised, the cell did not
 *   compile, the interpreter lost its kernel): none of the user's code ran, the cell runs again after the
 *   probes and the repair;
 * - `unknown`: the call failed or answered without the probe's line: the user's code may have run, so it is
 *   never run again (its `result` is the user's), and the full probe decides what survived.
 */
export type CarriedVerdict = 'kept' | 'not-kept' | 'unknown'

/** A carried cell under way: the probe's verdict as soon as it is known, and the user's result. */
export interface CarriedRun {
  verdict: Promise<CarriedVerdict>
  /** The user's result (the probe's line taken out of the output); rejects when the call failed. */
  result: Promise<CodeResult>
}

/** Runs the user's cell with the probe as its first line. */
export function runCarried(
  sandbox: SandboxHandle,
  plan: CarryPlan,
  code: string,
  options: RunCodeOptions,
): CarriedRun {
  const verdict = Promise.withResolvers<CarriedVerdict>()
  let head = ''
  let seen: boolean | undefined
  const onStdout = (chunk: string) => {
    if (seen === undefined) {
      head += chunk
      const expected = `${CARRIED_KEPT_LINE}\n`
      if (head.length < expected.length && expected.startsWith(head)) return
      seen = head.startsWith(expected)
      if (seen) verdict.resolve('kept')
      const rest = seen ? head.slice(expected.length) : head
      if (rest) options.onStdout?.(rest)
      return
    }
    options.onStdout?.(chunk)
  }
  const result = sandbox.runCode(carriedCell(plan, code), { ...options, language: 'python', onStdout }).then(
    (raw) => {
      const prefix = `${CARRIED_KEPT_LINE}\n`
      const kept = raw.stdout.startsWith(prefix)
      if (kept) {
        verdict.resolve('kept')
        return { ...raw, stdout: raw.stdout.slice(prefix.length) }
      }
      // No line: the user's code never ran, as the line is printed (and flushed) before it. The probe
      // raised, the cell never started (a syntax error, a cell magic or a __future__ import the first line
      // displaced), or the interpreter had lost its kernel. An answer without the line and without an error
      // is unknown (the output may be incomplete): it is the user's, never run again.
      verdict.resolve(raw.error ? 'not-kept' : 'unknown')
      return raw
    },
    (error: unknown) => {
      verdict.resolve('unknown')
      throw error
    },
  )
  // The caller reads the result only when the verdict lets the user have it.
  result.catch(() => {})
  return { verdict: verdict.promise, result }
}

/** What the built-in probes report when the carried line found everything its plan compared kept. */
export function keptOutcome(plan: CarryPlan, probeMs: number): FidelityOutcome {
  const result = (
    name: 'memory' | 'filesystem' | 'processes',
    status: HealthCheckResult['status'],
    message: string,
  ): HealthCheckResult => ({ name, kind: name, status, required: false, probeMs, message })
  return {
    checks: [
      plan.sentinel
        ? result('memory', 'passed', 'interpreter state kept in 1 context(s) (checked by the first cell)')
        : result('memory', 'skipped', 'no interpreter context was used before the pause'),
      plan.marker
        ? result('filesystem', 'passed', 'files kept (checked by the first cell)')
        : result('filesystem', 'skipped', 'no marker file was written'),
      result('processes', 'skipped', 'no background process was running before the pause'),
    ],
    survived: {
      memory: plan.sentinel ? true : null,
      filesystem: plan.marker ? true : null,
      processes: null,
    },
    keptContexts: plan.sentinel ? [{ language: 'python', contextId: null }] : [],
    markerKept: plan.marker !== null,
    // The carried line passes only when the marker read back as written.
    markerGone: false,
    processesRestarted: false,
  }
}
