import type { SandboxStartOutcome } from '@mastra/core/workspace'
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
 * report; `undefined` when nothing was lost (or on the thread's first turn, which had nothing to lose).
 */
export function stateLostNotice(report: ResumeReport | undefined): string | undefined {
  if (report === undefined || !lostState(report)) return undefined
  const replayed =
    report.rehydratedSteps > 0
      ? ` sandkeep replayed ${report.rehydratedSteps} recorded setup step${report.rehydratedSteps === 1 ? '' : 's'}.`
      : ''
  if (report.outcome === 'recreated') {
    return (
      'Notice: this thread got a new sandbox since the previous turn (the old one was gone). Files, installed ' +
      `packages, shell and interpreter state and running processes from earlier turns are lost.${replayed} ` +
      'Check what you need before relying on it.'
    )
  }
  const lost: string[] = []
  if (report.survived.filesystem === false) lost.push('files and installed packages')
  if (report.survived.memory === false) lost.push('in-memory state (interpreter variables)')
  if (report.survived.processes === false) lost.push('running processes')
  const what = lost.length > 0 ? lost.join(', ') : 'part of its state'
  const kept = report.survived.filesystem === true ? ' Files were kept.' : ''
  return (
    `Notice: this thread's sandbox came back without ${what} since the previous turn.${kept}${replayed} ` +
    'Start again whatever you still need before relying on it.'
  )
}
