// The filesystem verdict when the marker file alone is deleted and the session's files were made by commands
// or code (no file witness to compare): through the real SDK, a real local-e2b host and the real Redis store.
import { describe, expect, it } from 'vitest'
import { conversation, useRig } from './helpers/sessions.js'

describe('a deleted marker with the files intact', () => {
  const rig = useRig({})

  it.each([
    ['a command', false, 'echo A > /home/user/a.txt'],
    ['code', true, 'open("/home/user/a.txt", "w").write("A\\n")'],
  ])(
    'made by %s is not a lost filesystem: marker written again, nothing replayed, no state lost',
    async (_, code, work) => {
      const { sessions, tenant } = rig()
      const id = conversation()
      await sessions.withTurn(
        id,
        async (turn) => {
          if (code) await turn.sandbox.runCode(work)
          else await turn.sandbox.runCommand(work)
          turn.journal.record(code ? { kind: 'code', code: work } : { kind: 'command', command: work })
        },
        { tenant },
      )
      await sessions.withTurn(id, (turn) => turn.sandbox.runCommand('rm -f /home/user/.sandkeep/marker'), {
        tenant,
      })
      await sessions.withTurn(
        id,
        async (turn) => {
          const report = turn.report!
          const filesystem = report.checks.find((check) => check.name === 'filesystem')
          expect(report.survived.filesystem).toBe(true)
          expect(report.stateLost).toBe(false)
          expect(report.rehydratedSteps).toBe(0)
          expect(filesystem?.status).toBe('repaired')
          expect(filesystem?.message).toMatch(
            /marker file was removed from the sandbox, but .*: files kept; marker written again/,
          )
          expect(filesystem?.message).not.toMatch(/lost/)
          expect(await turn.sandbox.readFile('/home/user/a.txt')).toBe('A\n')
        },
        { tenant },
      )
      // The marker is back: the turn after finds everything as it was, with no repair.
      await sessions.withTurn(
        id,
        async (turn) => {
          expect(turn.report?.checks.find((check) => check.name === 'filesystem')).toMatchObject({
            status: 'passed',
            message: 'files kept',
          })
        },
        { tenant },
      )
    },
  )

  it('gone with its directory and nothing else to compare: taken as lost, and the message says why', async () => {
    const { sessions, tenant } = rig()
    const id = conversation()
    await sessions.withTurn(id, (turn) => turn.sandbox.runCommand('echo A > /home/user/a.txt'), { tenant })
    await sessions.withTurn(id, (turn) => turn.sandbox.runCommand('rm -rf /home/user/.sandkeep'), { tenant })
    await sessions.withTurn(
      id,
      async (turn) => {
        expect(turn.report?.survived.filesystem).toBe(false)
        expect(turn.report?.checks.find((check) => check.name === 'filesystem')?.message).toBe(
          'marker file is gone with its directory, and no file sandkeep saw written is there to compare: files taken as lost',
        )
      },
      { tenant },
    )
  })
})
