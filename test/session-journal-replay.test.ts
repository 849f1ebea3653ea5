// The journal on the real stack (Redis, the unmodified E2B SDK, a local-e2b host): a step that could never
// replay is refused when it is recorded, and at replay a failing step is reported while every step after it
// still runs (the rule in the core README's "What sandkeep guarantees").
import type { ResumeReport, SessionManagerEvents } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { conversation, useRig } from './helpers/sessions.js'

describe('journal steps on the real stack (local-e2b, memory-keeping pause)', () => {
  const rig = useRig({ pauseMode: 'memory' })

  it('refuses a step holding a NUL when it is recorded, and stores nothing', async () => {
    const id = conversation()
    await rig().sessions.withTurn(
      id,
      async (turn) => {
        for (const step of [
          { kind: 'command', command: 'echo a\0b > /home/user/x' },
          { kind: 'command', command: 'ls', cwd: '/home/user\0' },
          { kind: 'code', code: 'x = "\0"' },
        ] as const) {
          const error = await turn.journal.record(step).catch((e: unknown) => e)
          expect(error, JSON.stringify(step)).toMatchObject({
            code: 'INVALID_ARGUMENT',
            message: expect.stringContaining('could never be replayed'),
          })
        }
        expect(await turn.journal.list()).toEqual([])
      },
      { tenant: rig().tenant },
    )
    // The store refuses it as well, before writing.
    const key = { tenant: rig().tenant, conversationId: id }
    const error = await rig()
      .store.appendJournal(key, { kind: 'command', command: 'echo a\0b' })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await rig().store.readJournal(key)).toEqual([])
  })

  it('a 1,000-step journal whose first step fails replays the other 999 and says which one failed', async () => {
    const id = conversation()
    const tenant = rig().tenant
    const sandboxId = await rig().sessions.withTurn(
      id,
      async (turn) => {
        // A step that replays on no fresh sandbox (the file it reads is written by nobody).
        await turn.journal.record({ kind: 'command', command: 'cat /home/user/written-by-hand.cfg' })
        for (let i = 0; i < 998; i++) await turn.journal.record({ kind: 'code', code: `v${i} = ${i}` })
        await turn.journal.record({ kind: 'file', path: 'notes.txt', content: 'kept by the journal' })
        return (await turn.ready()).id
      },
      { tenant },
    )
    await rig().host.faults.expire(sandboxId)
    const errors: SessionManagerEvents['error'][] = []
    const replays: SessionManagerEvents['rehydrate'][] = []
    const offError = rig().sessions.on('error', (event) => errors.push(event))
    const offReplay = rig().sessions.on('rehydrate', (event) => replays.push(event))
    try {
      await rig().sessions.withTurn(
        id,
        async (turn) => {
          const report = turn.report as ResumeReport
          expect(report).toMatchObject({ outcome: 'recreated', stateLost: true, rehydratedSteps: 999 })
          expect(report.rehydrateFailures).toMatchObject({
            count: 1,
            skipped: 0,
            steps: [{ step: 1, kind: 'command', message: expect.stringContaining('exit 1') }],
          })
          expect((await turn.sandbox.runCode('v997')).text).toBe('997')
          expect(await turn.sandbox.readFile('/home/user/notes.txt')).toBe('kept by the journal')
        },
        { tenant },
      )
    } finally {
      offError()
      offReplay()
    }
    expect(replays).toMatchObject([{ steps: 999, failed: 1, reason: 'recreated' }])
    const replayError = errors.find((event) => event.phase === 'rehydrate')
    expect(replayError?.error).toMatchObject({
      code: 'PROVIDER_ERROR',
      message: expect.stringMatching(/1 journal step failed at replay \(step 1 \(command\)/),
    })
  }, 180_000)
})
