import { describe, expect, it } from 'vitest'
import { type CommandSpec, formatHelp, parseCommandArgs, parseDuration, UsageError } from './args.js'

const spec: CommandSpec = {
  name: 'demo',
  summary: 'test',
  positionals: { names: ['<id>'], min: 0 },
  options: {
    mode: { type: 'string', choices: ['a', 'b'], description: 'mode' },
    json: { type: 'boolean', description: 'json' },
    name: { type: 'string', valueName: '<name>', description: 'name' },
  },
}

function usageMessage(argv: string[]): string {
  try {
    parseCommandArgs(spec, argv)
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError)
    return (error as Error).message
  }
  throw new Error('expected a UsageError')
}

describe('parseCommandArgs', () => {
  it('parses options and positionals', () => {
    const parsed = parseCommandArgs(spec, ['--mode', 'a', '--json', 'x'])
    expect(parsed.values).toMatchObject({ mode: 'a', json: true })
    expect(parsed.positionals).toEqual(['x'])
  })

  it('gives one-line messages for every kind of mistake', () => {
    expect(usageMessage(['--nope'])).toBe('unknown option --nope')
    expect(usageMessage(['--mode', 'c'])).toBe('--mode must be one of a, b (got "c")')
    expect(usageMessage(['--mode'])).toMatch(/^--mode needs a value/)
    expect(usageMessage(['--json=yes'])).toBe('--json does not take a value')
    expect(usageMessage(['a', 'b'])).toBe('unexpected argument "b"')
    expect(usageMessage(['--name', ''])).toBe('--name needs a non-empty value')
    for (const message of [usageMessage(['--nope']), usageMessage(['--mode'])])
      expect(message).not.toContain('\n')
  })

  it('refuses a value option given twice instead of keeping the last', () => {
    expect(usageMessage(['--mode', 'a', '--mode', 'b'])).toBe('--mode was given more than once: give it once')
    expect(usageMessage(['--name=x', '--name', 'y'])).toBe('--name was given more than once: give it once')
    // a repeated switch says the same thing twice, which is harmless
    expect(parseCommandArgs(spec, ['--json', '--json']).values.json).toBe(true)
  })

  it('lets --help win over other mistakes', () => {
    expect(parseCommandArgs(spec, ['--nope', '--help']).help).toBe(true)
    expect(formatHelp(spec)).toContain('--mode <value>')
    expect(formatHelp(spec)).toContain('-h, --help')
  })
})

describe('parseDuration', () => {
  it('reads units and bare milliseconds', () => {
    expect(parseDuration('1500')).toBe(1500)
    expect(parseDuration('250ms')).toBe(250)
    expect(parseDuration('1.5s')).toBe(1500)
    expect(parseDuration('45m')).toBe(2_700_000)
    expect(parseDuration('2h')).toBe(7_200_000)
    expect(parseDuration('soon')).toBeUndefined()
    expect(parseDuration('-1s')).toBeUndefined()
  })
})
