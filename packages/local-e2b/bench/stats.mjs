// Sample statistics shared by the package's benchmarks.

/** The p-th percentile (nearest rank) of `values`; NaN when empty. */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)
  return sorted[Math.max(0, index)]
}

/** p50/p95 of a sample, with its target p50 when there is one. */
export function summary(name, values, targetP50) {
  return {
    name,
    n: values.length,
    p50: Number(percentile(values, 50).toFixed(2)),
    p95: Number(percentile(values, 95).toFixed(2)),
    targetP50: targetP50 ?? null,
  }
}

/** Runs `fn`, returning [elapsed ms, its value]. */
export async function timed(fn) {
  const started = performance.now()
  const value = await fn()
  return [performance.now() - started, value]
}
