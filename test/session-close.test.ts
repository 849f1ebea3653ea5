// sessions.close() in a real script: on the real Redis store, through the real SDK to a real local-e2b host,
// a script that ends with close() exits by itself (no store.close(), no process.exit), and its log has the
// turn lifecycle and never the API key.
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REDIS_URL } from './helpers/sessions.js'

interface ChildRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
  /** The child was still running this long after it printed `done` and was killed (only without close). */
  hung: boolean
}

function runScript(config: Record<string, unknown>, hangAfterDoneMs: number): Promise<ChildRun> {
  const script = fileURLToPath(new URL('./helpers/script-that-closes.mjs', import.meta.url))
  const child = spawn(process.execPath, [script, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  let hung = false
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  // A guard only: the script takes seconds; past this it is stuck and the test fails on its output.
  const guard = setTimeout(() => child.kill('SIGKILL'), 90_000)
  let hangTimer: NodeJS.Timeout | undefined
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
    if (!hangTimer && stdout.includes('"done":true')) {
      hangTimer = setTimeout(() => {
        hung = true
        child.kill('SIGKILL')
      }, hangAfterDoneMs)
    }
  })
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      clearTimeout(guard)
      clearTimeout(hangTimer)
      resolve({ code, signal, stdout, stderr, hung })
    })
  })
}

describe('sessions.close() in a script on the Redis store', () => {
  let host: LocalE2BHost
  const tenant = `it-${randomUUID().slice(0, 8)}`
  const prefix = `sandkeep-it-${randomUUID().slice(0, 8)}`
  const config = () => ({
    redisUrl: REDIS_URL,
    prefix,
    tenant,
    connection: { apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl },
  })

  beforeAll(async () => {
    host = await startLocalE2B({ logger: () => {} })
  })
  afterAll(async () => {
    const provider = createE2BProvider(config().connection)
    for (const sandbox of (await provider.list?.({ metadata: { 'sandkeep.tenant': tenant } }))?.sandboxes ??
      [])
      await provider.kill(sandbox.sandboxId).catch(() => false)
    await host.close()
  })

  it('exits on its own after close(), with the turn lifecycle logged and no API key anywhere', async () => {
    const run = await runScript({ ...config(), conversationId: `conv-${randomUUID()}`, close: true }, 60_000)
    expect(run.stderr).toBe('')
    expect(run.hung).toBe(false)
    expect(run.code).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((entry) => JSON.parse(entry) as { message?: string; closed?: { drained: boolean } })
    expect(lines.flatMap((entry) => (entry.message ? [entry.message] : []))).toEqual([
      'turn begin',
      'resume created',
      'sandbox paused',
      'turn end',
      'turn begin',
      'resume resumed',
      'sandbox paused',
      'turn end',
      'manager closing',
      'manager closed',
    ])
    expect(lines.find((entry) => entry.closed)?.closed).toMatchObject({ drained: true, storeClosed: true })
    expect(run.stdout).not.toContain(host.apiKey)
  })

  it('without close() the same script does not exit (what close() fixes)', async () => {
    // The child is killed 3 s after its last turn; a script that exits by itself does so within milliseconds.
    const run = await runScript({ ...config(), conversationId: `conv-${randomUUID()}`, close: false }, 3000)
    expect(run.hung).toBe(true)
  })
})
