import { describe, expect, it } from 'vitest'
import { SandkeepError } from './errors.js'
import { turnEndedError } from './turn-ended.js'

describe('turnEndedError', () => {
  it('is a TURN_ENDED SandkeepError with the scope it is given and one message', () => {
    const error = turnEndedError({ tenant: 'acme', conversationId: 'conv-1', sandboxId: 'sbx-1' })
    expect(SandkeepError.hasCode(error, 'TURN_ENDED')).toBe(true)
    expect(error).toMatchObject({ tenant: 'acme', conversationId: 'conv-1', sandboxId: 'sbx-1' })
    expect(error.message).toBe(
      'This turn has ended: its sandbox may not be used any more; begin a new turn to use the sandbox again.',
    )
  })

  it('says what to do next in the caller terms, and leaves unknown fields out', () => {
    const error = turnEndedError({ conversationId: 'conv-2' }, 'make a new session for the next turn')
    expect(error.message).toMatch(/has ended: .*; make a new session for the next turn\.$/)
    expect(error.tenant).toBeUndefined()
    expect(error.sandboxId).toBeUndefined()
    expect(turnEndedError().code).toBe('TURN_ENDED')
  })
})
