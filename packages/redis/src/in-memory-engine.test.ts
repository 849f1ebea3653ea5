import RedisMock from 'ioredis-mock'
import { describe, expect, it } from 'vitest'
import { IN_MEMORY_PRELUDE } from './in-memory-engine.js'

// What the store's scripts read as TIME on ioredis-mock, through the prelude they run behind.
const readTime = `${IN_MEMORY_PRELUDE}
local time = redis.call('TIME')
return time[1] .. ' ' .. time[2]`

async function storeClockMs(mock: InstanceType<typeof RedisMock>): Promise<number> {
  const reply = String(await mock.eval(readTime, 0))
  const [seconds, micros] = reply.split(' ').map(Number)
  expect(Number.isInteger(seconds) && Number.isInteger(micros), reply).toBe(true)
  expect(micros).toBeGreaterThanOrEqual(0)
  expect(micros).toBeLessThan(1_000_000)
  return (seconds as number) * 1000 + (micros as number) / 1000
}

describe('the store clock on ioredis-mock', () => {
  it('counts below the second, never goes back, and reads the wall time', async () => {
    const mock = new RedisMock()
    const readings: number[] = []
    for (let i = 0; i < 40; i++) {
      const before = Date.now()
      const clock = await storeClockMs(mock)
      const after = Date.now()
      // The origin is read once, to the millisecond (a loaded machine may delay one of its two reads a
      // little): the wall clock's bracket, with a margin far below a second.
      expect(clock).toBeGreaterThanOrEqual(before - 100)
      expect(clock).toBeLessThanOrEqual(after + 100)
      readings.push(clock)
    }
    for (let i = 1; i < readings.length; i++)
      expect(readings[i]).toBeGreaterThanOrEqual(readings[i - 1] as number)
    // Whole seconds (what os.time() gave) would make every reading a multiple of 1000 ms.
    expect(readings.some((ms) => ms % 1000 !== 0)).toBe(true)
    await mock.quit()
  })
})
