import { describe, expect, it } from 'vitest'
import { drawCheckpointTree, type TreeCheckpoint } from './checkpoint-tree.js'

const now = 1_000_000_000
const ck = (id: string, parentId: string | null, turn: number, secondsAgo: number, snapshot = true) =>
  ({
    id,
    parentId,
    turn,
    createdAt: now - secondsAgo * 1000,
    snapshot: snapshot ? { snapshotId: `snap-${id}` } : null,
    journalLength: turn * 2,
  }) satisfies TreeCheckpoint

describe('drawCheckpointTree', () => {
  it('draws siblings under their parent, oldest first, the head marked, with turn, age and source', () => {
    // Newest first, as listCheckpoints returns them: a regenerate of turn 2 (b2) beside the first turn 2 (a2).
    const checkpoints = [
      ck('ck_c3', 'ck_a2', 3, 10, false),
      ck('ck_b2', 'ck_a1', 2, 120),
      ck('ck_a2', 'ck_a1', 2, 600),
      ck('ck_a1', null, 1, 4000),
    ]
    expect(drawCheckpointTree(checkpoints, { head: 'ck_c3', now })).toEqual([
      '(root: before the first turn)',
      '└─ ck_a1                       turn 1  67m ago  snapshot snap-ck_a1',
      '   ├─ ck_a2                    turn 2  10m ago  snapshot snap-ck_a2',
      '   │  └─ ck_c3                 turn 3  10s ago  journal (6 steps)    ◀ head',
      '   └─ ck_b2                    turn 2  2m ago   snapshot snap-ck_b2',
    ])
  })

  it('marks the root when the head is there, and hangs a checkpoint whose parent was pruned under it', () => {
    const lines = drawCheckpointTree([ck('ck_x2', 'ck_gone', 2, 5)], { head: null, now })
    expect(lines[0]).toMatch(/^\(root: before the first turn\)\s+◀ head$/)
    expect(lines[1]).toMatch(/^└─ ck_x2 \(parent pruned\)\s+turn 2\s+5s ago\s+snapshot snap-ck_x2$/)
  })
})
