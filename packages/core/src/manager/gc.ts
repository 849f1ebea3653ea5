import { SandkeepError } from '../contract/errors.js'
import { SANDKEEP_METADATA } from '../contract/sandbox-metadata.js'
import type { GcOptions, GcResult } from '../contract/session-manager-types.js'
import type { Checkpoint, SessionRecord } from '../contract/session-store.js'
import { invalidArgument, rejectUnknownOptions, validateTenant } from '../contract/validation.js'
import {
  deleteReleasedSnapshots,
  parseSnapshotName,
  SNAPSHOT_NAME_PREFIX,
  sessionTag,
} from './checkpoints.js'
import type { ManagerContext } from './context.js'
import { providerHasSnapshots } from './options.js'
import { forgetInLedger } from './tenant-limits.js'

/** A sandbox sandkeep made, found by its metadata. */
interface Found {
  sandboxId: string
  tenant: string
  startedAt?: Date
}

/** The options `gc` knows. */
const GC_OPTIONS = ['tenant', 'dryRun', 'deleteSessions'] as const

/**
 * `sessions.gc`: kills sandkeep sandboxes no session maps (past a grace period, on the store's clock, so a
 * creation in flight is not hit) and finds the sessions whose sandbox is confirmed gone. Those are kept
 * (`keptSessions`): their journal is what the next turn of the conversation recreates the sandbox from, and
 * the store forgets them at their TTL. `deleteSessions` deletes them instead (`deletedSessions`), journal
 * and all, as `endSession` would. With a provider that lists snapshots, it also deletes the checkpoint
 * snapshots no kept checkpoint or pending restore refers to (`deletedSnapshots`: a process that died between
 * taking a snapshot and recording it, or before deleting a pruned one). `dryRun` reports without doing.
 * @throws SandkeepError CAPABILITY_UNSUPPORTED without the provider's list capability
 */
export async function gc(ctx: ManagerContext, gcOptions?: GcOptions): Promise<GcResult> {
  if (gcOptions !== undefined && (typeof gcOptions !== 'object' || gcOptions === null))
    throw invalidArgument('gc options', 'must be an object.')
  if (gcOptions) rejectUnknownOptions('gc options', gcOptions, GC_OPTIONS)
  const only = gcOptions?.tenant === undefined ? undefined : validateTenant(gcOptions.tenant)
  const dryRun = booleanOption('dryRun', gcOptions?.dryRun)
  const deleteSessions = booleanOption('deleteSessions', gcOptions?.deleteSessions)
  const { provider, config } = ctx
  if (typeof provider.list !== 'function') {
    throw new SandkeepError({
      code: 'CAPABILITY_UNSUPPORTED',
      message: `Provider '${provider.providerId}' cannot list sandboxes, which gc needs.`,
    })
  }
  const sandboxes = await listSandkeepSandboxes(ctx, only)
  // Ages on the store's clock, which every process shares: this process's clock may be off (or jump), and
  // a sandbox it took for old could be one another process is creating right now.
  const now = typeof ctx.store.now === 'function' ? await ctx.store.now() : Date.now()
  // Every tenant with sessions, not only those with a live sandbox: a session whose sandbox is gone (killed
  // at turn end, rewound) still has checkpoints and a pending restore whose snapshots must stay.
  const stored = only || typeof ctx.store.listTenants !== 'function' ? [] : await ctx.store.listTenants()
  const tenants = only
    ? [only]
    : [...new Set([...sandboxes.map((s) => s.tenant), ...stored.map(validateTenant), 'default'])]
  const result: GcResult = {
    killedSandboxes: [],
    deletedSessions: [],
    keptSessions: [],
    deletedSnapshots: [],
  }
  const live = new Set(sandboxes.map((s) => s.sandboxId))
  // A sandbox younger than this may be one whose creator has not mapped it yet.
  const graceMs = config.createWaitMs + config.leaseMs
  const snapshotUse: SnapshotUse = { referenced: new Set(), tags: new Map(), bySession: new Map() }
  for (const tenant of tenants) {
    const sessions = await listAllSessions(ctx, tenant)
    await noteSnapshotUse(ctx, sessions, snapshotUse)
    const mapped = new Set(sessions.flatMap((session) => (session.sandboxId ? [session.sandboxId] : [])))
    for (const session of sessions) {
      if (!session.sandboxId || live.has(session.sandboxId)) continue
      if (!(await isGone(ctx, session))) continue
      const key = { tenant: session.tenant, conversationId: session.conversationId }
      if (!deleteSessions) {
        result.keptSessions.push(key)
        continue
      }
      if (!dryRun) {
        const checkpoints = snapshotUse.bySession.get(sessionTag(key)) ?? []
        await ctx.store.delete(key)
        result.deletedSnapshots.push(...(await deleteReleasedSnapshots(ctx, key, checkpoints, [])))
      }
      result.deletedSessions.push(key)
    }
    for (const sandbox of sandboxes) {
      if (sandbox.tenant !== tenant || mapped.has(sandbox.sandboxId)) continue
      if (sandbox.startedAt && now - sandbox.startedAt.getTime() < graceMs) continue
      if (!dryRun) await ctx.call(() => provider.kill(sandbox.sandboxId))
      result.killedSandboxes.push(sandbox.sandboxId)
    }
  }
  // Only a store that names all its tenants lets the sweep delete snapshots of sessions gc did not see.
  const sweep = {
    now,
    graceMs,
    dryRun,
    allTenants: only === undefined && typeof ctx.store.listTenants === 'function',
  }
  result.deletedSnapshots.push(...(await sweepSnapshots(ctx, snapshotUse, sweep)))
  return result
}

