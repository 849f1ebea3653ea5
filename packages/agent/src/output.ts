import type { RestoreReport, ResumeReport } from '@sandkeep/core'

/** Result of {@link truncateOutput}. */
export interface TruncatedText {
  /** The text to show, with an inline note where characters were cut. */
  text: string
  /** Characters left out; 0 when the text fit. */
  omittedChars: number
}

const numberFormat = new Intl.NumberFormat('en-US')

/**
 * Shortens `text` to about `maxChars` characters, keeping its beginning and its end (the end of a log is
 * where errors usually are) and putting a note in the middle that says how much was left out, so the model
 * never mistakes a cut output for the whole of it. The note itself is not counted against `maxChars`.
 */
export function truncateOutput(text: string, maxChars: number): TruncatedText {
  if (!Number.isFinite(maxChars) || maxChars <= 0 || text.length <= maxChars) return { text, omittedChars: 0 }
  const headChars = Math.ceil(maxChars * 0.6)
  const tailChars = maxChars - headChars
  // Cut on code-point boundaries so a surrogate pair is never split into two invalid halves.
  let headEnd = headChars
  if (isHighSurrogate(text.charCodeAt(headEnd - 1))) headEnd -= 1
  let tailStart = text.length - tailChars
  if (isLowSurrogate(text.charCodeAt(tailStart))) tailStart += 1
  const omittedChars = tailStart - headEnd
  const note =
    `\n[... ${numberFormat.format(omittedChars)} characters omitted: the output was ` +
    `${numberFormat.format(text.length)} characters; showing the first ${numberFormat.format(headEnd)} ` +
    `and the last ${numberFormat.format(text.length - tailStart)} ...]\n`
  return { text: text.slice(0, headEnd) + note + text.slice(tailStart), omittedChars }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff
}

/** The sentence naming the files a replay kept as the sandbox had them, or '' when there were none. */
function keptFilesNotice(report: ResumeReport): string {
  const kept = report.keptFiles ?? []
  if (kept.length === 0) return ''
  const shown = kept.slice(0, 5).join(', ')
  const more = kept.length > 5 ? ` and ${kept.length - 5} more` : ''
  return ` Found with other content than the recorded setup, so kept as they are rather than replaced: ${shown}${more}.`
}

/** "1 recorded setup step", "3 recorded setup steps". */
function setupSteps(count: number): string {
  return `${count} recorded setup step${count === 1 ? '' : 's'}`
}

/**
 * The note put in front of the model on the first tool result of a turn whose resume lost state, or of a
 * rewound or forked turn (always: the sandbox is no longer what the latest turns left), or `undefined` when
 * nothing was lost. Short and concrete: what is gone and what to do.
 */
export function stateLostNotice(report: ResumeReport | undefined): string | undefined {
  if (report === undefined) return undefined
  if (report.restored) return restoredNotice(report, report.restored)
  if (!report.stateLost) return undefined
  const replayed =
    (report.rehydratedSteps > 0
      ? ` ${setupSteps(report.rehydratedSteps)} ${report.rehydratedSteps === 1 ? 'was' : 'were'} replayed.`
      : '') + failedStepsNotice(report)
  if (report.outcome === 'recreated') {
    return (
      'Notice: the sandbox was replaced by a fresh one since the previous turn (the old one expired or was ' +
      'removed). Files, installed packages, interpreter variables and running processes from earlier turns ' +
      `are gone.${replayed} Recreate whatever you still need before relying on it.`
    )
  }
  // The same sandbox was resumed: say exactly what the report says was lost, and what was kept.
  const processes =
    report.survived.processes === true
      ? report.survived.memory === false
        ? ' Background processes were restarted from their command lines (their in-memory state is new).'
        : ' Background processes are still running.'
      : ''
  if (report.survived.filesystem === false) {
    const lost = ['files and installed packages']
    if (report.survived.memory === false) lost.push('interpreter variables')
    if (report.survived.processes === false) lost.push('running processes')
    return (
      `Notice: the sandbox was resumed, but its pause since the previous turn did not keep its ${report.survived.memory === false ? 'memory or its files' : 'files'}: ` +
      `${lost.join(', ')} from earlier turns are gone.${processes}${replayed}${keptFilesNotice(report)} Recreate whatever you still need before relying on it.`
    )
  }
  const lost = ['interpreter variables and imports']
  if (report.survived.processes === false) lost.push('running processes')
  return (
    `Notice: the sandbox's memory did not survive the pause since the previous turn: ${lost.join(' and ')} ` +
    `from earlier turns are gone; files are still there.${processes}${replayed} Re-run the code that defined what you need.`
  )
}

