import { posix } from 'node:path'
import {
  type CodeLanguage,
  type CodeOutput,
  type CodeResult,
  type JournalStep,
  SandkeepError,
} from '@sandkeep/core'
import { type Experimental_SandboxSession, type Tool, type ToolResultPart, tool } from 'ai'
import { z } from 'zod'
import { truncateOutput } from './output.js'
import { isSandkeepSandboxSession, type SandkeepSandboxSession, shellQuote } from './sandbox-session.js'

/** Options of {@link sandboxTools}. */
export interface SandboxToolsOptions {
  /**
   * The sandbox the tools use. Default: the `experimental_sandbox` of the `generateText` / `streamText` /
   * agent call (a sandkeep session gets every feature; any other AI SDK sandbox gets commands and files,
   * and `runCode` without persistent state).
   */
  session?: SandkeepSandboxSession
  /** Largest stdout/stderr shown to the model, per stream, in characters; the rest is cut with a note. Default 8 000. */
  maxOutputChars?: number
  /** Largest file content `readFile` returns, in characters. Default 20 000. */
  maxFileChars?: number
  /** Largest file `readFile` reads, in bytes; a bigger one is refused with a hint to use head/grep. Default 10 MiB. */
  maxReadBytes?: number
  /** Most entries `listFiles` returns. Default 200. */
  maxListEntries?: number
  /** Limit of one command or code cell, ms. Default 120 000. */
  timeoutMs?: number
  /**
   * Which successful calls are recorded in the session's journal as setup steps (replayed when the
   * sandbox has to be recreated): `'flagged'` (default) those the model marks with `setup: true`, `'all'`
   * every command, code cell and file write, `'none'` none.
   */
  setupSteps?: 'flagged' | 'all' | 'none'
  /**
   * Stream `runCommand` and `runCode` output while they run, as preliminary tool results
   * ({@link ToolProgressResult}; the last result is the complete one): `true`, or `{ intervalMs }`, the least
   * time between two partial results (default 100 ms). Default false: each call returns once, and no output
   * callbacks are registered. Only sandkeep sessions stream; other AI SDK sandboxes return once.
   */
  streamOutput?: boolean | { intervalMs?: number }
  /** Largest image of a `runCode` result sent to the model as an image part, in bytes; bigger ones become a note. Default 1 MiB. */
  maxImageBytes?: number
  /** Most images of one `runCode` call sent to the model; `0` sends none (each becomes a note). Default 4. */
  maxImages?: number
}

/** What a tool returns when the call failed: the error as a result, so the model can react to it. */
export interface ToolErrorResult {
  /** Set when earlier sandbox state is gone (first result of such a turn). */
  notice?: string
  /** What went wrong, for the model. */
  error: string
  /** sandkeep error code when there is one (FILE_NOT_FOUND, TIMEOUT, ...). */
  code?: string
}

/** Result of `runCommand`. */
export interface CommandToolResult {
  /** Set when earlier sandbox state is gone (first result of such a turn), or a setup step was not recorded. */
  notice?: string
  /** Exit code; -1 when killed. */
  exitCode: number
  /** Standard output, cut past `maxOutputChars` with a note. */
  stdout: string
  /** Standard error, cut past `maxOutputChars` with a note. */
  stderr: string
}

/** Result of `runCommand` with `background: true`. */
export interface BackgroundCommandToolResult {
  /** Set when earlier sandbox state is gone (first result of such a turn), or a setup step was not recorded. */
  notice?: string
  /** Always true: the command was started and keeps running after the call. */
  background: true
  /** Its pid in the sandbox, when the sandbox reports one. */
  pid: number | null
  /** What the model should know about it. */
  note: string
}

/** A partial result of `runCommand` / `runCode` while it still runs (with `streamOutput`); a complete result follows. */
export interface ToolProgressResult {
  /** Always true: the call is still running. */
  running: true
  /** Standard output so far, cut past `maxOutputChars` with a note. */
  stdout: string
  /** Standard error so far, cut past `maxOutputChars` with a note. */
  stderr: string
}

