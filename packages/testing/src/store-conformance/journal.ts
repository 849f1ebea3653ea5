// Store conformance area: the journal: order, time, step and byte limits.
import type { JournalStep } from '@sandkeep/core'
import { defineArea, newKey } from './context.js'

/** Registers the journal area of the SessionStore conformance suite. */
export const journalConformance = defineArea('journal', ({ test, expect, open, expectCode }) => {
  test('keeps steps in recording order with their time', async () => {
    const store = await open()
    const key = newKey()
    const steps: JournalStep[] = [
      { kind: 'command', command: 'pip install pandas', cwd: '/home/user' },
      { kind: 'code', code: 'import pandas as pd', language: 'python' },
      { kind: 'file', path: '/home/user/data.csv', content: 'a,b\n1,2\n' },
      { kind: 'file', path: '/home/user/empty', content: '' },
      { kind: 'code', code: 'let x = 1' },
    ]
    const before = Date.now()
    for (const step of steps) await store.appendJournal(key, step)
    const entries = await store.readJournal(key)
    expect(entries.map((entry) => entry.step)).toEqual(steps)
    for (const entry of entries) {
      expect(entry.recordedAt).toBeGreaterThan(before - 5_000)
      expect(entry.recordedAt).toBeLessThan(Date.now() + 5_000)
    }
    await store.clearJournal(key)
    expect(await store.readJournal(key)).toEqual([])
    await store.appendJournal(key, steps[0]!)
    expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([steps[0]])
  })

  test('refuses a step past the count limit and does not store it', async () => {
    const store = await open({ maxJournalSteps: 3 })
    const key = newKey()
    for (let index = 0; index < 3; index += 1) {
      await store.appendJournal(key, { kind: 'command', command: `echo ${index}` })
    }
    const error = await expectCode(
      store.appendJournal(key, { kind: 'command', command: 'echo 3' }),
      'JOURNAL_FULL',
    )
    expect(error.message).toMatch(/journal/i)
    expect(
      (await store.readJournal(key)).map((entry) => (entry.step as { command: string }).command),
    ).toEqual(['echo 0', 'echo 1', 'echo 2'])
    await store.clearJournal(key)
    await store.appendJournal(key, { kind: 'command', command: 'echo again' })
    expect(await store.readJournal(key)).toHaveLength(1)
  })

  test('refuses a step past the byte limit and does not store it', async () => {
    const store = await open({ maxJournalBytes: 2_000 })
    const key = newKey()
    await store.appendJournal(key, { kind: 'file', path: '/home/user/a', content: 'x'.repeat(800) })
    await store.appendJournal(key, { kind: 'file', path: '/home/user/b', content: 'é'.repeat(400) })
    await expectCode(
      store.appendJournal(key, { kind: 'file', path: '/home/user/c', content: 'y'.repeat(300) }),
      'JOURNAL_FULL',
    )
    // A small step still fits under the byte limit.
    await store.appendJournal(key, { kind: 'command', command: 'ls' })
    expect((await store.readJournal(key)).map((entry) => entry.step.kind)).toEqual([
      'file',
      'file',
      'command',
    ])
    await expectCode(
      store.appendJournal(newKey(), { kind: 'file', path: '/home/user/big', content: 'z'.repeat(3_000) }),
      'JOURNAL_FULL',
    )
  })
})
