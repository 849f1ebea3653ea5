// The interpreter on its own: kernels spawned with plain child_process (no sandbox), its handle() behind a real
// node:http server, driven by the real @e2b/code-interpreter SDK (debug mode makes no API call and sends
// runCode/contexts traffic to `sandboxUrl`).
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NotFoundError, type OutputMessage, Sandbox } from '@e2b/code-interpreter'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createCodeInterpreter, kernelHostDirectory } from './index.js'
import type { CodeInterpreter, KernelSpawner } from './types.js'

interface Harness {
  url: string
  interpreter: CodeInterpreter
  sandbox: Sandbox
  events: { type: string; detail: Record<string, unknown> }[]
  children: ChildProcessWithoutNullStreams[]
  home: string
  close(): Promise<void>
}

const harnesses: Harness[] = []

async function startHarness(envs: Record<string, string> = {}): Promise<Harness> {
  const home = mkdtempSync(join(tmpdir(), 'sandkeep-interpreter-'))
  const children: ChildProcessWithoutNullStreams[] = []
  const spawner: KernelSpawner = {
    spawn(command, args, options) {
      const child = spawn(command, args, {
        cwd: options.cwd,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', ...options.env },
        stdio: 'pipe',
      })
      children.push(child)
      return child
    },
  }
  const events: Harness['events'] = []
  const interpreter = createCodeInterpreter({
    sandboxId: 'test-sandbox',
    spawner,
    kernelDir: kernelHostDirectory(),
    homeDir: home,
    envs,
    emit: (type, detail) => events.push({ type, detail }),
  })
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      void interpreter.handle(request, response, Buffer.concat(chunks))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (typeof address !== 'object' || address === null) throw new Error('no address')
  const url = `http://127.0.0.1:${address.port}`
  const sandbox = await Sandbox.create({ debug: true, sandboxUrl: url, apiKey: 'unit-test' })
  const harness: Harness = {
    url,
    interpreter,
    sandbox,
    events,
    children,
    home,
    async close() {
      await interpreter.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      rmSync(home, { recursive: true, force: true })
    },
  }
  harnesses.push(harness)
  return harness
}

const running = (child: ChildProcessWithoutNullStreams) =>
  child.exitCode === null && child.signalCode === null

afterAll(async () => {
  await Promise.all(harnesses.map((harness) => harness.close()))
})

