import { parseArgs } from 'node:util'

/** A command-line mistake: printed as one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
  /** The command the mistake was made in, e.g. `demo` or `sessions list`. */
  readonly command: string
  constructor(command: string, message: string) {
    super(message)
    this.command = command
  }
}

/** One option of a command, as its `--help` shows it and the parser checks it. */
export interface OptionSpec {
  /** `string` takes a value, `boolean` does not. */
  type: 'string' | 'boolean'
  /** One-letter alias. */
  short?: string
  /** Placeholder shown in help, e.g. `<file>`. */
  valueName?: string
  /** Allowed values; anything else is a usage error. */
  choices?: readonly string[]
  /** What it does, one line. */
  description: string
  /** Default shown in help (the code applies it). */
  defaultText?: string
}

/** What a command accepts, used for parsing and for `--help`. */
export interface CommandSpec {
  /** Full name, e.g. `demo` or `sessions list`. */
  name: string
  /** One line for the command list. */
  summary: string
  /** Positional arguments as shown in the usage line, e.g. `<conversation-id>`. */
  positionals?: { names: string[]; min: number }
  /** Longer description shown under the usage line. */
  description?: string
  /** Options, keyed by long name (without `--`). `help` is added to every command. */
  options: Record<string, OptionSpec>
  /** Example invocations. */
  examples?: string[]
  /** Extra sections (title → text) appended to the help, e.g. environment variables. */
  sections?: Array<{ title: string; text: string }>
}

/** Parsed arguments. */
export interface ParsedArgs {
  /** Option values by long name; booleans are `true` when given. */
  values: Record<string, string | boolean | undefined>
  /** Positional arguments. */
  positionals: string[]
  /** True when `--help`/`-h` was given (nothing else was checked). */
  help: boolean
}

const helpOption: OptionSpec = { type: 'boolean', short: 'h', description: 'Show this help.' }

/**
 * Parses `argv` strictly against `spec`: unknown options, missing values, values given to flags, bad
 * choices and surplus positionals become a {@link UsageError} with a one-line message.
 */
export function parseCommandArgs(spec: CommandSpec, argv: string[]): ParsedArgs {
  const options: Record<string, OptionSpec> = { ...spec.options, help: helpOption }
  // `--help` wins over every other mistake, so a user who got a flag wrong can still ask for help.
  if (argv.some((argument) => argument === '--help' || argument === '-h')) {
    return { values: {}, positionals: [], help: true }
  }
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({
      args: argv,
      options: Object.fromEntries(
        Object.entries(options).map(([name, option]) => [
          name,
          option.short ? { type: option.type, short: option.short } : { type: option.type },
        ]),
      ),
      strict: true,
      allowPositionals: true,
      allowNegative: false,
      tokens: true,
    })
  } catch (error) {
    throw new UsageError(spec.name, describeParseError(error, options))
  }
  // parseArgs keeps the last of a repeated option: `--to-turn 3 --to-turn 1` would act on 1 without a word.
  const seen = new Set<string>()
  for (const token of parsed.tokens ?? []) {
    if (token.kind !== 'option' || options[token.name]?.type !== 'string') continue
    if (seen.has(token.name)) {
      throw new UsageError(spec.name, `--${token.name} was given more than once: give it once`)
    }
    seen.add(token.name)
  }
  const values = parsed.values as Record<string, string | boolean | undefined>
  for (const [name, option] of Object.entries(options)) {
    const value = values[name]
    if (typeof value === 'string') {
      if (value.length === 0) throw new UsageError(spec.name, `--${name} needs a non-empty value`)
      if (option.choices && !option.choices.includes(value)) {
        throw new UsageError(
          spec.name,
          `--${name} must be one of ${option.choices.join(', ')} (got ${JSON.stringify(value.slice(0, 60))})`,
        )
      }
    }
  }
  const names = spec.positionals?.names ?? []
  const min = spec.positionals?.min ?? 0
  if (parsed.positionals.length > names.length) {
    const extra = parsed.positionals[names.length] ?? ''
    throw new UsageError(spec.name, `unexpected argument ${JSON.stringify(extra.slice(0, 60))}`)
  }
  if (parsed.positionals.length < min) {
    throw new UsageError(spec.name, `missing ${names.slice(parsed.positionals.length, min).join(' ')}`)
  }
  return { values, positionals: parsed.positionals, help: false }
}

function describeParseError(error: unknown, options: Record<string, OptionSpec>): string {
  const code = (error as { code?: unknown }).code
  const message = error instanceof Error ? error.message : String(error)
  const quoted = /'([^']+)'/.exec(message)?.[1] ?? ''
  const flag = quoted.split(' ')[0] ?? quoted
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${flag}`
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const name = flag.replace(/^-+/, '')
      const option = options[name] ?? Object.values(options).find((candidate) => candidate.short === name)
      if (option?.type === 'boolean') return `${flag} does not take a value`
      return `${flag} needs a value${option?.valueName ? ` ${option.valueName}` : ''}`
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${quoted ? JSON.stringify(quoted) : ''}`.trim()
    default:
      return message.split('\n')[0] ?? 'bad arguments'
  }
}

