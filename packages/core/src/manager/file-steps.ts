import { contentDigest, fileDigests } from '../assessment/file-digests.js'
import type { JournalStep } from '../contract/journal.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'

/** The paths whose journal file steps a replay into a resumed sandbox leaves out. */
export interface FilesToLeave {
  /** Every path the sandbox already holds: its file steps are not replayed. */
  leave: Set<string>
  /** Those of them holding another version than the journal's last step wrote: kept as they are, reported. */
  kept: string[]
}

/**
 * Which of the journal's file steps would replace a file the sandbox still holds: for a replay into the
 * conversation's own sandbox (resumed, not created for this turn), whose files may well have outlived
 * whatever the probes took for lost, and be newer than the journal's version. Each path the file steps write
 * is looked at once, before any step runs: a path with nothing there gets its steps; one that already holds
 * what the journal's last step for it wrote needs none; one that holds anything else keeps it, and is
 * reported (`kept`). When the sandbox cannot be looked into by digest, anything there is kept.
 */
export async function filesToLeave(
  sandbox: SandboxHandle,
  steps: readonly JournalStep[],
  signal: AbortSignal,
): Promise<FilesToLeave> {
  const last = new Map<string, string>()
  for (const step of steps) if (step.kind === 'file') last.set(step.path, step.content)
  const leave = new Set<string>()
  const kept: string[] = []
  if (last.size === 0) return { leave, kept }
  const paths = [...last.keys()]
  const digests = await fileDigests(sandbox, paths, signal)
  for (const path of paths) {
    const found = digests ? digests.get(path) : (await sandbox.exists(path)) ? 'other' : 'missing'
    if (found === 'missing') continue
    leave.add(path)
    const same = typeof found === 'object' && found.sha256 === contentDigest(last.get(path)!)
    if (!same) kept.push(path)
  }
  return { leave, kept }
}