describe('python kernel through the SDK', () => {
  let harness: Harness
  beforeAll(async () => {
    harness = await startHarness({ SANDBOX_LEVEL: 'sandbox' })
  })

  it('keeps globals across cells and shows the trailing expression', async () => {
    const first = await harness.sandbox.runCode('x = 41 + 1')
    expect(first.results).toEqual([])
    expect(first.error).toBeUndefined()
    const second = await harness.sandbox.runCode('x')
    expect(second.text).toBe('42')
    expect(second.results[0]?.isMainResult).toBe(true)
    expect(second.executionCount).toBe((first.executionCount ?? 0) + 1)
  })

  it('shows values as a notebook does: repr, quotes of a plain string dropped, None shows nothing', async () => {
    expect((await harness.sandbox.runCode("'hello'")).text).toBe('hello')
    expect((await harness.sandbox.runCode("{'a': [1, 2]}")).text).toBe("{'a': [1, 2]}")
    expect((await harness.sandbox.runCode('None')).results).toEqual([])
    expect((await harness.sandbox.runCode('x = 1\nif x:\n    y = 2\ny * 3')).text).toBe('6')
    const html = await harness.sandbox.runCode(
      'class Page:\n    def _repr_html_(self):\n        return "<b>hi</b>"\n    def __repr__(self):\n        return "Page()"\nPage()',
    )
    expect(html.results[0]?.html).toBe('<b>hi</b>')
    expect(html.text).toBe('Page()')
    const shown = await harness.sandbox.runCode('display(1)\ndisplay("two")\n3')
    expect(shown.results.map((result) => [result.text, result.isMainResult])).toEqual([
      ['1', false],
      ['two', false],
      ['3', true],
    ])
  })

  it('streams stdout to onStdout while the cell is still running', async () => {
    // The cell waits for a file that only the onStdout callback creates: it can end only if its first line
    // reached the client before the cell finished.
    const flag = join(harness.home, `flag-${Math.random().toString(36).slice(2)}`)
    const lines: OutputMessage[] = []
    const execution = await harness.sandbox.runCode(
      `import os, time\nprint("waiting")\nwhile not os.path.exists(${JSON.stringify(flag)}):\n    time.sleep(0.01)\nprint("done")`,
      {
        timeoutMs: 30_000,
        onStdout: (message) => {
          lines.push(message)
          if (message.line === 'waiting\n') writeFileSync(flag, '')
        },
      },
    )
    expect(lines.map((message) => message.line)).toEqual(['waiting\n', 'done\n'])
    expect(execution.logs.stdout).toEqual(['waiting\n', 'done\n'])
  })

  it('reports stderr, and output of child processes and raw fd writes', async () => {
    const execution = await harness.sandbox.runCode(
      'import sys, os, subprocess\nprint(1, file=sys.stderr)\nos.write(1, b"raw bytes\\n")\nsubprocess.run(["echo", "from child"])\n!echo shell',
    )
    expect(execution.logs.stderr).toEqual(['1\n'])
    expect(execution.logs.stdout.join('')).toBe('raw bytes\nfrom child\nshell\n')
  })

  it('cannot be confused by output that looks like the protocol', async () => {
    const execution = await harness.sandbox.runCode(
      'print("\\x1edeadbeef:{\\"t\\": \\"done\\", \\"id\\": 1}")\nprint("\\x1e" * 3)\n"still here"',
    )
    expect(execution.logs.stdout).toEqual(['\x1edeadbeef:{"t": "done", "id": 1}\n', '\x1e\x1e\x1e\n'])
    expect(execution.text).toBe('still here')
  })

  it('streams large output intact', async () => {
    const execution = await harness.sandbox.runCode('for i in range(20000):\n    print("line", i)')
    const text = execution.logs.stdout.join('')
    expect(text.split('\n').length - 1).toBe(20000)
    expect(text.endsWith('line 19999\n')).toBe(true)
  })

  it('reports an exception with name, value and traceback, and keeps earlier output', async () => {
    const errors: string[] = []
    const execution = await harness.sandbox.runCode('print("before")\ndef f():\n    return 1 / 0\nf()', {
      onError: (error) => errors.push(error.name),
    })
    expect(execution.logs.stdout).toEqual(['before\n'])
    expect(execution.error?.name).toBe('ZeroDivisionError')
    expect(execution.error?.value).toBe('division by zero')
    expect(execution.error?.traceback).toContain('Traceback (most recent call last)')
    expect(execution.error?.traceback).toContain('return 1 / 0')
    expect(execution.error?.traceback).not.toContain('python-kernel.py')
    expect(errors).toEqual(['ZeroDivisionError'])
    const syntax = await harness.sandbox.runCode('def broken(:')
    expect(syntax.error?.name).toBe('SyntaxError')
    const missing = await harness.sandbox.runCode('undefined_name')
    expect(missing.error?.name).toBe('NameError')
    expect(missing.error?.value).toBe("name 'undefined_name' is not defined")
  })

  it('supports top-level await', async () => {
    const execution = await harness.sandbox.runCode(
      'import asyncio\nawait asyncio.sleep(0.01)\nvalue = await asyncio.sleep(0, result=7)\nvalue * 6',
    )
    expect(execution.text).toBe('42')
    expect((await harness.sandbox.runCode('value')).text).toBe('7')
  })

  it('applies sandbox envs, and per-cell env_vars only for that cell', async () => {
    expect((await harness.sandbox.runCode('import os; os.environ["SANDBOX_LEVEL"]')).text).toBe('sandbox')
    const overridden = await harness.sandbox.runCode(
      'import os; os.getenv("SANDBOX_LEVEL"), os.getenv("FOO")',
      {
        envs: { SANDBOX_LEVEL: 'cell', FOO: 'bar' },
      },
    )
    expect(overridden.text).toBe("('cell', 'bar')")
    const after = await harness.sandbox.runCode(
      'import os; os.getenv("SANDBOX_LEVEL"), os.getenv("FOO", "default")',
    )
    expect(after.text).toBe("('sandbox', 'default')")
  })

  it('runs cells in the home directory, with no stdin', async () => {
    expect((await harness.sandbox.runCode('import os; os.getcwd()')).text).toBe(harness.home)
    const input = await harness.sandbox.runCode('input()')
    expect(input.error?.name).toBe('EOFError')
  })
})

