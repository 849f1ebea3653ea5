// Platform faults injected into a real local-e2b host, each survived by the session manager with nothing lost
// that the platform kept: connect failing with 502 twice, a 409 while the sandbox is still transitioning, a
// connect that answers with another sandbox id, a host restart, a dropped memory, and retention expiry.
// Also: overlapping turns, lazy turns, auto-pause, and gc, on the same real stack (Redis, SDK, host).
import { codeCheck, fileCheck, type ResumeReport } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { answers, conversation, mapToSandbox, useRig, waitForServer, webServer } from './helpers/sessions.js'

const { port, command: server, healthChecks } = webServer()

describe('session manager under platform faults (local-e2b, memory-keeping pause)', () => {
  const rig = useRig({ pauseMode: 'memory' }, { healthChecks })

  /** Turn 1 of a fresh conversation: a variable (journaled), a file, a server. */
  async function seed(): Promise<{ id: string; sandboxId: string }> {
    const id = conversation()
    const sandboxId = await rig().sessions.withTurn(
      id,
      async (turn) => {
        await turn.sandbox.runCode('counter = 42')
        await turn.journal.record({ kind: 'code', code: 'counter = 42' })
        await turn.sandbox.writeFile('/home/user/notes.txt', 'kept')
        await turn.sandbox.startProcess(server)
        await waitForServer(turn.sandbox, port)
        return (await turn.ready()).id
      },
      { tenant: rig().tenant },
    )
    return { id, sandboxId }
  }

  /** What every later turn must find, whatever happened in between. */
  async function expectEverything(id: string, check: (report: ResumeReport) => void): Promise<void> {
    await rig().sessions.withTurn(
      id,
      async (turn) => {
        check(turn.report as ResumeReport)
        expect((await turn.sandbox.runCode('counter')).text).toBe('42')
        expect(await answers(turn.sandbox, port)).toBe(true)
      },
      { tenant: rig().tenant },
    )
  }

  it('connect failing twice with 502 is retried: same sandbox, state kept', async () => {
    const { id, sandboxId } = await seed()
    rig().host.faults.failNext('connect', { count: 2, status: 502, sandboxId })
    await expectEverything(id, (report) => {
      expect(report).toMatchObject({ outcome: 'resumed', sandboxId, retries: 2, stateLost: false })
      expect(report.survived).toEqual({ memory: true, filesystem: true, processes: true })
    })
    expect(await readFileIn(id)).toBe('kept')
  })

  it('a 409 while the sandbox is still transitioning is retried', async () => {
    const { id, sandboxId } = await seed()
    rig().host.faults.failNext('connect', {
      count: 1,
      status: 409,
      body: { code: 409, message: 'sandbox is still pausing' },
      sandboxId,
    })
    await expectEverything(id, (report) => {
      expect(report).toMatchObject({ outcome: 'resumed', sandboxId, retries: 1, stateLost: false })
    })
  })

  it('a 429 with Retry-After is waited out', async () => {
    const { id, sandboxId } = await seed()
    rig().host.faults.failNext('connect', {
      count: 1,
      status: 429,
      headers: { 'retry-after': '1' },
      sandboxId,
    })
    await expectEverything(id, (report) => {
      expect(report).toMatchObject({ outcome: 'resumed', sandboxId, stateLost: false })
    })
  })

  it('a connect that answers with another id re-maps the session (fenced) and keeps the state', async () => {
    const { id, sandboxId } = await seed()
    rig().host.faults.changeIdOnNextConnect(sandboxId)
    let newId = ''
    await expectEverything(id, (report) => {
      expect(report.sandboxId).not.toBe(sandboxId)
      expect(report.previousSandboxId).toBe(sandboxId)
      expect(report.stateLost).toBe(false)
      newId = report.sandboxId
    })
    expect((await rig().sessions.getSession(id, { tenant: rig().tenant }))?.sandboxId).toBe(newId)
    await expectEverything(id, (report) =>
      expect(report).toMatchObject({ sandboxId: newId, outcome: 'resumed' }),
    )
  })

  it('a dropped memory is detected: the journal restores the variable, the check restarts the server', async () => {
    const { id, sandboxId } = await seed()
    await rig().host.faults.dropMemory(sandboxId)
    await expectEverything(id, (report) => {
      expect(report).toMatchObject({ outcome: 'resumed', sandboxId, stateLost: true, rehydratedSteps: 1 })
      expect(report.survived).toEqual({ memory: false, filesystem: true, processes: false })
      const status = Object.fromEntries(report.checks.map((c) => [c.name, c.status]))
      expect(status).toMatchObject({ memory: 'repaired', web: 'repaired', 'web-port': 'passed' })
    })
    expect(await readFileIn(id)).toBe('kept')
  })

  it('retention expiry: the sandbox is recreated, rehydrated, and the report says stateLost', async () => {
    const { id, sandboxId } = await seed()
    await rig().host.faults.expire(sandboxId)
    await expectEverything(id, (report) => {
      expect(report).toMatchObject({ outcome: 'recreated', previousSandboxId: sandboxId, stateLost: true })
      expect(report.rehydratedSteps).toBe(1)
      expect(report.sandboxId).not.toBe(sandboxId)
    })
    const record = await rig().sessions.getSession(id, { tenant: rig().tenant })
    expect(record?.sandboxId).not.toBe(sandboxId)
    expect(rig().host.getSandbox(record?.sandboxId ?? '')?.state).toBe('paused')
  })

  it('two overlapping turns share one sandbox and pause it once, after the last', async () => {
    const { id, sandboxId } = await seed()
    const pausesBefore = rig().host.getSandbox(sandboxId)?.pauseCount ?? 0
    const [a, b] = await Promise.all([
      rig().sessions.beginTurn(id, { tenant: rig().tenant }),
      rig().sessions.beginTurn(id, { tenant: rig().tenant }),
    ])
    expect(a.report?.sandboxId).toBe(sandboxId)
    expect(b.report?.sandboxId).toBe(sandboxId)
    await a.sandbox.runCommand('true')
    const endA = await a.end()
    expect(endA).toMatchObject({ last: false, action: 'left-running-for-other-holders' })
    expect(rig().host.getSandbox(sandboxId)?.state).toBe('running')
    expect((await b.sandbox.runCode('counter')).text).toBe('42')
    const endB = await b.end()
    expect(endB).toMatchObject({ last: true, action: 'paused' })
    expect(rig().host.getSandbox(sandboxId)?.state).toBe('paused')
    expect(rig().host.getSandbox(sandboxId)?.pauseCount).toBe(pausesBefore + 1)
  })

  it('a lazy turn that never touches the sandbox leaves it paused and calls nothing', async () => {
    const { id, sandboxId } = await seed()
    const pausesBefore = rig().host.getSandbox(sandboxId)?.pauseCount
    const turn = await rig().sessions.beginTurn(id, { tenant: rig().tenant, lazy: true })
    expect((await turn.end()).action).toBe('none')
    expect(rig().host.getSandbox(sandboxId)?.state).toBe('paused')
    expect(rig().host.getSandbox(sandboxId)?.pauseCount).toBe(pausesBefore)
  })

  it('a host restart (processes die, sandboxes come back paused) is survived', async () => {
    const { id, sandboxId } = await seed()
    await rig().host.faults.restart()
    await expectEverything(id, (report) => {
      expect(report).toMatchObject({ outcome: 'resumed', sandboxId, stateLost: true })
      expect(report.survived).toEqual({ memory: false, filesystem: true, processes: false })
    })
    expect(await readFileIn(id)).toBe('kept')
  })

  it('endSession kills the sandbox and drops the mapping', async () => {
    const { id, sandboxId } = await seed()
    expect(await rig().sessions.endSession(id, { tenant: rig().tenant })).toBe(true)
    expect(rig().host.getSandbox(sandboxId)).toBeUndefined()
    expect(await rig().sessions.getSession(id, { tenant: rig().tenant })).toBeNull()
  })

  async function readFileIn(id: string): Promise<string> {
    return rig().sessions.withTurn(id, (turn) => turn.sandbox.readFile('/home/user/notes.txt'), {
      tenant: rig().tenant,
    })
  }
})

