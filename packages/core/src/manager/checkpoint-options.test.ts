import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import { createMemorySessionStore } from '../store/memory-store.js'
import { createSessionManager } from './session-manager.js'

const messageOf = (run: () => unknown) => {
  try {
    run()
  } catch (error) {
    return `${(error as { code: string }).code}: ${(error as Error).message}`
  }
  return 'accepted'
}

describe('the checkpoints option', () => {
  // Every way to get the option wrong, and the exact words: pinned for any rewrite of the checks.
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
