import { setTimeout as sleep } from 'node:timers/promises'
import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import { hashConversationId } from '../contract/sandbox-metadata.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { record, setup } from './manager.test-support.js'
import { createSessionManager } from './session-manager.js'

describe('createSessionManager: resume ladder', () => {
  it('retries transient connect failures (502 twice, 409 transitioning) and counts them', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    provider.failNext('connect', 'SANDBOX_UNAVAILABLE', { times: 2, message: '502 Bad Gateway' })
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.outcome).toBe('resumed')
      expect(turn.report?.retries).toBe(2)
    })
    expect(provider.callsOf('connect')).toHaveLength(3)
  })

  it('honours Retry-After on a 429', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    provider.failNext('connect', 'SANDBOX_UNAVAILABLE', { retryAfterMs: 300, message: '429' })
    const started = Date.now()
    await sessions.withTurn(id, async () => {})
    expect(Date.now() - started).toBeGreaterThanOrEqual(280)
  })

  it('gives up after the retry budget and keeps the session', async () => {
    const { provider, sessions, id } = setup({ retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 2 } })
    await sessions.withTurn(id, async () => {})
    const before = await sessions.getSession(id)
    provider.failNext('connect', 'SANDBOX_UNAVAILABLE', { times: 5 })
    await expect(sessions.beginTurn(id)).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' })
    expect(provider.callsOf('connect')).toHaveLength(3)
    expect((await sessions.getSession(id))?.sandboxId).toBe(before?.sandboxId)
    expect(provider.callsOf('create')).toHaveLength(1)
  })

  it('throws auth errors at once without retrying or creating', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    provider.failNext('connect', 'PROVIDER_AUTH')
    await expect(sessions.beginTurn(id)).rejects.toMatchObject({ code: 'PROVIDER_AUTH' })
    expect(provider.callsOf('connect')).toHaveLength(1)
    expect(provider.callsOf('create')).toHaveLength(1)
  })

  it('wraps an unclassified provider error as PROVIDER_ERROR with the cause', async () => {
    const { provider, sessions, id } = setup()
    const boom = new Error('boom')
    provider.failNext('create', boom)
    const error = await sessions.beginTurn(id).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'PROVIDER_ERROR', cause: boom })
  })

  it('recreates a sandbox that expired, replays the journal and reports stateLost', async () => {
    const { provider, sessions, id } = setup()
    const rehydrates = record(sessions, 'rehydrate')
    let first = ''
    await sessions.withTurn(id, async (turn) => {
      first = (await turn.ready()).id
      await turn.sandbox.runCode('x = 7')
      await turn.journal.record({ kind: 'code', code: 'x = 7' })
      await turn.journal.record({ kind: 'file', path: '/home/user/cfg', content: 'on' })
    })
    provider.expire(first)
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report).toMatchObject({
        outcome: 'recreated',
        stateLost: true,
        previousSandboxId: first,
        rehydratedSteps: 2,
      })
      expect(turn.report?.survived).toEqual({ memory: false, filesystem: false, processes: false })
      expect((await turn.sandbox.runCode('x')).text).toBe('7')
      expect(await turn.sandbox.readFile('/home/user/cfg')).toBe('on')
    })
    expect(rehydrates.at(-1)).toMatchObject({ reason: 'recreated', steps: 2 })
    const stored = await sessions.getSession(id)
    expect(stored?.sandboxId).not.toBe(first)
    expect(provider.sandboxes.has(stored?.sandboxId ?? '')).toBe(true)
  })

  it('two overlapping turns that both find the sandbox gone end up on one new sandbox, rehydrated once', async () => {
    const { provider, sessions, id } = setup()
    const rehydrates = record(sessions, 'rehydrate')
    let first = ''
    await sessions.withTurn(id, async (turn) => {
      first = (await turn.ready()).id
      await turn.journal.record({ kind: 'code', code: 'v = 3' })
    })
    provider.expire(first)
    const turns = await Promise.all([sessions.beginTurn(id), sessions.beginTurn(id)])
    expect(turns.map((t) => t.report?.outcome)).toEqual(['recreated', 'recreated'])
    expect(turns[0]?.report?.sandboxId).toBe(turns[1]?.report?.sandboxId)
    expect(provider.sandboxes.size).toBe(1)
    expect(rehydrates.filter((r) => r.reason === 'recreated')).toHaveLength(1)
    for (const turn of turns) expect((await turn.sandbox.runCode('v')).text).toBe('3')
    await Promise.all(turns.map((t) => t.end()))
    expect((await sessions.getSession(id))?.sandboxId).toBe(turns[0]?.report?.sandboxId)
  })

  it('follows a connect that returns another sandbox id and records it (fenced)', async () => {
    const { provider, sessions, id } = setup()
    let first = ''
    await sessions.withTurn(id, async (turn) => {
      first = (await turn.ready()).id
    })
    provider.remapNextConnect(first)
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.sandboxId).not.toBe(first)
      expect(turn.report?.previousSandboxId).toBe(first)
      expect(turn.report?.stateLost).toBe(false)
    })
    const stored = await sessions.getSession(id)
    expect(stored?.sandboxId).not.toBe(first)
    expect(provider.sandboxes.has(stored?.sandboxId ?? '')).toBe(true)
  })

  it('never uses a sandbox whose metadata names another tenant', async () => {
    const provider = createMockProvider()
    const store = createMemorySessionStore()
    const sessions = createSessionManager({ store, provider })
    const foreign = await provider.create({ metadata: { 'sandkeep.tenant': 'evil' } })
    // A session of tenant 'acme' whose mapping was tampered with to point at it.
    const key = { tenant: 'acme', conversationId: 'c1' }
    const acquired = await store.acquire(key, { holderId: 'h', leaseMs: 1000 })
    await store.setSandbox(key, acquired.lease, {
      sandboxId: foreign.id,
      expectedSandboxId: null,
      providerId: 'mock',
    })
    await store.release(key, acquired.lease, { turnEndedAt: Date.now() })
    provider.clearCalls()
    await expect(sessions.beginTurn('c1', { tenant: 'acme' })).rejects.toMatchObject({
      code: 'TENANT_MISMATCH',
      sandboxId: foreign.id,
    })
    expect(provider.callsOf('connect')).toHaveLength(0)
    expect(provider.callsOf('pause')).toHaveLength(0)
    expect(provider.sandboxes.get(foreign.id)?.state).toBe('running')
  })

  it('overlapping turns share one sandbox: one creation, one pause after the last', async () => {
    const { provider, sessions, id } = setup()
    const turns = await Promise.all(Array.from({ length: 8 }, () => sessions.beginTurn(id)))
    expect(provider.callsOf('create')).toHaveLength(1)
    expect(new Set(turns.map((t) => t.report?.sandboxId)).size).toBe(1)
    const reports = []
    for (const turn of turns) reports.push(await turn.end())
    expect(reports.filter((r) => r.last)).toHaveLength(1)
    expect(reports.at(-1)?.action).toBe('paused')
    expect(reports.slice(0, -1).every((r) => r.action === 'left-running-for-other-holders')).toBe(true)
    expect(provider.callsOf('pause')).toHaveLength(1)
  })

  it('counts the running and paused time of overlapping turns once', async () => {
    const { sessions, id } = setup()
    // The pause begins inside withTurn (the store stamps it at the turn's release), so the window the
    // paused time must fit in starts before the call, however long the call takes to return.
    const pausedFrom = Date.now()
    await sessions.withTurn(id, async () => {})
    const before = await sessions.getSession(id)
    await sleep(150)
    // A and B both resume from the same pause; A ends first and leaves the sandbox running for B.
    const windowStart = Date.now()
    const a = await sessions.beginTurn(id)
    const b = await sessions.beginTurn(id)
    // The pause ended before this point, whichever turn's resume ended it.
    const pauseWindow = (Date.now() - pausedFrom) / 1000
    await sleep(150)
    expect((await a.end()).last).toBe(false)
    await sleep(150)
    expect((await b.end()).last).toBe(true)
    const window = (Date.now() - windowStart) / 1000
    const after = await sessions.getSession(id)
    const running = after!.runningSeconds - before!.runningSeconds
    const paused = after!.pausedSeconds - before!.pausedSeconds
    // Counted per turn, running would be about 0.45 s (more than the window) and the pause counted twice.
    expect(running).toBeGreaterThanOrEqual(0.29)
    expect(running).toBeLessThanOrEqual(window + 0.001)
    expect(paused).toBeGreaterThanOrEqual(0.14)
    expect(paused).toBeLessThanOrEqual(pauseWindow + 0.001)
  })

  it('a creator that died mid-creation is replaced once its lease lapses (single-flight, bounded wait)', async () => {
    const { provider, store, sessions, id } = setup()
    const key = { tenant: 'default', conversationId: id }
    const dead = await store.acquire(key, { holderId: 'dead-creator', leaseMs: 400 })
    expect(dead.create).toBe(true)
    const turn = await sessions.beginTurn(id)
    expect(turn.report?.outcome).toBe('created')
    expect(provider.callsOf('create')).toHaveLength(1)
    expect((await turn.end()).last).toBe(true)
  })

  it('gives up waiting for another creator after createWaitMs with SESSION_BUSY', async () => {
    const { provider, store, sessions, id } = setup({ createWaitMs: 200 })
    const key = { tenant: 'default', conversationId: id }
    await store.acquire(key, { holderId: 'slow-creator', leaseMs: 60_000 })
    await expect(sessions.beginTurn(id)).rejects.toMatchObject({ code: 'SESSION_BUSY', retryable: true })
    expect(provider.calls).toHaveLength(0)
  })

  it('the last holder pauses even when it never touched the sandbox', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    const lazy = await sessions.beginTurn(id, { lazy: true })
    const eager = await sessions.beginTurn(id)
    expect((await eager.end()).action).toBe('left-running-for-other-holders')
    const end = await lazy.end()
    expect(end).toMatchObject({ last: true, action: 'paused' })
    expect(provider.callsOf('pause')).toHaveLength(2)
    expect([...provider.sandboxes.values()][0]?.state).toBe('paused')
  })
})

