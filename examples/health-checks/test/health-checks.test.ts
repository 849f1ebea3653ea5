import { describe, expect, it } from 'vitest'
import { main } from '../src/main.ts'

describe('health-checks example', () => {
  it('repairs the server and the database connection after a host restart', async () => {
    const run = await main(() => {})
    expect(run.before?.outcome).toBe('resumed')
    const declared = (run.before?.checks ?? []).filter((check) =>
      ['web-server', 'web-port', 'database'].includes(check.name),
    )
    expect(declared.map((check) => [check.name, check.status])).toEqual([
      ['web-server', 'passed'],
      ['web-port', 'passed'],
      ['database', 'passed'],
    ])
    expect(run.after?.survived).toMatchObject({ memory: false, filesystem: true })
    const status = Object.fromEntries((run.after?.checks ?? []).map((check) => [check.name, check.status]))
    expect(status['web-server']).toBe('repaired')
    expect(status['web-port']).toBe('passed')
    expect(status.database).toBe('repaired')
    // The row lives in the database file, which the restart kept; the repaired connection reads it.
    expect(run.rowsAfterRestart).toContain('written before the restart')
    expect(run.pageAfterRestart).toBe('<h1>notes</h1>')
  })
})
