import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import { createSessionManager } from '../manager/session-manager.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { checkOptionTable, type OptionTable } from './option-table.js'

const table = {
  param: 'options.thing',
  shape: 'must be { mode, count? }.',
  fields: {
    mode: { oneOf: ['a', 'b'], must: "must be 'a' or 'b'." },
    count: { integer: [1, 5], label: 'thing.count', default: 2 },
    rest: { later: true },
  },
} as const satisfies OptionTable

const messageOf = (run: () => unknown) => {
  try {
    run()
  } catch (error) {
    return `${(error as { code: string }).code}: ${(error as Error).message}`
  }
  return 'accepted'
}

describe('checkOptionTable', () => {
  it('returns the fields with defaults filled in and a later field as given', () => {
    expect(checkOptionTable(table, { mode: 'a' })).toEqual({ mode: 'a', count: 2, rest: undefined })
    expect(checkOptionTable(table, { mode: 'b', count: 5, rest: 'x' })).toEqual({
      mode: 'b',
      count: 5,
      rest: 'x',
    })
  })

  it('refuses in the hand-written checks’ words, the first failing field in table order', () => {
    expect(messageOf(() => checkOptionTable(table, 'a'))).toBe(
      'INVALID_ARGUMENT: options.thing must be { mode, count? }.',
    )
    expect(messageOf(() => checkOptionTable(table, { mode: 'a', size: 1 }))).toBe(
      'INVALID_ARGUMENT: options.thing has an unknown option "size"; known: mode, count, rest.',
    )
    expect(messageOf(() => checkOptionTable(table, { mode: 'c', count: 0 }))).toBe(
      "INVALID_ARGUMENT: options.thing.mode must be 'a' or 'b'.",
    )
    expect(messageOf(() => checkOptionTable(table, { mode: 'a', count: 1.5 }))).toBe(
      'INVALID_ARGUMENT: thing.count must be an integer from 1 to 5, got a number.',
    )
  })
})

describe('the checkpoints option on its tables', () => {
  // The messages the hand-written checks gave before the option moved onto tables (captured from main).
  const before: Array<[unknown, string]> = [
    ['turn', "INVALID_ARGUMENT: options.checkpoints must be false or { every: 'turn', keep? }."],
    [null, "INVALID_ARGUMENT: options.checkpoints must be false or { every: 'turn', keep? }."],
    [{}, "INVALID_ARGUMENT: options.checkpoints.every must be 'turn'."],
    [{ every: 'hour', keep: 0 }, "INVALID_ARGUMENT: options.checkpoints.every must be 'turn'."],
    [
      { every: 'turn', keep: 0 },
      'INVALID_ARGUMENT: checkpoints.keep must be an integer from 1 to 1000, got a number.',
    ],
    [
      { every: 'turn', keep: '3' },
      'INVALID_ARGUMENT: checkpoints.keep must be an integer from 1 to 1000, got "3".',
    ],
    [
      { every: 'turn', other: 1 },
      'INVALID_ARGUMENT: options.checkpoints has an unknown option "other"; known: every, keep, tenantLimits.',
    ],
    [
      { every: 'turn', tenantLimits: 'lots' },
      'INVALID_ARGUMENT: options.checkpoints.tenantLimits must be { snapshots?, maxSnapshotBytes? }.',
    ],
    [
      { every: 'turn', tenantLimits: { bytes: 10 } },
      'INVALID_ARGUMENT: options.checkpoints.tenantLimits has an unknown option "bytes"; known: snapshots, maxSnapshotBytes.',
    ],
    [
      { every: 'turn', tenantLimits: { maxSnapshotBytes: 1.5 } },
      'INVALID_ARGUMENT: checkpoints.tenantLimits.maxSnapshotBytes must be an integer from 0 to 9007199254740991, got a number.',
    ],
    [
      { every: 'turn', keep: 1001, tenantLimits: { snapshots: -1 } },
      'INVALID_ARGUMENT: checkpoints.keep must be an integer from 1 to 1000, got a number.',
    ],
    [
      { every: 'turn', tenantLimits: { snapshots: 2e9 } },
      'INVALID_ARGUMENT: checkpoints.tenantLimits.snapshots must be an integer from 0 to 1000000000, got a number.',
    ],
    [{ every: 'turn', tenantLimits: {} }, 'accepted'],
  ]

  it('refuses what it refused, with the same messages', () => {
    for (const [checkpoints, expected] of before) {
      const make = () =>
        createSessionManager({
          store: createMemorySessionStore(),
          provider: createMockProvider(),
          checkpoints: checkpoints as never,
        })
      expect(messageOf(make), JSON.stringify(checkpoints)).toBe(expected)
    }
  })
})
