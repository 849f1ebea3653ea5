import { MARKER_PATH } from '../assessment/fidelity.js'
import { SandkeepError } from '../contract/errors.js'
import type { RestoreReport, ResumeOutcome } from '../contract/report.js'
import { SANDKEEP_METADATA, sessionMetadata } from '../contract/sandbox-metadata.js'
import type { SandboxHandle, SandboxInfo } from '../contract/sandbox-provider.js'
import type { AcquireResult, SessionRecord, SessionRestore } from '../contract/session-store.js'
import { sandboxCreateOptions } from './create-options.js'
import { providerHasSnapshots } from './options.js'
import { abortedError, checkRecord } from './records.js'
import type { ResumeAttempt } from './resume-attempt.js'
import type { TurnScope } from './scope.js'
import type { LastTurn } from './session-state.js'
import { verifyTenant } from './tenancy.js'

/** Where the ladder starts: the record the lease returned (or the creator's, after waiting) and whether to create. */
export interface StartingPoint {
  record: SessionRecord | null
  create: boolean
}

/** What the ladder climbs from: the starting point, and what the turn knew before it took the lease. */
export interface LadderStart extends StartingPoint {
  /** Holders of the session when this turn acquired its lease, this one included. */
  holders: number
  /** What this process's last turn of the session left, read before the lease was taken. */
  known: LastTurn | undefined
}

/** Where the ladder ended: the rung (`outcome`), the sandbox, the one it replaced, and how it got there. */
export interface Climbed {
  outcome: ResumeOutcome
  handle: SandboxHandle
  /** The sandbox the session mapped before a recreate or a re-mapping. */
  previousSandboxId?: string
  /** The record the ladder started from. */
  record: SessionRecord | null
  /** This turn joined a sandbox another turn (re)created meanwhile: that turn bootstraps and rehydrates it. */
  adopted: boolean
  /**
   * The store had no record of a session that had state (this process had used it, or its sandbox was found
   * by its metadata): its journal and manifest are gone.
   */
  sessionLost: boolean
  /** With outcome `'rewound'` or `'forked'`: the restore carried out, and from where. */
  restored?: RestoreReport
}

/**
 * The checked record; when another turn holds the creation claim of a session with no sandbox, the record
 * once that turn mapped one (or the claim, once it lapsed).
 * @throws SandkeepError STORE_CORRUPT, SESSION_BUSY
 */
export async function startingPoint(scope: TurnScope, acquired: AcquireResult): Promise<StartingPoint> {
  const record = checkRecord(acquired.record, scope.key)
  const create = acquired.create
  if (create || record?.sandboxId) return { record, create }
  const { ctx, key } = scope
  // Another turn holds the creation claim: poll it (the lease is read at each poll, renewals replace it).
  const claim = async () => {
    const answer = await ctx.store.claimCreation(key, scope.lease())
    return { record: checkRecord(answer.record, key), create: answer.create }
  }
  return ctx.state.waitForCreation(key, claim, { waitMs: ctx.config.createWaitMs, signal: scope.signal })
}

/**
 * The resume ladder: adopt the sandbox of a session the store lost (known to this process, or found by its
 * metadata while creating); create when nothing is mapped; otherwise
 * connect (after verifying the tenant), following a re-mapped id; recreate
 * a sandbox that is gone (or was killed). The sandbox it asks the provider for and the pause it ends are
 * noted on `attempt` as they happen, since the turn end needs them even when a later rung fails.
 */
