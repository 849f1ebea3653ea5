import { afterEach, describe, expect, it, vi } from 'vitest'
import { createEventHub } from './events.js'

interface TestEvents {
  tick: number
  error: { error: unknown; phase: string }
}

describe('createEventHub', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('runs listeners in order, survives a throwing one and reports its error', () => {
    const reported: Array<[unknown, string]> = []
    const hub = createEventHub<TestEvents>((error, event) => reported.push([error, String(event)]))
    const seen: string[] = []
    const boom = new Error('boom')
    hub.on('tick', (n) => seen.push(`a${n}`))
    hub.on('tick', () => {
      throw boom
    })
    const off = hub.on('tick', (n) => seen.push(`c${n}`))
    hub.emit('tick', 1)
    off()
    hub.emit('tick', 2)
    expect(seen).toEqual(['a1', 'c1', 'a2'])
    expect(reported).toEqual([
      [boom, 'tick'],
      [boom, 'tick'],
    ])
  })

  it('warns once for a throwing error listener, and without an onListenerError', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    const reported: unknown[] = []
    const hub = createEventHub<TestEvents>((error) => reported.push(error))
    hub.on('error', () => {
      throw new Error('handler broke')
    })
    hub.emit('error', { error: new Error('x'), phase: 'test' })
    hub.emit('error', { error: new Error('y'), phase: 'test' })
    expect(reported).toEqual([])
    expect(warn).toHaveBeenCalledTimes(1)
    expect(String(warn.mock.calls[0]?.[0])).toContain("'error' event listener threw")

    const bare = createEventHub<TestEvents>()
    bare.on('tick', () => {
      throw new Error('tick broke')
    })
    bare.emit('tick', 1)
    expect(warn).toHaveBeenCalledTimes(2)
  })

  it('refuses a listener that is not a function', () => {
    const hub = createEventHub<TestEvents>()
    expect(() => hub.on('tick', 42 as never)).toThrow(TypeError)
  })
})