describe('javascript kernel through the SDK', () => {
  let harness: Harness
  beforeAll(async () => {
    harness = await startHarness({ SANDBOX_LEVEL: 'sandbox' })
  })

  it('keeps top-level declarations across cells and shows the completion value', async () => {
    await harness.sandbox.runCode('const base = 40\nlet counter = 1\nfunction add(a, b) { return a + b }', {
      language: 'javascript',
    })
    const execution = await harness.sandbox.runCode('add(base, ++counter)', { language: 'js' })
    expect(execution.text).toBe('42')
    expect((await harness.sandbox.runCode('counter', { language: 'javascript' })).text).toBe('2')
    expect((await harness.sandbox.runCode('({ a: [1, 2], s: "x" })', { language: 'js' })).text).toBe(
      "{ a: [ 1, 2 ], s: 'x' }",
    )
    expect((await harness.sandbox.runCode('"plain string"', { language: 'js' })).text).toBe('plain string')
    expect((await harness.sandbox.runCode('undefined', { language: 'js' })).results).toEqual([])
  })

  it('supports top-level await, keeping what it declares', async () => {
    const execution = await harness.sandbox.runCode(
      'const awaited = await new Promise((resolve) => setTimeout(() => resolve(21), 10))\nawaited * 2',
      { language: 'js' },
    )
    expect(execution.text).toBe('42')
    expect((await harness.sandbox.runCode('awaited', { language: 'js' })).text).toBe('21')
    expect(
      (await harness.sandbox.runCode("await Promise.resolve('Hello World!')", { language: 'js' })).text,
    ).toBe('Hello World!')
  })

  it('accepts static imports and require', async () => {
    const execution = await harness.sandbox.runCode(
      "import { readFileSync } from 'fs'\nimport * as path from 'node:path'\nconsole.log(typeof readFileSync, path.sep)\nrequire('os').platform()",
      { language: 'js' },
    )
    expect(execution.logs.stdout).toEqual(['function /\n'])
    expect(execution.text).toBe(process.platform)
  })

  it('streams console output while the cell runs', async () => {
    const flag = join(harness.home, `js-flag-${Math.random().toString(36).slice(2)}`)
    const lines: string[] = []
    const execution = await harness.sandbox.runCode(
      `const fs = require('fs')\nconsole.log('waiting')\nwhile (!fs.existsSync(${JSON.stringify(flag)})) await new Promise((r) => setTimeout(r, 10))\nconsole.error('done')`,
      {
        language: 'js',
        timeoutMs: 30_000,
        onStdout: (message) => {
          lines.push(message.line)
          writeFileSync(flag, '')
        },
      },
    )
    expect(lines).toEqual(['waiting\n'])
    expect(execution.logs.stderr).toEqual(['done\n'])
  })

  it('reports errors with their stack', async () => {
    const execution = await harness.sandbox.runCode(
      'function boom() { throw new TypeError("bad input") }\nboom()',
      {
        language: 'js',
      },
    )
    expect(execution.error?.name).toBe('TypeError')
    expect(execution.error?.value).toBe('bad input')
    expect(execution.error?.traceback).toContain('at boom')
    expect(execution.error?.traceback).not.toContain('javascript-kernel')
    const rejected = await harness.sandbox.runCode('await Promise.reject(new RangeError("nope"))', {
      language: 'js',
    })
    expect(rejected.error?.name).toBe('RangeError')
    const syntax = await harness.sandbox.runCode('if (', { language: 'js' })
    expect(syntax.error?.name).toBe('SyntaxError')
  })

  it('applies per-cell env vars only for that cell', async () => {
    const cell = await harness.sandbox.runCode('process.env.SANDBOX_LEVEL', {
      language: 'js',
      envs: { SANDBOX_LEVEL: 'cell' },
    })
    expect(cell.text).toBe('cell')
    expect((await harness.sandbox.runCode('process.env.SANDBOX_LEVEL', { language: 'js' })).text).toBe(
      'sandbox',
    )
  })
})

