// The shapes the model sees: each tool's input, its result, and the tool set's type.
import type { CodeLanguage } from '@sandkeep/core'
import type { z } from 'zod'
import type {
  PathOptions,
  RunOptions,
  SandboxDirectoryEntry,
  SandboxFileStat,
  SandboxSession,
  WriteTextFileOptions,
} from '../sandbox-session/types.js'

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

/** Result of `previewUrl`. */
export interface PreviewUrlToolResult {
  /** Set when earlier sandbox state is gone (first result of such a turn). */
  notice?: string
  /** The address to give the user: opens in a browser, no headers needed. */
  url: string
  /** The sandbox port it reaches. */
  port: number
  /** Whether something accepted connections on the port inside the sandbox when the tool looked. */
  listening: boolean
  /** What the model should know (how long the URL holds, what to do when nothing listens). */
  note: string
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

/** Input of `previewUrl`. */
export interface PreviewUrlInput {
  port: number
  path?: string | undefined
}

/**
 * The calls the tools need of a sandbox that is not a sandkeep session: the AI SDK's sandbox contract (its
 * `Experimental_SandboxSession`) has them, and so can any other framework's sandbox through a small wrapper.
 */
export interface GenericSandbox {
  run(options: RunOptions): PromiseLike<{ exitCode: number; stdout: string; stderr: string }>
  readFile(options: PathOptions): PromiseLike<ReadableStream<Uint8Array> | null>
  writeTextFile(options: WriteTextFileOptions): PromiseLike<void>
  stat(options: PathOptions): PromiseLike<SandboxFileStat | null>
  listDirectory(options: PathOptions): PromiseLike<SandboxDirectoryEntry[] | null>
}

/** What a framework passes to one call of a tool's `execute`. */
export interface SandboxToolCallOptions {
  /** Aborts the call (the command or cell is killed). */
  abortSignal?: AbortSignal
  /**
   * The sandbox of this call, used when the tools are bound to no session: a sandkeep session (every
   * feature) or any sandbox with the AI SDK's command and file calls (code cells then run as one-off scripts).
   */
  sandbox?: SandboxSession | GenericSandbox
}

/**
 * One sandbox tool as a framework-neutral spec: a framework adapter wraps it in its own tool type (the AI
 * SDK's `tool()`, a LangChain tool, ...). `execute` never throws: failures come back as
 * {@link ToolErrorResult}. With `streamOutput`, `runCode` and `runCommand` return an async generator that
 * yields {@link ToolProgressResult}s while they run and the complete result last.
 */
export interface SandboxToolSpec<INPUT, RESULT> {
  /** The tool's name, as the tool sets key it (`runCode`, `runCommand`, ...). */
  readonly name: string
  /** What the model reads about the tool. */
  readonly description: string
  /** The input the model sends, as a zod object schema (JSON Schema through the framework's converter). */
  readonly inputSchema: z.ZodType<INPUT>
  /** Runs one call. */
  execute(input: INPUT, options?: SandboxToolCallOptions): Promise<RESULT> | AsyncGenerator<RESULT>
}

/**
 * The tool set {@link createSandboxTools} returns, one spec per tool; every result is the tool's own or a
 * {@link ToolErrorResult}.
 */
export interface SandboxToolSpecs {
  /** Runs Python or JavaScript in the persistent interpreter (images: see `codeResultContent`). */
  runCode: SandboxToolSpec<RunCodeInput, CodeToolResult | ToolErrorResult | ToolProgressResult>
  /** Runs a shell command, to its end or in the background. */
  runCommand: SandboxToolSpec<
    RunCommandInput,
    CommandToolResult | BackgroundCommandToolResult | ToolErrorResult | ToolProgressResult
  >
  /** Reads a text file (optionally a line range). */
  readFile: SandboxToolSpec<ReadFileInput, ReadFileToolResult | ToolErrorResult>
  /** Writes a text file. */
  writeFile: SandboxToolSpec<WriteFileInput, WriteFileToolResult | ToolErrorResult>
  /** Lists a directory. */
  listFiles: SandboxToolSpec<ListFilesInput, ListFilesToolResult | ToolErrorResult>
  /** The public URL of a server the sandbox runs, to hand to the user. */
  previewUrl: SandboxToolSpec<PreviewUrlInput, PreviewUrlToolResult | ToolErrorResult>
}
