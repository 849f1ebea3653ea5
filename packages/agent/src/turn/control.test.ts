// The turn around one call ends through the session's one lifecycle: one end, whoever asks for it.
import { randomUUID } from 'node:crypto'
import {
  createMemorySessionStore,
  createSessionManager,
  SandkeepError,
  type SessionManager,
} from '@sandkeep/core'
import { createMockProvider, type MockProvider } from '@sandkeep/testing'
import { beforeEach, describe, expect, it } from 'vitest'
import { createSandboxSession } from '../sandbox-session/index.js'
import { createTurnControl } from './control.js'

let provider: MockProvider
let sessions: SessionManager

beforeEach(() => {
  provider = createMockProvider()
  sessions = createSessionManager({
    store: createMemorySessionStore(),
    provider,
    retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 5 },
  })
})

const newSession = () => createSandboxSession({ sessions, conversationId: `conv-${randomUUID()}` })

describe('createTurnControl', () => {
  it('ends the session once however often it is asked, and reports what the session end did', async () => {
    const session = newSession()
    const control = createTurnControl(session, 0)
    const signal = control.claim('generateText')
    expect(() => control.claim('streamText')).toThrow(/wraps one call/)
    await session.runCommand('echo used')
    const [first, second] = await Promise.all([control.end(), control.end()])
    expect(first).toBe(second)
    expect(first?.action).toBe('paused')
    expect(await control.ended).toBe(first)
    expect(control.endReport).toBe(first)
    expect(session.endReport).toBe(first)
    expect(provider.callsOf('pause')).toHaveLength(1)
    expect(SandkeepError.hasCode(signal.reason, 'TURN_ENDED')).toBe(true)
    // The session's calls now fail with the one TURN_ENDED message.
    const late = await session.runCommand('echo late').catch((error: unknown) => error)
    expect(SandkeepError.hasCode(late, 'TURN_ENDED')).toBe(true)
    expect((late as Error).message).toMatch(/^This turn has ended: /)
  })

  it('is ended by the session ending itself: one lifecycle, not two', async () => {
    const session = newSession()
    const control = createTurnControl(session, 0)
    control.claim('generateText')
    await session.runCommand('echo used')
    const report = await session.end()
    expect(await control.ended).toBe(report)
    expect(control.endReport).toBe(report)
  })

  it('leaves the call alone with abortCall: false, and aborts it at a later end', async () => {
    const session = newSession()
    const control = createTurnControl(session, 0)
    const signal = control.claim('streamText')
    await control.end(undefined, { abortCall: false })
    expect(signal.aborted).toBe(false)
    expect(session.ended).toBe(true)
    await control.end(new Error('cancelled'))
    expect(signal.reason).toEqual(new Error('cancelled'))
  })

  it('ends the turn on the caller abort, with the caller reason on the joined signal', async () => {
    const session = newSession()
    const control = createTurnControl(session, 0)
    const caller = new AbortController()
    const joined = control.callSignal(control.claim('generateText'), caller.signal)
    expect(control.callSignal(control.signal, undefined)).toBe(control.signal)
    caller.abort('user left')
    await control.ended
    expect(session.ended).toBe(true)
    expect(joined.reason).toBe('user left')
  })

  it('ends a call nobody finishes after maxDurationMs, with TIMEOUT', async () => {
    const session = newSession()
    const control = createTurnControl(session, 1)
    const signal = control.claim('streamText')
    await control.ended
    expect(SandkeepError.hasCode(signal.reason, 'TIMEOUT')).toBe(true)
  })
})
