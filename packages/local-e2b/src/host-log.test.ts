import { describe, expect, it } from 'vitest'
import { HostEventLog } from './events.js'
import { HostLog } from './host-log.js'
import type { LocalE2BLogLevel } from './options.js'

function capture(level: LocalE2BLogLevel) {
  const lines: Array<[string, LocalE2BLogLevel]> = []
  const events = new HostEventLog()
  new HostLog((line, at) => lines.push([line, at]), level).watch(events)
  return { lines, events }
}

describe('HostLog', () => {
  it('logs lifecycle events at info with numbers, booleans and known words only', () => {
    const { lines, events } = capture('info')
    events.record('sandbox-create', 'iabc', {
      templateId: 'base',
      createMs: 12.6,
      command: 'export KEY=secret',
    })
    events.record('process-start', 'iabc', { pid: 4 })
    events.record('host-error', 'iabc', { path: '/v2/sandboxes', error: 'token=secret' })
    expect(lines).toEqual([
      ['[sandkeep-local-e2b] sandbox-create iabc templateId=base createMs=13', 'info'],
      ['[sandkeep-local-e2b] host-error iabc path=/v2/sandboxes', 'warn'],
    ])
  })

  it('at warn only problems get through', () => {
    const { lines, events } = capture('warn')
    events.record('sandbox-kill', 'iabc', { reason: 'api' })
    events.record('sandbox-timeout-fail', 'iabc', {})
    expect(lines.map(([, level]) => level)).toEqual(['warn'])
  })
})
