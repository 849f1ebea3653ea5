import { describe, expect, it } from 'vitest'
import { colorEnabled, createStyle, formatTable, visibleLength } from './terminal.js'

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
})
