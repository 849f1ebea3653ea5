// Statistics for every benchmark in the repository (the root ones and each package's bench imports these),
// so a p50 or a p95 means the same thing everywhere.
//
// One definition of a percentile: linear interpolation between the closest ranks, numpy's default
// ("linear", Hyndman & Fan type 7). The q-quantile of n sorted values sits at position (n - 1) * q; between
// two samples it is interpolated. With fewer than 20 samples a p95 is mostly the maximum, so tables show
// such a tail as `max` (see tailLabel).

/** The q-quantile (0..1) of a list of numbers, by linear interpolation between closest ranks; NaN when empty. */
export function quantile(values, q) {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const position = (sorted.length - 1) * q
  const low = Math.floor(position)
  const high = Math.ceil(position)
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low)
}

/** The p-th percentile (0..100): `quantile(values, p / 100)`. */
export function percentile(values, p) {
  return quantile(values, p / 100)
}

/**
 * How to label the p-th percentile of `n` samples: `p95` needs at least 20 samples (1 / (1 - 0.95)) for one
 * sample to lie above it; with fewer it is reported as `max`, which is what it then mostly is.
 */
export function tailLabel(n, p = 95) {
  return n >= Math.ceil(100 / (100 - p) - 1e-9) ? `p${p}` : 'max'
}

/** The p-th percentile of `values` with its label (`max` and the maximum when there are too few samples). */
export function tail(values, p = 95) {
  const label = tailLabel(values.length, p)
  return { label, value: label === 'max' ? Math.max(...values) : percentile(values, p) }
}

export function summary(values) {
  const mean = values.reduce((sum, v) => sum + v, 0) / values.length
  return { n: values.length, p50: quantile(values, 0.5), p95: quantile(values, 0.95), mean }
}

export const ms = (value) => (Number.isFinite(value) ? `${value.toFixed(2)} ms` : 'n/a')
export const s = (value) => (Number.isFinite(value) ? `${value.toFixed(2)} s` : 'n/a')

/** A markdown table from a header row and rows of cells. */
export function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

export async function redisReachable(url) {
  const { default: Redis } = await import('ioredis')
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: () => null,
  })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.ping()
    return true
  } catch {
    return false
  } finally {
    client.disconnect()
  }
}
