// The tenant's snapshot ledger (SessionStore.noteTenantSnapshot and the two after it): input checks and the
// encoding every store keeps an entry in, so that memory, Redis and third-party stores total alike.
import type { TenantSnapshot, TenantSnapshotUsage } from '../contract/session-store.js'
import { invalidArgument, validateSnapshotId, validateTenant } from '../contract/validation.js'

/** Most snapshot ids one `forgetTenantSnapshots` call takes. */
export const MAX_FORGOTTEN_SNAPSHOTS = 10_000

/**
 * Checks the input of `noteTenantSnapshot`. Returns the tenant and a copy of the snapshot.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkTenantSnapshot(
  tenant: unknown,
  snapshot: unknown,
): { tenant: string; snapshot: TenantSnapshot } {
  const checkedTenant = validateTenant(tenant)
  if (typeof snapshot !== 'object' || snapshot === null) {
    throw invalidArgument('snapshot', 'must be an object { snapshotId, bytes }.')
  }
  const { snapshotId, bytes } = snapshot as Partial<TenantSnapshot>
  if (bytes !== null && (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes < 0)) {
    throw invalidArgument('snapshot.bytes', 'must be a whole number of bytes from 0, or null when not known.')
  }
  return { tenant: checkedTenant, snapshot: { snapshotId: validateSnapshotId(snapshotId), bytes } }
}

/**
 * Checks the input of `forgetTenantSnapshots`. Returns the tenant and the distinct ids.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkForgottenSnapshots(
  tenant: unknown,
  snapshotIds: unknown,
): { tenant: string; snapshotIds: string[] } {
  const checkedTenant = validateTenant(tenant)
  if (!Array.isArray(snapshotIds) || snapshotIds.length > MAX_FORGOTTEN_SNAPSHOTS) {
    throw invalidArgument(
      'snapshotIds',
      `must be an array of at most ${MAX_FORGOTTEN_SNAPSHOTS} snapshot ids.`,
    )
  }
  return { tenant: checkedTenant, snapshotIds: [...new Set(snapshotIds.map((id) => validateSnapshotId(id)))] }
}

/** A ledger entry's stored value: the bytes in decimal, or `?` when not known. */
export function encodeSnapshotBytes(bytes: number | null): string {
  return bytes === null ? '?' : String(bytes)
}

/** The totals of a ledger's stored values; a value that is neither a byte count nor `?` counts as unknown. */
export function totalSnapshotUsage(values: Iterable<string>): TenantSnapshotUsage {
  const usage: TenantSnapshotUsage = { snapshots: 0, bytes: 0, unknownBytes: 0 }
  for (const value of values) {
    usage.snapshots += 1
    if (/^\d{1,16}$/.test(value)) usage.bytes += Number(value)
    else usage.unknownBytes += 1
  }
  return usage
}