/** Where a rewound or forked sandbox was set back to, from what, and what of it had to be rebuilt. */
function restoredNotice(report: ResumeReport, restored: RestoreReport): string {
  const point =
    restored.turn === 0
      ? 'the start of the conversation, before its first turn'
      : `the end of turn ${restored.turn}`
  const opening =
    restored.kind === 'forked'
      ? `Notice: this conversation was forked from another one: its sandbox starts from that conversation's state at ${point}.`
      : `Notice: the conversation was rewound: the sandbox was set back to its state at ${point}, the checkpoint chosen. What the turns after it did is not in this sandbox; that branch is kept and can be restored.`
  const steps = report.rehydratedSteps
  let how: string
  if (restored.snapshotLost) {
    how =
      ` The snapshot of that state was gone, so a fresh sandbox was set up by replaying the ${setupSteps(steps)} instead: ` +
      'files, installed packages and variables that were not recorded as setup are gone.'
  } else if (restored.source === 'journal') {
    how =
      steps > 0
        ? ` It is a fresh sandbox set up by replaying the ${setupSteps(steps)} up to then; what those turns did without recording it as setup is not there.`
        : ' It is a fresh sandbox with nothing from earlier turns in it.'
  } else {
    how = ' Files and installed packages are as they were then (restored from a snapshot).'
    if (report.survived.memory === false) {
      how +=
        steps > 0
          ? ` Interpreter variables were rebuilt by re-running ${setupSteps(steps)}; anything else held in memory then is gone.`
          : ' Interpreter variables and imports from then are gone (the snapshot keeps files, not memory).'
    }
    if (report.survived.processes === false) how += ' Background processes from then are not running.'
  }
  return `${opening}${how}${failedStepsNotice(report)}${keptFilesNotice(report)} Check what you rely on before using it.`
}

/** The sentence that names the recorded steps a replay could not apply, or '' when every step replayed. */
function failedStepsNotice(report: ResumeReport): string {
  const failures = report.rehydrateFailures
  if (failures === undefined || failures.count === 0) return ''
  const listed = failures.steps
    .map((f) => `step ${f.step} (${f.kind}: ${f.message.slice(0, 120)})`)
    .join('; ')
  const more =
    failures.count > failures.steps.length ? ` and ${failures.count - failures.steps.length} more` : ''
  const skipped = failures.skipped > 0 ? ` ${failures.skipped} later steps were not run.` : ''
  return (
    ` ${failures.count} recorded setup step${failures.count === 1 ? '' : 's'} failed when replayed, so what ` +
    `${failures.count === 1 ? 'it' : 'they'} set up is missing: ${listed}${more}.${skipped}`
  )
}

/** Splits text into lines, each keeping its own line terminator, so a range joins back byte for byte. */
export function splitLines(text: string): string[] {
  if (text.length === 0) return []
  return text.split(/(?<=\n)/)
}

/**
 * Selects 1-based inclusive lines `startLine..endLine` of `text`. An `endLine` past the end reads to the
 * end; a `startLine` past the end gives an empty string.
 */
export function sliceLines(text: string, startLine = 1, endLine?: number): string {
  if (startLine === 1 && endLine === undefined) return text
  const lines = splitLines(text)
  return lines
    .slice(startLine - 1, endLine === undefined ? undefined : Math.max(endLine, startLine - 1))
    .join('')
}
