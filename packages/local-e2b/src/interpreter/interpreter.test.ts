// The interpreter on its own: kernels spawned with plain child_process (no sandbox), its handle() behind a real
// node:http server, driven by the real @e2b/code-interpreter SDK (debug mode makes no API call and sends
// runCode/contexts traffic to `sandboxUrl`).
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { NotFoundError } from '@e2b/code-interpreter'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { kernelHostDirectory } from './index.js'
import { closeHarnesses, type Harness, running, startHarness, stopHarness } from './test-harness.js'

afterAll(closeHarnesses)

describe('contexts through the SDK', () => {
  let harness: Harness
  beforeAll(async () => {
    harness = await startHarness()
  })

  it('lists a default python and javascript context', async () => {
    const contexts = await harness.sandbox.listCodeContexts()
    expect(contexts.map((context) => context.language)).toEqual(['python', 'javascript'])
    expect(contexts.every((context) => context.cwd === '/home/user')).toBe(true)
  })

  it('creates independent contexts, restarts and removes them', async () => {
    await harness.sandbox.runCode('shared = 1')
    const context = await harness.sandbox.createCodeContext({ language: 'python', cwd: '/tmp' })
    expect(context.language).toBe('python')
    expect(context.cwd).toBe('/tmp')
    const listed = await harness.sandbox.listCodeContexts()
    expect(listed.at(-1)).toEqual(context)

    expect((await harness.sandbox.runCode('shared', { context })).error?.value).toBe(
      "name 'shared' is not defined",
    )
    expect((await harness.sandbox.runCode('import os; os.getcwd()', { context })).text).toBe('/tmp')
    await harness.sandbox.runCode('mine = 2', { context })
    expect((await harness.sandbox.runCode('mine', { context })).text).toBe('2')

    await harness.sandbox.restartCodeContext(context)
    const after = await harness.sandbox.runCode('mine', { context })
    expect(after.error?.name).toBe('NameError')
    expect(after.executionCount).toBe(1)
    expect((await harness.sandbox.runCode('shared')).text).toBe('1')

    await harness.sandbox.removeCodeContext(context.id)
    expect((await harness.sandbox.listCodeContexts()).map((entry) => entry.id)).not.toContain(context.id)
    await expect(harness.sandbox.runCode('1', { context })).rejects.toBeInstanceOf(NotFoundError)
    await expect(harness.sandbox.restartCodeContext(context)).rejects.toBeInstanceOf(NotFoundError)
    await expect(harness.sandbox.removeCodeContext(context)).rejects.toBeInstanceOf(NotFoundError)
  })

  it('creates javascript contexts, including the ts alias', async () => {
    const context = await harness.sandbox.createCodeContext({ language: 'ts' })
    expect(context.language).toBe('typescript')
    expect((await harness.sandbox.runCode('1 + 2', { context })).text).toBe('3')
  })

  it('refuses a context whose cwd does not exist with 400 (bad input), and leaves nothing behind', async () => {
    const before = (await harness.sandbox.listCodeContexts()).length
    await expect(
      harness.sandbox.createCodeContext({ cwd: `/nonexistent-${Math.random().toString(36).slice(2)}` }),
    ).rejects.toThrow(/400/)
    expect((await harness.sandbox.listCodeContexts()).length).toBe(before)
  })
})

