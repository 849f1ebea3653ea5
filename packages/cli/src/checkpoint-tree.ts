// A conversation's checkpoints drawn as the tree they form: each under its parent (the root is the state
// before the first turn), siblings oldest first, the head marked, with each one's turn, age and what a
// restore to it starts from (its snapshot, or the journal replayed that far).
import { formatTable } from './terminal.js'

/** What the drawing reads of a checkpoint (`Checkpoint` of @sandkeep/core is one). */
export interface TreeCheckpoint {
  id: string
  parentId: string | null
  turn: number
  createdAt: number
  snapshot?: { snapshotId: string } | null
  journalLength?: number
}

export interface DrawTreeOptions {
  /** The session's head: the checkpoint its next turn starts from (`null`: the root). */
  head: string | null
  /** The clock the ages are read on (epoch ms). Default `Date.now()`. */
  now?: number
}

const HEAD = '◀ head'

/** How long before `now` a time was, as `sandkeep sessions` prints it. */
function age(epochMs: number, now: number): string {
  const seconds = Math.max(0, (now - epochMs) / 1000)
  if (seconds < 90) return `${Math.round(seconds)}s ago`
  if (seconds < 5400) return `${Math.round(seconds / 60)}m ago`
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h ago`
  return `${Math.round(seconds / 86_400)}d ago`
}

/**
 * The tree's lines, the root first. A checkpoint whose parent is not among `checkpoints` (pruned) hangs
 * under the root, marked so.
 */
export function drawCheckpointTree(
  checkpoints: readonly TreeCheckpoint[],
  options: DrawTreeOptions,
): string[] {
  const now = options.now ?? Date.now()
  const ids = new Set(checkpoints.map((checkpoint) => checkpoint.id))
  const children = new Map<string | null, TreeCheckpoint[]>()
  for (const checkpoint of checkpoints) {
    const parent = checkpoint.parentId !== null && ids.has(checkpoint.parentId) ? checkpoint.parentId : null
    const list = children.get(parent) ?? []
    list.push(checkpoint)
    children.set(parent, list)
  }
  for (const list of children.values()) {
    list.sort((a, b) => a.createdAt - b.createdAt || a.turn - b.turn || (a.id < b.id ? -1 : 1))
  }
  const rows: string[][] = [['(root: before the first turn)', '', '', '', options.head === null ? HEAD : '']]
  const visit = (parent: string | null, indent: string) => {
    const list = children.get(parent) ?? []
    list.forEach((checkpoint, index) => {
      const last = index === list.length - 1
      const orphan = parent === null && checkpoint.parentId !== null ? ' (parent pruned)' : ''
      const journal =
        checkpoint.journalLength === undefined
          ? 'journal'
          : `journal (${checkpoint.journalLength} step${checkpoint.journalLength === 1 ? '' : 's'})`
      rows.push([
        `${indent}${last ? '└─ ' : '├─ '}${checkpoint.id}${orphan}`,
        `turn ${checkpoint.turn}`,
        age(checkpoint.createdAt, now),
        checkpoint.snapshot ? `snapshot ${checkpoint.snapshot.snapshotId}` : journal,
        checkpoint.id === options.head ? HEAD : '',
      ])
      visit(checkpoint.id, `${indent}${last ? '   ' : '│  '}`)
    })
  }
  visit(null, '')
  return formatTable(rows, { indent: '' })
    .split('\n')
    .map((line) => line.trimEnd())
}
