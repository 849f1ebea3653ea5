import { setImmediate as tick } from 'node:timers/promises'
import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import type { LogFields, LogLevel } from '../contract/logger-types.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { createSessionManager } from './session-manager.js'

/** A mock provider whose pause waits for `release()`, and says when one started. */
function gatedPause() {
  const provider = createMockProvider()
  const gate = Promise.withResolvers<void>()
  const started = Promise.withResolvers<void>()
  let pausesDone = 0
  const gated = {
    ...provider,
    pause: async (sandboxId: string, options?: { signal?: AbortSignal }) => {
      started.resolve()
      await gate.promise
      const answer = (await provider.pause?.(sandboxId, options)) ?? false
      pausesDone++
      return answer
    },
  }
  return {
    provider: gated,
    mock: provider,
    release: gate.resolve,
    started: started.promise,
    pausesDone: () => pausesDone,
  }
}

function memoryLog() {
  const lines: Array<{ level: LogLevel; message: string; fields: LogFields | undefined }> = []
  const at = (level: LogLevel) => (message: string, fields?: LogFields) =>
    lines.push({ level, message, fields })
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } }
}

describe('sessions.close()', () => {
  it('waits for a turn end that is pausing, then closes the store', async () => {
    const { provider, release, started, pausesDone } = gatedPause()
    const store = createMemorySessionStore()
    let storeClosed = false
    const closeStore = store.close.bind(store)
    store.close = async () => {
      storeClosed = true
      await closeStore()
    }
    const sessions = createSessionManager({ store, provider })
    const turn = await sessions.beginTurn('conv-1')
    await turn.sandbox.runCommand('true')
    const ending = turn.end()
    await started
    let closed = false
    const closing = sessions.close().then((result) => {
      closed = true
      return result
    })
    for (let i = 0; i < 50; i++) await tick()
    expect(closed).toBe(false)
    expect(storeClosed).toBe(false)
    release()
    const result = await closing
    await ending
    expect(pausesDone()).toBe(1)
    expect(result).toMatchObject({ drained: true, openTurns: 0, storeClosed: true })
    expect(storeClosed).toBe(true)
    // The same close again, not a second one.
    expect(await sessions.close()).toBe(result)
  })

  it('refuses new calls with MANAGER_CLOSED once closing, touching nothing', async () => {
    const provider = createMockProvider()
    const sessions = createSessionManager({ store: createMemorySessionStore(), provider })
    await sessions.close()
    for (const call of [
      () => sessions.beginTurn('conv-1'),
      () => sessions.withTurn('conv-1', async () => {}),
      () => sessions.endSession('conv-1'),
      () => sessions.listSessions(),
      () => sessions.gc(),
    ]) {
      await expect(call()).rejects.toMatchObject({
        code: 'MANAGER_CLOSED',
        message: expect.stringContaining('after sessions.close()'),
      })
    }
    expect(provider.calls).toHaveLength(0)
  })

  it('waits for an open turn up to its timeout, then closes anyway and says how many were left', async () => {
    const store = createMemorySessionStore()
    const sessions = createSessionManager({ store, provider: createMockProvider() })
    await sessions.beginTurn('conv-1')
    const result = await sessions.close({ timeoutMs: 50, keepStore: true })
    expect(result).toMatchObject({ drained: false, openTurns: 1, storeClosed: false })
    // keepStore: the store still answers.
    expect(await store.get({ tenant: 'default', conversationId: 'conv-1' })).not.toBeNull()
    await expect(sessions.close({ colour: 1 } as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(sessions.close()).resolves.toBe(result)
  })

  it('logs the turn lifecycle with structured fields, and nothing without a logger', async () => {
    const { lines, logger } = memoryLog()
    const sessions = createSessionManager({
      store: createMemorySessionStore(),
      provider: createMockProvider(),
      logger,
      sandbox: { envs: { API_TOKEN: 'sk-live-do-not-log' } },
    })
    await sessions.withTurn('conv-1', async (turn) => turn.sandbox.runCommand('true'))
    await sessions.withTurn('conv-1', async () => {})
    await sessions.close()
    const messages = lines.map((line) => line.message)
    expect(messages).toEqual([
      'turn begin',
      'resume created',
      'sandbox paused',
      'turn end',
      'turn begin',
      'resume resumed',
      'sandbox paused',
      'turn end',
      'manager closing',
      'manager closed',
    ])
    expect(lines[1]?.fields).toMatchObject({
      conversationId: 'conv-1',
      tenant: 'default',
      outcome: 'created',
    })
    expect(JSON.stringify(lines)).not.toContain('sk-live-do-not-log')
    expect(() =>
      createSessionManager({
        store: createMemorySessionStore(),
        provider: createMockProvider(),
        logger: 42 as never,
      }),
    ).toThrow(/logger/)
  })
})