export async function climbLadder(
  scope: TurnScope,
  start: LadderStart,
  attempt: ResumeAttempt,
): Promise<Climbed> {
  const { record, create } = start
  const mapped = record?.sandboxId ?? null
  const sessionLost = record === null && create && start.known !== undefined
  const climbed = (outcome: ResumeOutcome, handle: SandboxHandle, adopted = false): Climbed => ({
    outcome,
    handle,
    record,
    adopted,
    sessionLost,
  })
  const lost = sessionLost ? await adoptLostSession(scope, start.known!, attempt) : null
  if (lost) return climbed('resumed', lost)
  if ((create || !mapped) && record?.restore) {
    const made = await restoreAndMap(scope, record.restore, attempt)
    return { ...climbed(record.restore.kind, made.handle, made.adopted), restored: made.restored }
  }
  if (create || !mapped) {
    // A session the store does not know may still have a sandbox: another process used it before the store
    // lost it (a restart without persistence, a flush). Looked for alongside the creation, unless this
    // process just looked.
    const created = await createAndMap(scope, null, attempt, record === null && !sessionLost)
    if (created.previous) return { ...climbed('resumed', created.handle), sessionLost: true }
    return climbed('created', created.handle, created.adopted)
  }
  const connected = record?.state !== 'killed' ? await connectMapped(scope, mapped, attempt) : undefined
  if (!connected) {
    const created = await createAndMap(scope, mapped, attempt)
    return { ...climbed('recreated', created.handle, created.adopted), previousSandboxId: mapped }
  }
  const outcome = record?.state === 'paused' && start.holders <= 1 ? 'resumed' : 'reconnected'
  // Only the turn that found nobody holding the session ended the pause; one that joined it must not
  // count the same pause again.
  if (outcome === 'resumed' && record?.pausedAt != null) attempt.endPause(record.pausedAt)
  if (connected.id === mapped) return climbed(outcome, connected)
  await recordRemapping(scope, connected.id, mapped, record, attempt)
  return { ...climbed(outcome, connected), previousSandboxId: mapped }
}

/** Connects to the mapped sandbox; undefined when it is gone (SANDBOX_NOT_FOUND). */
async function connectMapped(
  scope: TurnScope,
  mapped: string,
  attempt: ResumeAttempt,
): Promise<SandboxHandle | undefined> {
  try {
    await verifyTenant(scope.ctx, mapped, scope.key, attempt.signal, attempt.onRetry)
    attempt.touch(mapped)
    return await connect(scope, mapped, attempt)
  } catch (error) {
    if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
    return undefined
  }
}

function connect(scope: TurnScope, sandboxId: string, attempt: ResumeAttempt): Promise<SandboxHandle> {
  const { provider, config } = scope.ctx
  const { signal } = attempt
  return attempt.call(() => provider.connect(sandboxId, { timeoutMs: config.sandbox.timeoutMs, signal }))
}

/** Maps the session to `sandboxId` (fenced on `expected`), keeping it for `ttlMs`. */
function mapSandbox(
  scope: TurnScope,
  sandboxId: string,
  expected: string | null,
  template: string | null,
): Promise<SessionRecord> {
  const { store, provider, config } = scope.ctx
  return store.setSandbox(scope.key, scope.lease(), {
    sandboxId,
    expectedSandboxId: expected,
    providerId: provider.providerId,
    template,
    state: 'running',
    ttlMs: config.ttlMs,
  })
}

/** The platform re-mapped the sandbox (seen after repeated pause/resume): check and record the new id. */
async function recordRemapping(
  scope: TurnScope,
  sandboxId: string,
  mapped: string,
  record: SessionRecord | null,
  attempt: ResumeAttempt,
): Promise<void> {
  const { ctx, key } = scope
  await verifyTenant(ctx, sandboxId, key, attempt.signal, attempt.onRetry)
  try {
    await mapSandbox(scope, sandboxId, mapped, record?.template ?? ctx.config.sandbox.template ?? null)
  } catch (error) {
    // An overlapping turn recorded the same re-mapping first: nothing left to do.
    const now = SandkeepError.hasCode(error, 'LEASE_LOST') ? await ctx.store.get(key) : null
    if (now?.sandboxId !== sandboxId) throw error
  }
}

/**
 * Carries out the rewind or fork the record holds: a sandbox made from the checkpoint's snapshot, or (no
 * snapshot, or the platform lost it) a fresh one that the assessment bootstraps and fills from the journal,
 * which the store already cut back to the checkpoint. Mapping it clears the pending restore; a process that
 * dies before that leaves the restore pending (the next turn carries it out) and the new sandbox unmapped,
 * where gc finds it by its metadata.
 */
