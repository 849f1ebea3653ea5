import { describe, expect, it } from 'vitest'
import { codeInterpreter, formatCodeResult } from './code-capability.js'

describe('formatCodeResult', () => {
  it("cuts each part past the limit with @sandkeep/agent's note, and keeps short parts whole", () => {
    const long = 'x'.repeat(500)
    const text = formatCodeResult(
      { text: '42', stdout: long, stderr: '', error: { name: 'ValueError', value: 'bad', traceback: '' } },
      100,
    )
    const parsed = JSON.parse(text) as Record<string, string | null>
    expect(parsed.value).toBe('42')
    expect(parsed.stdout).toMatch(/^x{60}\n\[\.\.\. 400 characters omitted/)
    expect(parsed.stdout).toMatch(/\]\nx{40}$/)
    expect(parsed.stderr).toBe('')
    expect(parsed.error).toBe('ValueError: bad')
  })

  it('gives null for a cell without a value or an error', () => {
    const parsed = JSON.parse(formatCodeResult({ text: null, stdout: 'hi\n', stderr: '', error: null }, 10))
    expect(parsed).toEqual({ value: null, stdout: 'hi\n', stderr: '', error: null })
  })
})

describe('codeInterpreter', () => {
  it('refuses a bad maxOutputChars before anything runs', () => {
    for (const maxOutputChars of [0, -1, Number.NaN]) {
      expect(() => codeInterpreter({ maxOutputChars })).toThrow(/maxOutputChars must be a positive number/)
    }
  })
})
