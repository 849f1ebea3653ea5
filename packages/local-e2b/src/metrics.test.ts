import { describe, expect, it } from 'vitest'
import { type MetricSample, MetricSeries } from './metrics.js'

const sample = (timestamp: number): MetricSample => ({
  timestamp,
  cpuCount: 2,
  cpuUsedPct: timestamp % 100,
  memUsed: timestamp * 2,
  memTotal: 1024,
  memCache: 1,
  diskUsed: timestamp * 3,
  diskTotal: 4096,
})

describe('MetricSeries', () => {
  it('keeps at most its capacity, the newest, oldest first', () => {
    const series = new MetricSeries(10)
    for (let index = 1; index <= 1000; index++) series.push(sample(index * 5000))
    expect(series.size).toBe(10)
    const kept = series.between(0, Number.POSITIVE_INFINITY)
    expect(kept.map((entry) => entry.timestamp)).toEqual(
      Array.from({ length: 10 }, (_, index) => (991 + index) * 5000),
    )
    expect(kept[0]).toEqual(sample(991 * 5000))
  })

  it('selects by timestamp, both ends included', () => {
    const series = new MetricSeries(8)
    for (let index = 1; index <= 5; index++) series.push(sample(index * 1000))
    expect(series.between(2000, 4000).map((entry) => entry.timestamp)).toEqual([2000, 3000, 4000])
    expect(series.between(6000, 9000)).toEqual([])
  })
})