/** Reads a string option. */
export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const value = args.values[name]
  return typeof value === 'string' ? value : undefined
}

/** Reads a boolean option. */
export function flagOption(args: ParsedArgs, name: string): boolean {
  return args.values[name] === true
}

const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * Parses a duration: `250ms`, `1.5s`, `45m`, `2h`, `1d`, or a bare number of milliseconds.
 * Returns `undefined` when the text is not a duration.
 */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?$/.exec(text.trim())
  if (!match) return undefined
  const value = Number(match[1]) * (units[match[2] ?? 'ms'] ?? 1)
  return Number.isFinite(value) ? Math.round(value) : undefined
}

/** How a numeric option is read and how its mistakes are worded. */
interface NumberReader {
  /** The number, or `undefined` when the text is not one of this kind. */
  parse(raw: string): number | undefined
  /** What was expected, e.g. `a whole number`. */
  expected: string
  /** The allowed range as the error states it. */
  range(bounds: { min: number; max: number }, raw: string): string
}

const wholeNumber: NumberReader = {
  parse: (raw) => (/^\d+$/.test(raw) ? Number(raw) : undefined),
  expected: 'a whole number',
  range: (bounds, raw) => `between ${bounds.min} and ${bounds.max} (got ${raw})`,
}

const duration: NumberReader = {
  parse: parseDuration,
  expected: 'a duration like 1500ms, 2s or 5m',
  range: (bounds) => `between ${formatDuration(bounds.min)} and ${formatDuration(bounds.max)}`,
}

/** Reads a numeric option within bounds; `undefined` when it is not given. */
type NumberOption = (
  args: ParsedArgs,
  command: string,
  name: string,
  bounds: { min: number; max: number },
) => number | undefined

function numberOption(reader: NumberReader): NumberOption {
  return (args, command, name, bounds) => {
    const raw = stringOption(args, name)
    if (raw === undefined) return undefined
    const value = reader.parse(raw)
    if (value === undefined) {
      throw new UsageError(
        command,
        `--${name} must be ${reader.expected} (got ${JSON.stringify(raw.slice(0, 40))})`,
      )
    }
    if (value < bounds.min || value > bounds.max) {
      throw new UsageError(command, `--${name} must be ${reader.range(bounds, raw)}`)
    }
    return value
  }
}

/** Reads an integer option within bounds. */
export const integerOption = numberOption(wholeNumber)

/** Reads a duration option (ms) within bounds. */
export const durationOption = numberOption(duration)

/** Runs a check of a value given on the command line; what it throws becomes a {@link UsageError}. */
export function usageErrorFrom<T>(command: string, check: () => T): T {
  try {
    return check()
  } catch (error) {
    throw new UsageError(command, error instanceof Error ? error.message : String(error))
  }
}

/** Formats milliseconds for people: `850 ms`, `1.5 s`, `45 min`, `2 h`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${trim(ms / 1000)} s`
  if (ms < 3_600_000) return `${trim(ms / 60_000)} min`
  if (ms < 86_400_000) return `${trim(ms / 3_600_000)} h`
  return `${trim(ms / 86_400_000)} d`
}

function trim(value: number): string {
  return value >= 10 ? String(Math.round(value)) : String(Math.round(value * 10) / 10)
}

/** Renders a command's `--help`. */
export function formatHelp(spec: CommandSpec): string {
  const positionals = spec.positionals?.names.map((name, index) =>
    index < (spec.positionals?.min ?? 0) ? name : `[${name}]`,
  )
  const lines = [
    `Usage: sandkeep ${spec.name}${positionals?.length ? ` ${positionals.join(' ')}` : ''} [options]`,
    '',
  ]
  lines.push(spec.description ?? spec.summary, '')
  const options: Record<string, OptionSpec> = { ...spec.options, help: helpOption }
  const rows = Object.entries(options).map(([name, option]) => {
    const left = `${option.short ? `-${option.short}, ` : '    '}--${name}${option.type === 'string' ? ` ${option.valueName ?? '<value>'}` : ''}`
    const extras = [
      option.choices ? `one of: ${option.choices.join(', ')}` : '',
      option.defaultText ? `default: ${option.defaultText}` : '',
    ].filter(Boolean)
    return [left, `${option.description}${extras.length ? ` (${extras.join('; ')})` : ''}`] as const
  })
  const width = Math.max(...rows.map(([left]) => left.length)) + 2
  lines.push('Options:')
  for (const [left, right] of rows) lines.push(`  ${left.padEnd(width)}${right}`)
  for (const section of spec.sections ?? []) {
    lines.push('', `${section.title}:`, ...section.text.split('\n').map((line) => `  ${line}`))
  }
  if (spec.examples?.length) {
    lines.push('', 'Examples:', ...spec.examples.map((example) => `  ${example}`))
  }
  return `${lines.join('\n')}\n`
}
