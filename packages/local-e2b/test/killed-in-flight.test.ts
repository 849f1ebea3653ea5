// A sandbox killed (or timed out) while a command, a terminal or a cell runs: like E2B, whose edge drops the
// connection when the sandbox's machine goes away, the host drops it too. The SDKs then check the sandbox's
// health, find it gone and raise their TimeoutError saying the sandbox was killed, instead of resolving
// with an Execution or raising an error frame's message.
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { Sandbox, TimeoutError } from 'e2b'
import { describe, expect, it } from 'vitest'
import { useTestHost, waitUntil } from './helpers.js'

const KILLED_COMMAND = /sandbox was killed or reached its end of life/
const KILLED_CELL = /sandbox was killed while the request was in progress/

/** Resolves once `sandboxId` runs a process whose command line contains `needle`. */
async function running(sandbox: Sandbox, needle: string): Promise<void> {
  await waitUntil(async () => (await sandbox.commands.list()).some((p) => p.args.join(' ').includes(needle)))
}

describe('a sandbox killed while requests are in flight', () => {
  const t = useTestHost()

  it('a background command and a foreground one raise TimeoutError: the sandbox was killed', async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    const background = await sandbox.commands.run('sleep 60', { background: true })
    const foreground = sandbox.commands.run('sleep 61').catch((error: unknown) => error)
    await running(sandbox, 'sleep 61')
    await sandbox.kill()
    for (const error of [await background.wait().catch((e: unknown) => e), await foreground]) {
      expect(error).toBeInstanceOf(TimeoutError)
      expect((error as Error).message).toMatch(KILLED_COMMAND)
    }
  })

  it('a terminal raises the same', async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    const terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: () => {} })
    await sandbox.kill()
    const error = await terminal.wait().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TimeoutError)
    expect((error as Error).message).toMatch(KILLED_COMMAND)
  })

  it('a sandbox that reaches its timeout while a command runs raises the same', async () => {
    const sandbox = await Sandbox.create({ ...t.opts, timeoutMs: 1_500 })
    const error = await sandbox.commands.run('sleep 60').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TimeoutError)
    expect((error as Error).message).toMatch(KILLED_COMMAND)
  })

  it('runCode rejects with TimeoutError: the sandbox was killed, for a running and a queued cell', async () => {
    const sandbox = await CodeSandbox.create({ ...t.opts })
    await sandbox.runCode('1')
    const printed: string[] = []
    const cell = sandbox.runCode("import time; print('sleeping', flush=True); time.sleep(300)", {
      timeoutMs: 300_000,
      onStdout: (message) => void printed.push(message.line),
    })
    const queued = sandbox.runCode('2', { timeoutMs: 300_000 })
    const outcomes = Promise.allSettled([cell, queued])
    await waitUntil(() => printed.length > 0)
    await sandbox.kill()
    for (const outcome of await outcomes) {
      expect(outcome.status).toBe('rejected')
      const reason = (outcome as PromiseRejectedResult).reason
      expect(reason).toBeInstanceOf(TimeoutError)
      expect((reason as Error).message).toMatch(KILLED_CELL)
    }
  })
})
