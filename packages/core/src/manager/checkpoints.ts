// Checkpoints: the platform snapshot a turn end takes for its checkpoint, the name that ties a snapshot to its
// session (so gc can tell a leaked one), and the deletion of snapshots no kept checkpoint refers to any more.
import { createHash, randomBytes } from 'node:crypto'
import { SandkeepError } from '../errors.js'
import type { JournalOnlyCheckpoint } from '../report.js'
import type { SandboxHandle, TakenSnapshot } from '../sandbox-provider.js'
import type {
  Checkpoint,
  CheckpointInput,
  SessionRecord,
  TenantSnapshot,
  TenantSnapshotUsage,
} from '../session-store.js'
import { type SessionKey, snapshotBaseName } from '../validation.js'
import type { ManagerContext } from './context.js'
import { providerHasSnapshots, type TenantLimits } from './options.js'

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
  let usage: TenantSnapshotUsage | undefined
  if (settings.tenantLimits) {
    // A usage the store cannot say (reported) does not cost the checkpoint its snapshot: the limit is
    // checked again at the next one.
    usage = await tenantSnapshotUsage(ctx, key.tenant).catch((cause: unknown) => {
      fail('checkpoint-limit', cause)
      return undefined
    })
    const reached = usage && limitReached(key.tenant, settings.tenantLimits, usage, 0)
    if (reached) return limited(reached)
  }
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
  const over =
    usage && settings.tenantLimits && limitReached(key.tenant, settings.tenantLimits, usage, bytes ?? 0, true)
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

/** A provider's `bytes`, when it is a byte count. */
function knownBytes(bytes: unknown): number | null {
  return typeof bytes === 'number' && Number.isSafeInteger(bytes) && bytes >= 0 ? bytes : null
}

/**
 * The tenant limit `usage` reaches: before a snapshot (`added` 0), one at or past its limit; after one
 * (`after`), the bytes limit the snapshot's `added` bytes passed.
 */
function limitReached(
  tenant: string,
  limits: TenantLimits,
  usage: TenantSnapshotUsage,
  added: number,
  after = false,
): JournalOnlyCheckpoint | undefined {
  const journalOnly =
    'this checkpoint was recorded without a snapshot (a restore to it replays the journal). End sessions or lower keep to make room.'
  if (!after && usage.snapshots >= limits.snapshots) {
    return {
      limit: 'tenant-snapshots',
      message: `Tenant '${tenant}' holds ${usage.snapshots} checkpoint snapshot(s), its limit is ${limits.snapshots} (checkpoints.tenantLimits.snapshots): ${journalOnly}`,
    }
  }
  const bytes = usage.bytes + added
  if (after ? bytes > limits.maxSnapshotBytes : bytes >= limits.maxSnapshotBytes) {
    return {
      limit: 'tenant-snapshot-bytes',
      message: `Tenant '${tenant}' checkpoint snapshots take ${bytes} bytes${after ? ' with this one' : ''}, its limit is ${limits.maxSnapshotBytes} (checkpoints.tenantLimits.maxSnapshotBytes): ${journalOnly}`,
    }
  }
  return undefined
}

/** The platform's snapshot quota is full: shared by every tenant of the API key, so no tenant's doing alone. */
function platformQuota(cause: unknown): JournalOnlyCheckpoint {
  const detail = cause instanceof Error ? cause.message : String(cause)
  return {
    limit: 'platform-quota',
    message: `The platform's snapshot quota (shared by every tenant of this API key) is full: this checkpoint was recorded without a snapshot (a restore to it replays the journal); not retried. Set checkpoints.tenantLimits so that no tenant can fill it. (${detail})`,
  }
}

function limitError(key: SessionKey, message: string): SandkeepError {
  return new SandkeepError({
    code: 'QUOTA_EXCEEDED',
    message,
    tenant: key.tenant,
    conversationId: key.conversationId,
  })
}

/** Notes a new snapshot in the tenant's ledger (stores that keep one); a failure is reported, never thrown. */
async function noteInLedger(
  ctx: ManagerContext,
  tenant: string,
  snapshot: TenantSnapshot,
  fail: (phase: string, cause: unknown) => void,
): Promise<void> {
  if (typeof ctx.store.noteTenantSnapshot !== 'function') return
  await ctx.store
    .noteTenantSnapshot(tenant, snapshot)
    .catch((cause: unknown) => fail('snapshot-ledger', cause))
}

/** Removes deleted snapshots from the tenant's ledger (stores that keep one); a failure is reported. */
export async function forgetInLedger(
  ctx: ManagerContext,
  tenant: string,
  snapshotIds: readonly string[],
  key?: SessionKey,
): Promise<void> {
  if (snapshotIds.length === 0 || typeof ctx.store.forgetTenantSnapshots !== 'function') return
  await ctx.store
    .forgetTenantSnapshots(tenant, snapshotIds)
    .catch((cause: unknown) => ctx.emitError('snapshot-ledger', cause, key))
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

/**
 * What the tenant's snapshots take: the store's ledger in one read; for a store without one, the distinct
 * snapshots the kept checkpoints of every session of the tenant hold (a read per session, count only).
 */
async function tenantSnapshotUsage(ctx: ManagerContext, tenant: string): Promise<TenantSnapshotUsage> {
  if (typeof ctx.store.readTenantSnapshotUsage === 'function')
    return ctx.store.readTenantSnapshotUsage(tenant)
  const snapshots = new Set<string>()
  let cursor: string | undefined
  do {
    const page = await ctx.store.list(tenant, { limit: 1000, ...(cursor ? { cursor } : {}) })
    for (const session of page.sessions) {
      const key = { tenant, conversationId: session.conversationId }
      for (const checkpoint of await ctx.store.readCheckpoints!(key)) {
        if (checkpoint.snapshot) snapshots.add(checkpoint.snapshot.snapshotId)
      }
    }
    cursor = page.cursor
  } while (cursor)
  return { snapshots: snapshots.size, bytes: 0, unknownBytes: snapshots.size }
}

/** The record's head; for a record written before checkpoint trees, its newest checkpoint. */
export function headOf(record: SessionRecord | null, checkpoints: readonly Checkpoint[]): string | null {
  if (record?.head !== undefined) return record.head
  return checkpoints.at(-1)?.id ?? null
}
