// `turn.checkpoint()`: a checkpoint taken while the turn goes on (a loop that checkpoints each step). The
// snapshot is taken as a turn end takes one; the store records it fenced by the turn's lease, as the
// session's new head, and the steps journaled since the previous checkpoint become its part of the branch.
// Its manifest is written fresh (sentinels, marker, process list, file witnesses), as the turn end writes one.
import { SandkeepError } from '../contract/errors.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'
import type { MidTurnCheckpoint } from '../contract/session-manager-types.js'
import type { TurnManifest } from '../contract/session-store.js'
import { deleteReleasedSnapshots, snapshotCheckpoint } from './checkpoints.js'
import type { TurnScope } from './scope.js'

/**
 * Takes and records a mid-turn checkpoint of `handle`. A snapshot that fails leaves a journal-only
 * checkpoint (reported as phase `checkpoint`), and so does a tenant limit or a full platform quota: then the
 * result's `journalOnly` says which, as a turn end's report does. A store refusal (lease lost) deletes the
 * snapshot taken.
 * @throws SandkeepError CAPABILITY_UNSUPPORTED, LEASE_LOST
 */
export async function midTurnCheckpoint(
  scope: TurnScope,
  handle: SandboxHandle,
  state: { manifest: () => Promise<TurnManifest | null> },
): Promise<MidTurnCheckpoint> {
  const { ctx, key } = scope
  const { store } = ctx
  if (!ctx.config.checkpoints || typeof store.checkpoint !== 'function') {
    throw new SandkeepError({
      code: 'CAPABILITY_UNSUPPORTED',
      message: ctx.config.checkpoints
        ? `Store '${store.storeId}' cannot record a checkpoint mid-turn (no checkpoint method).`
        : 'turn.checkpoint() needs the checkpoints option of createSessionManager ({ every: "turn" }).',
      tenant: key.tenant,
      conversationId: key.conversationId,
    })
  }
  // Written before the snapshot, as a turn end writes it: the snapshot then holds the marker and sentinels
  // the manifest names, and a restore to this checkpoint probes against the sandbox as it is now.
  const manifest = await state.manifest()
  const taken = await snapshotCheckpoint(ctx, key, handle, scope.storeNow(), (phase, cause) =>
    ctx.emitError(phase, cause, key),
  )
  if (!taken) throw new Error('unreachable: checkpoints are on')
  try {
    const result = await store.checkpoint(key, scope.lease(), {
      ...taken.input,
      from: 'mid-turn',
      manifest,
    })
    await deleteReleasedSnapshots(ctx, key, result.pruned)
    return taken.journalOnly ? { ...result.checkpoint, journalOnly: taken.journalOnly } : result.checkpoint
  } catch (error) {
    if (taken.fresh) await deleteReleasedSnapshots(ctx, key, [taken.input], [])
    throw error
  }
}