/** What the sessions gc saw refer to: snapshot ids, the tags of the sessions, each session's checkpoints. */
interface SnapshotUse {
  referenced: Set<string>
  /** Session tag → its tenant (whose snapshot ledger a swept snapshot leaves). */
  tags: Map<string, string>
  bySession: Map<string, Checkpoint[]>
}

/** Notes the snapshots the sessions' checkpoints and pending restores stand on (with a store that keeps them). */
async function noteSnapshotUse(
  ctx: ManagerContext,
  sessions: SessionRecord[],
  use: SnapshotUse,
): Promise<void> {
  const { store } = ctx
  if (typeof store.readCheckpoints !== 'function' || !providerHasSnapshots(ctx.provider)) return
  for (const session of sessions) {
    const key = { tenant: session.tenant, conversationId: session.conversationId }
    const tag = sessionTag(key)
    const checkpoints = await store.readCheckpoints(key)
    use.tags.set(tag, session.tenant)
    use.bySession.set(tag, checkpoints)
    for (const checkpoint of checkpoints)
      if (checkpoint.snapshot) use.referenced.add(checkpoint.snapshot.snapshotId)
    if (session.restore?.snapshot) use.referenced.add(session.restore.snapshot.snapshotId)
  }
}

/**
 * Deletes checkpoint snapshots (named by sandkeep) that nothing refers to, older than the grace period by the
 * time in their name (store clock): one younger may belong to a turn end that has not recorded it yet. With
 * `tenant`, only the snapshots of sessions gc saw (a name does not say its tenant).
 */
async function sweepSnapshots(
  ctx: ManagerContext,
  use: SnapshotUse,
  sweep: { now: number; graceMs: number; dryRun: boolean; allTenants: boolean },
): Promise<string[]> {
  const { provider } = ctx
  if (typeof provider.listSnapshots !== 'function' || !providerHasSnapshots(provider)) return []
  if (typeof ctx.store.readCheckpoints !== 'function') return []
  const deleted: string[] = []
  let cursor: string | undefined
  do {
    const page = await ctx.call(() =>
      provider.listSnapshots!({ namePrefix: SNAPSHOT_NAME_PREFIX, ...(cursor ? { cursor } : {}) }),
    )
    for (const snapshot of page.snapshots) {
      if (use.referenced.has(snapshot.snapshotId)) continue
      const named = (snapshot.names ?? []).map(parseSnapshotName).find((parsed) => parsed !== undefined)
      if (!named || sweep.now - named.at < sweep.graceMs) continue
      if (!sweep.allTenants && !use.tags.has(named.tag)) continue
      if (!sweep.dryRun) {
        await ctx.call(() => provider.deleteSnapshot(snapshot.snapshotId))
        // A snapshot a failed delete left behind is still in its tenant's ledger; one whose session gc
        // did not see cannot be told apart by its name (a hash), and stays there.
        const tenant = use.tags.get(named.tag)
        if (tenant) await forgetInLedger(ctx, tenant, [snapshot.snapshotId])
      }
      deleted.push(snapshot.snapshotId)
    }
    cursor = page.cursor
  } while (cursor)
  return deleted
}

function booleanOption(name: string, value: unknown): boolean {
  if (value === undefined) return false
  if (typeof value !== 'boolean') throw invalidArgument(`gc ${name}`, 'must be a boolean.')
  return value
}

/** Every running or paused sandbox sandkeep made (of `only`, when given), found by its metadata. */
async function listSandkeepSandboxes(ctx: ManagerContext, only: string | undefined): Promise<Found[]> {
  const sandboxes: Found[] = []
  let cursor: string | undefined
  do {
    const page = await ctx.call(() =>
      ctx.provider.list!({
        ...(only ? { metadata: { [SANDKEEP_METADATA.tenant]: only } } : {}),
        state: ['running', 'paused'],
        ...(cursor ? { cursor } : {}),
      }),
    )
    for (const info of page.sandboxes) {
      const tenant = info.metadata[SANDKEEP_METADATA.tenant]
      if (tenant === undefined || (only && tenant !== only)) continue
      sandboxes.push({
        sandboxId: info.sandboxId,
        tenant,
        ...(info.startedAt ? { startedAt: info.startedAt } : {}),
      })
    }
    cursor = page.cursor
  } while (cursor)
  return sandboxes
}

async function listAllSessions(ctx: ManagerContext, tenant: string): Promise<SessionRecord[]> {
  const sessions: SessionRecord[] = []
  let cursor: string | undefined
  do {
    const page = await ctx.store.list(tenant, { limit: 1000, ...(cursor ? { cursor } : {}) })
    sessions.push(...page.sessions)
    cursor = page.cursor
  } while (cursor)
  return sessions
}

/** A mapped sandbox missing from the listing: confirmed gone before its mapping (and journal) is dropped. */
async function isGone(ctx: ManagerContext, session: SessionRecord): Promise<boolean> {
  if (session.state === 'killed') return true
  if (typeof ctx.provider.getInfo !== 'function') return false
  try {
    await ctx.provider.getInfo(session.sandboxId!)
    return false
  } catch (error) {
    if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
    return true
  }
}
