// Checkpoints: the platform snapshot a turn end takes for its checkpoint, the name that ties a snapshot to its
// session (so gc can tell a leaked one), and the deletion of snapshots no kept checkpoint refers to any more.
import { createHash, randomBytes } from 'node:crypto'
import { SandkeepError } from '../contract/errors.js'
import type { JournalOnlyCheckpoint } from '../contract/report.js'
import type { SandboxHandle, TakenSnapshot } from '../contract/sandbox-provider.js'
import type { Checkpoint, CheckpointInput, SessionRecord } from '../contract/session-store.js'
import { type SessionKey, snapshotBaseName } from '../contract/validation.js'
import type { ManagerContext } from './context.js'
import { providerHasSnapshots } from './options.js'
import {
  forgetInLedger,
  knownBytes,
  limitError,
  limitReached,
  noteInLedger,
  platformQuota,
  usageBefore,
} from './tenant-limits.js'

/** Every checkpoint snapshot's name starts with this. */
export const SNAPSHOT_NAME_PREFIX = 'sandkeep-'
const NAME_PATTERN = /^sandkeep-([0-9a-f]{32})-([0-9a-z]{1,11})-[0-9a-f]{8}$/

/** The session's tag in snapshot names: a hash of tenant and conversation id (neither appears in clear). */
export function sessionTag(key: SessionKey): string {
  return createHash('sha256').update(`${key.tenant}\u0000${key.conversationId}`).digest('hex').slice(0, 32)
}

/** A new checkpoint snapshot's name: the session's tag, when it was taken (store clock) and a random part. */
export function snapshotName(key: SessionKey, at: number): string {
  return `${SNAPSHOT_NAME_PREFIX}${sessionTag(key)}-${Math.max(0, Math.floor(at)).toString(36)}-${randomBytes(4).toString('hex')}`
}

/** The session tag and time a checkpoint snapshot's name holds; undefined for any other name. */
export function parseSnapshotName(name: string): { tag: string; at: number } | undefined {
  const match = NAME_PATTERN.exec(snapshotBaseName(name))
  if (!match) return undefined
  return { tag: match[1]!, at: Number.parseInt(match[2]!, 36) }
}

/** What a turn end records as its checkpoint, and how long its snapshot took. */
export interface TakenCheckpoint {
  input: CheckpointInput
  /** The snapshot's provider call, ms (0 without one). */
  ms: number
  /** The snapshot was taken for this checkpoint (not one it shares with the previous checkpoint). */
  fresh: boolean
  /** Recorded without a snapshot because a limit was reached, and what the tenant is told. */
  journalOnly?: JournalOnlyCheckpoint
}

/**
 * The checkpoint of a turn that has its sandbox in hand: a platform snapshot where the provider has them
 * (a failed one leaves the journal position alone, reported as phase `checkpoint`), else the journal
 * position alone, with no provider call.
 */
export async function snapshotCheckpoint(
  ctx: ManagerContext,
  key: SessionKey,
  handle: SandboxHandle,
  at: number,
  fail: (phase: string, cause: unknown) => void,
): Promise<TakenCheckpoint | undefined> {
  const settings = ctx.config.checkpoints
  if (!settings) return undefined
  const { provider } = ctx
  const input = { sandboxId: handle.id, snapshot: null, keep: settings.keep }
  if (!settings.snapshots || !providerHasSnapshots(provider)) return { input, ms: 0, fresh: false }
  const limited = (journalOnly: JournalOnlyCheckpoint, ms = 0): TakenCheckpoint => {
    fail('checkpoint-limit', limitError(key, journalOnly.message))
    return { input, ms, fresh: false, journalOnly }
  }
  const limits = settings.tenantLimits
  const usage = limits ? await usageBefore(ctx, key.tenant, fail) : undefined
  const reached = limits && usage && limitReached(key.tenant, limits, usage, 0)
  if (reached) return limited(reached)
  const started = performance.now()
  let taken: TakenSnapshot
  try {
    const name = snapshotName(key, at)
    taken = await ctx.call(() => provider.createSnapshot(handle.id, { name }))
  } catch (cause) {
    const ms = performance.now() - started
    if (SandkeepError.hasCode(cause, 'QUOTA_EXCEEDED')) return limited(platformQuota(cause), ms)
    fail('checkpoint', cause)
    return { input, ms, fresh: false }
  }
  const bytes = knownBytes(taken.bytes)
  const over = limits && usage && limitReached(key.tenant, limits, usage, bytes ?? 0, true)
  if (over) {
    // This snapshot took the tenant past its bytes: it goes at once, and the checkpoint is journal-only.
    await ctx
      .call(() => provider.deleteSnapshot(taken.snapshotId))
      .catch((e: unknown) => fail('delete-snapshot', e))
    return limited(over, performance.now() - started)
  }
  await noteInLedger(ctx, key.tenant, { snapshotId: taken.snapshotId, bytes }, fail)
  const keeps = { ...provider.snapshotKeeps }
  return {
    input: { ...input, snapshot: { snapshotId: taken.snapshotId, keeps } },
    ms: performance.now() - started,
    fresh: true,
  }
}

