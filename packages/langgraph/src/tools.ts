// The sandbox tools as @langchain/core tools, built from @sandkeep/agent's framework-neutral specs (their input
// schemas, limits, output shaping, setup steps and state notice). Each call finds its thread and graph
// checkpoint in the tool's runtime config (LangGraph's ToolNode passes the run's config down), gets the
// thread's sandbox session from the saver (restored to that checkpoint when needed, the run's turn begun at
// the first call), and returns a short labelled text for the model. Errors become results, so the model can
// react to them.

import type { RunnableConfig } from '@langchain/core/runnables'
import { type StructuredToolInterface, tool } from '@langchain/core/tools'
import {
  createSandboxTools,
  type SandboxToolCallOptions,
  type SandboxToolSpec,
  type SandboxToolSpecs,
} from '@sandkeep/agent'
import { SandkeepError } from '@sandkeep/core'
import { START_CHECKPOINT_KEY } from './run-keys.js'
import type { SandkeepCheckpointSaver } from './saver.js'
import { renderResult } from './tool-text.js'

/** Options of {@link sandkeepTools}. */
export interface SandkeepToolsOptions {
  /** Largest stdout/stderr/file text shown to the model, per part, in characters. Default 8 000. */
  maxOutputChars?: number
  /** Limit of one command or code cell, ms. Default 120 000. */
  timeoutMs?: number
  /**
   * Which successful calls are recorded in the session's journal (replayed when a restored or recreated
   * sandbox lacks memory or files): `'all'` (default: every code cell, command and file write, so a
   * restore after time travel rebuilds interpreter variables) or `'none'`.
   */
  journal?: 'all' | 'none'
}

/** The LangChain tool names, in order, and the agent spec each one wraps. */
const TOOL_NAMES = [
  ['run_code', 'runCode'],
  ['run_command', 'runCommand'],
  ['read_file', 'readFile'],
  ['write_file', 'writeFile'],
  ['list_files', 'listFiles'],
  ['preview_url', 'previewUrl'],
] as const satisfies ReadonlyArray<readonly [string, keyof SandboxToolSpecs]>

/**
 * The sandbox tools (`run_code`, `run_command`, `read_file`, `write_file`, `list_files`, `preview_url`)
 * for a graph compiled with `saver` as its checkpointer: @sandkeep/agent's `runCode`, `runCommand`,
 * `readFile`, `writeFile`, `listFiles` and `previewUrl` under the snake_case names LangChain models use.
 * @throws SandkeepError INVALID_ARGUMENT for bad options.
 */
export function sandkeepTools(
  saver: SandkeepCheckpointSaver,
  options: SandkeepToolsOptions = {},
): StructuredToolInterface[] {
  const specs = createSandboxTools(toolsOptions(options))
  return TOOL_NAMES.map(([name, key]) => langchainTool(saver, name, specs[key] as AnySpec))
}

type AnySpec = SandboxToolSpec<Record<string, unknown>, object>

function langchainTool(saver: SandkeepCheckpointSaver, name: string, spec: AnySpec): StructuredToolInterface {
  return tool(
    async (input: Record<string, unknown>, config?: RunnableConfig) => {
      const request = sandboxRequestOf(config)
      let call: SandboxToolCallOptions
      try {
        const { session } = await saver.sandboxFor(request)
        call = config?.signal ? { sandbox: session, abortSignal: config.signal } : { sandbox: session }
      } catch (error) {
        return renderResult(name, { error: error instanceof Error ? error.message : String(error) })
      }
      return renderResult(name, await lastValue(spec.execute(input, call)))
    },
    { name, description: spec.description, schema: spec.inputSchema },
  ) as unknown as StructuredToolInterface
}

/** The final result of a spec's call (a streamed call yields partial results first). */
async function lastValue(result: object | AsyncIterable<object>): Promise<object> {
  if (!(Symbol.asyncIterator in result)) return result
  let last: object = { error: 'The call gave no result.' }
  for await (const value of result as AsyncIterable<object>) last = value
  return last
}

/** The thread and root graph checkpoint of a tool call, from its runtime config. */
export function sandboxRequestOf(config: RunnableConfig | undefined) {
  const configurable = config?.configurable ?? {}
  const threadId = configurable.thread_id
  if (typeof threadId !== 'string' || threadId === '') {
    throw new SandkeepError({
      code: 'INVALID_ARGUMENT',
      message:
        'sandkeep tools run inside a graph run with configurable.thread_id (the thread is the conversation).',
    })
  }
  const map = configurable.checkpoint_map as Record<string, unknown> | undefined
  const fromMap = typeof map?.[''] === 'string' ? (map[''] as string) : undefined
  const exit = configurable.__pregel_durability === 'exit'
  const direct = typeof configurable.checkpoint_id === 'string' ? configurable.checkpoint_id : undefined
  // With durability 'exit' no checkpoint is put before the run's end: the run's checkpoint ids have no tie,
  // so the tools take the stored checkpoint the run started from (named by runConfig, else the latest).
  if (!exit) return { threadId, checkpointId: fromMap ?? direct }
  const start = configurable[START_CHECKPOINT_KEY]
  return { threadId, checkpointId: typeof start === 'string' ? start : undefined, startedFrom: true }
}

function toolsOptions(options: SandkeepToolsOptions) {
  const journal = options.journal ?? 'all'
  if (journal !== 'all' && journal !== 'none') throw invalidOption("journal must be 'all' or 'none'")
  positive(options.maxOutputChars, 'maxOutputChars')
  positive(options.timeoutMs, 'timeoutMs')
  return {
    ...(options.maxOutputChars === undefined
      ? {}
      : { maxOutputChars: options.maxOutputChars, maxFileChars: options.maxOutputChars }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    setupSteps: journal,
  }
}

function positive(value: number | undefined, name: string): void {
  if (value === undefined) return
  if (!Number.isFinite(value) || value <= 0) throw invalidOption(`${name} must be a positive number`)
}

function invalidOption(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message: `sandkeepTools: ${message}.` })
}
