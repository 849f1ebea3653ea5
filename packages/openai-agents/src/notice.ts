import type { ResumeReport } from '@sandkeep/core'

/**
 * One sentence for the model (and the user) when the run's sandbox is not what the previous run left:
 * a fresh sandbox replaced a lost one, or a pause lost memory or files. `undefined` when nothing was lost.
 */
export function stateLostNotice(report: ResumeReport | undefined): string | undefined {
  if (!report?.stateLost) return undefined
  const replay =
    report.rehydratedSteps > 0
      ? ` sandkeep re-ran ${report.rehydratedSteps} recorded setup step(s) (the manifest's files among them)${
          report.rehydrateFailures ? `, ${report.rehydrateFailures.count} of which failed` : ''
        }.`
      : ''
  if (report.outcome === 'recreated') {
    return `Sandbox state lost: the previous sandbox was gone, so this run uses a new one. Files written by earlier runs outside the manifest, interpreter variables and background processes are gone.${replay}`
  }
  const lost = [
    report.survived.filesystem === false ? 'files' : undefined,
    report.survived.memory === false ? 'interpreter variables' : undefined,
    report.survived.processes === false ? 'background processes' : undefined,
  ].filter((item) => item !== undefined)
  return `Sandbox state lost: the sandbox was resumed, but its pause did not keep ${lost.join(', ') || 'everything'}.${replay}`
}
