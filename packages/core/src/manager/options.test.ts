import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import { SandkeepError } from '../contract/errors.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { setup } from './manager.test-support.js'
import { createSessionManager } from './session-manager.js'

describe('createSessionManager: options', () => {
  it('rejects bad ids and options before any I/O', async () => {
    const { provider, store, sessions } = setup()
    let storeCalls = 0
    const counted = new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          storeCalls++
          return value.apply(target, args)
        }
      },
    })
    const guarded = createSessionManager({ store: counted, provider })
    for (const bad of ['', 'a\nb', 'x'.repeat(600), 42 as unknown as string, null as unknown as string]) {
      await expect(guarded.beginTurn(bad)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    }
    await expect(guarded.beginTurn('ok', { tenant: 'bad tenant!' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(guarded.beginTurn('ok', { lazy: 'yes' as unknown as boolean })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(guarded.beginTurn('ok', { colour: 1 } as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(guarded.endSession('')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(guarded.getSession('a\u0000')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(storeCalls).toBe(0)
    expect(provider.calls).toHaveLength(0)
    expect(() => createSessionManager({ store, provider, onTurnEnd: 'sleep' as never })).toThrow(
      SandkeepError,
    )
    expect(() => createSessionManager({ store, provider, leaseMs: -1 })).toThrow(/leaseMs/)
    expect(() => createSessionManager({ store, provider, extra: 1 } as never)).toThrow(/unknown option/)
    expect(() =>
      createSessionManager({ store, provider, sandbox: { metadata: { 'sandkeep.tenant': 'x' } } }),
    ).toThrow(/sandkeep writes it/)
    void sessions
  })

  it('refuses onTurnEnd pause when the provider cannot pause', () => {
    const provider = createMockProvider({ without: ['pause'] })
    expect(() => createSessionManager({ store: createMemorySessionStore(), provider })).toThrow(
      expect.objectContaining({ code: 'CAPABILITY_UNSUPPORTED' }),
    )
    expect(() =>
      createSessionManager({ store: createMemorySessionStore(), provider, onTurnEnd: 'keep' }),
    ).not.toThrow()
  })

  it('says what is wrong with one wording: the parameter, then the fix', async () => {
    const { provider, store, sessions, id } = setup()
    expect(() => createSessionManager({ store, provider, extra: 1 } as never)).toThrow(
      'createSessionManager has an unknown option "extra"; known: store, provider,',
    )
    expect(() => createSessionManager({ store, provider, sandbox: { size: 1 } as never })).toThrow(
      'options.sandbox has an unknown option "size"; known: template,',
    )
    await expect(sessions.beginTurn(id, { colour: 1 } as never)).rejects.toThrow(
      'turn options has an unknown option "colour"; known: tenant, abortSignal, lazy, prewarm.',
    )
    expect(() => createSessionManager({ store, provider, rehydrate: 'all' as never })).toThrow(
      "options.rehydrate must be 'journal' or 'none'.",
    )
  })
})
