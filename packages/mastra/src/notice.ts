import type { SandboxStartOutcome } from '@mastra/core/workspace'
import { stateLostNotice as neutralNotice } from '@sandkeep/agent'
import type { ResumeReport } from '@sandkeep/core'

/**
 * Mastra's start outcome for a sandkeep resume: `'created'` whenever the model cannot count on what earlier
 * turns left (a fresh sandbox, a recreated one, a restore or fork, or the same sandbox back without part of
 * its state), `'connected'` only when it came back whole.
 */
export function startOutcomeOf(report: ResumeReport): SandboxStartOutcome {
  if (report.outcome === 'resumed' || report.outcome === 'reconnected') {
    return lostState(report) ? 'created' : 'connected'
  }
  return 'created'
}

/**
 * Whether earlier turns' state is gone: sandkeep's `stateLost` (memory or files), or background processes
 * that died (a Mastra workspace keeps its state in files and processes, rarely in an interpreter).
 */
export function lostState(report: ResumeReport): boolean {
  return report.stateLost || report.survived.processes === false
}

/**
 * The text to give the model when a turn's sandbox lost state since the previous turn, from the resume
 * report; `undefined` when nothing was lost (or on the thread's first turn, which had nothing to lose). It is
 * @sandkeep/agent's notice, the one every adapter gives, plus a sentence for the one loss a Mastra workspace
 * counts that the neutral notice does not: background processes that died while the files survived.
 */
export function stateLostNotice(report: ResumeReport | undefined): string | undefined {
  if (report === undefined) return undefined
  const neutral = neutralNotice(report)
  if (neutral !== undefined || !lostState(report)) return neutral
  return (
    'Notice: the running processes from earlier turns did not survive the pause since the previous turn; ' +
    "the sandbox's files are still there. Start again the processes you still need."
  )
}
