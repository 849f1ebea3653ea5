import { describe, expect, it } from 'vitest'
import { colorEnabled, createStyle, formatTable, truncate, visibleLength } from './terminal.js'

describe('terminal', () => {
  it('colours only a TTY without NO_COLOR (any non-empty value) and not a dumb terminal', () => {
    expect(colorEnabled({ isTTY: true }, {})).toBe(true)
    expect(colorEnabled({ isTTY: false }, {})).toBe(false)
    expect(colorEnabled({}, {})).toBe(false)
    expect(colorEnabled({ isTTY: true }, { NO_COLOR: '1' })).toBe(false)
    expect(colorEnabled({ isTTY: true }, { NO_COLOR: '' })).toBe(true)
    expect(colorEnabled({ isTTY: true }, { TERM: 'dumb' })).toBe(false)
  })

  it('emits no escape codes when colour is off', () => {
    const plain = createStyle(false)
    expect(plain.red(plain.bold('x'))).toBe('x')
    const colored = createStyle(true)
    expect(colored.red('x')).toBe('\u001b[31mx\u001b[39m')
    expect(visibleLength(colored.bold(colored.red('abc')))).toBe(3)
  })

  it('aligns tables on visible width', () => {
    const colored = createStyle(true)
    const table = formatTable(
      [
        ['a', 'bb'],
        [colored.red('ccc'), 'd'],
      ],
      { right: [1] },
    )
    expect(table.split('\n').map(visibleLength)).toEqual([7, 7])
  })

  it('measures CJK and emoji by the columns a terminal gives them, so sessions list lines up', () => {
    expect(visibleLength('会話-42')).toBe(7)
    expect(visibleLength('chat-🚀')).toBe(7)
    expect(visibleLength('👩‍💻')).toBe(2)
    expect(visibleLength('cafe\u0301')).toBe(4)
    const table = formatTable([
      ['conversation', 'state'],
      ['会話-42', 'paused'],
      ['chat-🚀-👩‍💻', 'paused'],
      ['plain', 'paused'],
    ])
    // every row's second column starts at the same terminal column
    const starts = table.split('\n').map((line) => visibleLength(line.slice(0, line.lastIndexOf('  ') + 2)))
    expect(new Set(starts).size).toBe(1)
  })

  it('truncates by columns and never splits a grapheme', () => {
    expect(truncate('abcdef', 4)).toBe('abc…')
    expect(truncate('会話会話会話', 6)).toBe('会話…')
    expect(visibleLength(truncate('会話会話会話', 6))).toBeLessThanOrEqual(6)
    expect(truncate('👩‍💻👩‍💻👩‍💻', 5)).toBe('👩‍💻👩‍💻…')
    expect(truncate('short', 40)).toBe('short')
  })
})