async function restoreAndMap(
  scope: TurnScope,
  restore: SessionRestore,
  attempt: ResumeAttempt,
): Promise<{ handle: SandboxHandle; adopted: boolean; restored: RestoreReport }> {
  const { ctx, key } = scope
  const { provider } = ctx
  const base = {
    kind: restore.kind,
    turn: restore.turn,
    ...(restore.fromConversationId !== undefined ? { fromConversationId: restore.fromConversationId } : {}),
  }
  const snapshot = restore.snapshot
  if (snapshot && providerHasSnapshots(provider)) {
    const { snapshotId } = snapshot
    try {
      const fromSnapshot = () =>
        provider.createFromSnapshot(snapshotId, sandboxCreateOptions(ctx.config, key))
      const made = await createAndMap(scope, null, attempt, false, fromSnapshot)
      return { ...made, restored: { ...base, source: 'snapshot', snapshotId } }
    } catch (error) {
      if (!SandkeepError.hasCode(error, 'SNAPSHOT_NOT_FOUND')) throw error
      // Deleted on the platform (pruned by the fork's source, expired): the journal is all that is left.
      ctx.emitError('restore-snapshot', error, key)
      const made = await createAndMap(scope, null, attempt)
      return { ...made, restored: { ...base, source: 'journal', snapshotId, snapshotLost: true } }
    }
  }
  const made = await createAndMap(scope, null, attempt)
  return { ...made, restored: { ...base, source: 'journal' } }
}

/**
 * Creates a sandbox (with `make`, default the provider's create) and maps the session to it; joins the one
 * an overlapping turn mapped first (`adopted`). With `search`, the conversation's earlier sandbox, found by
 * its metadata meanwhile, is mapped instead of the new one (`previous`), which is then killed.
 */
async function createAndMap(
  scope: TurnScope,
  expected: string | null,
  attempt: ResumeAttempt,
  search = false,
  make?: () => Promise<SandboxHandle>,
): Promise<{ handle: SandboxHandle; adopted: boolean; previous: boolean }> {
  const { ctx, key } = scope
  const made = search
    ? await createOrFindPrevious(scope, attempt)
    : { handle: await createSandbox(scope, attempt, make), previous: false }
  const { handle, previous } = made
  ctx.state.rememberTenant(handle.id, key.tenant)
  try {
    await mapSandbox(scope, handle.id, expected, ctx.config.sandbox.template ?? null)
    ctx.state.wakeCreationWaiters(key)
  } catch (error) {
    // Someone else mapped the session first (or our lease lapsed): never leave our sandbox running unmapped.
    // The conversation's earlier sandbox is not ours to kill: whoever mapped first mapped that one too.
    if (!previous) await killUnmapped(scope, handle.id)
    if (!SandkeepError.hasCode(error, 'LEASE_LOST')) throw error
    // An overlapping turn recreated it first: use that one (our lease is still live, or this fails).
    const adopted = await adoptMapping(scope, expected, attempt)
    if (!adopted) throw error
    return { handle: adopted, adopted: true, previous: false }
  }
  return { handle, adopted: false, previous }
}

/**
 * `provider.create` (or `make`) for the session, never cut short by the turn's abort. A platform that received the
 * create may make the sandbox whatever the caller does afterwards, and only its answer names the sandbox:
 * so the call gets no signal (its retries stop once the signal fired), and an abort only stops the turn
 * waiting. The sandbox, once made, is killed; the turn end waits for that kill.
 * @throws SandkeepError ABORTED when the signal fires first; the create's error otherwise
 */
