// The operations the tools need, over a sandkeep session (every feature) or over any sandbox with the AI SDK's
// command and file calls (commands and files; code cells run as one-off scripts, without persistent state).
import { posix } from 'node:path'
import {
  type CodeLanguage,
  type CodeResult,
  type JournalStep,
  type PortEndpoint,
  SandkeepError,
} from '@sandkeep/core'
import { readAtMost, readLimitError, shellQuote } from '@sandkeep/core/provider'
import { invalid } from '../errors.js'
import { isSandkeepSandboxSession } from '../sandbox-session/index.js'
import type { SandboxSession } from '../sandbox-session/types.js'
import type { GenericSandbox, ListFilesToolResult, SandboxToolCallOptions } from './types.js'

/** Where a streaming call sends its output as it arrives. */
export interface OutputCallbacks {
  onStdout: (chunk: string) => void
  onStderr: (chunk: string) => void
}

/** The operations the tools need, over a sandkeep session or any other sandbox. */
export interface ToolSandbox {
  persistentCode: boolean
  resolvePath(path: string): string
  runCommand(
    command: string,
    options: { cwd?: string; timeoutMs: number; abortSignal?: AbortSignal } & Partial<OutputCallbacks>,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }>
  startProcess(
    command: string,
    options: { cwd?: string; abortSignal?: AbortSignal },
  ): Promise<{ pid: number | null }>
  runCode(
    code: string,
    options: {
      language: CodeLanguage
      timeoutMs: number
      abortSignal?: AbortSignal
    } & Partial<OutputCallbacks>,
  ): Promise<CodeResult>
  /** A UTF-8 text file, `null` when missing; INVALID_ARGUMENT as soon as it holds more than `maxBytes`. */
  readText(path: string, maxBytes: number, abortSignal?: AbortSignal): Promise<string | null>
  stat(path: string, abortSignal?: AbortSignal): Promise<{ type: string; size: number } | null>
  writeText(path: string, content: string, abortSignal?: AbortSignal): Promise<void>
  list(path: string, depth: number, abortSignal?: AbortSignal): Promise<ListFilesToolResult['entries'] | null>
  /** How to reach `port` from outside; CAPABILITY_UNSUPPORTED for a sandbox that routes no ports. */
  portEndpoint(port: number, abortSignal?: AbortSignal): Promise<PortEndpoint>
  notice(): string | undefined
  record?(step: JournalStep): Promise<void>
}

/**
 * The sandbox of one tool call: the bound session, else the call's own (the AI SDK's `experimental_sandbox`).
 * @throws SandkeepError INVALID_ARGUMENT when there is neither.
 */
export function resolveToolSandbox(
  bound: SandboxSession | undefined,
  callSandbox: SandboxToolCallOptions['sandbox'],
): ToolSandbox {
  const session = bound ?? callSandbox
  if (session === undefined) {
    throw invalid(
      'No sandbox: bind the tools to a session from createSandboxSession() (their `session` option), or give the call one (the AI SDK: `experimental_sandbox`).',
    )
  }
  return isSandkeepSandboxSession(session) ? sandkeepToolSandbox(session) : genericToolSandbox(session)
}

/** `{ abortSignal }` when there is one, else nothing (the options are exact). */
function signalOption(abortSignal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return abortSignal ? { abortSignal } : {}
}

/** The file stat and writes both kinds of sandbox share: the contract's own calls. */
function textFiles(session: GenericSandbox): Pick<ToolSandbox, 'stat' | 'writeText'> {
  return {
    stat: async (path, abortSignal) => session.stat({ path, ...signalOption(abortSignal) }),
    writeText: async (path, content, abortSignal) =>
      session.writeTextFile({ path, content, ...signalOption(abortSignal) }),
  }
}

function sandkeepToolSandbox(session: SandboxSession): ToolSandbox {
  return {
    persistentCode: true,
    resolvePath: (path) => session.resolvePath(path),
    runCommand: (command, { cwd, timeoutMs, abortSignal, onStdout, onStderr }) =>
      session.runCommand(command, {
        timeoutMs,
        ...(cwd === undefined ? {} : { workingDirectory: cwd }),
        ...signalOption(abortSignal),
        ...(onStdout ? { onStdout } : {}),
        ...(onStderr ? { onStderr } : {}),
      }),
    startProcess: (command, { cwd, abortSignal }) =>
      session.startProcess(command, {
        ...(cwd === undefined ? {} : { cwd }),
        ...signalOption(abortSignal),
      }),
    runCode: (code, { language, timeoutMs, abortSignal, onStdout, onStderr }) =>
      session.runCode(code, {
        language,
        timeoutMs,
        ...signalOption(abortSignal),
        ...(onStdout ? { onStdout } : {}),
        ...(onStderr ? { onStderr } : {}),
      }),
    ...textFiles(session),
    readText: (path, maxBytes, abortSignal) =>
      session.readTextFile({ path, maxBytes, ...signalOption(abortSignal) }),
    list: async (path, depth, abortSignal) => {
      const entries = await session.listDir(path, { depth, ...signalOption(abortSignal) })
      return (
        entries?.map((entry) => ({
          path: posix.relative(path, entry.path) || entry.name,
          type: entry.type,
          ...(entry.size === undefined ? {} : { size: entry.size }),
        })) ?? null
      )
    },
    portEndpoint: (port, abortSignal) => session.portEndpoint(port, signalOption(abortSignal)),
    notice: () => session.takeStateNotice(),
    record: (step) => session.recordSetupStep(step),
  }
}

