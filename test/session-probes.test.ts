// Probes and turn errors on the real stack (Redis, the unmodified E2B SDK, a local-e2b host): a wrong-tenant
// mapping that endSession clears, a tampered marker file, platform hiccups during the resume probes, and the
// error codes a turn reports when its sandbox is paused under it, its lease is lost or a journal step is bad.
import { SandkeepError, type Turn } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { conversation, mapToSandbox, startRig, useRig } from './helpers/sessions.js'

describe('session manager probes and error codes (local-e2b, memory-keeping pause)', () => {
  const rig = useRig({ pauseMode: 'memory' })

  const turn = <T>(id: string, fn: (turn: Turn) => Promise<T>) =>
    rig().sessions.withTurn(id, fn, { tenant: rig().tenant })

  /** Turn 1 of a fresh conversation: a variable (so the default Python context is probed), a background process. */
  async function seed(withCode = true): Promise<{ id: string; sandboxId: string }> {
    const id = conversation()
    const sandboxId = await turn(id, async (t) => {
      if (withCode) await t.sandbox.runCode('counter = 42')
      await t.sandbox.startProcess('sleep 3600')
      return (await t.ready()).id
    })
    return { id, sandboxId }
  }

  const MARKER_PATH = '/home/user/.sandkeep/marker'
  const statusOf = (t: Turn) => Object.fromEntries((t.report?.checks ?? []).map((c) => [c.name, c.status]))

  it('endSession clears a wrong-tenant mapping without touching the other sandbox', async () => {
    const { sandboxId: victim } = await seed()
    const pauses = rig().host.getSandbox(victim)?.pauseCount
    const key = { tenant: `${rig().tenant}-other`, conversationId: conversation() }
    await mapToSandbox(rig().store, key, victim)
    const options = { tenant: key.tenant }
    const error = await rig()
      .sessions.beginTurn(key.conversationId, options)
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'TENANT_MISMATCH', sandboxId: victim })
    expect(await rig().sessions.endSession(key.conversationId, options)).toBe(true)
    expect(await rig().sessions.getSession(key.conversationId, options)).toBeNull()
    // The other tenant's sandbox is neither killed nor resumed nor paused again.
    expect(rig().host.getSandbox(victim)).toMatchObject({ state: 'paused', pauseCount: pauses })
    // The conversation is usable again: a fresh sandbox of its own.
    const fresh = await rig().sessions.withTurn(
      key.conversationId,
      async (t) => {
        expect(t.report).toMatchObject({ outcome: 'created' })
        return (await t.ready()).id
      },
      options,
    )
    expect(fresh).not.toBe(victim)
    await rig().sessions.endSession(key.conversationId, options)
    expect(rig().host.getSandbox(victim)?.state).toBe('paused')
  })

  const tampering = {
    directory: `rm -f ${MARKER_PATH} && mkdir ${MARKER_PATH}`,
    fifo: `rm -f ${MARKER_PATH} && mkfifo ${MARKER_PATH}`,
    'dangling symlink': `rm -f ${MARKER_PATH} && ln -s /home/user/nowhere ${MARKER_PATH}`,
    'symlink to another file': `echo other > /home/user/other.txt && rm -f ${MARKER_PATH} && ln -s /home/user/other.txt ${MARKER_PATH}`,
  }

  it.each(Object.entries(tampering))(
    'a marker replaced by a %s is repaired, the turn goes on, the next one is healthy',
    async (_kind, command) => {
      const { id, sandboxId } = await seed()
      // Code in the sandbox replaces the marker; this turn found it intact, so its end does not rewrite it.
      await turn(id, async (t) => {
        expect((await t.sandbox.runCommand(command)).exitCode).toBe(0)
      })
      const started = Date.now()
      await turn(id, async (t) => {
        expect(t.report).toMatchObject({ outcome: 'resumed', sandboxId, stateLost: false })
        expect(t.report?.survived).toEqual({ memory: true, filesystem: null, processes: true })
        expect(statusOf(t)).toMatchObject({ memory: 'passed', filesystem: 'repaired', processes: 'passed' })
        expect((await t.sandbox.runCode('counter')).text).toBe('42')
      })
      // Bounded well under the 120 s a blocking read of a FIFO used to cost (the probe's read timeout is 5 s).
      expect(Date.now() - started).toBeLessThan(60_000)
      await turn(id, async (t) => {
        expect(t.report).toMatchObject({ outcome: 'resumed', stateLost: false })
        expect(t.report?.survived).toEqual({ memory: true, filesystem: true, processes: true })
      })
    },
  )

  it.each([
    ['directory', tampering.directory],
    ['dangling symlink', tampering['dangling symlink']],
  ])(
    'a marker replaced by a %s is repaired when envd reads it (no interpreter used)',
    async (_kind, command) => {
      const { id } = await seed(false)
      await turn(id, async (t) => {
        expect((await t.sandbox.runCommand(command)).exitCode).toBe(0)
      })
      await turn(id, async (t) => {
        expect(t.report).toMatchObject({ outcome: 'resumed', stateLost: false })
        expect(statusOf(t), JSON.stringify(t.report?.checks)).toMatchObject({ filesystem: 'repaired' })
      })
      await turn(id, async (t) => {
        expect(t.report?.survived.filesystem).toBe(true)
      })
    },
  )

  it.each([
    ['envd', 502],
    ['envd', 503],
    ['envd', 500],
    ['execute', 502],
    ['execute', 503],
    ['execute', 500],
  ] as const)(
    'one %s %i during the resume probes is retried: the turn succeeds and the report is true',
    async (operation, status) => {
      const { id, sandboxId } = await seed()
      rig().host.faults.failNext(operation, { count: 1, status, sandboxId })
      await turn(id, async (t) => {
        expect(t.report).toMatchObject({ outcome: 'resumed', sandboxId, stateLost: false })
        expect(t.report?.survived).toEqual({ memory: true, filesystem: true, processes: true })
        expect((await t.sandbox.runCode('counter')).text).toBe('42')
      })
    },
  )

  it('a probe that keeps failing is unknown (null), not lost', async () => {
    const { id, sandboxId } = await seed()
    // More failures than the retries and the one extra attempt can absorb (2 × (1 + 4 retries)).
    rig().host.faults.failNext('envd', { count: 10, status: 503, sandboxId })
    await turn(id, async (t) => {
      expect(t.report).toMatchObject({ outcome: 'resumed', stateLost: false })
      expect(t.report?.survived).toEqual({ memory: true, filesystem: true, processes: null })
      expect(t.report?.checks.find((c) => c.name === 'processes')?.message).toMatch(/^unknown/)
    })
    rig().host.faults.clear()
  })

  it('a turn whose sandbox another process paused gets SANDBOX_PAUSED', async () => {
    const { id, sandboxId } = await seed()
    const stalled = await rig().sessions.beginTurn(id, { tenant: rig().tenant })
    // Another process pauses the sandbox while this turn still holds it.
    await rig().sessions.provider.pause?.(sandboxId)
    for (const call of [() => stalled.sandbox.runCode('counter'), () => stalled.sandbox.runCommand('true')]) {
      const error = await call().catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'SANDBOX_PAUSED', sandboxId })
    }
    await stalled.end()
    await turn(id, async (t) => {
      expect((await t.sandbox.runCode('counter')).text).toBe('42')
    })
  })

  it('a lost lease aborts the turn and its later sandbox calls fail with LEASE_LOST', async () => {
    const leases = await startRig({ pauseMode: 'memory' }, { leaseMs: 600 })
    try {
      const id = conversation()
      const t = await leases.sessions.beginTurn(id, { tenant: leases.tenant })
      // The lease vanishes under the turn (as when it lapsed and another holder took the session).
      await leases.store.delete({ tenant: leases.tenant, conversationId: id })
      const deadline = Date.now() + 10_000
      while (!t.signal.aborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      expect(SandkeepError.hasCode(t.signal.reason, 'LEASE_LOST')).toBe(true)
      const error = await t.sandbox.runCommand('true').catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'LEASE_LOST' })
      await t.end()
    } finally {
      await leases.close()
    }
  })

  it("a journal file step outside the sandbox's home is refused when recorded", async () => {
    const id = conversation()
    await turn(id, async (t) => {
      for (const path of ['../../etc/passwd', '/etc/passwd', '/home/user/../../etc/x', '/home/user']) {
        const error = await t.journal.record({ kind: 'file', path, content: 'x' }).catch((e: unknown) => e)
        expect(error, path).toMatchObject({ code: 'INVALID_ARGUMENT' })
      }
      await t.journal.record({ kind: 'file', path: '/home/user/app/config.txt', content: 'a' })
      await t.journal.record({ kind: 'file', path: 'notes.txt', content: 'b' })
      expect(await t.journal.list()).toHaveLength(2)
    })
    // The store refuses it too (its own validator), before anything is written.
    const error = await rig()
      .store.appendJournal(
        { tenant: rig().tenant, conversationId: id },
        { kind: 'file', path: '../../etc/passwd', content: 'x' },
      )
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' })
  })
})
