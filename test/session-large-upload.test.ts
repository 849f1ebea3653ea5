// A large upload on the real stack (Redis, the unmodified E2B SDK, a local-e2b host in this process, as an
// app that embeds it runs): the event loop keeps turning while 1,000 MiB go out, so a turn with a 5 s lease
// renews it on time and ends holding it.
import { describe, expect, it } from 'vitest'
import { conversation, useRig } from './helpers/sessions.js'

const LEASE_MS = 5000

describe('a large writeFile under a 5 s lease (local-e2b in this process)', () => {
  const rig = useRig({ pauseMode: 'memory' }, { leaseMs: LEASE_MS })

  it('keeps the event loop turning: the lease is renewed on time and the turn ends holding it', async () => {
    const id = conversation()
    const size = 1000 * 1024 * 1024
    const data = new Uint8Array(size).fill(7)
    const errors: unknown[] = []
    const off = rig().sessions.on('error', (event) => errors.push(event.error))
    try {
      const turn = await rig().sessions.beginTurn(id, { tenant: rig().tenant })
      await turn.ready()
      // The longest time the event loop went without running a timer while the upload was under way.
      let last = performance.now()
      let longestGap = 0
      const ticker = setInterval(() => {
        const now = performance.now()
        longestGap = Math.max(longestGap, now - last)
        last = now
      }, 20)
      try {
        await turn.sandbox.writeFile('/home/user/large.bin', data)
      } finally {
        clearInterval(ticker)
      }
      const listed = await turn.sandbox.listDir('/home/user')
      expect(listed.find((entry) => entry.name === 'large.bin')?.size).toBe(size)
      expect(turn.signal.aborted).toBe(false)
      const end = await turn.end()
      expect(end.error).toBeUndefined()
      expect(errors).toEqual([])
      // A renewal runs every leaseMs / 3: a stretch without timers longer than that delays one, and the
      // lease lapses once a few are missed (before the fix the upload stalled the loop for 2 to 6 s).
      expect(longestGap).toBeLessThan(LEASE_MS / 3)
    } finally {
      off()
    }
  }, 180_000)
})
