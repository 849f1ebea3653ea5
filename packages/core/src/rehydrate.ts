import { SandkeepError } from './errors.js'
import type { UsedContext } from './fidelity.js'
import type { JournalStep } from './journal.js'
import type { SandboxHandle } from './sandbox-provider.js'

// The journal-step validator lives in the store kit (one set of rules for `turn.journal.record`, bootstrap
// steps and every store); re-exported here for the manager's imports.
export { journalFilePathProblem, MAX_JOURNAL_STEP_BYTES, validateJournalStep } from './store/index.js'

/** What a replay did. */
export interface ReplayOutcome {
  /** Steps that ran successfully. */
  steps: number
  /** Interpreter contexts the steps ran code in. */
  contexts: UsedContext[]
}

/**
 * Runs setup steps in order on a sandbox. Stops at the first failing step (non-zero exit, raised exception)
 * and throws PROVIDER_ERROR naming it; the steps before it stay applied.
 */
export async function replaySteps(
  sandbox: SandboxHandle,
  steps: readonly JournalStep[],
  signal: AbortSignal,
): Promise<ReplayOutcome> {
  const contexts: UsedContext[] = []
  let done = 0
  for (const [index, step] of steps.entries()) {
    const fail = (detail: string) =>
      new SandkeepError({
        code: 'PROVIDER_ERROR',
        message: `Setup step ${index + 1} (${step.kind}) failed: ${detail}. Fix or remove the step; steps before it were applied.`,
        sandboxId: sandbox.id,
      })
    if (step.kind === 'command') {
      const result = await sandbox.runCommand(step.command, {
        ...(step.cwd ? { cwd: step.cwd } : {}),
        signal,
        timeoutMs: 0,
      })
      if (result.exitCode !== 0) throw fail(`exit ${result.exitCode}: ${result.stderr.trim().slice(0, 300)}`)
    } else if (step.kind === 'code') {
      const language = step.language ?? 'python'
      const result = await sandbox.runCode(step.code, { language, signal })
      if (result.error) throw fail(`${result.error.name}: ${result.error.value}`)
      if (!contexts.some((c) => c.language === language && c.contextId === null)) {
        contexts.push({ language, contextId: null })
      }
    } else {
      await sandbox.writeFile(step.path, step.content, { signal })
    }
    done++
  }
  return { steps: done, contexts }
}
