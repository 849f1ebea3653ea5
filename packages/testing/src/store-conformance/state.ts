// Store conformance area: setState: pauses and resumes.
import { defineArea, newKey } from './context.js'

/** Registers the state area of the SessionStore conformance suite. */
export const stateConformance = defineArea('setState', ({ test, expect, open, createSession }) => {
  test('records pauses and resumes, and returns null for an unknown session', async () => {
    const store = await open()
    const key = newKey()
    expect(await store.setState(key, 'paused')).toBeNull()
    expect(await store.get(key)).toBeNull()
    await createSession(store, key)
    const paused = await store.setState(key, 'paused', { at: 1_700_000_000_000 })
    expect(paused?.state).toBe('paused')
    expect(paused?.pausedAt).toBe(1_700_000_000_000)
    const running = await store.setState(key, 'running')
    expect(running?.state).toBe('running')
    expect(running?.pausedAt).toBeNull()
    expect((await store.get(key))?.state).toBe('running')
    const killed = await store.setState(key, 'killed')
    expect(killed?.state).toBe('killed')
  })
})
