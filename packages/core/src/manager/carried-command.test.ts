import { describe, expect, it } from 'vitest'
import { MARKER_PATH, PROBE_CELL_TAG } from '../assessment/fidelity.js'
import { CARRIED_PROBE_TAG } from '../assessment/fidelity-carried.js'
import { setup } from './manager.test-support.js'

// A lazy turn's first command carries the marker test (fidelity-carried-command.ts), on the mock provider,
// which runs the carried line from its own state.
describe("a lazy turn's first command carries the marker test", () => {
  async function seeded() {
    const made = setup()
    await made.sessions.withTurn(made.id, async (turn) => {
      await turn.sandbox.runCode('x = 41')
      await turn.sandbox.runCommand('echo kept > /home/user/a.txt')
    })
    made.provider.clearCalls()
    return made
  }
  const sandboxCalls = (made: Awaited<ReturnType<typeof seeded>>) =>
    made.provider.calls
      .filter((call) => call.operation === 'runCommand' || call.operation === 'runCode')
      .map((call) => ({ operation: call.operation, detail: call.detail ?? '' }))

  it('nothing lost: the command is the first call, then the sentinel cell alone; no probe cell', async () => {
    const made = await seeded()
    const turn = await made.sessions.beginTurn(made.id, { lazy: true })
    const result = await turn.sandbox.runCommand('echo hi')
    expect(result).toMatchObject({ exitCode: 0, stdout: 'hi\n' })
    await turn.end()
    const calls = sandboxCalls(made)
    expect(calls[0]?.operation).toBe('runCommand')
    expect(calls[0]?.detail).toContain(CARRIED_PROBE_TAG)
    expect(calls[1]?.operation).toBe('runCode')
    expect(calls[1]?.detail).toContain(CARRIED_PROBE_TAG)
    expect(calls.some((call) => call.detail.startsWith(PROBE_CELL_TAG))).toBe(false)
    expect(turn.report?.survived).toMatchObject({ memory: true, filesystem: true })
  })

  it('marker gone: the carried command runs nothing, the full probe and repair follow, then the command once', async () => {
    const made = await seeded()
    const [sandbox] = made.provider.sandboxes.values()
    sandbox?.files.delete(MARKER_PATH)
    const turn = await made.sessions.beginTurn(made.id, { lazy: true })
    const result = await turn.sandbox.runCommand('echo hi')
    expect(result).toMatchObject({ exitCode: 0, stdout: 'hi\n' })
    await turn.end()
    const calls = sandboxCalls(made)
    expect(calls[0]?.detail).toContain(CARRIED_PROBE_TAG)
    const probe = calls.findIndex((call) => call.detail.startsWith(PROBE_CELL_TAG))
    const plain = calls.findIndex((call) => call.operation === 'runCommand' && call.detail === 'echo hi')
    expect(probe).toBeGreaterThan(0)
    expect(plain).toBeGreaterThan(probe)
    expect(calls.filter((call) => call.detail.endsWith('echo hi'))).toHaveLength(2)
  })

  it('a command in a lazy turn whose manifest asks for a background process is not carried', async () => {
    const made = setup()
    await made.sessions.withTurn(made.id, async (turn) => {
      await turn.sandbox.startProcess('sleep 1000')
    })
    made.provider.clearCalls()
    const turn = await made.sessions.beginTurn(made.id, { lazy: true })
    await turn.sandbox.runCommand('echo hi')
    await turn.end()
    expect(sandboxCalls(made).some((call) => call.detail.includes(CARRIED_PROBE_TAG))).toBe(false)
  })
})