/**
 * The checkpoint of a turn that never had the sandbox in hand: nothing changed in it since the checkpoint
 * the previous turn recorded, so this one stands on the same snapshot (the store refuses it if the session
 * maps another sandbox by now). None when the previous turn recorded none (the session never had a
 * sandbox, or an overlapping turn ended in between).
 */
export async function unchangedCheckpoint(
  ctx: ManagerContext,
  key: SessionKey,
  acquiredTurnCount: number | undefined,
  fail: (phase: string, cause: unknown) => void,
): Promise<TakenCheckpoint | undefined> {
  const settings = ctx.config.checkpoints
  if (!settings || acquiredTurnCount === undefined || acquiredTurnCount === 0) return undefined
  try {
    // The head, not the newest: after a restore the session continues from an older checkpoint.
    const [record, checkpoints] = await Promise.all([ctx.store.get(key), ctx.store.readCheckpoints!(key)])
    const head = headOf(record, checkpoints)
    const latest = checkpoints.find((c) => c.id === head)
    if (latest?.turn !== acquiredTurnCount) return undefined
    const input = { sandboxId: latest.sandboxId, snapshot: latest.snapshot, keep: settings.keep }
    return { input, ms: 0, fresh: false }
  } catch (cause) {
    fail('checkpoint', cause)
    return undefined
  }
}

/**
 * Deletes the platform snapshots of checkpoints the store let go (pruned, dropped by a rewind, refused),
 * except those a kept checkpoint still stands on (`kept`, read from the store when not given). A failure is
 * reported (phase `delete-snapshot`), never thrown: gc deletes what is left by the snapshots' names.
 */
export async function deleteReleasedSnapshots(
  ctx: ManagerContext,
  key: SessionKey,
  released: readonly Pick<Checkpoint, 'snapshot'>[],
  kept?: readonly Checkpoint[],
): Promise<string[]> {
  const { provider } = ctx
  const ids = [...new Set(released.flatMap((c) => (c.snapshot ? [c.snapshot.snapshotId] : [])))]
  if (ids.length === 0 || !providerHasSnapshots(provider)) return []
  let stillUsed: Set<string>
  try {
    const standing = kept ?? (await ctx.store.readCheckpoints!(key))
    stillUsed = new Set(standing.flatMap((c) => (c.snapshot ? [c.snapshot.snapshotId] : [])))
  } catch (error) {
    ctx.emitError('delete-snapshot', error, key)
    return []
  }
  const deleted: string[] = []
  const gone: string[] = []
  for (const snapshotId of ids) {
    if (stillUsed.has(snapshotId)) continue
    try {
      await ctx.call(() => provider.deleteSnapshot(snapshotId))
      deleted.push(snapshotId)
    } catch (error) {
      if (SandkeepError.hasCode(error, 'SNAPSHOT_NOT_FOUND')) gone.push(snapshotId)
      else ctx.emitError('delete-snapshot', error, key)
    }
  }
  await forgetInLedger(ctx, key.tenant, [...deleted, ...gone], key)
  return deleted
}

/** The record's head; for a record written before checkpoint trees, its newest checkpoint. */
export function headOf(record: SessionRecord | null, checkpoints: readonly Checkpoint[]): string | null {
  if (record?.head !== undefined) return record.head
  return checkpoints.at(-1)?.id ?? null
}