function createSandbox(
  scope: TurnScope,
  attempt: ResumeAttempt,
  make: () => Promise<SandboxHandle> = () =>
    scope.ctx.provider.create(sandboxCreateOptions(scope.ctx.config, scope.key)),
): Promise<SandboxHandle> {
  const { ctx, key } = scope
  const { signal } = attempt
  const creating = ctx.call(
    () => {
      if (signal.aborted) throw abortedError(key, signal.reason)
      return make()
    },
    { onRetry: attempt.onRetry },
  )
  return new Promise<SandboxHandle>((resolve, reject) => {
    let settled = false
    const abandon = () => {
      if (settled) return
      settled = true
      reject(abortedError(key, signal.reason))
      attempt.abandon(
        creating.then(
          (handle) => killUnmapped(scope, handle.id),
          () => undefined,
        ),
      )
    }
    signal.addEventListener('abort', abandon, { once: true })
    creating.then(
      (handle) => {
        signal.removeEventListener('abort', abandon)
        if (settled) return
        settled = true
        resolve(handle)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', abandon)
        if (settled) return
        settled = true
        reject(error)
      },
    )
    if (signal.aborted) abandon()
  })
}

/** Kills a sandbox no session maps (retried); a failure is reported, never thrown. */
async function killUnmapped(scope: TurnScope, sandboxId: string): Promise<void> {
  const { ctx, key } = scope
  await ctx
    .call(() => ctx.provider.kill(sandboxId))
    .then(
      () => undefined,
      (error: unknown) => ctx.emitError('kill-unmapped', error, key),
    )
}

/**
 * For a session the store has no record of: creates a sandbox and, at the same time, looks for one the
 * conversation had, by its metadata (the platform's list, filtered by tenant and session). The common first
 * turn finds nothing and so waits for the longer of the two calls, not their sum. The most recent one found
 * is taken over when a turn ended in it (see servedTurn), and the new sandbox is killed; one whose first turn
 * never ended holds nothing to keep, and is left to gc. A failed search is reported (`error`, phase
 * `find-session-sandbox`), never fatal.
 */
async function createOrFindPrevious(
  scope: TurnScope,
  attempt: ResumeAttempt,
): Promise<{ handle: SandboxHandle; previous: boolean }> {
  const { ctx, key } = scope
  const creating = createSandbox(scope, attempt)
  const searching = sessionSandboxes(scope, attempt).catch((error: unknown) => {
    if (attempt.signal.aborted) throw error
    ctx.emitError('find-session-sandbox', error, key)
    return [] as SandboxInfo[]
  })
  const [created, found] = await Promise.allSettled([creating, searching])
  const fresh = created.status === 'fulfilled' ? created.value : undefined
  try {
    if (found.status === 'rejected') throw found.reason
    const candidate = found.value.find((info) => info.sandboxId !== fresh?.id)
    const previous = candidate === undefined ? undefined : await servedTurn(scope, candidate, attempt)
    if (previous) {
      if (fresh) attempt.abandon(killUnmapped(scope, fresh.id))
      ctx.events.emit('session-lost', {
        conversationId: key.conversationId,
        tenant: key.tenant,
        sandboxId: previous.id,
        adopted: true,
      })
      return { handle: previous, previous: true }
    }
  } catch (error) {
    if (fresh) attempt.abandon(killUnmapped(scope, fresh.id))
    throw error
  }
  if (!fresh) throw (created as PromiseRejectedResult).reason
  return { handle: fresh, previous: false }
}

/**
 * Connects to a sandbox of this conversation found by its metadata, and answers it when a turn ended in it:
 * it is paused (only a turn end, or the platform's idle pause after one, pauses it), or its marker is there.
 * Undefined when it is gone, or running without a marker (its first turn never ended): connecting did not
 * change its state, and gc kills it.
 */
async function servedTurn(
  scope: TurnScope,
  found: SandboxInfo,
  attempt: ResumeAttempt,
): Promise<SandboxHandle | undefined> {
  attempt.touch(found.sandboxId)
  let handle: SandboxHandle
  try {
    handle = await connect(scope, found.sandboxId, attempt)
  } catch (error) {
    if (SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) return undefined
    throw error
  }
  if (found.state === 'paused' || !scope.ctx.config.fidelityProbes) return handle
  // Whether it is there, not what it holds: code in the sandbox may have put a FIFO there, whose read never ends.
  return (await handle.exists(MARKER_PATH)) ? handle : undefined
}