/** A rich output of a code cell as the tool returns it: an image for the model, or its text form. */
export interface CodeToolOutput {
  /** True for the value of the cell's last expression; false for a `display()` call. */
  main: boolean
  /** Its text form (plain text, else markdown, JSON, HTML, LaTeX, SVG source), cut past `maxOutputChars`. */
  text?: string
  /** The format `text` comes from: `'text'`, `'markdown'`, `'json'`, `'html'`, `'latex'`, `'svg'`, `'javascript'`. */
  format?: string
  /** A PNG or JPEG image, base64; sent to the model as an image part by the tool's `toModelOutput`. */
  image?: { mediaType: 'image/png' | 'image/jpeg'; base64: string }
  /** What was left out and why (an image over the size limit, a PDF). */
  note?: string
}

/** Result of `runCode`. */
export interface CodeToolResult {
  /** Set when earlier sandbox state is gone (first result of such a turn), or a setup step was not recorded. */
  notice?: string
  /** The last expression's value as a notebook shows it, or null. */
  result: string | null
  /** Rich outputs (plots, tables, `display()` calls), in order; absent when the cell had none beyond `result`. */
  outputs?: CodeToolOutput[]
  /** Printed output. */
  stdout: string
  /** Printed errors. */
  stderr: string
  /** The exception, `Name: value` followed by the traceback, when the code raised. */
  error?: string
}

/** Result of `readFile`. */
export interface ReadFileToolResult {
  /** Set when earlier sandbox state is gone (first result of such a turn). */
  notice?: string
  /** Absolute path read. */
  path: string
  /** The requested lines. */
  content: string
  /** Lines in the whole file. */
  totalLines: number
}

/** Result of `writeFile`. */
export interface WriteFileToolResult {
  /** Set when earlier sandbox state is gone (first result of such a turn), or a setup step was not recorded. */
  notice?: string
  /** Absolute path written. */
  path: string
  /** Bytes written (UTF-8). */
  bytes: number
}

/** Result of `listFiles`. */
export interface ListFilesToolResult {
  /** Set when earlier sandbox state is gone, or when the listing was cut. */
  notice?: string
  /** Absolute path listed. */
  path: string
  /** Entries, paths relative to `path`. */
  entries: Array<{ path: string; type: 'file' | 'dir' | 'symlink' | 'other'; size?: number }>
}

/** Input of `runCode`. */
export interface RunCodeInput {
  code: string
  language?: CodeLanguage | undefined
  setup?: boolean | undefined
}

/** Input of `runCommand`. */
export interface RunCommandInput {
  command: string
  cwd?: string | undefined
  /** Start the command in the background (servers, watchers) instead of waiting for it. */
  background?: boolean | undefined
  setup?: boolean | undefined
}

/** Input of `readFile`. */
export interface ReadFileInput {
  path: string
  startLine?: number | undefined
  endLine?: number | undefined
}

/** Input of `writeFile`. */
export interface WriteFileInput {
  path: string
  content: string
  setup?: boolean | undefined
}

/** Input of `listFiles`. */
export interface ListFilesInput {
  path?: string | undefined
  depth?: number | undefined
}

/** The tool set {@link sandboxTools} returns; every result is either the tool's result or a {@link ToolErrorResult}. */
export type SandboxTools = {
  /** Runs Python or JavaScript in the persistent interpreter; images go to the model as image parts. */
  runCode: Tool<RunCodeInput, CodeToolResult | ToolErrorResult | ToolProgressResult>
  /** Runs a shell command. */
  runCommand: Tool<
    RunCommandInput,
    CommandToolResult | BackgroundCommandToolResult | ToolErrorResult | ToolProgressResult
  >
  /** Reads a text file (optionally a line range). */
  readFile: Tool<ReadFileInput, ReadFileToolResult | ToolErrorResult>
  /** Writes a text file. */
  writeFile: Tool<WriteFileInput, WriteFileToolResult | ToolErrorResult>
  /** Lists a directory. */
  listFiles: Tool<ListFilesInput, ListFilesToolResult | ToolErrorResult>
}

/** What a tool's `toModelOutput` returns (the `ai` package does not export the name). */
type ToolResultOutput = ToolResultPart['output']

/** Where a streaming call sends its output as it arrives. */
interface OutputCallbacks {
  onStdout: (chunk: string) => void
  onStderr: (chunk: string) => void
}

