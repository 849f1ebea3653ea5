// The combined probe cell: one Python cell that reads the memory sentinel and the marker file together, and the
// retry rule every probe call follows (a platform hiccup is "unknown", never "lost").
import { SandkeepError } from '../contract/errors.js'
import { type RetryPolicy, retryProviderCall } from '../contract/retry.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'
import type { TurnManifest } from '../contract/session-store.js'

/** First line of the combined probe cell; the rest of the line is its parameters as JSON. */
export const PROBE_CELL_TAG = '# sandkeep:probe '

/**
 * One Python cell that reads the memory sentinel and the marker file together, so a turn that used the
 * default Python context pays one sandbox call for both probes instead of two. It defines no name in the
 * user's namespace and leaves no cell result (so `_` is untouched); it prints one JSON line:
 * `{"sentinel": value or null, "marker": text, null when the file is missing, or {"error": ...}}`.
 */
function probeCellCode(variable: string, path: string): string {
  const body = [
    'import json, os, stat, sys',
    'try:',
    '    st = os.lstat(P)',
    // Check the type before opening: a FIFO would block the read, a directory or a symlink is not our marker.
    '    if not stat.S_ISREG(st.st_mode):',
    '        m = {"unreadable": "not a regular file (mode %o)" % st.st_mode}',
    '    else:',
    '        fd = os.open(P, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))',
    '        try: m = os.read(fd, 65536).decode("utf-8")',
    '        finally: os.close(fd)',
    'except FileNotFoundError:',
    '    m = None',
    'except Exception as e:',
    '    m = {"error": repr(e)}',
    'sys.stdout.write(json.dumps({"sentinel": G.get(S), "marker": m}, default=repr) + "\\n")',
  ].join('\n')
  return [
    `${PROBE_CELL_TAG}${JSON.stringify({ variable, path })}`,
    `__import__('builtins').exec(${JSON.stringify(body)}, {'G': globals(), 'S': ${JSON.stringify(variable)}, 'P': ${JSON.stringify(path)}})`,
  ].join('\n')
}

/** What the combined cell printed; null when it printed nothing we can read. */
function parseProbeCell(stdout: string): { sentinel: unknown; marker: unknown } | null {
  const lines = stdout.trim().split('\n')
  try {
    const value: unknown = JSON.parse(lines.at(-1) ?? '')
    if (typeof value === 'object' && value !== null && 'sentinel' in value && 'marker' in value) {
      return value as { sentinel: unknown; marker: unknown }
    }
  } catch {}
  return null
}

/**
 * The combined cell's answer: whether the sentinel matched (null: the call errored, unknown), and the marker
 * as read (undefined = unknown).
 */
export interface ProbeCellAnswer {
  sentinelKept: boolean | null
  marker: unknown
}

/**
 * A probe call that failed for a reason that says nothing about the sandbox's state (a platform hiccup: 5xx,
 * timeout, network): the probe's answer is unknown, never "lost".
 */
export function isPlatformError(error: unknown): boolean {
  return SandkeepError.isInstance(error) && (error.retryable || error.code === 'TIMEOUT')
}

/** Runs `operation` with the connect retry policy, then once more if it still failed on the platform. */
export async function probeCall<T>(
  operation: () => Promise<T>,
  policy: RetryPolicy,
  signal: AbortSignal,
  unknownIf: (error: unknown) => boolean = isPlatformError,
): Promise<T> {
  try {
    return await retryProviderCall(operation, policy, { signal })
  } catch (error) {
    if (signal.aborted || !unknownIf(error)) throw error
    return retryProviderCall(operation, policy, { signal })
  }
}

/** Runs the combined cell; never rejects except on abort (a failed cell is memory lost or unknown, marker unknown). */
export async function runProbeCell(
  sandbox: SandboxHandle,
  entry: NonNullable<TurnManifest['memory']>[number],
  path: string,
  signal: AbortSignal,
  policy: RetryPolicy,
): Promise<ProbeCellAnswer> {
  try {
    const result = await probeCall(
      () => sandbox.runCode(probeCellCode(entry.variable, path), { language: 'python', signal }),
      policy,
      signal,
    )
    const answer = result.error ? null : parseProbeCell(result.stdout)
    return { sentinelKept: answer !== null && answer.sentinel === entry.value, marker: answer?.marker }
  } catch (error) {
    if (signal.aborted) throw error
    if (isPlatformError(error)) return { sentinelKept: null, marker: undefined }
    // A context the platform no longer knows is memory lost, not a failed turn.
    if (SandkeepError.isInstance(error) && error.code !== 'ABORTED')
      return { sentinelKept: false, marker: undefined }
    throw error
  }
}
