import { invalid } from '../errors.js'
import { isSandkeepSandboxSession } from '../sandbox-session/index.js'
import type { SandboxSession } from '../sandbox-session/types.js'

/** Options of {@link createSandboxTools}. */
export interface SandboxToolsOptions {
  /**
   * The sandbox the tools use. Default: the sandbox each call is given (`SandboxToolCallOptions.sandbox`;
   * the AI SDK's `experimental_sandbox`): a sandkeep session gets every feature, any other sandbox commands
   * and files, and `runCode` without persistent state.
   */
  session?: SandboxSession
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
   * callbacks are registered. Only sandkeep sessions stream; other sandboxes return once.
   */
  streamOutput?: boolean | { intervalMs?: number }
  /** Largest image of a `runCode` result sent to the model as an image part, in bytes; bigger ones become a note. Default 1 MiB. */
  maxImageBytes?: number
  /** Most images of one `runCode` call sent to the model; `0` sends none (each becomes a note). Default 4. */
  maxImages?: number
  /** How long `previewUrl` waits for a just-started server to listen on its port, ms. Default 5 000. */
  previewWaitMs?: number
}

/** {@link SandboxToolsOptions} checked, with their defaults filled in. */
export interface ToolsSettings {
  /** The session the tools are bound to, if any. */
  session: SandboxSession | undefined
  maxOutputChars: number
  maxFileChars: number
  maxListEntries: number
  maxReadBytes: number
  timeoutMs: number
  maxImageBytes: number
  maxImages: number
  previewWaitMs: number
  /** The least time between two partial results, ms; 0 when output is not streamed. */
  streamIntervalMs: number
  setupSteps: 'flagged' | 'all' | 'none'
}

/**
 * Checks the options of a sandbox tool set and fills in the defaults.
 * @throws SandkeepError INVALID_ARGUMENT for bad options.
 */
export function resolveToolsOptions(options: SandboxToolsOptions): ToolsSettings {
  const setupSteps = options.setupSteps ?? 'flagged'
  const settings: ToolsSettings = {
    session: options.session,
    maxOutputChars: positive(options.maxOutputChars, 'maxOutputChars', 8_000),
    maxFileChars: positive(options.maxFileChars, 'maxFileChars', 20_000),
    maxListEntries: positive(options.maxListEntries, 'maxListEntries', 200),
    maxReadBytes: positive(options.maxReadBytes, 'maxReadBytes', 10 * 1024 * 1024),
    timeoutMs: positive(options.timeoutMs, 'timeoutMs', 120_000),
    maxImageBytes: positive(options.maxImageBytes, 'maxImageBytes', 1024 * 1024),
    maxImages: nonNegativeInteger(options.maxImages, 'maxImages', 4),
    previewWaitMs: positive(options.previewWaitMs, 'previewWaitMs', 5_000),
    streamIntervalMs: streamIntervalMs(options.streamOutput),
    setupSteps,
  }
  if (!['flagged', 'all', 'none'].includes(setupSteps)) {
    throw invalid(`sandbox tools: setupSteps must be 'flagged', 'all' or 'none', got ${String(setupSteps)}.`)
  }
  if (options.session !== undefined && !isSandkeepSandboxSession(options.session)) {
    throw invalid('sandbox tools: `session` must come from createSandboxSession().')
  }
  return settings
}

function positive(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalid(`sandbox tools: \`${name}\` must be a positive number, got ${String(value)}.`)
  }
  return value
}

function nonNegativeInteger(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw invalid(`sandbox tools: \`${name}\` must be a non-negative integer, got ${String(value)}.`)
  }
  return value
}

/** The least time between two partial results, ms; 0 when output is not streamed. */
function streamIntervalMs(value: SandboxToolsOptions['streamOutput']): number {
  if (value === undefined || value === false) return 0
  if (value === true) return 100
  if (typeof value !== 'object' || value === null) {
    throw invalid(
      `sandbox tools: \`streamOutput\` must be a boolean or { intervalMs }, got ${String(value)}.`,
    )
  }
  for (const key of Object.keys(value)) {
    if (key !== 'intervalMs') throw invalid(`sandbox tools: \`streamOutput\` has no option '${key}'.`)
  }
  return positive(value.intervalMs, 'streamOutput.intervalMs', 100)
}