describe('kernel lifecycle', () => {
  let harness: Harness
  afterEach(async () => {
    if (harness) await stopHarness(harness)
  })

  it('interrupts a cell the client abandoned, keeping the memory', async () => {
    harness = await startHarness()
    await harness.sandbox.runCode('kept = "yes"')
    await expect(
      harness.sandbox.runCode('import time; time.sleep(300)', { timeoutMs: 1_000 }),
    ).rejects.toThrow()
    const next = await harness.sandbox.runCode('kept', { timeoutMs: 30_000 })
    expect(next.text).toBe('yes')
    expect(harness.events.some((event) => event.type === 'kernel-interrupt')).toBe(true)
  })

  it('stops an abandoned synchronous javascript loop', async () => {
    harness = await startHarness()
    await harness.sandbox.runCode('globalThis.kept = 5', { language: 'js' })
    await expect(
      harness.sandbox.runCode('while (true) {}', { language: 'js', timeoutMs: 1_000 }),
    ).rejects.toThrow()
    expect((await harness.sandbox.runCode('kept', { language: 'js', timeoutMs: 30_000 })).text).toBe('5')
  })

  it('abandons a javascript cell waiting on a promise, keeping the memory', async () => {
    harness = await startHarness()
    await harness.sandbox.runCode('globalThis.kept = 6', { language: 'js' })
    await expect(
      harness.sandbox.runCode('await new Promise(() => {})', { language: 'js', timeoutMs: 1_000 }),
    ).rejects.toThrow()
    expect((await harness.sandbox.runCode('kept * 7', { language: 'js', timeoutMs: 30_000 })).text).toBe('42')
    expect(harness.events.some((event) => event.type === 'kernel-kill')).toBe(false)
  })

  it('ends a running cell with ContextRestarting when its context is restarted', async () => {
    harness = await startHarness()
    const context = await harness.sandbox.createCodeContext()
    const running = harness.sandbox.runCode('print("started", flush=True)\nimport time; time.sleep(60)', {
      context,
      timeoutMs: 30_000,
      onStdout: () => {
        void harness.sandbox.restartCodeContext(context)
      },
    })
    const execution = await running
    expect(execution.logs.stdout).toEqual(['started\n'])
    expect(execution.error?.name).toBe('ContextRestarting')
    expect((await harness.sandbox.runCode('1 + 1', { context })).text).toBe('2')
  })

  it('replaces a kernel that ignores the interrupt (memory lost, context kept)', async () => {
    harness = await startHarness()
    await harness.sandbox.runCode('lost = 1')
    const stubborn =
      'import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass'
    await expect(harness.sandbox.runCode(stubborn, { timeoutMs: 1_000 })).rejects.toThrow()
    const next = await harness.sandbox.runCode('lost', { timeoutMs: 30_000 })
    expect(next.error?.name).toBe('NameError')
    expect(harness.events.some((event) => event.type === 'kernel-kill')).toBe(true)
  })

  it('cold-starts a kernel that died, reporting the death in the cell that saw it', async () => {
    harness = await startHarness()
    await harness.sandbox.runCode('state = 1')
    const death = await harness.sandbox.runCode('import os, signal; os.kill(os.getpid(), signal.SIGKILL)')
    expect(death.error?.name).toBe('ContextRestarting')
    const next = await harness.sandbox.runCode('state')
    expect(next.error?.name).toBe('NameError')
    expect(next.executionCount).toBe(1)
    const exits = harness.events.filter((event) => event.type === 'kernel-exit')
    expect(exits.at(-1)?.detail).toMatchObject({ expected: false, signal: 'SIGKILL' })
  })

  it('reset() forgets kernels but keeps contexts; close() stops every kernel', async () => {
    harness = await startHarness()
    const before = await harness.sandbox.listCodeContexts()
    await harness.sandbox.runCode('x = 1')
    await harness.sandbox.runCode('y = 2', { language: 'js' })
    const kernels = harness.children.filter(running)
    expect(kernels.length).toBe(2)
    harness.interpreter.reset()
    expect((await harness.sandbox.runCode('x')).error?.name).toBe('NameError')
    expect((await harness.sandbox.listCodeContexts()).map((context) => context.id)).toEqual(
      before.map((context) => context.id),
    )
    await harness.interpreter.close()
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(harness.children.filter(running)).toEqual([])
  })
})

