// The code interpreter end to end: the real @e2b/code-interpreter SDK against startLocalE2B(), kernels running
// inside the sandbox (bubblewrap when available). What a client of E2B's port 49999 relies on.
import { NotFoundError, Sandbox } from '@e2b/code-interpreter'
import { describe, expect, it } from 'vitest'
import { contextsOf, useTestHost, waitUntil } from './helpers.js'

describe('code interpreter end to end', () => {
  const t = useTestHost()
  const create = (options: Record<string, unknown> = {}) =>
    Sandbox.create({ ...t.opts, template: 'code-interpreter-v1', ...options } as never)

  it('x = 41 + 1, then x gives 42; the execution counter counts cells', async () => {
    const sandbox = await create()
    const first = await sandbox.runCode('x = 41 + 1')
    expect(first.error).toBeUndefined()
    expect(first.results).toEqual([])
    const second = await sandbox.runCode('x')
    expect(second.text).toBe('42')
    expect(second.executionCount).toBe((first.executionCount ?? 0) + 1)
  })

  it('stdout reaches onStdout before the cell ends', async () => {
    const sandbox = await create()
    // The cell cannot finish until the onStdout callback has written the flag file through the files API,
    // so this passes only if the first line was streamed while the cell was still running.
    const flag = `/home/user/flag-${Math.random().toString(36).slice(2)}`
    const seen: string[] = []
    const execution = await sandbox.runCode(
      `import os, time\nprint("started")\nwhile not os.path.exists(${JSON.stringify(flag)}):\n    time.sleep(0.01)\nprint("finished")`,
      {
        timeoutMs: 30_000,
        onStdout: async (message) => {
          seen.push(message.line)
          if (message.line === 'started\n') await sandbox.files.write(flag, '')
        },
      },
    )
    expect(seen).toEqual(['started\n', 'finished\n'])
    expect(execution.logs.stdout).toEqual(['started\n', 'finished\n'])
  })

  // Rich output: display() and _repr_*_ objects reach execution.results as E2B's server sends them.
  it('display() and _repr_png_/_repr_svg_/_repr_json_/_repr_markdown_ objects arrive as execution.results', async () => {
    const sandbox = await create()
    const onResult: string[][] = []
    const execution = await sandbox.runCode(
      [
        'import base64, struct, zlib',
        'def chunk(kind, body):',
        '    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))',
        '# a real 1x1 red PNG, built here so the test needs no imaging library',
        'PNG = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) + \\',
        '    chunk(b"IDAT", zlib.compress(b"\\x00\\xff\\x00\\x00")) + chunk(b"IEND", b"")',
        'class Plot:',
        '    def _repr_png_(self): return PNG',
        '    def _repr_svg_(self): return "<svg xmlns=\'http://www.w3.org/2000/svg\'/>"',
        '    def __repr__(self): return "<Plot>"',
        'class Table:',
        '    def _repr_json_(self): return {"rows": [1, 2]}',
        '    def _repr_markdown_(self): return "| a |\\n|---|\\n| 1 |"',
        '    def _repr_html_(self): return "<table><tr><td>1</td></tr></table>"',
        '    def __repr__(self): return "Table(1 row)"',
        'print("before")',
        'display(Plot())',
        'Table()',
      ].join('\n'),
      { onResult: (result) => void onResult.push(result.formats()) },
    )
    expect(execution.error).toBeUndefined()
    expect(execution.logs.stdout).toEqual(['before\n'])
    expect(execution.results).toHaveLength(2)
    const [plot, table] = execution.results
    expect(plot?.isMainResult).toBe(false)
    expect(plot?.text).toBe('<Plot>')
    const png = Buffer.from(plot?.png ?? '', 'base64')
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    expect(png.subarray(12, 16).toString('latin1')).toBe('IHDR')
    expect(plot?.svg).toBe("<svg xmlns='http://www.w3.org/2000/svg'/>")
    expect(table?.isMainResult).toBe(true)
    expect(execution.text).toBe('Table(1 row)')
    // The server sends application/json as the JSON value itself, as Jupyter does (not its text).
    expect(table?.json).toEqual({ rows: [1, 2] })
    expect(table?.markdown).toBe('| a |\n|---|\n| 1 |')
    expect(table?.html).toBe('<table><tr><td>1</td></tr></table>')
    expect(onResult).toEqual([
      ['svg', 'png'],
      ['html', 'markdown', 'json'],
    ])
    // _repr_mimebundle_ and a (data, metadata) pair are honoured; a broken _repr_ leaves the plain text.
    const bundle = await sandbox.runCode(
      [
        'class Rich:',
        '    def _repr_mimebundle_(self, include=None, exclude=None):',
        '        return {"text/html": "<i>rich</i>", "application/vnd.custom+json": {"k": 1}}, {}',
        '    def _repr_png_(self): raise RuntimeError("no")',
        '    def __repr__(self): return "Rich()"',
        'Rich()',
      ].join('\n'),
    )
    expect(bundle.results[0]?.html).toBe('<i>rich</i>')
    expect(bundle.results[0]?.png).toBeUndefined()
    expect(bundle.results[0]?.text).toBe('Rich()')
    expect(bundle.results[0]?.raw.extra).toEqual({ 'application/vnd.custom+json': { k: 1 } })
  })

  it('an exception arrives as execution.error with a traceback', async () => {
    const sandbox = await create()
    const errors: string[] = []
    const execution = await sandbox.runCode('def divide(a, b):\n    return a / b\n\ndivide(1, 0)', {
      onError: (error) => errors.push(error.value),
    })
    expect(execution.error?.name).toBe('ZeroDivisionError')
    expect(execution.error?.value).toBe('division by zero')
    expect(execution.error?.traceback).toContain('return a / b')
    expect(errors).toEqual(['division by zero'])
    // The context survives its errors.
    expect((await sandbox.runCode('2 + 2')).text).toBe('4')
  })

  it('javascript keeps state across cells, with top-level await', async () => {
    const sandbox = await create()
    await sandbox.runCode(
      'const greeting = "hello"\nlet calls = 0\nfunction greet(name) { calls++; return greeting + " " + name }',
      {
        language: 'javascript',
      },
    )
    expect((await sandbox.runCode('greet("sandbox")', { language: 'javascript' })).text).toBe('hello sandbox')
    const awaited = await sandbox.runCode(
      'const later = await new Promise((r) => setTimeout(() => r(calls), 5))\nlater',
      {
        language: 'js',
      },
    )
    expect(awaited.text).toBe('1')
    expect((await sandbox.runCode('later + calls', { language: 'js' })).text).toBe('2')
    const logged = await sandbox.runCode('console.log("out"); console.error("err")', { language: 'js' })
    expect(logged.logs).toEqual({ stdout: ['out\n'], stderr: ['err\n'] })
  })

  it('bash contexts keep their shell inside the sandbox', async () => {
    const sandbox = await create()
    const context = await contextsOf(sandbox, t.opts.sandboxUrl).create({ language: 'bash' })
    expect(context.language).toBe('bash')
    await sandbox.runCode('cd /tmp && export STEP=1', { context })
    const execution = await sandbox.runCode('echo $STEP; pwd', { context })
    expect(execution.logs.stdout.join('')).toBe(
      t.host.isolation === 'bubblewrap' ? '1\n/tmp\n' : expect.stringMatching(/^1\n/),
    )
    const first = await sandbox.runCode('pwd', { language: 'bash' })
    expect(first.logs.stdout.join('').trim()).toMatch(/\/home\/user$/)
  })

  it('contexts: create, list, restart, delete', async () => {
    const sandbox = await create()
    const defaults = await contextsOf(sandbox, t.opts.sandboxUrl).list()
    expect(defaults.map((context) => context.language)).toEqual(['python', 'javascript'])
    await sandbox.runCode('outer = 1')

    const context = await contextsOf(sandbox, t.opts.sandboxUrl).create({ language: 'python', cwd: '/tmp' })
    expect(context).toMatchObject({ language: 'python', cwd: '/tmp' })
    expect((await contextsOf(sandbox, t.opts.sandboxUrl).list()).at(-1)).toEqual(context)
    expect((await sandbox.runCode('outer', { context })).error?.name).toBe('NameError')
    expect((await sandbox.runCode('import os; os.getcwd()', { context })).text).toBe(
      t.host.isolation === 'bubblewrap' ? '/tmp' : expect.stringMatching(/\/tmp$/),
    )
    await sandbox.runCode('inner = 2', { context })

    await contextsOf(sandbox, t.opts.sandboxUrl).restart(context)
    expect((await sandbox.runCode('inner', { context })).error?.name).toBe('NameError')
    expect((await sandbox.runCode('outer')).text).toBe('1')

    const js = await contextsOf(sandbox, t.opts.sandboxUrl).create({ language: 'javascript' })
    expect((await sandbox.runCode('typeof outer', { context: js })).text).toBe('undefined')

    await contextsOf(sandbox, t.opts.sandboxUrl).remove(context)
    await contextsOf(sandbox, t.opts.sandboxUrl).remove(js.id)
    expect((await contextsOf(sandbox, t.opts.sandboxUrl).list()).map((entry) => entry.id)).toEqual(
      defaults.map((entry) => entry.id),
    )
    await expect(sandbox.runCode('1', { context })).rejects.toBeInstanceOf(NotFoundError)
  })

  it('a context cwd that is not an enterable directory is bad input: 400, and no context is made', async () => {
    const sandbox = await create()
    await sandbox.commands.run('mkdir -p /home/user/locked && chmod 000 /home/user/locked')
    const before = await contextsOf(sandbox, t.opts.sandboxUrl).list()
    for (const cwd of ['/home/user/missing', '/no/such/dir', '/home/user/locked']) {
      for (const language of ['python', 'javascript', 'bash']) {
        await expect(contextsOf(sandbox, t.opts.sandboxUrl).create({ language, cwd })).rejects.toThrow(
          '400 Bad Request',
        )
      }
    }
    expect(await contextsOf(sandbox, t.opts.sandboxUrl).list()).toEqual(before)
    expect((await contextsOf(sandbox, t.opts.sandboxUrl).create({ cwd: '/usr/lib' })).cwd).toBe('/usr/lib')
  })

  it('typescript cells lose their types before they run; javascript cells are left as written', async () => {
    const sandbox = await create()
    const typed = await sandbox.runCode(
      [
        "import { basename } from 'node:path'",
        'interface Pair { left: number; right: number }',
        'enum Side { Left = 1, Right = 2 }',
        'const pair: Pair = { left: 40, right: Side.Right }',
        'const total = (p: Pair): number => p.left + p.right',
        "console.log(basename('/a/b.ts') as string)",
        'await Promise.resolve(total(pair))',
      ].join('\n'),
      { language: 'ts' },
    )
    expect(typed.error).toBeUndefined()
    expect(typed.logs.stdout).toEqual(['b.ts\n'])
    expect(typed.text).toBe('42')
    // Declarations persist in the context, as in javascript.
    expect(
      (await sandbox.runCode('total({ left: 1, right: 1 } as Pair)', { language: 'typescript' })).text,
    ).toBe('2')
    expect((await sandbox.runCode('const n: number = 1', { language: 'js' })).error?.name).toBe('SyntaxError')
  })

  it('a language without a kernel gets the answer E2B gives for one its Jupyter lacks: 500', async () => {
    const sandbox = await create()
    await expect(contextsOf(sandbox, t.opts.sandboxUrl).create({ language: 'cobol' })).rejects.toThrow(
      '500 Internal Server Error',
    )
    await expect(sandbox.runCode('1', { language: 'cobol' })).rejects.toThrow('500 Internal Server Error')
  })

  it('the traffic token opens neither the interpreter nor envd: only the envd access token runs code', async () => {
    const sandbox = await create()
    const other = await create()
    const token = (sandbox as unknown as { envdAccessToken?: string }).envdAccessToken ?? ''
    const traffic = (sandbox as unknown as { trafficAccessToken?: string }).trafficAccessToken ?? ''
    expect(traffic).toBeTruthy()
    const flag = '/home/user/ran-with-traffic-token'
    const call = (path: string, id: string, port: number, headers: Record<string, string>, body?: unknown) =>
      fetch(`${t.opts.sandboxUrl}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': String(port), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    const code = { code: `open(${JSON.stringify(flag)}, 'w').write('x')` }
    // What a browser holding a port URL's token could send: refused, and nothing ran.
    for (const headers of [{ 'E2B-Traffic-Access-Token': traffic }, { 'X-Access-Token': traffic }, {}]) {
      expect((await call('/execute', sandbox.sandboxId, 49999, headers, code)).status).toBe(401)
      expect((await call('/contexts', sandbox.sandboxId, 49999, headers)).status).toBe(401)
      expect(
        (await call('/contexts', sandbox.sandboxId, 49999, headers, { language: 'python' })).status,
      ).toBe(401)
      expect((await call('/files?path=/etc/hostname', sandbox.sandboxId, 49983, headers)).status).toBe(401)
    }
    expect(await sandbox.files.exists(flag)).toBe(false)
    // The SDK's context calls carry only the traffic token (@e2b/code-interpreter 2.8): refused as on E2B.
    await expect(sandbox.createCodeContext({ language: 'python' })).rejects.toThrow(/401|Unauthorized/)
    await expect(sandbox.listCodeContexts()).rejects.toThrow(/401|Unauthorized/)
    // Health stays open, the sandbox's own token works, another sandbox's token does not.
    expect((await call('/health', sandbox.sandboxId, 49999, {})).status).toBe(200)
    expect((await call('/contexts', sandbox.sandboxId, 49999, { 'X-Access-Token': token })).status).toBe(200)
    expect((await call('/contexts', other.sandboxId, 49999, { 'X-Access-Token': token })).status).toBe(401)
    expect((await sandbox.runCode('1 + 1')).text).toBe('2')
  })

  it('sandbox envs reach both kernels', async () => {
    const sandbox = await create({ envs: { SANDKEEP_E2E: 'from-create' } })
    expect((await sandbox.runCode('import os; os.environ["SANDKEEP_E2E"]')).text).toBe('from-create')
    expect((await sandbox.runCode('process.env.SANDKEEP_E2E', { language: 'js' })).text).toBe('from-create')
  })

  it('an abandoned cell is interrupted and the context keeps its memory (python and a busy javascript loop)', async () => {
    const sandbox = await create()
    await sandbox.runCode('kept = "python"')
    await sandbox.runCode('globalThis.kept = "javascript"', { language: 'js' })
    await expect(sandbox.runCode('import time; time.sleep(600)', { timeoutMs: 1_000 })).rejects.toThrow()
    await expect(sandbox.runCode('for (;;) {}', { language: 'js', timeoutMs: 1_000 })).rejects.toThrow()
    expect((await sandbox.runCode('kept', { timeoutMs: 30_000 })).text).toBe('python')
    expect((await sandbox.runCode('kept', { language: 'js', timeoutMs: 30_000 })).text).toBe('javascript')
  })

  it('a kernel killed inside the sandbox is detected and cold-started with its memory gone', async () => {
    const sandbox = await create()
    await sandbox.runCode('precious = 1')
    const pid = (await sandbox.runCode('import os; os.getpid()')).text
    expect(Number(pid)).toBeGreaterThan(0)
    // Kernels are the interpreter's, not envd's: E2B does not list them as commands.
    expect((await sandbox.commands.list()).map((process) => String(process.pid))).not.toContain(pid)
    await sandbox.commands.run(`kill -9 ${pid}`)
    // The exit may be recorded before the command's answer arrives: look at the log, not only at new events.
    await waitUntil(
      () =>
        t.host.events
          .list({ type: 'kernel-exit', sandboxId: sandbox.sandboxId })
          .some((event) => event.detail.expected === false),
      15_000,
    )
    const after = await sandbox.runCode('precious')
    expect(after.error?.name).toBe('NameError')
    expect(after.executionCount).toBe(1)
    expect((await sandbox.runCode('import os; os.getpid()')).text).not.toBe(pid)
  })
})

describe('interpreter memory under faults and retention', () => {
  const t = useTestHost({ retentionMs: 1_500 })
  const create = () => Sandbox.create({ ...t.opts, template: 'code-interpreter-v1' } as never)

  it('a dropped memory loses every kernel but keeps contexts; a cell running then ends with ContextRestarting', async () => {
    const sandbox = await create()
    await sandbox.runCode('x = 41 + 1')
    await sandbox.runCode('var y = 1', { language: 'js' })
    const contexts = (await contextsOf(sandbox, t.opts.sandboxUrl).list()).map((context) => context.id)
    const running = sandbox.runCode('print("started", flush=True)\nimport time; time.sleep(60)', {
      timeoutMs: 30_000,
      onStdout: () => {
        void t.host.faults.dropMemory(sandbox.sandboxId)
      },
    })
    expect((await running).error?.name).toBe('ContextRestarting')
    expect((await sandbox.runCode('x')).error?.name).toBe('NameError')
    expect((await sandbox.runCode('typeof y', { language: 'js' })).text).toBe('undefined')
    expect((await contextsOf(sandbox, t.opts.sandboxUrl).list()).map((context) => context.id)).toEqual(
      contexts,
    )
  })

  it('a restarted host brings sandboxes back without kernels; the first cell cold-starts one', async () => {
    const sandbox = await create()
    await sandbox.runCode('x = 41 + 1')
    await t.host.faults.restart()
    const back = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect((await back.runCode('x')).error?.name).toBe('NameError')
    expect((await back.runCode('x = 1\nx + 1')).text).toBe('2')
  })

  it('within retention a resume keeps the kernel memory; past it the sandbox is gone', async () => {
    const sandbox = await create()
    await sandbox.runCode('x = 41 + 1')
    await sandbox.pause()
    const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect((await resumed.runCode('x')).text).toBe('42')
    await resumed.pause()
    await waitUntil(
      () => t.host.events.list({ type: 'sandbox-expire', sandboxId: sandbox.sandboxId }).length > 0,
      15_000,
    )
    await expect(Sandbox.connect(sandbox.sandboxId, t.opts)).rejects.toMatchObject({
      name: 'SandboxNotFoundError',
    })
  })
})