/** Commands and files over any other sandbox; code cells run as one-off scripts (no persistent state). */
function genericToolSandbox(session: GenericSandbox): ToolSandbox {
  return {
    persistentCode: false,
    resolvePath: (path: string) => {
      if (path.length === 0 || path.includes('\u0000'))
        throw invalid('A sandbox path must be a non-empty string.')
      return path
    },
    runCommand: async (command, { cwd, abortSignal }) =>
      session.run({
        command,
        ...(cwd === undefined ? {} : { workingDirectory: cwd }),
        ...signalOption(abortSignal),
      }),
    // Any other sandbox: detach with nohup and report the pid the shell gives.
    startProcess: async (command, { cwd, abortSignal }) => {
      const result = await session.run({
        command: `nohup bash -l -c ${shellQuote(command)} > /dev/null 2>&1 < /dev/null & echo $!`,
        ...(cwd === undefined ? {} : { workingDirectory: cwd }),
        ...signalOption(abortSignal),
      })
      const pid = Number.parseInt(result.stdout.trim(), 10)
      return { pid: Number.isInteger(pid) ? pid : null }
    },
    runCode: (code, { language, abortSignal }) => runScriptCell(session, code, language, abortSignal),
    ...textFiles(session),
    // The contract's readTextFile has no limit; its stream does, once read with one.
    readText: async (path, maxBytes, abortSignal) => {
      const stream = await session.readFile({ path, ...signalOption(abortSignal) })
      if (stream === null) return null
      const bytes = await readAtMost(stream, maxBytes)
      if (bytes === undefined) throw readLimitError(path, maxBytes)
      return new TextDecoder().decode(bytes)
    },
    list: (path, depth, abortSignal) => walkDirectory(session, path, depth, abortSignal),
    // The contract has no ports: only a sandkeep session knows its provider's.
    portEndpoint: async () => {
      throw new SandkeepError({
        code: 'CAPABILITY_UNSUPPORTED',
        message: 'This sandbox does not say how to reach its ports from outside; no preview URL exists.',
      })
    },
    notice: () => undefined,
  }
}

/** Runs a code cell as a one-off script file (python3 or node) and reports it as a CodeResult. */
async function runScriptCell(
  session: GenericSandbox,
  code: string,
  language: CodeLanguage,
  abortSignal: AbortSignal | undefined,
): Promise<CodeResult> {
  const file = `/tmp/sandkeep-cell-${crypto.randomUUID()}.${language === 'python' ? 'py' : 'mjs'}`
  await session.writeTextFile({ path: file, content: code, ...signalOption(abortSignal) })
  const runner = language === 'python' ? 'python3' : 'node'
  const result = await session.run({
    command: `${runner} ${shellQuote(file)}; status=$?; rm -f ${shellQuote(file)}; exit $status`,
    ...signalOption(abortSignal),
  })
  return {
    text: null,
    stdout: result.stdout,
    stderr: result.exitCode === 0 ? result.stderr : '',
    error:
      result.exitCode === 0
        ? null
        : {
            name: 'ExitError',
            value: `${runner} exited with code ${result.exitCode}`,
            traceback: result.stderr,
          },
  }
}

/** Lists `path` down to `depth` levels with `listDirectory`; `null` when it does not exist. */
async function walkDirectory(
  session: GenericSandbox,
  path: string,
  depth: number,
  abortSignal: AbortSignal | undefined,
): Promise<ListFilesToolResult['entries'] | null> {
  const out: ListFilesToolResult['entries'] = []
  const walk = async (dir: string, prefix: string, level: number): Promise<boolean> => {
    const entries = await session.listDirectory({ path: dir, ...signalOption(abortSignal) })
    if (entries === null) return false
    for (const entry of entries) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name
      const type = entry.type === 'directory' ? 'dir' : entry.type
      out.push({ path: relative, type })
      if (type === 'dir' && level < depth) await walk(posix.join(dir, entry.name), relative, level + 1)
    }
    return true
  }
  return (await walk(path, '', 1)) ? out : null
}
