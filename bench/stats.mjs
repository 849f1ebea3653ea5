// Small statistics helpers for the root benchmarks.

/** The q-quantile (0..1) of a list of numbers, by linear interpolation. */
export function quantile(values, q) {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const position = (sorted.length - 1) * q
  const low = Math.floor(position)
  const high = Math.ceil(position)
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low)
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
