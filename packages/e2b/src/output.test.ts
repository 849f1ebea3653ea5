import { describe, expect, it } from 'vitest'
import { capText, createCappedText } from './output.js'

describe('createCappedText', () => {
  it('returns output within the cap whole, however it was chunked', () => {
    const capped = createCappedText(10)
    for (const chunk of ['ab', '', 'cdef', 'ghij']) capped.push(chunk)
    expect(capped.text()).toBe('abcdefghij')
  })

  it('keeps the beginning and the end of a long output from many chunks, with the count left out', () => {
    const capped = createCappedText(100)
    for (let i = 0; i < 10_000; i++) capped.push(`${String(i).padStart(5, '0')}\n`)
    const text = capped.text()
    expect(text.startsWith('00000\n00001\n')).toBe(true)
    expect(text.endsWith('09998\n09999\n')).toBe(true)
    expect(text).toContain('[sandkeep: 59900 characters left out here; the output was 60000 characters')
    const kept = text.replace(/\n\[sandkeep: [^\]]*\]\n/, '')
    expect(kept.length).toBe(100)
  })

  it('never splits a surrogate pair at either cut', () => {
    const text = `${'a'.repeat(4)}😀${'b'.repeat(20)}😀${'c'.repeat(3)}`
    const cut = capText(text, 10)
    expect(cut.isWellFormed()).toBe(true)
    expect(cut.startsWith('aaaa')).toBe(true)
    expect(cut.endsWith('ccc')).toBe(true)
  })
})
