import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import type { OnTurnEnd } from '../contract/session-manager-types.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { createSessionManager } from './session-manager.js'

/** A mock provider that says it honours the given create options (the mock records whatever it is given). */
function providerWith(...capabilities: ('lifecycle' | 'network' | 'secure')[]) {
  return Object.assign(createMockProvider(), { createCapabilities: capabilities })
}

async function createdWith(options: Parameters<typeof createSessionManager>[0]) {
  const sessions = createSessionManager(options)
  await sessions.withTurn('conv-1', async () => {})
  const provider = options.provider as ReturnType<typeof createMockProvider>
  const [sandbox] = provider.sandboxes.values()
  return sandbox?.createOptions
}

describe('createSessionManager: create options passed to the provider', () => {
  it('defaults to pause on timeout where the provider honours lifecycle, unless the turn end kills', async () => {
    const expected: Record<OnTurnEnd, unknown> = {
      pause: { onTimeout: 'pause', autoResume: false },
      keep: { onTimeout: 'pause', autoResume: false },
      'auto-pause': { onTimeout: 'pause', autoResume: true },
      kill: undefined,
    }
    for (const [onTurnEnd, lifecycle] of Object.entries(expected)) {
      const store = createMemorySessionStore()
      const options = await createdWith({
        store,
        provider: providerWith('lifecycle'),
        onTurnEnd: onTurnEnd as OnTurnEnd,
      })
      expect(options?.lifecycle, onTurnEnd).toEqual(lifecycle)
    }
    // A provider that does not list lifecycle gets none by default (auto-pause keeps passing its own).
    const plain = await createdWith({ store: createMemorySessionStore(), provider: createMockProvider() })
    expect(plain?.lifecycle).toBeUndefined()
  })

  it('passes lifecycle, network and secure through as given', async () => {
    const options = await createdWith({
      store: createMemorySessionStore(),
      provider: providerWith('lifecycle', 'network', 'secure'),
      sandbox: {
        lifecycle: { onTimeout: 'kill' },
        network: {
          allowPublicTraffic: false,
          allowOut: ['api.example.com'],
          denyOut: ['0.0.0.0/0'],
          maskRequestHost: '${PORT}-app.example.com',
        },
        secure: true,
      },
    })
    expect(options).toMatchObject({
      lifecycle: { onTimeout: 'kill', autoResume: false },
      network: {
        allowPublicTraffic: false,
        allowOut: ['api.example.com'],
        denyOut: ['0.0.0.0/0'],
        maskRequestHost: '${PORT}-app.example.com',
      },
      secure: true,
    })
  })

  it('is CAPABILITY_UNSUPPORTED when the provider does not honour an option, before any I/O', () => {
    const store = createMemorySessionStore()
    for (const sandbox of [
      { lifecycle: { onTimeout: 'pause' as const } },
      { network: { allowPublicTraffic: false } },
      { secure: true },
    ]) {
      const provider = providerWith()
      expect(() => createSessionManager({ store, provider, sandbox })).toThrow(
        expect.objectContaining({ code: 'CAPABILITY_UNSUPPORTED' }),
      )
      expect(provider.calls).toHaveLength(0)
    }
  })

  it('refuses bad shapes with INVALID_ARGUMENT', () => {
    const store = createMemorySessionStore()
    const provider = providerWith('lifecycle', 'network', 'secure')
    for (const sandbox of [
      { lifecycle: { onTimeout: 'sleep' } },
      { lifecycle: { onTimeout: 'kill', autoResume: true } },
      { lifecycle: { onTimeout: 'pause', colour: 1 } },
      { lifecycle: 'pause' },
      { network: { allowOut: 'everything' } },
      { network: { denyOut: ['10.0.0.0/8\n'] } },
      { network: { allowPublicTraffic: 'no' } },
      { network: { maskRequestHost: 'a b' } },
      { network: { egressProxy: { address: 'p:1080' } } },
      { secure: 'yes' },
    ]) {
      expect(
        () => createSessionManager({ store, provider, sandbox: sandbox as never }),
        JSON.stringify(sandbox),
      ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    }
    expect(() =>
      createSessionManager({
        store,
        provider,
        onTurnEnd: 'auto-pause',
        sandbox: { lifecycle: { onTimeout: 'kill' } },
      }),
    ).toThrow(/auto-pause/)
  })
})
