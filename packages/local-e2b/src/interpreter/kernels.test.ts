// The python, javascript and bash kernels through the real @e2b/code-interpreter SDK.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { OutputMessage } from '@e2b/code-interpreter'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { closeHarnesses, type Harness, startHarness } from './test-harness.js'

afterAll(closeHarnesses)

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
