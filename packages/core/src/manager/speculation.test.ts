import type { MockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import type { SessionStore } from '../contract/session-store.js'
import { setup, setupOptions } from './manager.test-support.js'
import { createSessionManager } from './session-manager.js'

describe('createSessionManager: speculative connect', () => {
  /** Counts the connect calls already made each time the store's acquire is called. */
  function watchAcquire(store: SessionStore, provider: MockProvider): number[] {
    const seen: number[] = []
    const acquire = store.acquire.bind(store)
    store.acquire = (key, options) => {
      seen.push(provider.callsOf('connect').length)
      return acquire(key, options)
    }
    return seen
  }

  it('connects while it takes the lease to the sandbox its last turn used, and connects once', async () => {
    const { provider, store, sessions, id } = setup()
    // The sandbox this process created carries its tenant: no getInfo needed before trusting it.
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.runCode('x = 7')
    })
    expect(provider.callsOf('getInfo')).toHaveLength(0)
    const seen = watchAcquire(store, provider)
    const before = provider.callsOf('connect').length
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.outcome).toBe('resumed')
      expect((await turn.sandbox.runCode('x')).text).toBe('7')
    })
    expect(seen).toEqual([before + 1])
    expect(provider.callsOf('connect')).toHaveLength(before + 1)
    expect([...provider.sandboxes.values()][0]?.state).toBe('paused')
  })

  it('connects again, after the lease, when a turn of another process ended in between', async () => {
    const { provider, store, sessions, id } = setup()
    const other = createSessionManager({ store, provider, retry: { retries: 0 } })
    await sessions.withTurn(id, async () => {})
    await sessions.withTurn(id, async () => {})
    await other.withTurn(id, async () => {})
    const before = provider.callsOf('connect').length
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.outcome).toBe('resumed')
      expect((await turn.sandbox.runCode('1 + 1')).text).toBe('2')
    })
    // The speculative connect was not trusted: the turn count it expected had moved on.
    expect(provider.callsOf('connect')).toHaveLength(before + 2)
    expect([...provider.sandboxes.values()][0]?.state).toBe('paused')
    expect((await sessions.getSession(id))?.turnCount).toBe(4)
  })

  it('is not trusted while another turn holds the session', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    await sessions.withTurn(id, async () => {})
    const first = await sessions.beginTurn(id)
    const before = provider.callsOf('connect').length
    const second = await sessions.beginTurn(id)
    expect(provider.callsOf('connect')).toHaveLength(before + 2)
    expect(second.report?.outcome).toBe('reconnected')
    expect((await second.end()).action).toBe('left-running-for-other-holders')
    expect((await first.end()).action).toBe('paused')
  })

  it('is never made for lazy turns, with speculativeConnect false, or after the sandbox was killed', async () => {
    const lazy = setup()
    await lazy.sessions.withTurn(lazy.id, async () => {})
    await lazy.sessions.withTurn(lazy.id, async () => {})
    const connects = lazy.provider.callsOf('connect').length
    await lazy.sessions.withTurn(lazy.id, async () => {}, { lazy: true })
    expect(lazy.provider.callsOf('connect')).toHaveLength(connects)

    const off = setup({ speculativeConnect: false })
    await off.sessions.withTurn(off.id, async () => {})
    await off.sessions.withTurn(off.id, async () => {})
    const seen = watchAcquire(off.store, off.provider)
    const before = off.provider.callsOf('connect').length
    await off.sessions.withTurn(off.id, async () => {})
    expect(seen).toEqual([before])
    expect(() => createSessionManager({ ...setupOptions(off), speculativeConnect: 'yes' as never })).toThrow(
      /speculativeConnect/,
    )

    const killed = setup({ onTurnEnd: 'kill' })
    await killed.sessions.withTurn(killed.id, async () => {})
    await killed.sessions.withTurn(killed.id, async () => {})
    expect(killed.provider.callsOf('connect')).toHaveLength(0)
  })
})
