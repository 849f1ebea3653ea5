// The sandbox tools as @langchain/core tools. Each call finds its thread and graph checkpoint in the tool's
// runtime config (LangGraph's ToolNode passes the run's config down), gets the thread's sandbox from the
// saver (restored to that checkpoint when needed, the run's turn begun at the first call), and returns a
// short text for the model. Errors become results, so the model can react to them.
import type { RunnableConfig } from '@langchain/core/runnables'
import { type StructuredToolInterface, tool } from '@langchain/core/tools'
import { type JournalStep, SandkeepError } from '@sandkeep/core'
import { z } from 'zod'
import { START_CHECKPOINT_KEY } from './run-keys.js'
import type { SandkeepCheckpointSaver } from './saver.js'
import type { ThreadSandbox } from './thread-sandboxes.js'

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

interface ToolSettings {
  maxOutputChars: number
  timeoutMs: number
  journal: 'all' | 'none'
}

/**
 * The sandbox tools (`run_code`, `run_command`, `read_file`, `write_file`, `list_files`, `preview_url`)
 * for a graph compiled with `saver` as its checkpointer.
 * @throws SandkeepError INVALID_ARGUMENT for bad options.
 */
export function sandkeepTools(
  saver: SandkeepCheckpointSaver,
  options: SandkeepToolsOptions = {},
): StructuredToolInterface[] {
  const settings = resolveOptions(options)
  const run = <T>(
    name: string,
    config: RunnableConfig | undefined,
    fn: (sandbox: ThreadSandbox) => Promise<T>,
  ) => inSandbox(saver, name, config, fn)
  const record = async (sandbox: ThreadSandbox, step: JournalStep) => {
    if (settings.journal === 'all') await sandbox.journal.record(step)
  }
  return [
    tool(
      ({ code }, config) =>
        run('run_code', config, async (sandbox) => {
          const result = await sandbox.sandbox.runCode(code, { timeoutMs: settings.timeoutMs })
          if (!result.error) await record(sandbox, { kind: 'code', code })
          return formatParts(settings, {
            result: result.text,
            stdout: result.stdout,
            stderr: result.stderr,
            error: result.error && `${result.error.name}: ${result.error.value}`,
          })
        }),
      {
        name: 'run_code',
        description: "Runs Python in the sandbox's persistent interpreter (variables stay between calls).",
        schema: z.object({ code: z.string().describe('Python code') }),
      },
    ),
    tool(
      ({ command }, config) =>
        run('run_command', config, async (sandbox) => {
          const result = await sandbox.sandbox.runCommand(command, { timeoutMs: settings.timeoutMs })
          if (result.exitCode === 0) await record(sandbox, { kind: 'command', command })
          return formatParts(settings, {
            exitCode: String(result.exitCode),
            stdout: result.stdout,
            stderr: result.stderr,
          })
        }),
      {
        name: 'run_command',
        description: 'Runs a shell command in the sandbox.',
        schema: z.object({ command: z.string().describe('the shell command') }),
      },
    ),
    tool(
      ({ path }, config) =>
        run('read_file', config, async (sandbox) =>
          cut(await sandbox.sandbox.readFile(path), settings.maxOutputChars),
        ),
      {
        name: 'read_file',
        description: 'Reads a text file of the sandbox.',
        schema: z.object({ path: z.string() }),
      },
    ),
    tool(
      ({ path, content }, config) =>
        run('write_file', config, async (sandbox) => {
          await sandbox.sandbox.writeFile(path, content)
          await record(sandbox, { kind: 'file', path, content })
          return `wrote ${content.length} characters to ${path}`
        }),
      {
        name: 'write_file',
        description: 'Writes a text file in the sandbox (creates or replaces it).',
        schema: z.object({ path: z.string(), content: z.string() }),
      },
    ),
    tool(
      ({ path }, config) =>
        run('list_files', config, async (sandbox) => {
          const entries = await sandbox.sandbox.listDir(path)
          return entries.length === 0 ? '(empty)' : entries.map((entry) => entry.path).join('\n')
        }),
      {
        name: 'list_files',
        description: 'Lists a directory of the sandbox.',
        schema: z.object({ path: z.string() }),
      },
    ),
    tool(
      ({ port }, config) =>
        run('preview_url', config, async (sandbox) => {
          if (!sandbox.sandbox.portEndpoint) return 'error: this sandbox platform has no port URLs.'
          return sandbox.sandbox.portEndpoint(port).url
        }),
      {
        name: 'preview_url',
        description: 'The URL at which a server listening on a port of the sandbox can be reached.',
        schema: z.object({ port: z.number().int().min(1).max(65_535) }),
      },
    ),
  ]
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

async function inSandbox<T>(
  saver: SandkeepCheckpointSaver,
  name: string,
  config: RunnableConfig | undefined,
  fn: (sandbox: ThreadSandbox) => Promise<T>,
): Promise<T | string> {
  const request = sandboxRequestOf(config)
  try {
    return await fn(await saver.sandboxFor(request))
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    return `error: ${name} failed: ${message}`
  }
}

function formatParts(settings: ToolSettings, parts: Record<string, string | null | undefined>): string {
  const lines: string[] = []
  for (const [label, value] of Object.entries(parts)) {
    if (value === null || value === undefined || value === '') continue
    lines.push(`${label}: ${cut(value, settings.maxOutputChars)}`)
  }
  return lines.length === 0 ? '(no output)' : lines.join('\n')
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n[cut: ${text.length - max} more characters]`
}

function resolveOptions(options: SandkeepToolsOptions): ToolSettings {
  const journal = options.journal ?? 'all'
  if (journal !== 'all' && journal !== 'none') throw invalidOption("journal must be 'all' or 'none'")
  return {
    maxOutputChars: positive(options.maxOutputChars, 'maxOutputChars', 8_000),
    timeoutMs: positive(options.timeoutMs, 'timeoutMs', 120_000),
    journal,
  }
}

function positive(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isFinite(value) || value <= 0) throw invalidOption(`${name} must be a positive number`)
  return value
}

function invalidOption(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message: `sandkeepTools: ${message}.` })
}