describe('HTTP surface', () => {
  let harness: Harness
  beforeAll(async () => {
    harness = await startHarness()
  })

  const post = (path: string, body: string) =>
    fetch(`${harness.url}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } })

  it('answers /health', async () => {
    const response = await fetch(`${harness.url}/health`)
    expect(response.status).toBe(200)
    expect(await response.json()).toBe('OK')
  })

  it('streams NDJSON ending with end_of_execution', async () => {
    const response = await post('/execute', JSON.stringify({ code: 'print("hi")\n1 + 1' }))
    expect(response.status).toBe(200)
    const lines = (await response.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(lines.map((line) => line.type)).toEqual([
      'number_of_executions',
      'stdout',
      'result',
      'end_of_execution',
    ])
    expect(lines[1]).toMatchObject({ text: 'hi\n' })
    expect(typeof lines[1]?.timestamp).toBe('string')
    expect(lines[2]).toEqual({ type: 'result', text: '2', is_main_result: true })
  })

  it('sends a long print as stdout lines of at most 64 Ki characters that join back to it', async () => {
    // 200 000 characters with an astral character (a surrogate pair) across the first 64 Ki boundary.
    const code = `print('a' * 65535 + '\\U0001F600' + 'b' * 134463, end='')`
    const response = await post('/execute', JSON.stringify({ code }))
    const lines = (await response.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; text?: string })
    const printed = lines.filter((line) => line.type === 'stdout').map((line) => line.text ?? '')
    expect(printed.length).toBeGreaterThanOrEqual(4)
    for (const text of printed) expect(text.length).toBeLessThanOrEqual(64 * 1024)
    expect(printed.join('')).toBe(`${'a'.repeat(65535)}\u{1F600}${'b'.repeat(134463)}`)
  })

  it('refuses bad input with a clear status and message before running anything', async () => {
    const cases: [string, string, number, RegExp][] = [
      ['/execute', '{not json', 400, /not valid JSON/],
      ['/execute', '[]', 400, /JSON object/],
      ['/execute', JSON.stringify({ code: 42 }), 400, /code must be a string/],
      ['/execute', JSON.stringify({ code: '1', context_id: 'abc', language: 'python' }), 400, /Only one of/],
      // A language without a kernel: E2B's answer when its Jupyter has no such kernel.
      [
        '/execute',
        JSON.stringify({ code: '1', language: 'cobol' }),
        500,
        /Failed to create context: .*no kernel/,
      ],
      ['/contexts', JSON.stringify({ language: 'fortran' }), 500, /Failed to create context: .*no kernel/],
      ['/execute', JSON.stringify({ code: '1', env_vars: { A: 1 } }), 400, /must be a string/],
      ['/execute', JSON.stringify({ code: '1', env_vars: { 'A=B': 'x' } }), 400, /invalid name/],
      ['/execute', JSON.stringify({ code: '1', context_id: 'x'.repeat(10_000) }), 404, /not found/],
      ['/execute', JSON.stringify({ code: '1', context_id: 'no-such-context' }), 404, /not found/],
      ['/contexts', JSON.stringify({ cwd: 'relative/path' }), 400, /absolute/],
      ['/contexts', JSON.stringify({ cwd: '/tmp/\u0001' }), 400, /control characters/],
      ['/contexts', JSON.stringify({ language: 7 }), 400, /must be a string/],
      ['/contexts/no-such-context/restart', '', 404, /not found/],
      ['/nowhere', '', 404, /Not Found/],
    ]
    const kernelsBefore = harness.children.length
    for (const [path, body, status, message] of cases) {
      const response = await post(path, body)
      expect(response.status, `${path} ${body.slice(0, 60)}`).toBe(status)
      expect(await response.text()).toMatch(message)
    }
    expect((await fetch(`${harness.url}/contexts/nope`, { method: 'DELETE' })).status).toBe(404)
    expect((await fetch(`${harness.url}/execute`)).status).toBe(405)
    expect(harness.children.length).toBe(kernelsBefore)
  })

  it('runs concurrent cells of one context one after the other', async () => {
    await harness.sandbox.runCode('order = []')
    await Promise.all(
      [1, 2, 3].map((index) =>
        harness.sandbox.runCode(`import time; time.sleep(0.05); order.append(${index})`),
      ),
    )
    const order = (await harness.sandbox.runCode('sorted(order) == [1, 2, 3] and len(order)')).text
    expect(order).toBe('3')
  })

  it('finds the kernels directory', () => {
    expect(existsSync(join(kernelHostDirectory(), 'python-kernel.py'))).toBe(true)
    expect(existsSync(join(kernelHostDirectory(), 'javascript-kernel.mjs'))).toBe(true)
  })
})
