import { setImmediate as nextTurn } from 'node:timers/promises'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { SandkeepError } from '../contract/errors.js'
import type { AcquireResult } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import { SessionState } from './session-state.js'

const key: SessionKey = { tenant: 't1', conversationId: 'c1' }
const sameIdOtherTenant: SessionKey = { tenant: 't2', conversationId: 'c1' }
const far = { waitMs: 60_000 }

function busy(retryAfterMs?: number): SandkeepError {
  return new SandkeepError({ code: 'SESSION_BUSY', message: 'held', retryable: true, retryAfterMs })
}

const acquired = { create: false, record: null } as unknown as AcquireResult

afterEach(() => {
  vi.useRealTimers()
})

describe('SessionState: caches and counters', () => {
  it('remembers verified tenants per sandbox, dropping the oldest past its limit', () => {
    const state = new SessionState({ cacheLimit: 2 })
    state.rememberTenant('sb-1', 't1')
    state.rememberTenant('sb-2', 't1')
    state.rememberTenant('sb-1', 't1')
    expect(state.isVerified('sb-1', 't1')).toBe(true)
    expect(state.isVerified('sb-1', 't2')).toBe(false)
    state.rememberTenant('sb-3', 't1')
    expect(state.isVerified('sb-1', 't1')).toBe(false)
    expect(state.isVerified('sb-2', 't1')).toBe(true)
    expect(state.isVerified('sb-3', 't1')).toBe(true)
  })

  it('remembers and forgets the last turn per session, a re-remembered one counting as newest', () => {
    const state = new SessionState({ cacheLimit: 2 })
    const left = { sandboxId: 'sb-1', turnCount: 3, leftAs: 'paused' as const }
    state.rememberLastTurn(key, left)
    state.rememberLastTurn(sameIdOtherTenant, { ...left, sandboxId: 'sb-2' })
    state.rememberLastTurn(key, { ...left, turnCount: 4 })
    state.rememberLastTurn({ tenant: 't3', conversationId: 'c1' }, left)
    expect(state.lastTurn(key)).toEqual({ ...left, turnCount: 4 })
    expect(state.lastTurn(sameIdOtherTenant)).toBeUndefined()
    state.rememberLastTurn(key, null)
    expect(state.lastTurn(key)).toBeUndefined()
  })

  it('counts live turns per session and over all sessions', () => {
    const state = new SessionState()
    state.turnBegan(key)
    state.turnBegan(key)
    state.turnBegan(sameIdOtherTenant)
    expect(state.openTurns()).toBe(3)
    state.turnEnded(key)
    expect(state.hasLiveTurn(key)).toBe(true)
    state.turnEnded(key)
    expect(state.hasLiveTurn(key)).toBe(false)
    expect(state.hasLiveTurn(sameIdOtherTenant)).toBe(true)
    expect(state.openTurns()).toBe(1)
  })
})

describe('SessionState: turn ends and their waits', () => {
  it('waits for a holding turn end of this session only, and returns at once without one', async () => {
    const state = new SessionState()
    await state.waitForLocalEnds(key, far)
    const letGo = state.holdEnd(key)
    await state.waitForLocalEnds(sameIdOtherTenant, far)
    let done = false
    const waiting = state.waitForLocalEnds(key, far).then(() => {
      done = true
    })
    await nextTurn()
    expect(done).toBe(false)
    expect(state.endsUnderWay()).toHaveLength(1)
    letGo()
    await waiting
    expect(state.endsUnderWay()).toHaveLength(0)
  })

  it('says SESSION_BUSY when the hold outlasts the wait, and the signal reason when it fires', async () => {
    const state = new SessionState()
    state.holdEnd(key)
    await expect(state.waitForLocalEnds(key, { waitMs: 20 })).rejects.toMatchObject({
      code: 'SESSION_BUSY',
      message: expect.stringContaining('pausing its sandbox for over 20 ms'),
    })
    const stop = new AbortController()
    const waiting = state.waitForLocalEnds(key, { ...far, signal: stop.signal })
    stop.abort(new Error('caller gave up'))
    await expect(waiting).rejects.toThrow('caller gave up')
  })

  it('waits for ends under way apart from holds', async () => {
    const state = new SessionState()
    const ended = state.markEnding(key)
    const letGo = state.holdEnd(key)
    letGo()
    let done = false
    const waiting = state.waitForEndings(key, far).then(() => {
      done = true
    })
    await nextTurn()
    expect(done).toBe(false)
    ended()
    await waiting
  })

  it("acquires after this process's hold lets go, without polling the store meanwhile", async () => {
    const state = new SessionState()
    const letGo = state.holdEnd(key)
    let calls = 0
    const acquire = async () => {
      calls += 1
      return acquired
    }
    const result = state.acquireAfterHold(key, acquire, busy(), far)
    await nextTurn()
    expect(calls).toBe(0)
    letGo()
    await expect(result).resolves.toBe(acquired)
    expect(calls).toBe(1)
  })

  it("retries another process's hold until the store lets go, and rethrows any other error", async () => {
    const state = new SessionState()
    let calls = 0
    const acquire = async () => {
      calls += 1
      if (calls < 3) throw busy(5)
      return acquired
    }
    await expect(state.acquireAfterHold(key, acquire, busy(5), far)).resolves.toBe(acquired)
    expect(calls).toBe(3)
    const broken = async (): Promise<AcquireResult> => {
      throw new SandkeepError({ code: 'STORE_UNAVAILABLE', message: 'down' })
    }
    await expect(state.acquireAfterHold(key, broken, busy(5), far)).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    })
  })

  it('gives up with the last SESSION_BUSY once the wait is over', async () => {
    const state = new SessionState()
    const last = busy(5)
    const acquire = async (): Promise<AcquireResult> => {
      throw last
    }
    await expect(state.acquireAfterHold(key, acquire, busy(5), { waitMs: 30 })).rejects.toBe(last)
  })
})

describe('SessionState: creation waits', () => {
  it('polls until the claim says create or a sandbox is mapped', async () => {
    const state = new SessionState()
    let calls = 0
    const claim = async () => {
      calls += 1
      if (calls === 3) return { record: null, create: true }
      return { record: null, create: false }
    }
    await expect(state.waitForCreation(key, claim, far)).resolves.toEqual({ record: null, create: true })
    expect(calls).toBe(3)
  })

  it('is woken by a turn of this process instead of sleeping out its pause', async () => {
    // Timers never fire here: only the wake can end the pause.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const state = new SessionState()
    let calls = 0
    const claim = async () => {
      calls += 1
      return { record: null, create: calls > 1 }
    }
    const waiting = state.waitForCreation(key, claim, far)
    await nextTurn()
    expect(calls).toBe(1)
    state.wakeCreationWaiters(sameIdOtherTenant)
    await nextTurn()
    expect(calls).toBe(1)
    state.wakeCreationWaiters(key)
    await expect(waiting).resolves.toEqual({ record: null, create: true })
    expect(calls).toBe(2)
  })

  it('says SESSION_BUSY after the wait, and the signal reason when it fires', async () => {
    const state = new SessionState()
    const claim = async () => ({ record: null, create: false })
    await expect(state.waitForCreation(key, claim, { waitMs: 30 })).rejects.toMatchObject({
      code: 'SESSION_BUSY',
      message: expect.stringContaining('creating this conversation'),
    })
    const stop = new AbortController()
    const waiting = state.waitForCreation(key, claim, { ...far, signal: stop.signal })
    await nextTurn()
    stop.abort(new Error('caller gave up'))
    await expect(waiting).rejects.toThrow('caller gave up')
  })
})