/** Connects to the sandbox the session maps to now, when it differs from `stale`; null when there is none. */
async function adoptMapping(
  scope: TurnScope,
  stale: string | null,
  attempt: ResumeAttempt,
): Promise<SandboxHandle | null> {
  const { ctx, key } = scope
  const current = checkRecord(await ctx.store.get(key), key)
  const sandboxId = current?.sandboxId
  if (!sandboxId || sandboxId === stale) return null
  await verifyTenant(ctx, sandboxId, key, attempt.signal, attempt.onRetry)
  return connect(scope, sandboxId, attempt)
}

/**
 * The store has no record of a session this process used (it restarted empty, or the record expired): takes
 * over the sandbox the session mapped to, rather than orphaning it and starting with nothing. Adopting keeps
 * the user's files, memory and processes; it is safe because this process created or verified that sandbox
 * for this very tenant and conversation, and the mapping is written under the creation claim, fenced
 * (`expectedSandboxId: null`), so a second process cannot map another sandbox meanwhile. Null when there is
 * nothing to adopt (the sandbox is gone too): the caller creates one. Either way the report says stateLost.
 */
async function adoptLostSession(
  scope: TurnScope,
  known: LastTurn,
  attempt: ResumeAttempt,
): Promise<SandboxHandle | null> {
  const { ctx, key } = scope
  let handle: SandboxHandle | undefined
  try {
    await verifyTenant(ctx, known.sandboxId, key, attempt.signal, attempt.onRetry)
    attempt.touch(known.sandboxId)
    handle = await connect(scope, known.sandboxId, attempt)
  } catch (error) {
    if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
    // The platform may have re-mapped it: look for the session's sandbox by the metadata written at creation.
    const found = await findSessionSandbox(scope, known.sandboxId, attempt)
    if (found) {
      attempt.touch(found)
      handle = await connect(scope, found, attempt)
    }
  }
  ctx.events.emit('session-lost', {
    conversationId: key.conversationId,
    tenant: key.tenant,
    sandboxId: known.sandboxId,
    adopted: handle !== undefined,
  })
  if (!handle) return null
  attempt.touch(handle.id)
  await mapSandbox(scope, handle.id, null, ctx.config.sandbox.template ?? null)
  ctx.state.wakeCreationWaiters(key)
  return handle
}

/**
 * A running or paused sandbox other than `gone` whose metadata names this tenant and conversation, via the
 * provider's list capability (undefined without it). The most recently started one when there are several.
 */
async function findSessionSandbox(
  scope: TurnScope,
  gone: string,
  attempt: ResumeAttempt,
): Promise<string | undefined> {
  return (await sessionSandboxes(scope, attempt)).find((info) => info.sandboxId !== gone)?.sandboxId
}

/**
 * The running or paused sandboxes whose metadata names this tenant and conversation, most recently started
 * first, each remembered as verified for the tenant; none without the provider's list capability.
 */
async function sessionSandboxes(scope: TurnScope, attempt: ResumeAttempt): Promise<SandboxInfo[]> {
  const { ctx, key } = scope
  const { provider } = ctx
  if (typeof provider.list !== 'function') return []
  const metadata = sessionMetadata(key)
  const signal = attempt.signal
  const page = await attempt.call(() => provider.list!({ metadata, state: ['running', 'paused'], signal }))
  const found = page.sandboxes
    .filter(
      (info) =>
        info.metadata[SANDKEEP_METADATA.tenant] === metadata[SANDKEEP_METADATA.tenant] &&
        info.metadata[SANDKEEP_METADATA.session] === metadata[SANDKEEP_METADATA.session],
    )
    .sort((a, b) => (b.startedAt?.getTime() ?? 0) - (a.startedAt?.getTime() ?? 0))
  for (const info of found) ctx.state.rememberTenant(info.sandboxId, key.tenant)
  return found
}
