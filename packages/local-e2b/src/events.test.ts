import { describe, expect, it } from 'vitest'
import { HostEventLog } from './events.js'

describe('HostEventLog', () => {
  it('emits, keeps a filtered list, and waits for the next matching event', async () => {
    const log = new HostEventLog(3)
    const seen: string[] = []
    log.on('event', (event) => seen.push(event.type))
    log.record('sandbox-create', 'a', { createMs: 1 })
    const waiting = log.waitFor('sandbox-pause', (event) => event.sandboxId === 'b', 1000)
    log.record('sandbox-pause', 'a', {})
    log.record('sandbox-pause', 'b', { pauseMs: 2 })
    expect((await waiting).detail).toEqual({ pauseMs: 2 })
    expect(log.list({ type: 'sandbox-pause' }).map((event) => event.sandboxId)).toEqual(['a', 'b'])
    expect(log.list({ sandboxId: 'a' }).map((event) => event.type)).toEqual([
      'sandbox-create',
      'sandbox-pause',
    ])
    log.record('error', undefined, {})
    expect(log.list()).toHaveLength(3)
    expect(seen).toEqual(['sandbox-create', 'sandbox-pause', 'sandbox-pause', 'error'])
  })
})