/** The operations the tools need, over a sandkeep session or any AI SDK sandbox. */
interface ToolSandbox {
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
  readText(path: string, abortSignal?: AbortSignal): Promise<string | null>
  stat(path: string, abortSignal?: AbortSignal): Promise<{ type: string; size: number } | null>
  writeText(path: string, content: string, abortSignal?: AbortSignal): Promise<void>
  list(path: string, depth: number, abortSignal?: AbortSignal): Promise<ListFilesToolResult['entries'] | null>
  notice(): string | undefined
  record?(step: JournalStep): Promise<void>
}

const setupField = z
  .boolean()
  .optional()
  .describe(
    'Set true when this call prepares the environment for later turns (installs a package, downloads or ' +
      'loads data, writes a config): it is then replayed if the sandbox ever has to be rebuilt.',
  )

/**
 * The sandbox tools for a model: `runCode`, `runCommand`, `readFile`, `writeFile`, `listFiles`. Results are
 * shaped for a model (exit codes, output cut with a note, errors as results, a notice when earlier state
 * is gone) and never throw.
 * @throws SandkeepError INVALID_ARGUMENT for bad options.
 */
export function sandboxTools(options: SandboxToolsOptions = {}): SandboxTools {
  const maxOutputChars = positive(options.maxOutputChars, 'maxOutputChars', 8_000)
  const maxFileChars = positive(options.maxFileChars, 'maxFileChars', 20_000)
  const maxListEntries = positive(options.maxListEntries, 'maxListEntries', 200)
  const maxReadBytes = positive(options.maxReadBytes, 'maxReadBytes', 10 * 1024 * 1024)
  const timeoutMs = positive(options.timeoutMs, 'timeoutMs', 120_000)
  const maxImageBytes = positive(options.maxImageBytes, 'maxImageBytes', 1024 * 1024)
  const maxImages = nonNegativeInteger(options.maxImages, 'maxImages', 4)
  const streamInterval = streamIntervalMs(options.streamOutput)
  const setupSteps = options.setupSteps ?? 'flagged'
  if (!['flagged', 'all', 'none'].includes(setupSteps)) {
    throw invalid(`sandboxTools: setupSteps must be 'flagged', 'all' or 'none', got ${String(setupSteps)}.`)
  }
  if (options.session !== undefined && !isSandkeepSandboxSession(options.session)) {
    throw invalid('sandboxTools: `session` must come from createSandboxSession().')
  }
  const bound = options.session

  function resolveSandbox(experimentalSandbox: Experimental_SandboxSession | undefined): ToolSandbox {
    const session = bound ?? experimentalSandbox
    if (session === undefined) {
      throw invalid(
        'No sandbox: pass `experimental_sandbox: createSandboxSession(...)` to the call, or sandboxTools({ session }).',
      )
    }
    return isSandkeepSandboxSession(session) ? sandkeepToolSandbox(session) : genericToolSandbox(session)
  }

  const wantsRecord = (flag: boolean | undefined) =>
    setupSteps === 'all' || (setupSteps === 'flagged' && flag === true)

  /** Runs one tool call: every failure becomes a result; the state notice goes on the first result. */
  async function execute<T extends object>(
    experimentalSandbox: Experimental_SandboxSession | undefined,
    fn: (sandbox: ToolSandbox) => Promise<T & { notice?: string }>,
  ): Promise<(T & { notice?: string }) | ToolErrorResult> {
    let sandbox: ToolSandbox | undefined
    try {
      sandbox = resolveSandbox(experimentalSandbox)
      return withNotice(await fn(sandbox), sandbox.notice())
    } catch (error) {
      return withNotice(toolError(error), sandbox?.notice())
    }
  }

  /**
   * Runs one tool call as `execute` does, yielding the output so far as partial results while it runs: at
   * most one every `streamInterval` ms, and only when there is new output. The last value is the result.
   */
  async function* streamed<T extends object>(
    experimentalSandbox: Experimental_SandboxSession | undefined,
    fn: (sandbox: ToolSandbox, output: OutputCallbacks) => Promise<T & { notice?: string }>,
  ): AsyncGenerator<(T & { notice?: string }) | ToolErrorResult | ToolProgressResult> {
    let stdout = ''
    let stderr = ''
    let signalOutput = () => {}
    let nextOutput = new Promise<void>((resolve) => {
      signalOutput = resolve
    })
    const arrived = () => signalOutput()
    const output: OutputCallbacks = {
      onStdout: (chunk) => {
        stdout += chunk
        arrived()
      },
      onStderr: (chunk) => {
        stderr += chunk
        arrived()
      },
    }
    // `execute` turns every failure into a result, so this promise never rejects.
    const finished = execute<T>(experimentalSandbox, (sandbox) => fn(sandbox, output))
    const done = finished.then(() => 'done' as const)
    let last = 0
    for (;;) {
      if ((await Promise.race([nextOutput.then(() => 'output' as const), done])) === 'done') break
      const wait = last + streamInterval - Date.now()
      if (wait > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined
        const slept = new Promise<'slept'>((resolve) => {
          timer = setTimeout(() => resolve('slept'), wait)
        })
        const woke = await Promise.race([slept, done])
        clearTimeout(timer)
        if (woke === 'done') break
      }
      nextOutput = new Promise<void>((resolve) => {
        signalOutput = resolve
      })
      last = Date.now()
      yield {
        running: true,
        stdout: truncateOutput(stdout, maxOutputChars).text,
        stderr: truncateOutput(stderr, maxOutputChars).text,
      }
    }
    yield await finished
  }

  async function record(sandbox: ToolSandbox, step: JournalStep): Promise<string | undefined> {
    if (!sandbox.record) return 'This sandbox has no journal: the step was not recorded as a setup step.'
    try {
      await sandbox.record(step)
      return undefined
    } catch (error) {
      return `The step ran but was not recorded as a setup step: ${errorMessage(error)}`
    }
  }

  return {
    runCode: tool({
      description:
        "Run Python or JavaScript code in the sandbox's persistent interpreter (a notebook kernel): " +
        'variables, imports and functions stay defined for later calls and later turns. Returns the value ' +
        'of the last expression, printed output, and the exception if one was raised.',
      inputSchema: z.object({
        code: z.string().min(1).describe('The code to run.'),
        language: z.enum(['python', 'javascript']).optional().describe("Default 'python'."),
        setup: setupField,
      }),
      execute: (input, { abortSignal, experimental_sandbox }) => {
        const run = async (sandbox: ToolSandbox, output?: OutputCallbacks) => {
          const language = input.language ?? 'python'
          const result = await sandbox.runCode(input.code, {
            language,
            timeoutMs,
            ...(abortSignal ? { abortSignal } : {}),
            ...output,
          })
          const shaped = shapeCodeResult(result, maxOutputChars, { maxImageBytes, maxImages })
          if (shaped.error === undefined && wantsRecord(input.setup)) {
            const note = await record(sandbox, { kind: 'code', code: input.code, language })
            if (note) shaped.notice = note
          }
          if (!sandbox.persistentCode) {
            shaped.notice = joinNotes(
              shaped.notice,
              'This sandbox runs each code cell as a fresh script: variables do not persist between calls.',
            )
          }
          return shaped
        }
        return streamInterval > 0
          ? streamed<CodeToolResult>(experimental_sandbox, run)
          : execute<CodeToolResult>(experimental_sandbox, (sandbox) => run(sandbox))
      },
      toModelOutput: ({ output }) => codeModelOutput(output),
    }),

    runCommand: tool({
      description:
        'Run a shell command (bash) in the sandbox and return its exit code, stdout and stderr. A non-zero ' +
        'exit code is a normal result: read stderr and fix the command. Set background for servers and ' +
        'other long-running processes: they are started, keep running across turns, and are not waited for.',
      inputSchema: z.object({
        command: z.string().min(1).describe('The command line, run with bash -l -c.'),
        cwd: z.string().optional().describe('Working directory; default the sandbox home.'),
        background: z
          .boolean()
          .optional()
          .describe('Start it in the background (a server, a watcher) and return at once with its pid.'),
        setup: setupField,
      }),
      execute: (input, { abortSignal, experimental_sandbox }) => {
        const run = async (
          sandbox: ToolSandbox,
          output?: OutputCallbacks,
        ): Promise<CommandToolResult | BackgroundCommandToolResult> => {
          const cwd = input.cwd === undefined ? {} : { cwd: input.cwd }
          if (input.background) {
            const { pid } = await sandbox.startProcess(input.command, {
              ...cwd,
              ...(abortSignal ? { abortSignal } : {}),
            })
            const shaped: BackgroundCommandToolResult = {
              background: true,
              pid,
              note:
                'Started in the background; it keeps running after this call. Its output is not captured: ' +
                'redirect it to a file to read it later, and probe it (for example its port) to see it is up.',
            }
            // A background process is not a setup step: replaying it would wait on a server forever. Its
            // restart after a lost sandbox belongs to a health check (processCheck/portCheck with a repair).
            if (wantsRecord(input.setup)) {
              shaped.notice =
                'Background commands are not recorded as setup steps; declare a health check instead.'
            }
            return shaped
          }
          const result = await sandbox.runCommand(input.command, {
            timeoutMs,
            ...cwd,
            ...(abortSignal ? { abortSignal } : {}),
            ...output,
          })
          const shaped: CommandToolResult = shapeCommandResult(result, maxOutputChars)
          if (result.exitCode === 0 && wantsRecord(input.setup)) {
            const step: JournalStep = { kind: 'command', command: input.command }
            if (input.cwd !== undefined) step.cwd = sandbox.resolvePath(input.cwd)
            const note = await record(sandbox, step)
            if (note) shaped.notice = note
          }
          return shaped
        }
        // A background command returns at once: nothing to stream.
        return streamInterval > 0 && !input.background
          ? streamed<CommandToolResult | BackgroundCommandToolResult>(experimental_sandbox, run)
          : execute<CommandToolResult | BackgroundCommandToolResult>(experimental_sandbox, (sandbox) =>
              run(sandbox),
            )
      },
    }),

    readFile: tool({
      description:
        'Read a text file from the sandbox, optionally only lines startLine..endLine (1-based, inclusive). ' +
        'Long content is cut with a note; read a line range to see more.',
      inputSchema: z.object({
        path: z.string().min(1).describe('Path; relative paths start at the sandbox home.'),
        startLine: z.number().int().min(1).optional(),
        endLine: z.number().int().min(1).optional(),
      }),
      execute: (input, { abortSignal, experimental_sandbox }) =>
        execute<ReadFileToolResult>(experimental_sandbox, async (sandbox) => {
          const path = sandbox.resolvePath(input.path)
          // Check the size first: a model asking for a multi-gigabyte log must not pull it into this process.
          const info = await sandbox.stat(path, abortSignal)
          if (info === null) {
            throw new SandkeepError({ code: 'FILE_NOT_FOUND', message: `No such file: ${path}` })
          }
          if (info.type === 'directory') {
            throw new SandkeepError({
              code: 'INVALID_ARGUMENT',
              message: `${path} is a directory: use listFiles.`,
            })
          }
          if (info.size > maxReadBytes) {
            throw new SandkeepError({
              code: 'INVALID_ARGUMENT',
              message:
                `${path} is ${info.size} bytes, over the ${maxReadBytes}-byte read limit: inspect it with ` +
                'runCommand (head, tail, grep, sed -n) instead.',
            })
          }
          const text = await sandbox.readText(path, abortSignal)
          if (text === null) {
            throw new SandkeepError({ code: 'FILE_NOT_FOUND', message: `No such file: ${path}` })
          }
          return shapeFileContent(path, text, input.startLine, input.endLine, maxFileChars)
        }),
    }),

    writeFile: tool({
      description:
        'Write a text file in the sandbox (UTF-8), replacing it if it exists and creating parent directories.',
      inputSchema: z.object({
        path: z.string().min(1).describe('Path; relative paths start at the sandbox home.'),
        content: z.string().describe('The whole new content of the file.'),
        setup: setupField,
      }),
      execute: (input, { abortSignal, experimental_sandbox }) =>
        execute<WriteFileToolResult>(experimental_sandbox, async (sandbox) => {
          const path = sandbox.resolvePath(input.path)
          await sandbox.writeText(path, input.content, abortSignal)
          const shaped: WriteFileToolResult = { path, bytes: Buffer.byteLength(input.content) }
          if (wantsRecord(input.setup)) {
            const note = await record(sandbox, { kind: 'file', path, content: input.content })
            if (note) shaped.notice = note
          }
          return shaped
        }),
    }),

    listFiles: tool({
      description: 'List the files and directories under a path in the sandbox.',
      inputSchema: z.object({
        path: z.string().optional().describe('Directory; default the sandbox home.'),
        depth: z.number().int().min(1).max(5).optional().describe('How deep to descend; default 1.'),
      }),
      execute: (input, { abortSignal, experimental_sandbox }) =>
        execute<ListFilesToolResult>(experimental_sandbox, async (sandbox) => {
          const path = sandbox.resolvePath(input.path ?? '.')
          const entries = await sandbox.list(path, input.depth ?? 1, abortSignal)
          if (entries === null) {
            throw new SandkeepError({ code: 'FILE_NOT_FOUND', message: `No such directory: ${path}` })
          }
          return shapeListing(path, entries, maxListEntries)
        }),
    }),
  }
}

