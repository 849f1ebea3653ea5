/**
 * One signal that fires when any of `signals` fires, with that one's reason; absent entries are skipped.
 * No signal given: `undefined`; one: that signal itself (no new object, no listener). The one helper for
 * joining signals, instead of `AbortSignal.any` and listeners written out at each site.
 */
export function mergeAbortSignals(
  first: AbortSignal,
  ...rest: Array<AbortSignal | null | undefined>
): AbortSignal
export function mergeAbortSignals(...signals: Array<AbortSignal | null | undefined>): AbortSignal | undefined
export function mergeAbortSignals(
  ...signals: Array<AbortSignal | null | undefined>
): AbortSignal | undefined {
  const present = signals.filter((signal): signal is AbortSignal => signal != null)
  if (present.length <= 1) return present[0]
  // A signal that already fired decides at once (AbortSignal.any would too; this keeps its own object).
  return present.find((signal) => signal.aborted) ?? AbortSignal.any(present)
}
