import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import { SandkeepError } from '../contract/errors.js'
import type { JournalStep } from '../contract/journal.js'
import { MAX_REPORTED_FAILURES, replayFailedError, replaySteps } from './rehydrate.js'

async function sandbox(options: Parameters<typeof createMockProvider>[0] = {}) {
  const provider = createMockProvider(options)
  const handle = await provider.create({ metadata: {} })
  return { provider, handle }
}

const never = new AbortController().signal

describe('replaySteps', () => {
  it('with "continue", reports a failing step and still runs every step after it', async () => {
    const { handle } = await sandbox()
    const steps: JournalStep[] = [
      { kind: 'command', command: 'exit 3' },
      ...Array.from({ length: 998 }, (_, i): JournalStep => ({ kind: 'code', code: `v${i} = ${i}` })),
      { kind: 'file', path: '/home/user/last.txt', content: 'done' },
    ]
    const outcome = await replaySteps({ sandbox: handle, signal: never }, steps, 'continue')
    expect(outcome).toMatchObject({ steps: 999, failed: 1, skipped: 0 })
    expect(outcome.failures).toEqual([{ step: 1, kind: 'command', message: 'exit 3: ' }])
    expect((await handle.runCode('v997')).text).toBe('997')
    expect(await handle.readFile('/home/user/last.txt')).toBe('done')
  })

  it('with "continue", a step the provider refuses is a failed step, not the end of the replay', async () => {
    const { provider, handle } = await sandbox()
    provider.failNext('runCommand', 'INVALID_ARGUMENT', { message: 'the command holds a NUL' })
    const outcome = await replaySteps(
      { sandbox: handle, signal: never },
      [
        { kind: 'command', command: 'echo a\0b' },
        { kind: 'code', code: 'x = 1' },
      ],
      'continue',
    )
    expect(outcome).toMatchObject({ steps: 1, failed: 1, skipped: 0 })
    expect(outcome.failures[0]).toMatchObject({
      step: 1,
      kind: 'command',
      message: 'the command holds a NUL',
    })
  })

  it('with "continue", stops when the sandbox itself is gone and counts the steps it did not run', async () => {
    const { provider, handle } = await sandbox()
    provider.failNext('runCode', 'SANDBOX_NOT_FOUND')
    const steps: JournalStep[] = [
      { kind: 'command', command: 'true' },
      { kind: 'code', code: 'x = 1' },
      { kind: 'code', code: 'y = 2' },
      { kind: 'code', code: 'z = 3' },
    ]
    const outcome = await replaySteps({ sandbox: handle, signal: never }, steps, 'continue')
    expect(outcome).toMatchObject({ steps: 1, failed: 1, skipped: 2 })
    expect(SandkeepError.hasCode(outcome.stoppedBy, 'SANDBOX_NOT_FOUND')).toBe(true)
    const error = replayFailedError(handle, outcome, outcome.failures)
    expect(error).toMatchObject({ code: 'PROVIDER_ERROR', cause: outcome.stoppedBy })
    expect(error.message).toMatch(/step 2 \(code\).*2 later steps were not run/)
  })

  it('with "continue", an abort is thrown', async () => {
    const { handle } = await sandbox()
    const controller = new AbortController()
    controller.abort(new Error('caller left'))
    await expect(
      replaySteps(
        { sandbox: handle, signal: controller.signal },
        [{ kind: 'command', command: 'true' }],
        'continue',
      ),
    ).rejects.toMatchObject({ code: 'ABORTED' })
  })

  it('describes the first failures one by one and counts the rest', async () => {
    const { handle } = await sandbox()
    const steps = Array.from({ length: 25 }, (): JournalStep => ({ kind: 'command', command: 'false' }))
    const outcome = await replaySteps({ sandbox: handle, signal: never }, steps, 'continue')
    expect(outcome).toMatchObject({ steps: 0, failed: 25 })
    expect(outcome.failures).toHaveLength(MAX_REPORTED_FAILURES)
    expect(replayFailedError(handle, outcome, outcome.failures).message).toMatch(/and 15 more/)
  })

  it('with "stop" (bootstrap), throws PROVIDER_ERROR at the first failing step', async () => {
    const { handle } = await sandbox()
    const steps: JournalStep[] = [
      { kind: 'code', code: 'a = 1' },
      { kind: 'command', command: 'exit 2' },
      { kind: 'code', code: 'b = 2' },
    ]
    await expect(replaySteps({ sandbox: handle, signal: never }, steps)).rejects.toMatchObject({
      code: 'PROVIDER_ERROR',
      message: expect.stringContaining('Setup step 2 (command) failed: exit 2'),
    })
    expect((await handle.runCode('b')).error).not.toBeNull()
  })
})
