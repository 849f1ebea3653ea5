import { SandkeepError } from '../contract/errors.js'
import type { JournalStep } from '../contract/journal.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'
import type { UsedContext } from './fidelity.js'
import type { AssessmentScope } from './scope.js'

// The journal-step validator lives in the store kit (one set of rules for `turn.journal.record`, bootstrap
// steps and every store); re-exported here for the manager's imports.
export { journalFilePathProblem, MAX_JOURNAL_STEP_BYTES, validateJournalStep } from '../store/index.js'

/** One step that failed at replay. */
export interface ReplayFailure {
  /** The step's position in the replayed list, 1-based. */
  step: number
  /** The step's kind. */
  kind: JournalStep['kind']
  /** What went wrong: the exit code and the start of stderr, the exception, or the provider's error. */
  message: string
}

/** What a replay did. */
export interface ReplayOutcome {
  /** Steps that ran successfully. */
  steps: number
  /** Steps that failed (each is also in `failures`, up to {@link MAX_REPORTED_FAILURES}). */
  failed: number
  /** The first failed steps, in order. */
  failures: ReplayFailure[]
  /** Steps not run because the sandbox itself stopped answering (the rest of the list after it). */
  skipped: number
  /** The error that ended the replay early, when one did (`skipped` > 0). */
  stoppedBy?: unknown
  /** Interpreter contexts the steps ran code in. */
  contexts: UsedContext[]
}

/** How many failed steps a replay describes one by one (the rest are only counted): a report stays small. */
export const MAX_REPORTED_FAILURES = 10

/**
 * Errors that say the sandbox (or the turn) is unusable, not the step: every later step would fail the same
 * way, so the replay stops there instead of trying them all.
 */
const FATAL_CODES = new Set([
  'ABORTED',
  'LEASE_LOST',
  'PROVIDER_AUTH',
  'SANDBOX_NOT_FOUND',
  'SANDBOX_PAUSED',
  'SANDBOX_UNAVAILABLE',
  'TURN_ENDED',
])

/** What to do at a failing step: stop there and throw it (bootstrap), or report it and run the rest (journal). */
export type ReplayFailureRule = 'stop' | 'continue'

/**
 * Runs setup steps in order on a sandbox. A step fails when its command exits non-zero, its code raises, or
 * the provider refuses it. With `onFailure: 'stop'` (the default, for bootstrap steps) the first failure is
 * thrown as PROVIDER_ERROR naming it, the steps before it staying applied. With `'continue'` (journal
 * replay) each failure is recorded in the outcome and the following steps still run, so one bad step does
 * not cost the rest of the conversation's state. An abort is thrown; an error that says the sandbox itself is
 * gone or unreachable ends the replay early (`stoppedBy`, the remaining steps counted as `skipped`).
 */
export async function replaySteps(
  scope: AssessmentScope,
  steps: readonly JournalStep[],
  onFailure: ReplayFailureRule = 'stop',
): Promise<ReplayOutcome> {
  const { sandbox, signal } = scope
  const outcome: ReplayOutcome = { steps: 0, failed: 0, failures: [], skipped: 0, contexts: [] }
  for (const [index, step] of steps.entries()) {
    if (signal.aborted) {
      throw new SandkeepError({
        code: 'ABORTED',
        message: `The replay was aborted before step ${index + 1} of ${steps.length}.`,
        sandboxId: sandbox.id,
        cause: signal.reason,
      })
    }
    let problem: string | undefined
    try {
      problem = await runStep(sandbox, step, signal, outcome.contexts)
    } catch (error) {
      if (onFailure === 'stop' || signal.aborted) throw error
      problem = error instanceof Error ? error.message : String(error)
      if (SandkeepError.isInstance(error) && FATAL_CODES.has(error.code)) {
        outcome.stoppedBy = error
        outcome.skipped = steps.length - index - 1
      }
    }
    if (problem === undefined) {
      outcome.steps++
      continue
    }
    if (onFailure === 'stop') {
      throw new SandkeepError({
        code: 'PROVIDER_ERROR',
        message: `Setup step ${index + 1} (${step.kind}) failed: ${problem}. Fix or remove the step; steps before it were applied.`,
        sandboxId: sandbox.id,
      })
    }
    outcome.failed++
    if (outcome.failures.length < MAX_REPORTED_FAILURES) {
      outcome.failures.push({ step: index + 1, kind: step.kind, message: problem.slice(0, 300) })
    }
    if (outcome.stoppedBy !== undefined) break
  }
  return outcome
}

/** Runs one step; returns why it failed (exit code, exception), or undefined when it succeeded. */
async function runStep(
  sandbox: SandboxHandle,
  step: JournalStep,
  signal: AbortSignal,
  contexts: UsedContext[],
): Promise<string | undefined> {
  if (step.kind === 'command') {
    const result = await sandbox.runCommand(step.command, {
      ...(step.cwd ? { cwd: step.cwd } : {}),
      signal,
      timeoutMs: 0,
    })
    return result.exitCode === 0
      ? undefined
      : `exit ${result.exitCode}: ${result.stderr.trim().slice(0, 300)}`
  }
  if (step.kind === 'code') {
    const language = step.language ?? 'python'
    const result = await sandbox.runCode(step.code, { language, signal })
    // The context ran the cell even when it raised: it holds state now, and the turn end must mark it.
    if (!contexts.some((c) => c.language === language && c.contextId === null)) {
      contexts.push({ language, contextId: null })
    }
    return result.error ? `${result.error.name}: ${result.error.value}`.slice(0, 300) : undefined
  }
  await sandbox.writeFile(step.path, step.content, { signal })
  return undefined
}

/**
 * The error a replay that went on past failed steps reports (the `error` event of phase `rehydrate`):
 * PROVIDER_ERROR naming the first failures, with the error that stopped the replay early as `cause`.
 * `failures` are numbered as the caller wants them shown (the journal's positions).
 */
export function replayFailedError(
  sandbox: SandboxHandle,
  outcome: ReplayOutcome,
  failures: readonly ReplayFailure[],
): SandkeepError {
  const listed = failures.map((f) => `step ${f.step} (${f.kind}): ${f.message}`).join('; ')
  const more = outcome.failed > failures.length ? `; and ${outcome.failed - failures.length} more` : ''
  const stopped =
    outcome.skipped > 0 ? ` The replay stopped there: ${outcome.skipped} later steps were not run.` : ''
  return new SandkeepError({
    code: 'PROVIDER_ERROR',
    message:
      `${outcome.failed} journal step${outcome.failed === 1 ? '' : 's'} failed at replay (${listed}${more}); ` +
      `the ${outcome.steps} other${outcome.steps === 1 ? '' : 's'} were applied.${stopped} Fix or clear the journal.`,
    sandboxId: sandbox.id,
    ...(outcome.stoppedBy === undefined ? {} : { cause: outcome.stoppedBy }),
  })
}
