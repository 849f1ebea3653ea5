// One percentile definition for every bench, so that their figures compare (bench/stats.mjs, linear
// interpolation between closest ranks as numpy's default), imported by the package benches; a p95 of fewer
// than 20 samples is labelled max.
import { describe, expect, it } from 'vitest'
// @ts-expect-error plain .mjs without types
import { percentile, quantile, tail, tailLabel } from '../../../bench/stats.mjs'
// @ts-expect-error plain .mjs without types
import { percentile as localE2BPercentile } from '../../local-e2b/bench/stats.mjs'

const oneToTwenty = Array.from({ length: 20 }, (_, index) => index + 1)

describe('bench/stats.mjs', () => {
  it('p50/p95 of known samples equal numpy.percentile (linear)', () => {
    // numpy.percentile(range(1, 21), [50, 95]) == [10.5, 19.05]
    expect(percentile(oneToTwenty, 50)).toBeCloseTo(10.5, 10)
    expect(percentile(oneToTwenty, 95)).toBeCloseTo(19.05, 10)
    // numpy.percentile([40, 10, 30, 20], [50, 95]) == [25, 38.5]: order of the input does not matter
    expect(percentile([40, 10, 30, 20], 50)).toBeCloseTo(25, 10)
    expect(percentile([40, 10, 30, 20], 95)).toBeCloseTo(38.5, 10)
    expect(quantile([7], 0.95)).toBe(7)
    expect(percentile([], 50)).toBeNaN()
  })

  it('labels a p95 of fewer than 20 samples max, and reports the maximum', () => {
    expect(tailLabel(19)).toBe('max')
    expect(tailLabel(20)).toBe('p95')
    expect(tail(oneToTwenty.slice(0, 10))).toEqual({ label: 'max', value: 10 })
    expect(tail(oneToTwenty).label).toBe('p95')
    expect(tail(oneToTwenty).value).toBeCloseTo(19.05, 10)
  })

  it('the package benches use the same definition', () => {
    expect(localE2BPercentile).toBe(percentile)
  })
})
