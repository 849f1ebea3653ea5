// What a conversation must never silently lose or roll back, and what must never be left running, on the real
// stack (local-e2b through the E2B SDK, real Redis): gc keeping the journal a recreation needs, a marker
// removed along with the dotfiles, a first turn aborted while its sandbox is being created, a store that lost
// everything before another process's turn, and an app server whose wall clock jumps.
import { randomUUID } from 'node:crypto'
import {
  createSessionManager,
  hashConversationId,
  type SessionKey,
  type SessionManager,
  type SessionStore,
  type Turn,
} from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import type { LocalE2BHost } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { startVolatileServer, type TestVolatileServer } from '../packages/redis/test/redis-servers.js'
import { conversation, type SessionRig, useRig } from './helpers/sessions.js'

const HOUR_MS = 3600_000

/** The host's sandboxes of one conversation (by the metadata sandkeep writes at creation). */
function sandboxesOf(host: LocalE2BHost, key: SessionKey) {
  const session = hashConversationId(key.conversationId)
  return host
    .listSandboxes()
    .filter(
      (sandbox) =>
        sandbox.metadata['sandkeep.session'] === session &&
        sandbox.metadata['sandkeep.tenant'] === key.tenant,
    )
}

/**
 * Waits until the host finished every create it received (each one passes the create latency fault first),
 * bounded: a request the SDK sent before an abort is served whether or not anyone still waits for it.
 */