function sandkeepToolSandbox(session: SandkeepSandboxSession): ToolSandbox {
  return {
    persistentCode: true,
    resolvePath: (path) => session.resolvePath(path),
    runCommand: (command, { cwd, timeoutMs, abortSignal, onStdout, onStderr }) =>
      session.runCommand(command, {
        timeoutMs,
        ...(cwd === undefined ? {} : { workingDirectory: cwd }),
        ...(abortSignal ? { abortSignal } : {}),
        ...(onStdout ? { onStdout } : {}),
        ...(onStderr ? { onStderr } : {}),
      }),
    startProcess: (command, { cwd, abortSignal }) =>
      session.startProcess(command, {
        ...(cwd === undefined ? {} : { cwd }),
        ...(abortSignal ? { abortSignal } : {}),
      }),
    runCode: (code, { language, timeoutMs, abortSignal, onStdout, onStderr }) =>
      session.runCode(code, {
        language,
        timeoutMs,
        ...(abortSignal ? { abortSignal } : {}),
        ...(onStdout ? { onStdout } : {}),
        ...(onStderr ? { onStderr } : {}),
      }),
    readText: async (path, abortSignal) =>
      session.readTextFile({ path, ...(abortSignal ? { abortSignal } : {}) }),
    stat: async (path, abortSignal) => session.stat({ path, ...(abortSignal ? { abortSignal } : {}) }),
    writeText: async (path, content, abortSignal) =>
      session.writeTextFile({ path, content, ...(abortSignal ? { abortSignal } : {}) }),
    list: async (path, depth, abortSignal) => {
      const entries = await session.listDir(path, { depth, ...(abortSignal ? { abortSignal } : {}) })
      return (
        entries?.map((entry) => ({
          path: posix.relative(path, entry.path) || entry.name,
          type: entry.type,
          ...(entry.size === undefined ? {} : { size: entry.size }),
        })) ?? null
      )
    },
    notice: () => session.takeStateNotice(),
    record: (step) => session.recordSetupStep(step),
  }
}

