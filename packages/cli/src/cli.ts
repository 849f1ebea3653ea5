import { readFileSync } from 'node:fs'
import { formatHelp, parseCommandArgs, UsageError } from './args.js'
import { type Command, type CommandContext, ExitCode } from './command.js'
import { demoCommand } from './commands/demo.js'
import { hostCommand } from './commands/host.js'
import { sessionsCommand } from './commands/sessions.js'
import { sessionsEndCommand } from './commands/sessions-end.js'
import { sessionsForkCommand } from './commands/sessions-fork.js'
import { sessionsGcCommand } from './commands/sessions-gc.js'
import { sessionsListCommand } from './commands/sessions-list.js'
import { sessionsRestoreCommand } from './commands/sessions-restore.js'
import { sessionsRewindCommand } from './commands/sessions-rewind.js'
import { sessionsShowCommand } from './commands/sessions-show.js'
import { ConfigError, describeError } from './errors.js'
import { TranscriptError } from './transcript.js'

const version = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version

const commands: Record<string, Command> = {
  demo: demoCommand,
  host: hostCommand,
  sessions: sessionsCommand,
  'sessions list': sessionsListCommand,
  'sessions show': sessionsShowCommand,
  'sessions end': sessionsEndCommand,
  'sessions gc': sessionsGcCommand,
  'sessions restore': sessionsRestoreCommand,
  'sessions rewind': sessionsRewindCommand,
  'sessions fork': sessionsForkCommand,
}

function topLevelHelp(): string {
  return `sandkeep ${version}: keep an AI agent's sandbox across the turns of a conversation, paused in between.

Usage: sandkeep <command> [options]

Commands:
  demo              ${demoCommand.spec.summary}
  sessions list     ${sessionsListCommand.spec.summary}
  sessions show     ${sessionsShowCommand.spec.summary}
  sessions end      ${sessionsEndCommand.spec.summary}
  sessions gc       ${sessionsGcCommand.spec.summary}
  sessions restore  ${sessionsRestoreCommand.spec.summary}
  sessions rewind   ${sessionsRewindCommand.spec.summary}
  sessions fork     ${sessionsForkCommand.spec.summary}
  host              ${hostCommand.spec.summary}

Options:
  -h, --help        Show help (also after any command: sandkeep demo --help).
  -v, --version     Print the version.

Exit codes: 0 ok, 1 a turn or an operation failed, 2 bad usage or configuration, 130 interrupted.
`
}

/** Runs the CLI with `argv` (without node and the script) and returns the exit code. */
export async function main(argv: string[], context: CommandContext): Promise<number> {
  const [first, second] = argv
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    ;(first === undefined ? context.stderr : context.stdout).write(topLevelHelp())
    return first === undefined ? ExitCode.USAGE : ExitCode.OK
  }
  if (first === '--version' || first === '-v') {
    context.stdout.write(`${version}\n`)
    return ExitCode.OK
  }
  let name = first
  let rest = argv.slice(1)
  if (first === 'sessions' && second !== undefined && !second.startsWith('-')) {
    name = `sessions ${second}`
    rest = argv.slice(2)
    if (!commands[name])
      return usage(
        context,
        'sessions',
        `unknown subcommand ${JSON.stringify(second)}; use list, show, end, gc, restore, rewind or fork`,
      )
  }
  const command = commands[name]
  if (!command) {
    return usage(
      context,
      null,
      `unknown command ${JSON.stringify(first.slice(0, 60))}; use demo, sessions or host`,
    )
  }
  try {
    const args = parseCommandArgs(command.spec, rest)
    if (args.help) {
      context.stdout.write(formatHelp(command.spec))
      return ExitCode.OK
    }
    return await command.run(args, context)
  } catch (error) {
    if (error instanceof UsageError) return usage(context, error.command, error.message)
    if (error instanceof ConfigError) {
      context.stderr.write(`sandkeep ${name}: ${error.message}\n`)
      return ExitCode.USAGE
    }
    if (error instanceof TranscriptError) {
      context.stderr.write(
        `sandkeep ${name}: invalid transcript\n${error.problems.map((line) => `  ${line}\n`).join('')}`,
      )
      return ExitCode.USAGE
    }
    context.stderr.write(`sandkeep ${name}: ${describeError(error)}\n`)
    return ExitCode.FAILURE
  }
}

function usage(context: CommandContext, command: string | null, message: string): number {
  const prefix = command ? `sandkeep ${command}` : 'sandkeep'
  context.stderr.write(`${prefix}: ${message} (see ${prefix} --help)\n`)
  return ExitCode.USAGE
}