async function createsServed(host: LocalE2BHost): Promise<void> {
  const received = () =>
    host.events.list({ type: 'fault-trigger' }).filter((event) => event.detail.operation === 'create').length
  const served = () => host.events.list({ type: 'sandbox-create' }).length
  // A request on its way to the host gets there within this on loopback.
  await new Promise((resolve) => setTimeout(resolve, 50))
  const deadline = performance.now() + 10_000
  while (served() < received()) {
    if (performance.now() > deadline) throw new Error('the host did not finish its creates within 10 s')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Runs a turn of the conversation `id` in the rig's tenant. */
function turns(rig: () => SessionRig, id: string) {
  return <T>(body: (turn: Turn) => Promise<T>) => rig().sessions.withTurn(id, body, { tenant: rig().tenant })
}

/** Writes a file and records the write as a setup step, as an agent's tool does with `setup: true`. */
async function writeRecorded(turn: Turn, path: string, content: string): Promise<void> {
  await turn.sandbox.writeFile(path, content)
  await turn.journal.record({ kind: 'file', path, content })
}

/** Runs code and records it as a setup step. */
async function runRecorded(turn: Turn, code: string): Promise<void> {
  expect((await turn.sandbox.runCode(code)).error).toBeNull()
  await turn.journal.record({ kind: 'code', code })
}

const filesystemCheck = (turn: Turn) => turn.report?.checks.find((check) => check.name === 'filesystem')

describe("gc keeps the session a recreation needs (onTurnEnd: 'kill')", () => {
  const rig = useRig({ pauseMode: 'memory' }, { onTurnEnd: 'kill' })

  it('gc after the kill keeps the session; the next turn recreates, replays the journal and says stateLost', async () => {
    const { sessions, tenant } = rig()
    const id = conversation()
    const turn = turns(rig, id)
    await turn(async (t) => {
      await writeRecorded(t, 'report.md', 'v1')
      await runRecorded(t, 'total = 41')
    })
    expect((await sessions.getSession(id, { tenant }))?.state).toBe('killed')
    const collected = await sessions.gc({ tenant })
    expect(collected.keptSessions).toEqual([{ tenant, conversationId: id }])
    expect(collected.deletedSessions).toEqual([])
    await turn(async (t) => {
      expect(t.report).toMatchObject({ outcome: 'recreated', stateLost: true, rehydratedSteps: 2 })
      expect(await t.sandbox.readFile('report.md')).toBe('v1')
      expect((await t.sandbox.runCode('total + 1')).text).toBe('42')
    })
  })
})

describe('gc keeps the session of a sandbox past its retention', () => {
  const rig = useRig({ pauseMode: 'memory' })

  it('the expired sandbox is reported, the session kept, and the next turn recreates it with stateLost', async () => {
    const { sessions, host, tenant } = rig()
    const id = conversation()
    const turn = turns(rig, id)
    const sandboxId = await turn(async (t) => {
      await runRecorded(t, 'total = 41')
      return (await t.ready()).id
    })
    await host.faults.expire(sandboxId)
    expect((await sessions.gc({ tenant })).keptSessions).toEqual([{ tenant, conversationId: id }])
    await turn(async (t) => {
      expect(t.report).toMatchObject({ outcome: 'recreated', stateLost: true, rehydratedSteps: 1 })
      expect((await t.sandbox.runCode('total + 1')).text).toBe('42')
    })
  })
})

describe('a marker removed with the dotfiles is not a lost filesystem', () => {
  const rig = useRig({ pauseMode: 'memory' })
  const removeDotfiles = 'cd /home/user && rm -rf ./.[!.]*'

  it('files sandkeep saw written are still there: files kept, nothing replayed, report.md stays v2', async () => {
    const turn = turns(rig, conversation())
    await turn((t) => writeRecorded(t, 'report.md', 'v1'))
    await turn(async (t) => {
      await t.sandbox.writeFile('report.md', 'v2')
      expect((await t.sandbox.runCommand(removeDotfiles)).exitCode).toBe(0)
      expect(await t.sandbox.exists('/home/user/.sandkeep/marker')).toBe(false)
    })
    await turn(async (t) => {
      expect(t.report).toMatchObject({ outcome: 'resumed', stateLost: false, rehydratedSteps: 0 })
      expect(t.report?.survived.filesystem).toBe(true)
      expect(filesystemCheck(t)?.message).toMatch(
        /marker file is gone, but 1 of 1 file\(s\) written earlier are still there/,
      )
      expect(await t.sandbox.readFile('report.md')).toBe('v2')
    })
    // The turn end wrote the marker again: the turn after finds it.
    await turn(async (t) => {
      expect(filesystemCheck(t)?.message).toBe('files kept')
    })
  })

  it('a file changed by code since: the replay keeps it as it is and says so', async () => {
    const { sessions } = rig()
    const turn = turns(rig, conversation())
    await turn(async (t) => {
      await writeRecorded(t, 'report.md', 'v1')
      await t.journal.record({ kind: 'file', path: 'notes/plan.md', content: 'plan' })
    })
    await turn(async (t) => {
      // Written by a command: sandkeep does not see it, so report.md's witness (v1) no longer matches. (No
      // interpreter runs: one that kept its memory would prove the disk was not reset, see marker-verdict.ts.)
      expect((await t.sandbox.runCommand('printf v2 > /home/user/report.md')).exitCode).toBe(0)
      expect((await t.sandbox.runCommand(removeDotfiles)).exitCode).toBe(0)
    })
    const rehydrations: unknown[] = []
    const stop = sessions.on('rehydrate', (event) => rehydrations.push(event))
    try {
      await turn(async (t) => {
        expect(t.report).toMatchObject({ stateLost: true, keptFiles: ['report.md'] })
        expect(t.report?.survived.filesystem).toBe(false)
        expect(await t.sandbox.readFile('report.md')).toBe('v2')
        // A file the sandbox does not have is still written from the journal.
        expect(await t.sandbox.readFile('notes/plan.md')).toBe('plan')
      })
    } finally {
      stop()
    }
    expect(rehydrations).toMatchObject([{ reason: 'filesystem-lost', steps: 1, keptFiles: ['report.md'] }])
  })
})

describe('a first turn aborted while its sandbox is being created', () => {
  const rig = useRig({ pauseMode: 'memory' })

  afterEach(() => rig().host.faults.clear())

  it('leaves no sandbox running unmapped, whenever the abort lands in the first 400 ms', async () => {
    const { sessions, store, host, tenant } = rig()
    // A platform that takes its time to create (as a real one does under load): the abort often lands while
    // the create is in flight, after the platform took the request.
    host.faults.addLatency('create', 200)
    const outcomes: string[] = []
    // Every 25 ms over the first 400 ms, then (a loaded machine may not finish a turn in 400 ms) doubling
    // delays until one turn ran before its abort: the sweep ends on an event, not on the machine's speed.
    const nextDelay = (delayMs: number) => (delayMs < 400 ? delayMs + 25 : delayMs * 2)
    for (
      let delayMs = 0;
      delayMs <= 400 || (!outcomes.includes('ran') && delayMs <= 25_600);
      delayMs = nextDelay(delayMs)
    ) {
      const key = { tenant, conversationId: conversation() }
      const controller = new AbortController()
      const timer = setTimeout(() => controller.abort(new Error('the user stopped the turn')), delayMs)
      const outcome = await sessions
        .withTurn(key.conversationId, async () => 'ran', { tenant, abortSignal: controller.signal })
        .catch((error: { code?: string }) => error.code ?? 'error')
      clearTimeout(timer)
      outcomes.push(outcome)
      // Whatever the platform was still creating when the turn gave up has been created by now.
      await createsServed(host)
      const mapped = (await store.get(key))?.sandboxId ?? null
      const left = sandboxesOf(host, key)
      expect(
        left.filter((sandbox) => sandbox.state === 'running'),
        `abort after ${delayMs} ms`,
      ).toEqual([])
      expect(
        left.filter((sandbox) => sandbox.sandboxId !== mapped),
        `abort after ${delayMs} ms`,
      ).toEqual([])
    }
    // The loop did abort creations in flight, not only turns that had not begun or had finished.
    expect(outcomes.filter((outcome) => outcome === 'ABORTED').length, outcomes.join(' ')).toBeGreaterThan(5)
    expect(outcomes).toContain('ran')
  }, 240_000)
})

describe('another process after the store lost everything', () => {
  const rig = useRig({ pauseMode: 'memory' })
  let redis: TestVolatileServer
  beforeAll(async () => {
    redis = await startVolatileServer()
  })
  afterAll(async () => {
    await redis?.stop()
  })

  /** A manager of its own (another process: no shared cache) over the private Redis and the rig's host. */
  function processManager(): { sessions: SessionManager; store: SessionStore } {
    const store = createRedisSessionStore({ redis: redis.url, prefix: `sk-${randomUUID().slice(0, 8)}` })
    const { host } = rig()
    const provider = createE2BProvider({
      apiKey: host.apiKey,
      apiUrl: host.apiUrl,
      sandboxUrl: host.sandboxUrl,
    })
    return { sessions: createSessionManager({ store, provider }), store }
  }

  for (const loss of ['FLUSHALL', 'a restart without persistence'] as const) {
    it(`${loss}: finds the conversation's sandbox by its metadata, takes it over and says stateLost`, async () => {
      const first = processManager()
      const second = processManager()
      const key = { tenant: rig().tenant, conversationId: conversation() }
      try {
        const sandboxId = await first.sessions.withTurn(
          key.conversationId,
          async (turn) => {
            await turn.sandbox.runCode('total = 41')
            await turn.sandbox.writeFile('report.md', 'v1')
            return (await turn.ready()).id
          },
          { tenant: key.tenant },
        )
        if (loss === 'FLUSHALL') {
          const client = new Redis(redis.url)
          await client.flushall()
          client.disconnect()
        } else {
          await redis.restart()
        }
        const lost: unknown[] = []
        second.sessions.on('session-lost', (event) => lost.push(event))
        await second.sessions.withTurn(
          key.conversationId,
          async (turn) => {
            expect(turn.report).toMatchObject({ outcome: 'resumed', sandboxId, stateLost: true })
            expect((await turn.sandbox.runCode('total + 1')).text).toBe('42')
            expect(await turn.sandbox.readFile('report.md')).toBe('v1')
          },
          { tenant: key.tenant },
        )
        expect(lost).toEqual([{ ...key, sandboxId, adopted: true }])
        expect((await second.store.get(key))?.sandboxId).toBe(sandboxId)
        // One sandbox for the conversation, and it is paused: nothing runs on until gc.
        expect(sandboxesOf(rig().host, key).map((sandbox) => [sandbox.sandboxId, sandbox.state])).toEqual([
          [sandboxId, 'paused'],
        ])
      } finally {
        await second.sessions.endSession(key.conversationId, { tenant: key.tenant }).catch(() => false)
        await first.store.close()
        await second.store.close()
      }
    })
  }
})

describe("an app server whose wall clock jumps (the store's clock: Redis TIME)", () => {
  const rig = useRig({ pauseMode: 'memory' })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('a turn during which the clock moves +2 h counts seconds of running, and so does the pause after', async () => {
    const { sessions, tenant } = rig()
    const id = conversation()
    const turn = turns(rig, id)
    await turn(async (t) => {
      await t.sandbox.runCode('total = 41')
      vi.useFakeTimers({ toFake: ['Date'] })
      vi.setSystemTime(Date.now() + 2 * HOUR_MS)
    })
    const afterOne = await sessions.getSession(id, { tenant })
    expect(afterOne?.runningSeconds).toBeGreaterThan(0)
    expect(afterOne?.runningSeconds).toBeLessThan(60)
    // The clock is still 2 h ahead at the next resume: the pause it ends is seconds long, not two hours.
    await turn((t) => t.sandbox.runCode('total + 1'))
    const afterTwo = await sessions.getSession(id, { tenant })
    expect(afterTwo?.pausedSeconds).toBeLessThan(60)
    expect(afterTwo?.runningSeconds).toBeLessThan(120)
    expect(Math.abs((afterTwo?.lastTurnEndedAt ?? 0) - (Date.now() - 2 * HOUR_MS))).toBeLessThan(60_000)
  })

  it('gc on a clock 2 h ahead spares a sandbox that is being created', async () => {
    const { host, store, tenant } = rig()
    let openGate = () => {}
    const gate = new Promise<void>((resolve) => {
      openGate = resolve
    })
    // The creating process: its mapping write waits, as a slow store or a loaded process would make it.
    const slowMapping: SessionStore = {
      ...store,
      setSandbox: async (...args) => {
        await gate
        return store.setSandbox(...args)
      },
    }
    const provider = createE2BProvider({
      apiKey: host.apiKey,
      apiUrl: host.apiUrl,
      sandboxUrl: host.sandboxUrl,
    })
    const creator = createSessionManager({ store: slowMapping, provider })
    const collector = createSessionManager({ store, provider })
    const key = { tenant, conversationId: conversation() }
    const turn = creator.withTurn(key.conversationId, async (t) => t.report?.outcome, { tenant })
    try {
      const deadline = performance.now() + 30_000
      while (sandboxesOf(host, key).length === 0) {
        if (performance.now() > deadline) throw new Error('the creating turn made no sandbox in 30 s')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const [creating] = sandboxesOf(host, key)
      vi.useFakeTimers({ toFake: ['Date'] })
      vi.setSystemTime(Date.now() + 2 * HOUR_MS)
      const collected = await collector.gc({ tenant })
      expect(collected.killedSandboxes).not.toContain(creating!.sandboxId)
      expect(host.getSandbox(creating!.sandboxId)?.state).toBe('running')
    } finally {
      openGate()
      vi.useRealTimers()
    }
    expect(await turn).toBe('created')
  })
})
