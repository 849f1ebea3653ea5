// commands.kill answers once the process is gone: a `kill -0 <pid>` sent right after fails. A killed process
// stays a zombie (its pid still answers kill -0) until it is reaped, so the host waits for that before answering.
import { CommandExitError, Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { useTestHost } from './helpers.js'

/** Rounds of the kill race (bounded). */
const ROUNDS = 25

describe('commands.kill', () => {
  const t = useTestHost()

  it(`leaves no process behind by the time it answers (${ROUNDS} rounds, a command and a terminal)`, async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    try {
      const alive: number[] = []
      for (let round = 0; round < ROUNDS; round++) {
        const sleeper = await sandbox.commands.run('sleep 30', { background: true })
        expect(await sandbox.commands.kill(sleeper.pid)).toBe(true)
        const probe = await sandbox.commands.run(`kill -0 ${sleeper.pid}`).catch((error: unknown) => error)
        if (!(probe instanceof CommandExitError)) alive.push(sleeper.pid)
      }
      const terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: () => {} })
      expect(await sandbox.pty.kill(terminal.pid)).toBe(true)
      const probe = await sandbox.commands.run(`kill -0 ${terminal.pid}`).catch((error: unknown) => error)
      if (!(probe instanceof CommandExitError)) alive.push(terminal.pid)
      expect(alive).toEqual([])
    } finally {
      await sandbox.kill()
    }
  }, 120_000)
})
