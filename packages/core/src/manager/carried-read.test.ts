import { describe, expect, it } from 'vitest'
import { PROBE_CELL_TAG } from '../assessment/fidelity.js'
import { setup } from './manager.test-support.js'

// A lazy turn's first file read goes beside the resume's probes (assess.ts): its answer stands when the files
// were kept, and is read again after the repair when they were lost. On the mock provider.
describe("a lazy turn's first file read goes beside the probes", () => {
  const FILE = '/home/user/notes.txt'

  async function seeded(pauseKeeps: { memory?: boolean; filesystem?: boolean } = {}) {
    const made = setup({}, { pauseKeeps })
    await made.sessions.withTurn(made.id, async (turn) => {
      await turn.sandbox.runCode('x = 41')
      await turn.sandbox.writeFile(FILE, 'kept')
      await turn.journal.record({ kind: 'code', code: 'x = 41' })
      await turn.journal.record({ kind: 'file', path: FILE, content: 'kept' })
    })
    made.provider.clearCalls()
    return made
  }
  const reads = (made: Awaited<ReturnType<typeof seeded>>) =>
    made.provider.callsOf('readFile').filter((call) => call.detail === FILE)
  const order = (made: Awaited<ReturnType<typeof seeded>>) =>
    made.provider.calls.map((call) =>
      call.operation === 'runCode' && call.detail?.startsWith(PROBE_CELL_TAG)
        ? 'probe'
        : `${call.operation} ${call.detail ?? ''}`,
    )

  it('nothing lost: the read is sent before the probe cell, once, and its answer stands', async () => {
    const made = await seeded()
    const turn = await made.sessions.beginTurn(made.id, { lazy: true })
    expect(await turn.sandbox.readFile(FILE)).toBe('kept')
    await turn.end()
    const calls = order(made)
    expect(calls.indexOf(`readFile ${FILE}`)).toBeGreaterThanOrEqual(0)
    expect(calls.indexOf(`readFile ${FILE}`)).toBeLessThan(calls.indexOf('probe'))
    expect(reads(made)).toHaveLength(1)
    expect(turn.report?.survived).toMatchObject({ memory: true, filesystem: true })
  })

  it('files lost: the answer sent beside the probes is dropped, and the file read again after the replay', async () => {
    const made = await seeded({ memory: false, filesystem: false })
    const turn = await made.sessions.beginTurn(made.id, { lazy: true })
    // The first read found nothing (the disk was reset); the caller gets the replayed file.
    expect(await turn.sandbox.readFile(FILE)).toBe('kept')
    await turn.end()
    expect(turn.report?.survived.filesystem).toBe(false)
    expect(turn.report?.rehydratedSteps).toBeGreaterThan(0)
    const calls = order(made)
    const [first, second] = reads(made)
    expect(first && second).toBeTruthy()
    const replayedWrite = calls.indexOf(`writeFile ${FILE}`)
    expect(calls.indexOf(`readFile ${FILE}`)).toBeLessThan(calls.indexOf('probe'))
    expect(calls.lastIndexOf(`readFile ${FILE}`)).toBeGreaterThan(replayedWrite)
    expect(replayedWrite).toBeGreaterThan(calls.indexOf('probe'))
  })

  it('memory lost, files kept: the answer stands (read once), and the replay runs before the next cell', async () => {
    const made = await seeded({ memory: false })
    const turn = await made.sessions.beginTurn(made.id, { lazy: true })
    expect(await turn.sandbox.readFile(FILE)).toBe('kept')
    expect(reads(made)).toHaveLength(1)
    const next = await turn.sandbox.runCode('x + 1')
    expect(next.text).toBe('42')
    await turn.end()
    expect(turn.report?.survived).toMatchObject({ memory: false, filesystem: true })
    const calls = order(made)
    expect(calls.indexOf(`readFile ${FILE}`)).toBeLessThan(calls.indexOf('probe'))
    expect(calls.indexOf('runCode x = 41')).toBeGreaterThan(calls.indexOf('probe'))
    expect(calls.indexOf('runCode x + 1')).toBeGreaterThan(calls.indexOf('runCode x = 41'))
  })

  it('listDir and exists go beside the probes too; a write waits for them', async () => {
    const listed = await seeded()
    const turn = await listed.sessions.beginTurn(listed.id, { lazy: true })
    expect((await turn.sandbox.listDir('/home/user')).map((entry) => entry.name)).toContain('notes.txt')
    await turn.end()
    const calls = order(listed)
    expect(calls.indexOf('listDir /home/user')).toBeLessThan(calls.indexOf('probe'))

    const existing = await seeded()
    const second = await existing.sessions.beginTurn(existing.id, { lazy: true })
    expect(await second.sandbox.exists(FILE)).toBe(true)
    await second.end()
    expect(order(existing).indexOf(`exists ${FILE}`)).toBeLessThan(order(existing).indexOf('probe'))

    const written = await seeded()
    const third = await written.sessions.beginTurn(written.id, { lazy: true })
    await third.sandbox.writeFile(FILE, 'new')
    await third.end()
    const writes = order(written)
    expect(writes.indexOf(`writeFile ${FILE}`)).toBeGreaterThan(writes.indexOf('probe'))
  })
})