describe('createSessionManager: every retry of the resume reaches report.retries', () => {
  it('counts a retried tenant check of the sandbox an overlapping turn recreated first', async () => {
    const first = setup()
    const { provider, store, id } = first
    // A second process over the same store and platform: its verified tenants are its own.
    const other = createSessionManager({
      store,
      provider,
      retry: { retries: 4, minTimeoutMs: 1, maxTimeoutMs: 5 },
    })
    let gone = ''
    await other.withTurn(id, async (turn) => {
      gone = (await turn.ready()).id
    })
    provider.expire(gone)
    // Both turns hold the lease before either resumes: both find the mapped sandbox gone.
    const winner = await first.sessions.beginTurn(id, { lazy: true })
    const loser = await other.beginTurn(id, { lazy: true })
    await winner.ready()
    expect(winner.report?.outcome).toBe('recreated')
    // The loser's mapping write fails; it checks the tenant of the winner's sandbox, once retried.
    provider.failNext('getInfo', 'SANDBOX_UNAVAILABLE', { times: 1, message: '502 Bad Gateway' })
    await loser.ready()
    expect(loser.report?.sandboxId).toBe(winner.report?.sandboxId)
    expect(provider.callsOf('getInfo').filter((c) => c.sandboxId === winner.report?.sandboxId)).toHaveLength(
      2,
    )
    expect(loser.report?.retries).toBe(1)
    await Promise.all([winner.end(), loser.end()])
  })

  it('counts a retried tenant check of the sandbox a lost session is adopted from', async () => {
    const { provider, store, sessions, id } = setup()
    let adopted = ''
    await sessions.withTurn(id, async (turn) => {
      adopted = (await turn.ready()).id
    })
    // This process forgets that it verified the sandbox (its bounded cache of verified tenants fills up)
    // but still remembers the session's last turn: ending 10 000 sessions of sandboxes it never saw.
    const limit = 10_000
    for (let n = 0; n < limit; n++) {
      const key = { tenant: 'default', conversationId: `filler-${n}` }
      const sandbox = await provider.create({ metadata: { 'sandkeep.tenant': 'default' } })
      const { lease } = await store.acquire(key, { holderId: 'filler', leaseMs: 1000 })
      await store.setSandbox(key, lease, {
        sandboxId: sandbox.id,
        expectedSandboxId: null,
        providerId: 'mock',
      })
      await sessions.endSession(key.conversationId)
    }
    // The store loses the session; the next turn takes the sandbox over after checking its tenant.
    await store.delete({ tenant: 'default', conversationId: id })
    provider.clearCalls()
    provider.failNext('getInfo', 'SANDBOX_UNAVAILABLE', { times: 1, message: '502 Bad Gateway' })
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report).toMatchObject({ sandboxId: adopted, stateLost: true })
      expect(provider.callsOf('getInfo').map((c) => c.sandboxId)).toEqual([adopted, adopted])
      expect(turn.report?.retries).toBe(1)
    })
  })

  it('an abort while the sandbox is being created: ABORTED, and the sandbox is killed once made', async () => {
    const { provider, sessions, id } = setup({}, { latencyMs: 40 })
    const controller = new AbortController()
    setTimeout(() => controller.abort(new Error('stop')), 10)
    await expect(
      sessions.withTurn(id, async () => {}, { abortSignal: controller.signal }),
    ).rejects.toMatchObject({ code: 'ABORTED' })
    // The platform made it after the abort; the turn end waited for the kill.
    expect(provider.callsOf('create')).toHaveLength(1)
    expect(provider.callsOf('kill')).toHaveLength(1)
    expect(provider.sandboxes.size).toBe(0)
    expect(await sessions.getSession(id)).toBeNull()
  })

  it('a session the store lost in another process: the sandbox found by its metadata is taken over', async () => {
    const made = setup()
    const { provider, store, id } = made
    const lost = record(made.sessions, 'session-lost')
    const first = await made.sessions.withTurn(id, async (turn) => {
      await turn.sandbox.writeFile('/home/user/notes.txt', 'kept')
      return (await turn.ready()).id
    })
    await store.delete({ tenant: 'default', conversationId: id })
    // Another process: nothing cached of the session.
    const other = createSessionManager({
      store,
      provider,
      retry: { retries: 1, minTimeoutMs: 1, maxTimeoutMs: 2 },
    })
    const otherLost = record(other, 'session-lost')
    await other.withTurn(id, async (turn) => {
      expect(turn.report).toMatchObject({ outcome: 'resumed', sandboxId: first, stateLost: true })
      expect(await turn.sandbox.readFile('/home/user/notes.txt')).toBe('kept')
    })
    expect(lost).toEqual([])
    expect(otherLost).toEqual([{ tenant: 'default', conversationId: id, sandboxId: first, adopted: true }])
    // The sandbox created alongside the search was killed: one sandbox, mapped.
    expect([...provider.sandboxes.keys()]).toEqual([first])
    expect((await store.get({ tenant: 'default', conversationId: id }))?.sandboxId).toBe(first)
  })

  it('a sandbox of the conversation whose first turn never ended is not taken over', async () => {
    const { provider, sessions, id } = setup()
    // What a creator that died before mapping its sandbox leaves: the session's metadata, no marker.
    const orphan = await provider.create({
      metadata: { 'sandkeep.tenant': 'default', 'sandkeep.session': hashConversationId(id) },
    })
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report).toMatchObject({ outcome: 'created', stateLost: false })
      expect(turn.report?.sandboxId).not.toBe(orphan.id)
    })
    // Left to gc: it maps to no session.
    expect(provider.sandboxes.has(orphan.id)).toBe(true)
  })

  it('a paused sandbox of the conversation is taken over even without its marker (a turn paused it)', async () => {
    const { provider, sessions, id } = setup()
    const earlier = await provider.create({
      metadata: { 'sandkeep.tenant': 'default', 'sandkeep.session': hashConversationId(id) },
    })
    await provider.pause!(earlier.id)
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report).toMatchObject({ outcome: 'resumed', sandboxId: earlier.id, stateLost: true })
    })
    expect([...provider.sandboxes.keys()]).toEqual([earlier.id])
  })

  it('a failed search for the earlier sandbox is reported and the first turn goes on', async () => {
    const { provider, sessions, id } = setup({ retry: { retries: 0, minTimeoutMs: 1, maxTimeoutMs: 1 } })
    const errors = record(sessions, 'error')
    provider.failNext('list', 'PROVIDER_ERROR')
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report).toMatchObject({ outcome: 'created', stateLost: false })
    })
    expect(errors.map((e) => e.phase)).toEqual(['find-session-sandbox'])
  })
})