describe('auto-pause: the platform pauses after the idle timeout, sandkeep makes no pause call', () => {
  const rig = useRig({ pauseMode: 'memory' }, { onTurnEnd: 'auto-pause', idleTimeoutMs: 1000 })

  it('pauses on its own and resumes with memory on the next turn', async () => {
    const id = conversation()
    const sandboxId = await rig().sessions.withTurn(
      id,
      async (turn) => {
        await turn.sandbox.runCode('kept = 6 * 7')
        return (await turn.ready()).id
      },
      { tenant: rig().tenant },
    )
    expect(rig().host.getSandbox(sandboxId)?.state).toBe('running')
    const deadline = Date.now() + 15_000
    while (rig().host.getSandbox(sandboxId)?.state !== 'paused') {
      if (Date.now() > deadline) throw new Error('the platform did not auto-pause the sandbox')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await rig().sessions.withTurn(
      id,
      async (turn) => {
        expect(turn.report?.survived.memory).toBe(true)
        expect((await turn.sandbox.runCode('kept')).text).toBe('42')
      },
      { tenant: rig().tenant },
    )
  })
})

describe('gc on the real stack', () => {
  const rig = useRig({ pauseMode: 'memory' }, { createWaitMs: 0, leaseMs: 1000 })

  it('kills sandboxes no session maps to and keeps sessions whose sandbox is gone (deletes them on request)', async () => {
    const kept = conversation()
    const lost = conversation()
    await rig().sessions.withTurn(kept, async (turn) => turn.sandbox.runCommand('true'), {
      tenant: rig().tenant,
    })
    const lostId = await rig().sessions.withTurn(lost, async (turn) => (await turn.ready()).id, {
      tenant: rig().tenant,
    })
    // An orphan: a sandkeep sandbox of this tenant whose session vanished (for example its TTL expired).
    const orphan = conversation()
    const orphanId = await rig().sessions.withTurn(orphan, async (turn) => (await turn.ready()).id, {
      tenant: rig().tenant,
    })
    await rig().store.delete({ tenant: rig().tenant, conversationId: orphan })
    await rig().sessions.provider.kill(lostId)
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const result = await rig().sessions.gc({ tenant: rig().tenant })
    expect(result.killedSandboxes).toEqual([orphanId])
    expect(result.keptSessions).toEqual([{ tenant: rig().tenant, conversationId: lost }])
    expect(result.deletedSessions).toEqual([])
    expect(rig().host.getSandbox(orphanId)).toBeUndefined()
    expect(await rig().sessions.getSession(kept, { tenant: rig().tenant })).not.toBeNull()
    const deleted = await rig().sessions.gc({ tenant: rig().tenant, deleteSessions: true })
    expect(deleted.deletedSessions).toEqual([{ tenant: rig().tenant, conversationId: lost }])
    expect(await rig().sessions.getSession(lost, { tenant: rig().tenant })).toBeNull()
  })
})

describe('retention: a sandbox paused longer than the platform keeps it', () => {
  const rig = useRig({ pauseMode: 'memory', retentionMs: 300 })

  it('is recreated on the next turn, rehydrated from the journal, with stateLost', async () => {
    const id = conversation()
    const first = await rig().sessions.withTurn(
      id,
      async (turn) => {
        await turn.sandbox.runCode('total = 40 + 2')
        await turn.journal.record({ kind: 'code', code: 'total = 40 + 2' })
        return (await turn.ready()).id
      },
      { tenant: rig().tenant },
    )
    await new Promise((resolve) => setTimeout(resolve, 1000))
    await rig().sessions.withTurn(
      id,
      async (turn) => {
        expect(turn.report).toMatchObject({ outcome: 'recreated', previousSandboxId: first, stateLost: true })
        expect((await turn.sandbox.runCode('total')).text).toBe('42')
      },
      { tenant: rig().tenant },
    )
  })
})

describe('declared checks and tenants on the real stack', () => {
  const rig = useRig(
    { pauseMode: 'filesystem' },
    {
      healthChecks: [
        codeCheck({
          name: 'db',
          code: "globals().get('db_connected', False)",
          repair: { code: 'db_connected = True' },
          required: true,
        }),
        fileCheck({
          name: 'config',
          path: '/home/user/app.cfg',
          repair: { command: 'echo "mode=on" > /home/user/app.cfg' },
        }),
      ],
    },
  )

  it('a code check reconnects after a cold resume and a file check regenerates a file', async () => {
    const id = conversation()
    await rig().sessions.withTurn(
      id,
      async (turn) => {
        await turn.sandbox.runCode('db_connected = True')
        await turn.sandbox.writeFile('/home/user/app.cfg', 'mode=on\n')
      },
      { tenant: rig().tenant },
    )
    await rig().sessions.withTurn(
      id,
      async (turn) => {
        const status = Object.fromEntries(turn.report?.checks.map((c) => [c.name, c.status]) ?? [])
        // The filesystem-only pause lost memory (so the code check repaired it) and kept the file.
        expect(status).toMatchObject({ memory: 'failed', db: 'repaired', config: 'passed' })
        await turn.sandbox.remove('/home/user/app.cfg')
      },
      { tenant: rig().tenant },
    )
    await rig().sessions.withTurn(
      id,
      async (turn) => {
        const status = Object.fromEntries(turn.report?.checks.map((c) => [c.name, c.status]) ?? [])
        expect(status).toMatchObject({ db: 'repaired', config: 'repaired' })
        expect(await turn.sandbox.readFile('/home/user/app.cfg')).toBe('mode=on\n')
      },
      { tenant: rig().tenant },
    )
  })

  it("never resumes another tenant's sandbox, even when the store maps to it", async () => {
    const victim = conversation()
    const victimSandbox = await rig().sessions.withTurn(victim, async (turn) => (await turn.ready()).id, {
      tenant: rig().tenant,
    })
    // Another tenant's session whose record was made (by a bug or by tampering) to point at that sandbox.
    const key = { tenant: `${rig().tenant}-other`, conversationId: conversation() }
    await mapToSandbox(rig().store, key, victimSandbox)
    const error = await rig()
      .sessions.beginTurn(key.conversationId, { tenant: key.tenant })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'TENANT_MISMATCH', sandboxId: victimSandbox })
    expect(rig().host.getSandbox(victimSandbox)?.state).toBe('paused')
    expect(rig().host.getSandbox(victimSandbox)?.pauseCount).toBe(1)
    await rig().store.delete(key)
  })
})
