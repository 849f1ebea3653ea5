// Two turns of one conversation on each pause fidelity a platform may have, end to end: the session manager,
// the Redis store, the E2B provider and the real E2B SDK against a local-e2b host. Turn 1 sets a variable,
// writes a file and starts a background HTTP server; turn 2 reads in its report what survived the pause,
// gets the server repaired and memory rehydrated where they were lost, and then finds all three.
import type { ResumeReport } from '@sandkeep/core'
import type { PauseMode } from '@sandkeep/local-e2b'
import { describe, expect, it } from 'vitest'
import { answers, conversation, useRig, waitForServer, webServer } from './helpers/sessions.js'

const expected: Record<
  PauseMode,
  { survived: ResumeReport['survived']; stateLost: boolean; web: string; rehydrated: boolean }
> = {
  // E2B cloud: everything kept, nothing to repair.
  memory: {
    survived: { memory: true, filesystem: true, processes: true },
    stateLost: false,
    web: 'passed',
    rehydrated: false,
  },
  // keepMemory false / filesystem-only: a cold boot keeps files only.
  filesystem: {
    survived: { memory: false, filesystem: true, processes: false },
    stateLost: true,
    web: 'repaired',
    rehydrated: true,
  },
  // Kubernetes scale-to-zero: processes restarted by the platform (new pids), memory and local disk lost.
  processes: {
    survived: { memory: false, filesystem: false, processes: true },
    stateLost: true,
    web: 'passed',
    rehydrated: true,
  },
}

for (const mode of Object.keys(expected) as PauseMode[]) {
  describe(`two turns on a '${mode}' pause`, () => {
    const { port, command: server, healthChecks } = webServer()
    const rig = useRig({ pauseMode: mode }, { healthChecks })

    it('turn 2 sees what survived, repairs and rehydrates what did not, then finds everything', async () => {
      const id = conversation()
      const { sessions, tenant, host } = rig()
      const first = await sessions.withTurn(
        id,
        async (turn) => {
          expect(turn.report?.outcome).toBe('created')
          const code = await turn.sandbox.runCode('counter = 41 + 1')
          expect(code.error).toBeNull()
          await turn.journal.record({ kind: 'code', code: 'counter = 41 + 1' })
          await turn.sandbox.writeFile('/home/user/notes.txt', 'kept across turns')
          await turn.journal.record({
            kind: 'file',
            path: '/home/user/notes.txt',
            content: 'kept across turns',
          })
          await turn.sandbox.startProcess(server)
          await waitForServer(turn.sandbox, port)
          return { sandboxId: (await turn.ready()).id, pids: await turn.sandbox.listProcesses() }
        },
        { tenant },
      )
      expect(host.getSandbox(first.sandboxId)?.state).toBe('paused')
      const stored = await sessions.getSession(id, { tenant })
      expect(stored).toMatchObject({ state: 'paused', sandboxId: first.sandboxId, turnCount: 1 })

      const want = expected[mode]
      await sessions.withTurn(
        id,
        async (turn) => {
          const report = turn.report as ResumeReport
          expect(report.outcome).toBe('resumed')
          expect(report.sandboxId).toBe(first.sandboxId)
          expect(report.survived).toEqual(want.survived)
          expect(report.stateLost).toBe(want.stateLost)
          const status = Object.fromEntries(report.checks.map((c) => [c.name, c.status]))
          expect(status.web).toBe(want.web)
          expect(status['web-port']).toBe('passed')
          // Files kept: only the code steps run again. Files lost: the whole journal.
          expect(report.rehydratedSteps).toBe(want.rehydrated ? (want.survived.filesystem ? 1 : 2) : 0)
          if (want.rehydrated) expect(status.memory).toBe('repaired')
          // Whatever the platform kept or lost, the body finds the variable, the file and the server.
          expect((await turn.sandbox.runCode('counter')).text).toBe('42')
          // The probe cell left no name of its own in the user's namespace.
          const leaked = await turn.sandbox.runCode(
            "[n for n in ('G', 'S', 'P', 'm', 'f', 'json', 'sys') if n in globals()]",
          )
          expect(leaked.text).toBe('[]')
          expect(await turn.sandbox.readFile('/home/user/notes.txt')).toBe('kept across turns')
          expect(await answers(turn.sandbox, port)).toBe(true)
          const servers = (await turn.sandbox.listProcesses()).filter((p) => p.command === server)
          expect(servers).toHaveLength(1)
          if (mode === 'memory')
            expect(servers[0]?.pid).toBe(first.pids.find((p) => p.command === server)?.pid)
        },
        { tenant },
      )
      const after = await sessions.getSession(id, { tenant })
      expect(after).toMatchObject({ state: 'paused', turnCount: 2 })
      expect(after?.runningSeconds).toBeGreaterThan(0)
      expect(after?.pausedSeconds).toBeGreaterThan(0)
      expect(host.getSandbox(first.sandboxId)?.pauseCount).toBe(2)

      // Turn 3 only runs code (where the server survived the pause, its end records the process list the
      // resume read instead of listing again); turn 4 still finds the server recorded, checked and answering.
      await sessions.withTurn(
        id,
        async (turn) => {
          expect(turn.report?.survived.processes).toBe(want.survived.processes)
          expect((await turn.sandbox.runCode('counter')).text).toBe('42')
        },
        { tenant },
      )
      const third = await sessions.getSession(id, { tenant })
      expect(third?.manifest?.processes?.map((p) => p.command)).toContain(server)
      if (mode === 'memory') expect(third?.manifest?.processes).toEqual(after?.manifest?.processes)
      await sessions.withTurn(
        id,
        async (turn) => {
          expect(turn.report?.survived.processes).toBe(want.survived.processes)
          expect(turn.report?.checks.find((c) => c.name === 'web')?.status).toBe(want.web)
          expect(await answers(turn.sandbox, port)).toBe(true)
        },
        { tenant },
      )
      expect(await sessions.getSession(id, { tenant })).toMatchObject({ state: 'paused', turnCount: 4 })
      expect(host.getSandbox(first.sandboxId)?.pauseCount).toBe(4)
    })
  })
}
