// Per-tenant checkpoint limits (`checkpoints.tenantLimits`): the tenant's usage read from the store's snapshot
// ledger, the limit a checkpoint reaches and what the tenant is told, and the ledger's upkeep as snapshots are
// taken and deleted.
import { SandkeepError } from '../contract/errors.js'
import type { JournalOnlyCheckpoint } from '../contract/report.js'
import type { TenantSnapshot, TenantSnapshotUsage } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import type { ManagerContext } from './context.js'
import type { TenantLimits } from './options.js'

/**
 * The tenant's usage before a snapshot; undefined when the store cannot say (reported as phase
 * `checkpoint-limit`): that does not cost the checkpoint its snapshot, the limit is checked again at the next.
 */
export async function usageBefore(
  ctx: ManagerContext,
  tenant: string,
  fail: (phase: string, cause: unknown) => void,
): Promise<TenantSnapshotUsage | undefined> {
  try {
    return await tenantSnapshotUsage(ctx, tenant)
  } catch (cause) {
    fail('checkpoint-limit', cause)
    return undefined
  }
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

/** A provider's `bytes`, when it is a byte count. */
export function knownBytes(bytes: unknown): number | null {
  return typeof bytes === 'number' && Number.isSafeInteger(bytes) && bytes >= 0 ? bytes : null
}

/**
 * The tenant limit `usage` reaches: before a snapshot (`added` 0), one at or past its limit; after one
 * (`after`), the bytes limit the snapshot's `added` bytes passed.
 */
export function limitReached(
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
export function platformQuota(cause: unknown): JournalOnlyCheckpoint {
  const detail = cause instanceof Error ? cause.message : String(cause)
  return {
    limit: 'platform-quota',
    message: `The platform's snapshot quota (shared by every tenant of this API key) is full: this checkpoint was recorded without a snapshot (a restore to it replays the journal); not retried. Set checkpoints.tenantLimits so that no tenant can fill it. (${detail})`,
  }
}

export function limitError(key: SessionKey, message: string): SandkeepError {
  return new SandkeepError({
    code: 'QUOTA_EXCEEDED',
    message,
    tenant: key.tenant,
    conversationId: key.conversationId,
  })
}

/** Notes a new snapshot in the tenant's ledger (stores that keep one); a failure is reported, never thrown. */
export async function noteInLedger(
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
