import { describe, expect, it } from 'vitest'
import { mergeAbortSignals } from './abort-signals.js'

describe('mergeAbortSignals', () => {
  it('gives undefined for none and the signal itself for one, skipping absent entries', () => {
    const only = new AbortController().signal
    expect(mergeAbortSignals()).toBeUndefined()
    expect(mergeAbortSignals(undefined, null)).toBeUndefined()
    expect(mergeAbortSignals(only)).toBe(only)
    expect(mergeAbortSignals(undefined, only, null)).toBe(only)
  })

  it('fires when any of them fires, with that one reason, and not before', () => {
    const first = new AbortController()
    const second = new AbortController()
    const merged = mergeAbortSignals(first.signal, undefined, second.signal)
    const reasons: unknown[] = []
    merged.addEventListener('abort', () => reasons.push(merged.reason))
    expect(merged.aborted).toBe(false)
    second.abort('second went')
    expect(merged.aborted).toBe(true)
    expect(reasons).toEqual(['second went'])
    first.abort('too late')
    expect(merged.reason).toBe('second went')
  })

  it('is already aborted, with its reason, when one given already fired', () => {
    const fired = new AbortController()
    fired.abort('gone')
    const merged = mergeAbortSignals(new AbortController().signal, fired.signal)
    expect(merged.aborted).toBe(true)
    expect(merged.reason).toBe('gone')
  })
})
