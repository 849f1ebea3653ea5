// The filesystem verdict when the marker file is missing and no file witness could decide (the session's
// files were made by commands or code, not writeFile): the marker's loss alone does not say the files were
// lost. Two things do say they were kept, each without a guess: the interpreter kept its memory (a platform
// that resets a sandbox's disk does so only by restarting it, which memory does not survive), or the
// marker's own directory is still there (a disk reset to the template's has no `.sandkeep`). Then the marker
// is written back at once and the probe says what happened; with neither, the files are taken as lost, and
// the message says on what evidence.
import type { FidelityOutcome } from '../assessment/fidelity.js'
import { MARKER_PATH } from '../assessment/fidelity.js'
import type { HealthCheckResult } from '../contract/health.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'
import type { TurnManifest } from '../contract/session-store.js'

const MARKER_DIRECTORY = MARKER_PATH.slice(0, MARKER_PATH.lastIndexOf('/'))

/** `fidelity` revised when the marker alone was lost (see above): a new outcome; `fidelity` itself otherwise. */
export async function reviseMarkerLoss(
  sandbox: SandboxHandle,
  manifest: TurnManifest,
  fidelity: FidelityOutcome,
  signal: AbortSignal,
): Promise<FidelityOutcome> {
  const marker = manifest.filesystem
  const check = fidelity.checks.find((c) => c.name === 'filesystem')
  if (!fidelity.markerGone || fidelity.survived.filesystem !== false || !marker || !check) return fidelity
  const started = performance.now()
  const evidence =
    fidelity.survived.memory === true
      ? 'the interpreter kept its memory, so the sandbox did not restart and its disk was not reset'
      : (await directoryStillThere(sandbox, signal))
        ? `its directory ${MARKER_DIRECTORY} is still there, which a disk reset to the template's would not have`
        : undefined
  if (!evidence) {
    return withCheck(fidelity, check, {
      ...check,
      message:
        'marker file is gone with its directory, and no file sandkeep saw written is there to compare: files taken as lost',
    })
  }
  const kept: FidelityOutcome = { ...fidelity, survived: { ...fidelity.survived, filesystem: true } }
  try {
    await sandbox.writeFile(marker.path, marker.value, { signal })
    return withCheck({ ...kept, markerKept: true }, check, {
      ...check,
      status: 'repaired',
      message: `marker file was removed from the sandbox, but ${evidence}: files kept; marker written again`,
      repairMs: performance.now() - started,
    })
  } catch (error) {
    if (signal.aborted) throw error
    // The turn end writes it (markerKept stays false).
    return withCheck(kept, check, {
      ...check,
      status: 'passed',
      message: `marker file was removed from the sandbox, but ${evidence}: files kept (the marker could not be written now: ${error instanceof Error ? error.message : String(error)}; the turn end writes it)`,
      repairMs: performance.now() - started,
    })
  }
}

/** `outcome` with `revised` in place of the check `old`. */
function withCheck(
  outcome: FidelityOutcome,
  old: HealthCheckResult,
  revised: HealthCheckResult,
): FidelityOutcome {
  return { ...outcome, checks: outcome.checks.map((c) => (c === old ? revised : c)) }
}

async function directoryStillThere(sandbox: SandboxHandle, signal: AbortSignal): Promise<boolean> {
  try {
    return await sandbox.exists(MARKER_DIRECTORY)
  } catch (error) {
    if (signal.aborted) throw error
    // Nothing could be looked at: no evidence for the files.
    return false
  }
}
