import type { CommandSpec, ParsedArgs } from './args.js'

/** What a command gets besides its arguments: streams and environment, injectable for tests. */
export interface CommandContext {
  /** Standard output. */
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }
  /** Standard error. */
  stderr: NodeJS.WritableStream & { isTTY?: boolean }
  /** Environment variables. */
  env: NodeJS.ProcessEnv
  /** Fires on SIGINT/SIGTERM so a command can clean up (pause, close the host) before exiting. */
  signal: AbortSignal
}

/** One subcommand: its spec (parsing, help) and what it does. Returns the exit code. */
export interface Command {
  /** Parsing rules and help text. */
  spec: CommandSpec
  /** Runs with parsed arguments. */
  run(args: ParsedArgs, context: CommandContext): Promise<number>
}

/** Exit codes. */
export const ExitCode = {
  /** Everything worked. */
  OK: 0,
  /** A turn failed, or a runtime error (store or provider down). */
  FAILURE: 1,
  /** Bad flags, bad values, a malformed transcript, missing configuration. */
  USAGE: 2,
  /** Interrupted (SIGINT). */
  INTERRUPTED: 130,
} as const
