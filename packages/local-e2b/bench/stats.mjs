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

/**
 * Prints the benchmark's rows: with `asJson` one JSON document (`info` and the rows), else `title` and a line
 * a row (name padded to `nameWidth`, the sample size when `withCount`, p50, p95 and the target p50 verdict).
 */
export function printRows(rows, { asJson, info, title, nameWidth, withCount = false }) {
  if (asJson) {
    console.log(JSON.stringify({ ...info, rows }, null, 2))
    return
  }
  console.log(title)
  for (const row of rows) {
    if (row.error) {
      console.log(`  ${row.name}: unavailable (${row.error})`)
      continue
    }
    const count = withCount ? ` n ${String(row.n).padStart(4)} ` : ''
    const target =
      row.targetP50 === null
        ? ''
        : `  target p50 <= ${row.targetP50}${row.p50 <= row.targetP50 ? ' ok' : ' MISSED'}`
    console.log(
      `  ${row.name.padEnd(nameWidth)}${count} p50 ${String(row.p50).padStart(8)}  p95 ${String(row.p95).padStart(8)}${target}`,
    )
  }
}