/** Commands and files over any AI SDK sandbox; code cells run as one-off scripts (no persistent state). */
function genericToolSandbox(session: Experimental_SandboxSession): ToolSandbox {
  const resolvePath = (path: string) => {
    if (path.length === 0 || path.includes('\u0000'))
      throw invalid('A sandbox path must be a non-empty string.')
    return path
  }
  return {
    persistentCode: false,
    resolvePath,
    runCommand: async (command, { cwd, abortSignal }) =>
      session.run({
        command,
        ...(cwd === undefined ? {} : { workingDirectory: cwd }),
        ...(abortSignal ? { abortSignal } : {}),
      }),
    // Any AI SDK sandbox: detach with nohup and report the pid the shell gives.
    startProcess: async (command, { cwd, abortSignal }) => {
      const result = await session.run({
        command: `nohup bash -l -c ${shellQuote(command)} > /dev/null 2>&1 < /dev/null & echo $!`,
        ...(cwd === undefined ? {} : { workingDirectory: cwd }),
        ...(abortSignal ? { abortSignal } : {}),
      })
      const pid = Number.parseInt(result.stdout.trim(), 10)
      return { pid: Number.isInteger(pid) ? pid : null }
    },
    runCode: async (code, { language, abortSignal }) => {
      const file = `/tmp/sandkeep-cell-${crypto.randomUUID()}.${language === 'python' ? 'py' : 'mjs'}`
      await session.writeTextFile({ path: file, content: code, ...(abortSignal ? { abortSignal } : {}) })
      const runner = language === 'python' ? 'python3' : 'node'
      const result = await session.run({
        command: `${runner} ${shellQuote(file)}; status=$?; rm -f ${shellQuote(file)}; exit $status`,
        ...(abortSignal ? { abortSignal } : {}),
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
    },
    readText: async (path, abortSignal) =>
      session.readTextFile({ path, ...(abortSignal ? { abortSignal } : {}) }),
    stat: async (path, abortSignal) => session.stat({ path, ...(abortSignal ? { abortSignal } : {}) }),
    writeText: async (path, content, abortSignal) =>
      session.writeTextFile({ path, content, ...(abortSignal ? { abortSignal } : {}) }),
    list: async (path, depth, abortSignal) => {
      const out: ListFilesToolResult['entries'] = []
      const walk = async (dir: string, prefix: string, level: number): Promise<boolean> => {
        const entries = await session.listDirectory({ path: dir, ...(abortSignal ? { abortSignal } : {}) })
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
    },
    notice: () => undefined,
  }
}

/** Shapes a command result for the model: exit code first, outputs cut past `maxChars`. */
export function shapeCommandResult(
  result: { exitCode: number; stdout: string; stderr: string },
  maxChars: number,
): CommandToolResult {
  return {
    exitCode: result.exitCode,
    stdout: truncateOutput(result.stdout, maxChars).text,
    stderr: truncateOutput(result.stderr, maxChars).text,
  }
}

/** Limits of the rich outputs {@link shapeCodeResult} keeps. */
export interface CodeOutputLimits {
  /** Largest image kept, bytes. */
  maxImageBytes: number
  /** Most images kept. */
  maxImages: number
}

// The text form of a rich output the model reads best, in order of preference.
const TEXT_FORMATS = ['text', 'markdown', 'json', 'html', 'latex', 'svg', 'javascript'] as const

/** Shapes a code cell's result for the model: text cut past `maxChars`, images within `limits`. */
export function shapeCodeResult(
  result: CodeResult,
  maxChars: number,
  limits: CodeOutputLimits = { maxImageBytes: 1024 * 1024, maxImages: 4 },
): CodeToolResult {
  const shaped: CodeToolResult = {
    result: result.text === null ? null : truncateOutput(result.text, maxChars).text,
    stdout: truncateOutput(result.stdout, maxChars).text,
    stderr: truncateOutput(result.stderr, maxChars).text,
  }
  let images = 0
  const outputs: CodeToolOutput[] = []
  for (const output of result.results ?? []) {
    const shown = shapeCodeOutput(output, maxChars, limits, images)
    if (shown === undefined) continue
    if (shown.image) images += 1
    outputs.push(shown)
  }
  if (outputs.length > 0) shaped.outputs = outputs
  if (result.error !== null) {
    const head = `${result.error.name}: ${result.error.value}`
    shaped.error = truncateOutput(
      result.error.traceback ? `${head}\n${stripAnsi(result.error.traceback)}` : head,
      maxChars,
    ).text
  }
  return shaped
}

/** One rich output for the model, or undefined when it adds nothing to `result` (a main value that is only text). */
function shapeCodeOutput(
  output: CodeOutput,
  maxChars: number,
  limits: CodeOutputLimits,
  imagesSoFar: number,
): CodeToolOutput | undefined {
  const notes: string[] = []
  let image: CodeToolOutput['image']
  const picture = output.png
    ? { mediaType: 'image/png' as const, base64: output.png }
    : output.jpeg
      ? { mediaType: 'image/jpeg' as const, base64: output.jpeg }
      : undefined
  if (picture) {
    const bytes = base64Bytes(picture.base64)
    if (bytes > limits.maxImageBytes) {
      notes.push(
        `An ${picture.mediaType} image of ${bytes} bytes was left out: over the ${limits.maxImageBytes}-byte ` +
          'limit; show a smaller one (lower dpi or size).',
      )
    } else if (imagesSoFar >= limits.maxImages) {
      notes.push(`An ${picture.mediaType} image was left out: at most ${limits.maxImages} images per call.`)
    } else {
      image = picture
    }
  }
  if (output.pdf) notes.push('A PDF was produced; it is not shown here: save it to a file to keep it.')
  // The main value's plain text is `result` already; repeat nothing the model has.
  const format = TEXT_FORMATS.find(
    (key) => output[key] !== undefined && !(key === 'text' && output.isMainResult),
  )
  if (output.isMainResult && !image && notes.length === 0 && (output.text !== undefined || !format))
    return undefined
  const shaped: CodeToolOutput = { main: output.isMainResult }
  // An image speaks for itself; its text form is usually a repr like "<Figure size 640x480 with 1 Axes>".
  if (format && !(image && format !== 'text')) {
    const value = output[format]
    const text = typeof value === 'string' ? value : JSON.stringify(value)
    shaped.text = truncateOutput(text, maxChars).text
    shaped.format = format
  }
  if (image) shaped.image = image
  if (notes.length > 0) shaped.note = notes.join(' ')
  return shaped
}

/** Decoded size of base64 text, bytes. */
function base64Bytes(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0
  return Math.max(0, Math.floor((base64.length * 3) / 4) - padding)
}

/**
 * The model's view of a `runCode` result: JSON as usual, but when the cell produced images, the JSON as text
 * (each image replaced by a pointer) followed by the images as image parts, which vision models can see.
 */
export function codeModelOutput(
  output: CodeToolResult | ToolErrorResult | ToolProgressResult,
): ToolResultOutput {
  const outputs = 'outputs' in output ? output.outputs : undefined
  if (!outputs?.some((entry) => entry.image)) return { type: 'json', value: output as never }
  const parts: Array<{ type: 'file'; mediaType: string; data: { type: 'data'; data: string } }> = []
  const described = {
    ...output,
    outputs: outputs.map((entry) => {
      if (!entry.image) return entry
      parts.push({
        type: 'file',
        mediaType: entry.image.mediaType,
        data: { type: 'data', data: entry.image.base64 },
      })
      const { image, ...rest } = entry
      return { ...rest, image: `${image.mediaType}, attached after this JSON as image ${parts.length}` }
    }),
  }
  return { type: 'content', value: [{ type: 'text', text: JSON.stringify(described) }, ...parts] }
}

/** Shapes a file read: the selected lines, cut past `maxChars` with a note that says how to see more. */
export function shapeFileContent(
  path: string,
  text: string,
  startLine: number | undefined,
  endLine: number | undefined,
  maxChars: number,
): ReadFileToolResult {
  const lines = text.length === 0 ? [] : text.split(/(?<=\n)/)
  const from = startLine ?? 1
  const selected = lines
    .slice(from - 1, endLine === undefined ? undefined : Math.max(endLine, from - 1))
    .join('')
  const cut = truncateOutput(selected, maxChars)
  const shaped: ReadFileToolResult = { path, content: cut.text, totalLines: lines.length }
  if (cut.omittedChars > 0) {
    shaped.notice = `The file is long: read it in parts with startLine/endLine (it has ${lines.length} lines).`
  }
  return shaped
}

/** Shapes a directory listing, keeping at most `maxEntries`. */
export function shapeListing(
  path: string,
  entries: ListFilesToolResult['entries'],
  maxEntries: number,
): ListFilesToolResult {
  const sorted = [...entries].sort((a, b) => a.path.localeCompare(b.path))
  const shaped: ListFilesToolResult = { path, entries: sorted.slice(0, maxEntries) }
  if (sorted.length > maxEntries) {
    shaped.notice = `Showing ${maxEntries} of ${sorted.length} entries; list a subdirectory to see the rest.`
  }
  return shaped
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

function joinNotes(first: string | undefined, second: string | undefined): string | undefined {
  if (first === undefined) return second
  return second === undefined ? first : `${first} ${second}`
}

// Notebook tracebacks carry terminal colour codes, which are noise (and tokens) for a model.
const ansiPattern = /\u001b\[[0-9;]*[A-Za-z]/g

function stripAnsi(text: string): string {
  return text.replace(ansiPattern, '')
}

function positive(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalid(`sandboxTools: \`${name}\` must be a positive number, got ${String(value)}.`)
  }
  return value
}

function nonNegativeInteger(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw invalid(`sandboxTools: \`${name}\` must be a non-negative integer, got ${String(value)}.`)
  }
  return value
}

/** The least time between two partial results, ms; 0 when output is not streamed. */
function streamIntervalMs(value: SandboxToolsOptions['streamOutput']): number {
  if (value === undefined || value === false) return 0
  if (value === true) return 100
  if (typeof value !== 'object' || value === null) {
    throw invalid(`sandboxTools: \`streamOutput\` must be a boolean or { intervalMs }, got ${String(value)}.`)
  }
  for (const key of Object.keys(value)) {
    if (key !== 'intervalMs') throw invalid(`sandboxTools: \`streamOutput\` has no option '${key}'.`)
  }
  return positive(value.intervalMs, 'streamOutput.intervalMs', 100)
}

function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}