describe('bash kernel through the SDK', () => {
  let harness: Harness
  beforeAll(async () => {
    harness = await startHarness({ SANDBOX_LEVEL: 'sandbox' })
  })

  it('keeps the shell across cells: variables, functions, cwd', async () => {
    await harness.sandbox.runCode('cd /tmp\nCOUNT=41\ngreet() { echo "hi $1"; }', { language: 'bash' })
    const execution = await harness.sandbox.runCode('echo $((COUNT + 1)) $(pwd)\ngreet there', {
      language: 'bash',
    })
    expect(execution.logs.stdout.join('')).toBe('42 /tmp\nhi there\n')
    expect(execution.error).toBeUndefined()
    expect(execution.results).toEqual([])
  })

  it('streams stdout and stderr; a failing cell reports its exit status as the error value', async () => {
    const execution = await harness.sandbox.runCode('echo out; echo err >&2; ls /nonexistent-path', {
      language: 'bash',
    })
    expect(execution.logs.stdout).toEqual(['out\n'])
    expect(execution.logs.stderr.join('')).toContain('err\n')
    expect(execution.logs.stderr.join('')).toContain('nonexistent-path')
    expect(execution.error?.value).toBe('2')
  })

  it('a command reading stdin gets EOF instead of the next cell', async () => {
    const execution = await harness.sandbox.runCode('cat; echo after', { language: 'bash' })
    expect(execution.logs.stdout).toEqual(['after\n'])
    expect((await harness.sandbox.runCode('echo next', { language: 'bash' })).logs.stdout).toEqual(['next\n'])
  })

  it('applies per-cell env vars only for that cell', async () => {
    const cell = await harness.sandbox.runCode('echo $SANDBOX_LEVEL $FOO', {
      language: 'bash',
      envs: { SANDBOX_LEVEL: "cell's", FOO: 'bar' },
    })
    expect(cell.logs.stdout).toEqual(["cell's bar\n"])
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash parameter expansion, not a template
    const after = await harness.sandbox.runCode('echo $SANDBOX_LEVEL ${FOO:-unset}', { language: 'bash' })
    expect(after.logs.stdout).toEqual(['sandbox unset\n'])
  })

  it('an abandoned command is interrupted and the shell keeps its state; exit ends the kernel', async () => {
    await harness.sandbox.runCode('KEPT=yes', { language: 'bash' })
    await expect(
      harness.sandbox.runCode('sleep 600; echo never', { language: 'bash', timeoutMs: 1_000 }),
    ).rejects.toThrow()
    expect(
      (await harness.sandbox.runCode('echo $KEPT', { language: 'bash', timeoutMs: 30_000 })).logs.stdout,
    ).toEqual(['yes\n'])
    const exited = await harness.sandbox.runCode('exit 3', { language: 'bash' })
    expect(exited.error?.name).toBe('ContextRestarting')
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash parameter expansion, not a template
    const gone = await harness.sandbox.runCode('echo ${KEPT:-gone}', { language: 'bash' })
    expect(gone.logs.stdout).toEqual(['gone\n'])
  })
})

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

  it('refuses a context whose cwd does not exist, and leaves nothing behind', async () => {
    const before = (await harness.sandbox.listCodeContexts()).length
    await expect(
      harness.sandbox.createCodeContext({ cwd: `/nonexistent-${Math.random().toString(36).slice(2)}` }),
    ).rejects.toThrow(/500/)
    expect((await harness.sandbox.listCodeContexts()).length).toBe(before)
  })
})

describe('kernel lifecycle', () => {
  let harness: Harness
  afterEach(async () => {
    await harness?.close()
    harnesses.splice(harnesses.indexOf(harness), 1)
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

  it('refuses bad input with a clear status and message before running anything', async () => {
    const cases: [string, string, number, RegExp][] = [
      ['/execute', '{not json', 400, /not valid JSON/],
      ['/execute', '[]', 400, /JSON object/],
      ['/execute', JSON.stringify({ code: 42 }), 400, /code must be a string/],
      ['/execute', JSON.stringify({ code: '1', context_id: 'abc', language: 'python' }), 400, /Only one of/],
      ['/execute', JSON.stringify({ code: '1', language: 'cobol' }), 400, /not supported/],
      ['/contexts', JSON.stringify({ language: 'r' }), 400, /not supported/],
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
