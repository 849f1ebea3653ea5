import { posix } from 'node:path'
import { SandkeepError } from './errors.js'
import type { UsedContext } from './fidelity.js'
import type { JournalStep } from './journal.js'
import type { SandboxHandle } from './sandbox-provider.js'

/** Largest journal step accepted by `turn.journal.record`, in UTF-8 bytes of its JSON form. */
export const MAX_JOURNAL_STEP_BYTES = 256 * 1024

/** The sandbox's home: file steps write under it, and a relative path is taken from it. */
const SANDBOX_HOME = '/home/user'

/**
 * Why a file step's path may not be journaled, or undefined when it may: it must name a file under the
 * sandbox's home once `..` is resolved (`../../etc/passwd` would fail every replay, and every step after it).
 * Shared by both journal-step validators (this file's and the stores' `checkJournalStep`).
 */
export function journalFilePathProblem(path: string): string | undefined {
  if (path.includes('\0')) return 'contains a NUL character'
  const resolved = posix.resolve(SANDBOX_HOME, path)
  if (!resolved.startsWith(`${SANDBOX_HOME}/`)) {
    return `resolves to ${JSON.stringify(resolved)}, outside the sandbox's home ${SANDBOX_HOME}`
  }
  return undefined
}

/**
 * Checks a journal step's shape before it is stored, so a bad step fails the `record` call and not a later
 * replay.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateJournalStep(step: unknown): JournalStep {
  const invalid = (message: string) => new SandkeepError({ code: 'INVALID_ARGUMENT', message })
  if (typeof step !== 'object' || step === null)
    throw invalid('a journal step must be an object with a kind.')
  const s = step as Record<string, unknown>
  const allowed: Record<string, string[]> = {
    command: ['kind', 'command', 'cwd'],
    code: ['kind', 'code', 'language'],
    file: ['kind', 'path', 'content'],
  }
  const kind = s.kind
  if (typeof kind !== 'string' || !(kind in allowed)) {
    throw invalid(`journal step kind must be 'command', 'code' or 'file', got ${JSON.stringify(kind)}.`)
  }
  for (const key of Object.keys(s)) {
    if (!allowed[kind]?.includes(key))
      throw invalid(`journal step of kind '${kind}' has an unknown field '${key}'.`)
  }
  const text = (name: string, optional = false) => {
    const value = s[name]
    if (optional && value === undefined) return
    if (typeof value !== 'string' || (!optional && name !== 'content' && value.length === 0)) {
      throw invalid(`journal step '${kind}' needs ${name} as a non-empty string.`)
    }
  }
  if (kind === 'command') {
    text('command')
    text('cwd', true)
  } else if (kind === 'code') {
    text('code')
    if (s.language !== undefined && s.language !== 'python' && s.language !== 'javascript') {
      throw invalid(`journal step language must be 'python' or 'javascript'.`)
    }
  } else {
    text('path')
    text('content')
    const problem = journalFilePathProblem(s.path as string)
    if (problem) throw invalid(`journal file step path ${JSON.stringify(s.path)} ${problem}.`)
  }
  const bytes = Buffer.byteLength(JSON.stringify(step))
  if (bytes > MAX_JOURNAL_STEP_BYTES) {
    throw invalid(
      `journal step is ${bytes} bytes; the limit is ${MAX_JOURNAL_STEP_BYTES}. Record a command that fetches it instead.`,
    )
  }
  return step as JournalStep
}

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
