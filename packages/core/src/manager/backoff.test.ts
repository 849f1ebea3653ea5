import { describe, expect, it } from 'vitest'
import { BUSY_RETRY, backoffMs, CREATION_POLL } from './backoff.js'

const at = (value: number) => () => value

describe('backoffMs', () => {
  it('doubles from 25 ms up to the cap, jittered from half the base to one and a half times it', () => {
    expect(backoffMs(0, { ...CREATION_POLL, random: at(0) })).toBe(12.5)
    expect(backoffMs(0, { ...CREATION_POLL, random: at(0.5) })).toBe(25)
    expect(backoffMs(3, { ...CREATION_POLL, random: at(0.5) })).toBe(200)
    // 25 * 2 ** 6 = 1600, capped at 1000.
    expect(backoffMs(6, { ...CREATION_POLL, random: at(0) })).toBe(500)
    expect(backoffMs(6, { ...CREATION_POLL, random: at(0.999) })).toBeCloseTo(1499, 0)
    expect(backoffMs(40, { capMs: 500, random: at(0.5) })).toBe(500)
    expect(backoffMs(1, { firstMs: 50, capMs: 500, random: at(0.5) })).toBe(100)
  })

  it('keeps the busy retry at or under its base and under 500 ms, as before', () => {
    expect(backoffMs(0, { ...BUSY_RETRY, random: at(0.9) })).toBe(25)
    expect(backoffMs(0, { ...BUSY_RETRY, random: at(0.2) })).toBe(17.5)
    expect(backoffMs(30, { ...BUSY_RETRY, random: at(0.999) })).toBe(500)
    // The creation poll may go above its base.
    expect(backoffMs(0, { ...CREATION_POLL, random: at(0.9) })).toBe(35)
  })

  it("follows the store's retryAfterMs in place of the ceiling, and never passes the deadline", () => {
    expect(backoffMs(0, { ...BUSY_RETRY, retryAfterMs: 30, random: at(0.9) })).toBe(30)
    expect(backoffMs(4, { ...BUSY_RETRY, retryAfterMs: 10, random: at(0.9) })).toBe(10)
    expect(backoffMs(4, { ...CREATION_POLL, leftMs: 7, random: at(0.9) })).toBe(7)
    expect(backoffMs(4, { ...BUSY_RETRY, leftMs: -3, random: at(0.9) })).toBe(0)
  })

  it('matches the two rules it replaced for every attempt and random value', () => {
    for (let attempt = 0; attempt < 12; attempt++) {
      for (const random of [0, 0.1, 0.5, 0.73, 0.999]) {
        for (const left of [0, 40, 10_000]) {
          const creationBase = Math.min(25 * 2 ** attempt, 1000)
          const creation = Math.min(creationBase / 2 + random * creationBase, Math.max(0, left))
          expect(backoffMs(attempt, { ...CREATION_POLL, leftMs: left, random: at(random) })).toBe(creation)
          for (const retryAfterMs of [undefined, 60]) {
            const busyBase = Math.min(25 * 2 ** attempt, 500)
            const busy = Math.max(
              0,
              Math.min(busyBase / 2 + random * busyBase, retryAfterMs ?? busyBase, left),
            )
            const rule = { ...BUSY_RETRY, retryAfterMs, leftMs: left, random: at(random) }
            expect(backoffMs(attempt, rule)).toBe(busy)
          }
        }
      }
    }
  })
})
