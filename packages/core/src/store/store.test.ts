import { describe, expect, it } from 'vitest'
import { SandkeepError } from '../contract/errors.js'
import {
  checkJournalRoom,
  checkStoreLimits,
  compareListPositions,
  DEFAULT_MAX_JOURNAL_STEPS,
  decodeListCursor,
  encodeListCursor,
  isAfterListPosition,
  journalFull,
  leaseLost,
  parseRecordFields,
  parseStoredCheckpoints,
} from './index.js'

const key = { tenant: 't', conversationId: 'c' }

describe('the store kit', () => {
  it('checks a factory’s shared options with one wording', () => {
    expect(checkStoreLimits('createXStore', {}, ['ttlMs']).maxJournalSteps).toBe(DEFAULT_MAX_JOURNAL_STEPS)
    expect(() => checkStoreLimits('createXStore', { ttl: 1 }, ['ttlMs'])).toThrow(
      'createXStore options has an unknown option "ttl"; known: ttlMs.',
    )
    expect(() => checkStoreLimits('createXStore', null, [])).toThrow('options must be an object.')
    expect(() => checkStoreLimits('createXStore', { maxJournalBytes: 0 }, ['maxJournalBytes'])).toThrow(
      /maxJournalBytes/,
    )
  })

  it('refuses a journal entry past either limit with JOURNAL_FULL', () => {
    const limits = { maxJournalSteps: 2, maxJournalBytes: 100 }
    expect(() => checkJournalRoom(key, { steps: 1, bytes: 50 }, 50, limits)).not.toThrow()
    for (const used of [
      { steps: 2, bytes: 0 },
      { steps: 0, bytes: 51 },
    ]) {
      expect(
        SandkeepError.hasCode(
          catchError(() => checkJournalRoom(key, used, 50, limits)),
          'JOURNAL_FULL',
        ),
      ).toBe(true)
    }
    expect(journalFull(key, { steps: 2, bytes: 9 }, limits).message).toMatch(
      /2 steps, 9 bytes; limits 2 steps/,
    )
    expect(leaseLost(key, 'why').code).toBe('LEASE_LOST')
  })

  it('round-trips a list cursor and orders positions', () => {
    const position = { score: 5, member: 'm' }
    expect(decodeListCursor(encodeListCursor(position))).toEqual(position)
    expect(() => decodeListCursor('nope')).toThrow(/not one this store returned/)
    expect(isAfterListPosition(5, 'a', position)).toBe(true)
    expect([{ score: 1, member: 'a' }, position].sort(compareListPositions)[0]).toBe(position)
  })

  it('refuses a record with a non-finite number as STORE_CORRUPT', () => {
    const fields = {
      schemaVersion: '1',
      tenant: 't',
      conversationId: 'c',
      state: 'running',
      createdAt: '1e400',
    }
    const error = catchError(() => parseRecordFields(fields, 'at-key', key))
    expect(SandkeepError.hasCode(error, 'STORE_CORRUPT')).toBe(true)
    expect((error as Error).message).toMatch(/at-key.*createdAt/)
  })

  it('reads lastTurnUsedSandbox as 1, 0 or missing, and refuses anything else as STORE_CORRUPT', () => {
    const fields = {
      schemaVersion: '1',
      tenant: 't',
      conversationId: 'c',
      state: 'paused',
      createdAt: '1',
      updatedAt: '2',
      turnCount: '1',
      runningSeconds: '0',
      pausedSeconds: '0',
      mappingToken: '1',
    }
    expect(parseRecordFields(fields, 'at-key', key).lastTurnUsedSandbox).toBeNull()
    expect(
      parseRecordFields({ ...fields, lastTurnUsedSandbox: '1' }, 'at-key', key).lastTurnUsedSandbox,
    ).toBe(true)
    expect(
      parseRecordFields({ ...fields, lastTurnUsedSandbox: '0' }, 'at-key', key).lastTurnUsedSandbox,
    ).toBe(false)
    const error = catchError(() =>
      parseRecordFields({ ...fields, lastTurnUsedSandbox: 'yes' }, 'at-key', key),
    )
    expect(SandkeepError.hasCode(error, 'STORE_CORRUPT')).toBe(true)
    expect((error as Error).message).toMatch(/lastTurnUsedSandbox/)
  })

  it('reads a pending restore strictly: none in a record from before the field, STORE_CORRUPT when damaged', () => {
    const fields = {
      schemaVersion: '1',
      tenant: 't',
      conversationId: 'c',
      state: 'unknown',
      createdAt: '1',
      updatedAt: '2',
      turnCount: '2',
      runningSeconds: '0',
      pausedSeconds: '0',
      mappingToken: '3',
    }
    expect(parseRecordFields(fields, 'at-key', key).restore).toBeNull()
    const restore = {
      kind: 'forked',
      turn: 2,
      snapshot: { snapshotId: 'snap-1', keeps: { files: true, memory: false } },
      fromSandboxId: 'sbx-1',
      fromConversationId: 'source',
      at: 5,
    }
    const read = parseRecordFields({ ...fields, restore: JSON.stringify(restore) }, 'at-key', key)
    expect(read.restore).toEqual(restore)
    for (const damaged of [
      'rewound',
      JSON.stringify({ ...restore, kind: 'moved' }),
      JSON.stringify({ ...restore, turn: -1 }),
      JSON.stringify({ ...restore, snapshot: { snapshotId: 'a\nb', keeps: { files: true, memory: true } } }),
      JSON.stringify({ ...restore, fromSandboxId: '' }),
      JSON.stringify({ ...restore, extra: 1 }),
    ]) {
      const error = catchError(() => parseRecordFields({ ...fields, restore: damaged }, 'at-key', key))
      expect(SandkeepError.hasCode(error, 'STORE_CORRUPT'), damaged).toBe(true)
      expect((error as Error).message).toContain('at-key')
    }
  })

  it('reads stored checkpoints strictly: fields, values, distinct ids', () => {
    const checkpoint = {
      id: `ck_${'a'.repeat(22)}`,
      parentId: null,
      turn: 1,
      createdAt: 10,
      sandboxId: 'sbx-1',
      snapshot: null,
      journalLength: 0,
      manifest: null,
    }
    const child = { ...checkpoint, id: `ck_${'b'.repeat(22)}`, parentId: checkpoint.id, turn: 2 }
    // Siblings share a turn: order and turns are free, ids are not.
    expect(
      parseStoredCheckpoints([child, checkpoint, { ...child, id: `ck_${'c'.repeat(22)}` }], 'cp-key'),
    ).toHaveLength(3)
    for (const damaged of [
      [{ ...checkpoint, turn: 0 }],
      [{ ...checkpoint, journalLength: -1 }],
      [{ ...checkpoint, sandboxId: 'a\u0000' }],
      [{ ...checkpoint, manifest: { writtenAt: 'x' } }],
      [{ ...checkpoint, surprise: true }],
      [checkpoint, checkpoint],
      [{ ...checkpoint, id: 'ck_short' }],
      [{ ...checkpoint, parentId: 'not-an-id' }],
      [{ ...checkpoint, from: 'sometime' }],
      [{ ...checkpoint, journalBytes: -5 }],
    ]) {
      const error = catchError(() => parseStoredCheckpoints(damaged, 'cp-key'))
      expect(SandkeepError.hasCode(error, 'STORE_CORRUPT'), JSON.stringify(damaged)).toBe(true)
      expect((error as Error).message).toContain('cp-key')
    }
  })
})

function catchError(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  return undefined
}
