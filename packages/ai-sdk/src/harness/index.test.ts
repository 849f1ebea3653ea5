// The harness provider over the real session manager, the memory store and the mock provider. The mock's
// commands run in a real bash here (in a temporary directory), since onFirstCreate's lock is a shell script.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createMemorySessionStore, createSessionManager, SandkeepError } from '@sandkeep/core'
import { createMockProvider, type MockProviderOptions } from '@sandkeep/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { createSandkeepHarnessProvider, type SandkeepHarnessProviderOptions } from './index.js'

const homes: string[] = []
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true })
})

function rig(
  options: { provider?: MockProviderOptions; harness?: Partial<SandkeepHarnessProviderOptions> } = {},
) {
  const home = mkdtempSync(join(tmpdir(), 'sandkeep-harness-'))
  homes.push(home)
  const provider = createMockProvider({
    onCommand: (command) => {
      const done = spawnSync('bash', ['-c', command], { cwd: home, encoding: 'utf8' })
      return { exitCode: done.status ?? -1, stdout: done.stdout, stderr: done.stderr }
    },
    ...options.provider,
  })
  const store = createMemorySessionStore()
  const sessions = createSessionManager({
    store,
    provider,
    retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 5 },
  })
  const harness = createSandkeepHarnessProvider({
    sessions,
    workingDirectory: home,
    ports: [3000],
    ...options.harness,
  })
  return { home, provider, store, sessions, harness }
}

async function codeOf(promise: PromiseLike<unknown>): Promise<string | undefined> {
  try {
    await promise
  } catch (error) {
    return SandkeepError.isInstance(error) ? error.code : `not a SandkeepError: ${String(error)}`
  }
  return undefined
}

