// The manager's safety net through the real SDK and a real local-e2b host: with onTurnEnd 'pause' a
// sandbox is created pause-on-timeout, so one whose turn end never came in time (a crashed process, a
// serverless function cut short) is paused by the platform at its timeout and the next turn finds its files.
import type { Sandbox } from '@e2b/code-interpreter'
import { describe, expect, it } from 'vitest'
import { conversation, useRig } from './helpers/sessions.js'

describe('sandbox create options through the manager', () => {
  const rig = useRig({}, { onTurnEnd: 'pause', sandbox: { timeoutMs: 3000 } })

  it('a sandbox whose turn end is late is paused at its timeout, not killed, and the next turn resumes it', async () => {
    const { sessions, tenant, host } = rig()
    const id = conversation()
    const turn = await sessions.beginTurn(id, { tenant })
    const sandbox = turn.sandbox.native as Sandbox
    expect(await sandbox.getInfo()).toMatchObject({ lifecycle: { onTimeout: 'pause', autoResume: false } })
    await turn.sandbox.writeFile('/home/user/work.txt', 'turn 1')
    await host.events.waitFor('sandbox-pause', (event) => event.sandboxId === turn.sandbox.id)
    expect(host.events.list({ type: 'sandbox-timeout', sandboxId: turn.sandbox.id })[0]?.detail).toEqual({
      action: 'pause',
    })
    expect(host.events.list({ type: 'sandbox-kill', sandboxId: turn.sandbox.id })).toHaveLength(0)
    await turn.end().catch(() => undefined)
    await sessions.withTurn(
      id,
      async (next) => {
        expect(next.report?.stateLost).toBe(false)
        expect(await next.sandbox.readFile('/home/user/work.txt')).toBe('turn 1')
      },
      { tenant },
    )
  })
})
