import { describe, expect, it } from 'vitest'
import { FaultRules } from './faults.js'

describe('FaultRules', () => {
  it('fails exactly the next N matching calls', () => {
    const rules = new FaultRules()
    rules.addFailure('connect', { count: 2, status: 503 })
    expect(rules.take('create', undefined).failure).toBeUndefined()
    expect(rules.take('connect', 'a').failure?.status).toBe(503)
    expect(rules.take('connect', 'b').failure?.status).toBe(503)
    expect(rules.take('connect', 'c').failure).toBeUndefined()
    expect(rules.list()).toEqual([])
  })
  it('scopes rules to a sandbox and adds latency until cleared or counted out', () => {
    const rules = new FaultRules()
    rules.addFailure('kill', { sandboxId: 'x', body: { code: 500, message: 'boom' } })
    rules.addLatency('pause', 50)
    rules.addLatency('pause', 10, { count: 1 })
    expect(rules.take('kill', 'y').failure).toBeUndefined()
    expect(rules.take('kill', 'x').failure?.body).toEqual({ code: 500, message: 'boom' })
    expect(rules.take('pause', 'x').delayMs).toBe(60)
    expect(rules.take('pause', 'x').delayMs).toBe(50)
    rules.clear()
    expect(rules.take('pause', 'x').delayMs).toBe(0)
  })
})