describe('createSandkeepHarnessProvider', () => {
  it('refuses bad options, session ids, identities and tenants before any I/O', async () => {
    const { sessions, provider, store, harness } = rig()
    expect(() => createSandkeepHarnessProvider({ sessions, colour: 'red' } as never)).toThrow(
      /no option "colour"/,
    )
    expect(() => createSandkeepHarnessProvider({ sessions, ports: [0] })).toThrow(SandkeepError)
    expect(() => createSandkeepHarnessProvider({ sessions, tenant: 'a b' })).toThrow(SandkeepError)
    expect(() => createSandkeepHarnessProvider({ sessions: {} as never })).toThrow(SandkeepError)
    for (const identity of ['', 'a\nb', 'x'.repeat(257), 42]) {
      expect(await codeOf(harness.createSession({ sessionId: 'c1', identity: identity as string }))).toBe(
        'INVALID_ARGUMENT',
      )
    }
    expect(await codeOf(harness.createSession({ sessionId: '' }))).toBe('INVALID_ARGUMENT')
    expect(await codeOf(harness.createSession({ sessionId: 'c1', onFirstCreate: 'yes' as never }))).toBe(
      'INVALID_ARGUMENT',
    )
    expect(await codeOf(harness.resumeSession({ sessionId: 'a\u0000b' }))).toBe('INVALID_ARGUMENT')
    const badTenant = createSandkeepHarnessProvider({ sessions, tenant: () => 'a/x' })
    expect(await codeOf(badTenant.createSession({ sessionId: 'c1' }))).toBe('INVALID_ARGUMENT')
    expect(provider.calls).toEqual([])
    expect((await store.list('default')).sessions).toEqual([])
  })

  it('creates on the first session, runs onFirstCreate once with the restricted view, and stop() pauses', async () => {
    const { harness, provider, home } = rig()
    const seen: unknown[] = []
    const onFirstCreate = async (
      session: Parameters<NonNullable<Parameters<typeof harness.createSession>[0]>['onFirstCreate'] & {}>[0],
    ) => {
      seen.push(session)
      await session.writeTextFile({ path: `${home}/bridge.js`, content: 'bridge' })
    }
    const first = await harness.createSession({ sessionId: 'conv-1', identity: 'recipe-a', onFirstCreate })
    expect(first.report.outcome).toBe('created')
    expect(first.firstCreateRan).toBe(true)
    expect(first.id).toBe([...provider.sandboxes.keys()][0])
    expect(first.defaultWorkingDirectory).toBe(home)
    expect(first.ports).toEqual([3000])
    expect(seen).toHaveLength(1)
    const restricted = first.restricted()
    expect(seen[0]).toBe(restricted)
    expect(await codeOf(restricted.end())).toBe('CAPABILITY_UNSUPPORTED')
    expect((await restricted.ready()).native).toBeUndefined()
    expect(await first.readTextFile({ path: `${home}/bridge.js` })).toBe('bridge')
    expect([restricted.started, restricted.ended, restricted.tenant]).toEqual([true, false, 'default'])
    await first.stop()
    await first.stop()
    expect(restricted.ended).toBe(true)
    expect(first.endReport?.action).toBe('paused')
    expect(provider.sandboxes.get(first.id)?.state).toBe('paused')
    expect(provider.callsOf('pause')).toHaveLength(1)

    // The same conversation again: the same sandbox, resumed; the hook already ran for this identity.
    const again = await harness.createSession({ sessionId: 'conv-1', identity: 'recipe-a', onFirstCreate })
    expect(again.report.outcome).toBe('resumed')
    expect(again.id).toBe(first.id)
    expect(again.firstCreateRan).toBe(false)
    await again.stop()
    // Another bootstrap identity means another setup: it runs again.
    const upgraded = await harness.createSession({ sessionId: 'conv-1', identity: 'recipe-b', onFirstCreate })
    expect(upgraded.firstCreateRan).toBe(true)
    expect(seen).toHaveLength(2)
    await upgraded.stop()
    expect(provider.callsOf('create')).toHaveLength(1)
  })

  it('resumes through the ladder; a recreated sandbox gets onFirstCreate again; an unknown session is refused', async () => {
    const { harness, provider } = rig()
    expect(await codeOf(harness.resumeSession({ sessionId: 'never' }))).toBe('SANDBOX_NOT_FOUND')
    expect(provider.calls).toEqual([])
    let runs = 0
    const created = await harness.createSession({
      sessionId: 'conv-2',
      onFirstCreate: async () => {
        runs++
      },
    })
    await created.stop()
    const resumed = await harness.resumeSession({ sessionId: 'conv-2' })
    expect(resumed.report.outcome).toBe('resumed')
    expect(resumed.firstCreateRan).toBe(false)
    await resumed.stop()
    provider.expire(created.id)
    const recreated = await harness.resumeSession({ sessionId: 'conv-2' })
    expect(recreated.report.outcome).toBe('recreated')
    expect(recreated.report.stateLost).toBe(true)
    expect(recreated.id).not.toBe(created.id)
    expect(recreated.firstCreateRan).toBe(true)
    expect(runs).toBe(2)
    await recreated.destroy()
  })

  it('runs onFirstCreate once when two sessions of one new conversation start together', async () => {
    const { harness, provider } = rig()
    let runs = 0
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const onFirstCreate = async () => {
      runs++
      await held
    }
    const a = harness.createSession({ sessionId: 'conv-3', onFirstCreate })
    const b = harness.createSession({ sessionId: 'conv-3', onFirstCreate })
    // Let both reach the lock, then let the holder finish.
    await new Promise((resolve) => setTimeout(resolve, 400))
    release()
    const [first, second] = await Promise.all([a, b])
    expect(runs).toBe(1)
    expect([first.firstCreateRan, second.firstCreateRan].sort()).toEqual([false, true])
    expect(provider.callsOf('create')).toHaveLength(1)
    expect(second.id).toBe(first.id)
    await Promise.all([first.stop(), second.stop()])
    expect(provider.sandboxes.get(first.id)?.state).toBe('paused')
  })

  it('gives the same port endpoint before and after stop(); a bad port or protocol is INVALID_ARGUMENT', async () => {
    const { harness } = rig()
    const session = await harness.createSession({ sessionId: 'conv-4' })
    const endpoint = await session.getPortEndpoint({ port: 3000 })
    expect(endpoint).toEqual({ url: `http://3000-${session.id}.mock.invalid` })
    expect(await session.getPortEndpoint({ port: 3000, protocol: 'ws' })).toEqual({
      url: `ws://3000-${session.id}.mock.invalid`,
    })
    expect(await session.getPortUrl({ port: 3000, protocol: 'ws' })).toBe(
      `ws://3000-${session.id}.mock.invalid`,
    )
    expect(await codeOf(session.getPortEndpoint({ port: 70_000 }))).toBe('INVALID_ARGUMENT')
    expect(await codeOf(session.getPortEndpoint({ port: 3000, protocol: 'ftp' as never }))).toBe(
      'INVALID_ARGUMENT',
    )
    await session.stop()
    expect(await session.getPortEndpoint({ port: 3000 })).toEqual(endpoint)
    const bare = rig({ provider: { without: ['portEndpoint'] } })
    const unrouted = await bare.harness.createSession({ sessionId: 'conv-4' })
    expect(await codeOf(unrouted.getPortEndpoint({ port: 3000 }))).toBe('CAPABILITY_UNSUPPORTED')
    await unrouted.stop()
  })

  it('sets what the platform can change of the network, and refuses the rest', async () => {
    const { harness, provider } = rig()
    const session = await harness.createSession({ sessionId: 'conv-5' })
    const network = () => provider.sandboxes.get(session.id)?.network
    await session.setNetworkPolicy?.({ mode: 'allow-all' })
    expect(network()).toEqual({ allowInternetAccess: true })
    await session.setNetworkPolicy?.({ mode: 'deny-all' })
    expect(network()).toEqual({ allowInternetAccess: false })
    await session.setNetworkPolicy?.({
      mode: 'custom',
      allowedHosts: ['pypi.org'],
      allowedCIDRs: ['10.0.0.0/8'],
    })
    expect(network()).toEqual({ allowOut: ['pypi.org', '10.0.0.0/8'], denyOut: ['0.0.0.0/0'] })
    expect(
      await codeOf(
        session.setNetworkPolicy?.({
          mode: 'custom',
          allowedHosts: ['pypi.org'],
          deniedCIDRs: ['169.254.0.0/16'],
        }) ?? Promise.resolve(),
      ),
    ).toBe('CAPABILITY_UNSUPPORTED')
    expect(await codeOf(session.setNetworkPolicy?.({ mode: 'open' } as never) ?? Promise.resolve())).toBe(
      'INVALID_ARGUMENT',
    )
    await session.stop()
    expect(await codeOf(session.setNetworkPolicy?.({ mode: 'allow-all' }) ?? Promise.resolve())).toBe(
      'TURN_ENDED',
    )
    const fixed = rig({ provider: { without: ['updateNetwork'] } })
    const other = await fixed.harness.createSession({ sessionId: 'conv-5' })
    expect(await codeOf(other.setNetworkPolicy?.({ mode: 'allow-all' }) ?? Promise.resolve())).toBe(
      'CAPABILITY_UNSUPPORTED',
    )
    await other.stop()
  })

  it('destroy() ends the turn and the session: the sandbox is killed and the record deleted', async () => {
    const { harness, provider, sessions } = rig({
      harness: { tenant: () => 'acme' },
    })
    const session = await harness.createSession({ sessionId: 'acme:conv-6' })
    expect(session.tenant).toBe('acme')
    expect(await sessions.getSession('acme:conv-6', { tenant: 'acme' })).not.toBeNull()
    await Promise.all([session.destroy(), session.destroy()])
    expect(provider.sandboxes.has(session.id)).toBe(false)
    expect(await sessions.getSession('acme:conv-6', { tenant: 'acme' })).toBeNull()
    expect(await codeOf(harness.resumeSession({ sessionId: 'acme:conv-6' }))).toBe('SANDBOX_NOT_FOUND')
  })

  it('an aborted start ends the turn it began; maxDurationMs ends a session nobody stops', async () => {
    const { harness, provider } = rig({ provider: { latencyMs: 50 }, harness: { maxDurationMs: 300 } })
    const aborted = new AbortController()
    const start = harness.createSession({ sessionId: 'conv-7', abortSignal: aborted.signal })
    setTimeout(() => aborted.abort(new Error('caller gave up')), 10)
    await expect(start).rejects.toThrow()
    // The rejection came after the turn's end: whatever the start had created is paused again.
    expect([...provider.sandboxes.values()].every((sandbox) => sandbox.state === 'paused')).toBe(true)
    const forgotten = await harness.createSession({ sessionId: 'conv-7' })
    for (let i = 0; i < 200 && forgotten.endReport === undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(forgotten.endReport?.action).toBe('paused')
    expect(provider.sandboxes.get(forgotten.id)?.state).toBe('paused')
  })

  it('the tenant comes from the caller the app authenticated, never the session id: naming acme:chat-1 takes nothing', async () => {
    // One provider for every request; the app's auth says who calls (an AsyncLocalStorage in a real server).
    let caller = 'acme'
    const { harness, provider, sessions, home } = rig({ harness: { tenant: () => caller } })
    const ran: string[] = []
    const hookOf = (who: string) => async () => {
      ran.push(who)
    }
    const acme = await harness.createSession({
      sessionId: 'acme:chat-1',
      identity: 'acme-v1',
      onFirstCreate: hookOf('acme'),
    })
    await acme.writeTextFile({ path: `${home}/secret.txt`, content: 'acme only' })
    await acme.stop()

    caller = 'mallory'
    const stolen = await harness.createSession({
      sessionId: 'acme:chat-1',
      identity: 'evil',
      onFirstCreate: hookOf('mallory'),
    })
    // Another tenant's session of the same id: its own new sandbox, not acme's.
    expect(stolen.tenant).toBe('mallory')
    expect(stolen.id).not.toBe(acme.id)
    expect(stolen.report.outcome).toBe('created')
    await stolen.stop()

    caller = 'acme'
    const resumed = await harness.resumeSession({ sessionId: 'acme:chat-1' })
    expect([resumed.id, resumed.tenant, resumed.firstCreateRan]).toEqual([acme.id, 'acme', false])
    await resumed.stop()
    // acme's sandbox expires: the recreated one gets acme's hook, not the one mallory's createSession gave.
    await provider.kill(acme.id)
    const recreated = await harness.resumeSession({ sessionId: 'acme:chat-1' })
    expect(recreated.report.outcome).toBe('recreated')
    expect(recreated.firstCreateRan).toBe(true)
    await recreated.stop()
    expect(ran).toEqual(['acme', 'mallory', 'acme'])
    expect(await sessions.getSession('acme:chat-1', { tenant: 'mallory' })).toMatchObject({
      sandboxId: stolen.id,
    })
  })

  it('the old recipe that read the tenant from the session id fails loudly before any I/O', async () => {
    const { harness, provider } = rig({
      harness: { tenant: (({ sessionId }: { sessionId: string }) => sessionId.split(':')[0] ?? '') as never },
    })
    const error = await harness.createSession({ sessionId: 'acme:chat-1' }).catch((e: unknown) => e)
    expect(error).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('may not use the session id'),
    })
    expect(await codeOf(harness.resumeSession({ sessionId: 'acme:chat-1' }))).toBe('INVALID_ARGUMENT')
    expect(provider.calls).toHaveLength(0)
  })
})
