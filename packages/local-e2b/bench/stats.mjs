// Sample statistics shared by the package's benchmarks. Percentiles come from the repository's one
// definition (bench/stats.mjs: linear interpolation between closest ranks).
import { percentile } from '../../../bench/stats.mjs'

export { percentile }

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
