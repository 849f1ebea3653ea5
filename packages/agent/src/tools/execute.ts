// One tool call from start to result: failures become results the model can read, the state-lost notice
// goes on the first result of a turn, and setup steps are recorded in the journal.
import { type JournalStep, SandkeepError } from '@sandkeep/core'
import type { SandboxSession } from '../sandbox-session/types.js'
import { resolveToolSandbox, type ToolSandbox } from './tool-sandbox.js'
import type { SandboxToolCallOptions, ToolErrorResult } from './types.js'

/** Runs one tool call: every failure becomes a result; the state notice goes on the first result. */
export async function executeTool<T extends object>(
  bound: SandboxSession | undefined,
  callSandbox: SandboxToolCallOptions['sandbox'],
  fn: (sandbox: ToolSandbox) => Promise<T & { notice?: string }>,
): Promise<(T & { notice?: string }) | ToolErrorResult> {
  let sandbox: ToolSandbox | undefined
  try {
    sandbox = resolveToolSandbox(bound, callSandbox)
    return withNotice(await fn(sandbox), sandbox.notice())
  } catch (error) {
    return withNotice(toolError(error), sandbox?.notice())
  }
}

/** Records a step in the sandbox's journal; returns a note for the model when it was not recorded. */
export async function recordStep(sandbox: ToolSandbox, step: JournalStep): Promise<string | undefined> {
  if (!sandbox.record) return 'This sandbox has no journal: the step was not recorded as a setup step.'
  try {
    await sandbox.record(step)
    return undefined
  } catch (error) {
    return `The step ran but was not recorded as a setup step: ${errorMessage(error)}`
  }
}

/** Turns any failure into a result the model can read; never includes stack traces of the host. */
export function toolError(error: unknown): ToolErrorResult {
  if (SandkeepError.isInstance(error)) return { error: error.message, code: error.code }
  if (isAbort(error)) return { error: 'The call was aborted before it finished.', code: 'ABORTED' }
  return { error: errorMessage(error) }
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message
  return typeof error === 'string' ? error : 'Unknown error'
}

function withNotice<T extends { notice?: string }>(result: T, notice: string | undefined): T {
  if (notice === undefined) return result
  // The notice goes first so a model reading the JSON sees it before the output.
  const { notice: existing, ...rest } = result
  return { notice: joinNotes(notice, existing), ...rest } as T
}

export function joinNotes(first: string | undefined, second: string | undefined): string | undefined {
  if (first === undefined) return second
  return second === undefined ? first : `${first} ${second}`
}
