import { createHash } from 'node:crypto'
import { getEventListeners } from 'node:events'
import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it, vi } from 'vitest'
import { SandkeepError } from '../contract/errors.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { record, setup } from './manager.test-support.js'
import { createSessionManager } from './session-manager.js'

describe('createSessionManager: turn end modes', () => {
  it('auto-pause sets the idle timeout with pause-on-timeout at creation and makes no pause call', async () => {
    const { provider, sessions, id } = setup({ onTurnEnd: 'auto-pause', idleTimeoutMs: 5000 })
    const end = await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.runCommand('true')
      return turn
    })
    expect(end.endReport?.action).toBe('auto-pause')
    const [sandbox] = provider.sandboxes.values()
    expect(sandbox?.createOptions.lifecycle).toEqual({ onTimeout: 'pause', autoResume: true })
    expect(provider.callsOf('setTimeout').map((c) => c.detail)).toEqual(['5000'])
    expect(provider.callsOf('pause')).toHaveLength(0)
  })

  it('keep leaves it running; kill kills it and the next turn recreates', async () => {
    const kept = setup({ onTurnEnd: 'keep' })
    await kept.sessions.withTurn(kept.id, async () => {})
    expect([...kept.provider.sandboxes.values()][0]?.state).toBe('running')
    await kept.sessions.withTurn(kept.id, async (turn) => expect(turn.report?.outcome).toBe('reconnected'))

    const killed = setup({ onTurnEnd: 'kill' })
    await killed.sessions.withTurn(killed.id, async () => {})
    expect(killed.provider.sandboxes.size).toBe(0)
    await killed.sessions.withTurn(killed.id, async (turn) => expect(turn.report?.outcome).toBe('recreated'))
    expect(killed.provider.callsOf('connect')).toHaveLength(0)
  })

  it('a failed pause is reported on the end report and the record says unknown', async () => {
    const { provider, sessions, id } = setup({ retry: { retries: 0 } })
    const errors = record(sessions, 'error')
    const turn = await sessions.beginTurn(id)
    provider.failNext('pause', 'SANDBOX_UNAVAILABLE')
    const end = await turn.end()
    expect(end.action).toBe('none')
    expect(end.error?.code).toBe('SANDBOX_UNAVAILABLE')
    expect(errors.some((e) => e.phase === 'pause')).toBe(true)
    expect((await sessions.getSession(id))?.state).toBe('unknown')
  })

  it('when the store is down at turn end, the end reports it and does not pause (others may hold it)', async () => {
    const { provider, store, sessions, id } = setup()
    const errors = record(sessions, 'error')
    const turn = await sessions.beginTurn(id)
    store.release = async () => {
      throw new SandkeepError({ code: 'STORE_UNAVAILABLE', message: 'down', retryable: true })
    }
    const [end, again] = await Promise.all([turn.end(), turn.end()])
    expect(end).toBe(again)
    expect(end).toMatchObject({ action: 'none', last: false, error: { code: 'STORE_UNAVAILABLE' } })
    expect(provider.callsOf('pause')).toHaveLength(0)
    expect(errors.map((e) => e.phase)).toContain('release')
  })

  it('renews the lease while a long turn runs', async () => {
    const provider = createMockProvider()
    const store = createMemorySessionStore()
    let renewals = 0
    const renew = store.renew.bind(store)
    store.renew = async (...args) => {
      renewals++
      return renew(...args)
    }
    const sessions = createSessionManager({ store, provider, leaseMs: 300 })
    await sessions.withTurn('long', async () => {
      await new Promise((resolve) => setTimeout(resolve, 900))
    })
    expect(renewals).toBeGreaterThanOrEqual(2)
    expect(provider.callsOf('pause')).toHaveLength(1)
  })

  it('leaves no listener behind on a long-lived caller signal', async () => {
    const { sessions, id } = setup()
    const controller = new AbortController()
    for (let i = 0; i < 5; i++) {
      await sessions.withTurn(id, async (turn) => turn.sandbox.runCommand('true'), {
        abortSignal: controller.signal,
      })
    }
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('an abort during a slow resume rejects with ABORTED and releases the lease', async () => {
    const provider = createMockProvider({ latencyMs: 200 })
    const store = createMemorySessionStore()
    const sessions = createSessionManager({ store, provider })
    await sessions.withTurn('slow', async () => {})
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 50)
    await expect(sessions.beginTurn('slow', { abortSignal: controller.signal })).rejects.toMatchObject({
      code: 'ABORTED',
    })
    // A connect that was under way may have resumed it: the aborted turn, the last holder, paused it again.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect([...provider.sandboxes.values()][0]?.state).toBe('paused')
    // The lease went with it: the next turn is the only holder and pauses at its end.
    const next = await sessions.beginTurn('slow')
    expect((await next.end()).last).toBe(true)
  })

  it('an aborted signal stops the turn before any provider call', async () => {
    const { provider, sessions, id } = setup()
    const controller = new AbortController()
    controller.abort()
    await expect(sessions.beginTurn(id, { abortSignal: controller.signal })).rejects.toMatchObject({
      code: 'ABORTED',
    })
    expect(provider.calls).toHaveLength(0)
  })

  it("records the files the turn wrote as the marker's witnesses: newest first, one per path", async () => {
    const { sessions, id } = setup()
    const sha = (text: string) => createHash('sha256').update(text).digest('hex')
    const witnesses = async () => (await sessions.getSession(id))?.manifest?.filesystem?.witnesses
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.writeFile('/home/user/a.txt', 'a1')
      await turn.journal.record({ kind: 'file', path: 'b.txt', content: 'b' })
      await turn.sandbox.writeFile('/home/user/a.txt', 'a2')
      // Empty files prove nothing: not a witness.
      await turn.sandbox.writeFile('/home/user/empty', '')
    })
    expect(await witnesses()).toEqual([
      { path: '/home/user/a.txt', sha256: sha('a2') },
      { path: 'b.txt', sha256: sha('b') },
    ])
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.writeFile('/home/user/c.txt', new TextEncoder().encode('c'))
    })
    expect((await witnesses())?.map((w) => w.path)).toEqual(['/home/user/c.txt', '/home/user/a.txt', 'b.txt'])
  })

  it("dates the turn on the store's clock: a jump of this process's clock changes nothing stored", async () => {
    let storeNow = 1_800_000_000_000
    const { sessions, id } = setup({ store: createMemorySessionStore({ now: () => storeNow }) })
    try {
      await sessions.withTurn(id, async (turn) => {
        await turn.sandbox.runCode('x = 1')
        // The process clock jumps two hours; the store's moves a second.
        vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 2 * 3600_000 })
        storeNow += 1000
      })
    } finally {
      vi.useRealTimers()
    }
    const record = await sessions.getSession(id)
    expect(record?.lastTurnEndedAt).toBeGreaterThanOrEqual(1_800_000_000_000)
    expect(record?.lastTurnEndedAt).toBeLessThan(1_800_000_000_000 + 60_000)
    expect(record?.runningSeconds).toBeLessThan(60)
  })
})
