// What the conformance suite does not cover: options and environment pass-through, credentials, errors at the
// boundary, streaming, aborts, interpreter contexts, and `native`, against a real local-e2b host.
import { Sandbox } from '@e2b/code-interpreter'
import { SandkeepError } from '@sandkeep/core'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createE2BProvider } from '../src/index.js'

describe('createE2BProvider against local-e2b', () => {
  let host: LocalE2BHost
  const created: string[] = []
  const options = () => ({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl })

  beforeAll(async () => {
    host = await startLocalE2B({ logger: () => {} })
  })
  afterAll(async () => {
    const provider = createE2BProvider(options())
    for (const id of created) await provider.kill(id).catch(() => false)
    await host.close()
  })

  it('takes its connection from the E2B_* environment variables when no option is given', async () => {
    const saved = { ...process.env }
    Object.assign(process.env, host.env)
    try {
      const provider = createE2BProvider()
      const sandbox = await provider.create({ metadata: { test: 'env' } })
      created.push(sandbox.id)
      expect((await sandbox.runCommand('echo $HOME')).stdout).toBe('/home/user\n')
      expect(sandbox.native).toBeInstanceOf(Sandbox)
      expect(sandbox.native.sandboxId).toBe(sandbox.id)
    } finally {
      for (const key of Object.keys(host.env)) {
        if (saved[key] === undefined) delete process.env[key]
        else process.env[key] = saved[key]
      }
    }
  })

  it('turns internet access off by default and passes metadata, envs and timeout', async () => {
    const provider = createE2BProvider(options())
    const sandbox = await provider.create({
      metadata: { 'sandkeep.tenant': 'acme' },
      envs: { GREETING: 'hello' },
      timeoutMs: 120_000,
    })
    created.push(sandbox.id)
    const info = await provider.getInfo?.(sandbox.id)
    expect(info?.metadata['sandkeep.tenant']).toBe('acme')
    expect(await sandbox.native.getInfo()).toMatchObject({ allowInternetAccess: false })
    expect((await sandbox.runCommand('echo $GREETING')).stdout).toBe('hello\n')
    expect((info?.endAt?.getTime() ?? 0) - Date.now()).toBeGreaterThan(60_000)
  })

  it('a wrong API key is PROVIDER_AUTH and the key appears nowhere in the error', async () => {
    const secret = 'e2b_wrong_key_0123456789abcdef'
    const provider = createE2BProvider({ ...options(), apiKey: secret })
    const error = await provider.create({ metadata: {} }).catch((e: unknown) => e)
    expect(SandkeepError.hasCode(error, 'PROVIDER_AUTH')).toBe(true)
    const shown = `${String(error)} ${JSON.stringify(error)} ${(error as Error).stack}`
    expect(shown).not.toContain(secret)
    expect(JSON.stringify(provider)).not.toContain(secret)
  })

  it('is synchronous: an unreachable host fails the first call as retryable SANDBOX_UNAVAILABLE', async () => {
    const provider = createE2BProvider({
      apiKey: 'x',
      apiUrl: 'http://127.0.0.1:9',
      sandboxUrl: 'http://127.0.0.1:9',
    })
    const error = await provider.connect('abc').catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'SANDBOX_UNAVAILABLE', retryable: true })
  })

  it('refuses bad options before any I/O', () => {
    expect(() => createE2BProvider({ apiKey: '' })).toThrow(SandkeepError)
    expect(() => createE2BProvider({ apiUrl: 'not a url' })).toThrow(/URL/)
    expect(() => createE2BProvider({ colour: 'red' } as never)).toThrow(/no option 'colour'/)
    expect(() => createE2BProvider({ requestTimeoutMs: -1 })).toThrow(/requestTimeoutMs/)
    for (const maxOutputChars of [0, 1.5, -3]) {
      expect(() => createE2BProvider({ maxOutputChars })).toThrow(/maxOutputChars must be a positive integer/)
    }
  })

  it('streams output, kills an aborted command, and keeps code contexts apart', async () => {
    const provider = createE2BProvider(options())
    const sandbox = await provider.create({ metadata: {} })
    created.push(sandbox.id)
    const chunks: string[] = []
    const result = await sandbox.runCommand('echo one; echo two >&2; exit 4', {
      onStdout: (chunk) => chunks.push(chunk),
    })
    expect(result).toEqual({ exitCode: 4, stdout: 'one\n', stderr: 'two\n' })
    expect(chunks.join('')).toBe('one\n')

    // A command the abort did not end would run 300 s, far past the test's timeout: that it rejects at all
    // is the check, not how soon (a bound on the time taken is one a loaded machine can break).
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 300)
    const aborted = await sandbox
      .runCommand('sleep 300', { signal: controller.signal })
      .catch((e: unknown) => e)
    expect(aborted).toMatchObject({ code: 'ABORTED' })

    const late = await sandbox.runCommand('echo started; sleep 30', { timeoutMs: 1000 })
    expect(late.exitCode).toBe(-1)
    expect(late.stdout).toBe('started\n')
    expect(late.stderr).toMatch(/timed out after 1000 ms/)

    const js = await sandbox.runCode('const k = 20; k + 22', { language: 'javascript' })
    expect(js.text).toBe('42')
    // @e2b/code-interpreter 2.8's createCodeContext sends only the traffic token, which the interpreter refuses
    // (as E2B's does); a context made with the sandbox's envd access token.
    const made = await fetch(`${host.sandboxUrl}/contexts`, {
      method: 'POST',
      headers: {
        'E2b-Sandbox-Id': sandbox.id,
        'E2b-Sandbox-Port': '49999',
        'X-Access-Token': (sandbox.native as unknown as { envdAccessToken?: string }).envdAccessToken ?? '',
      },
      body: JSON.stringify({ language: 'python' }),
    })
    const context = (await made.json()) as { id: string }
    await sandbox.runCode('scoped = 1', { contextId: context.id })
    expect((await sandbox.runCode("globals().get('scoped')", { contextId: context.id })).text).toBe('1')
    expect((await sandbox.runCode("globals().get('scoped')")).text).toBeNull()
    const printed: string[] = []
    const cell = await sandbox.runCode('print("streamed")', { onStdout: (chunk) => printed.push(chunk) })
    expect(cell.stdout).toBe('streamed\n')
    expect(printed.join('')).toBe('streamed\n')
  })

  it('caps stdout, stderr and a result text at maxOutputChars: beginning and end kept, a marker between', async () => {
    const provider = createE2BProvider({ ...options(), maxOutputChars: 1000 })
    const sandbox = await provider.create({ metadata: {} })
    created.push(sandbox.id)
    const marker =
      /\n\[sandkeep: (\d+) characters left out here; the output was (\d+) characters, over the provider's maxOutputChars of 1000/
    const expectCapped = (text: string, head: string, tail: string, total: number) => {
      expect(text.startsWith(head.repeat(500))).toBe(true)
      expect(text.endsWith(tail.repeat(500))).toBe(true)
      const found = marker.exec(text)
      expect(found?.slice(1).map(Number)).toEqual([total - 1000, total])
    }
    const streamed: string[] = []
    const cell = await sandbox.runCode(
      "import sys\nprint('a' * 100000 + 'z' * 1000, end='')\nprint('e' * 3000 + 'f' * 1000, end='', file=sys.stderr)\n'v' * 5000 + 'w' * 1000",
      { onStdout: (chunk) => streamed.push(chunk) },
    )
    expectCapped(cell.stdout, 'a', 'z', 101_000)
    expectCapped(cell.stderr, 'e', 'f', 4000)
    expectCapped(cell.text ?? '', 'v', 'w', 6000)
    expectCapped(cell.results?.find((r) => r.isMainResult)?.text ?? '', 'v', 'w', 6000)
    // The callbacks still see everything.
    expect(streamed.join('').length).toBe(101_000)
    const command = await sandbox.runCommand("printf 'a%.0s' $(seq 5000); printf 'z%.0s' $(seq 1000); exit 3")
    expect(command.exitCode).toBe(3)
    expectCapped(command.stdout, 'a', 'z', 6000)
    // Within the cap, output is returned whole.
    expect((await sandbox.runCommand("printf 'x%.0s' $(seq 1000)")).stdout).toBe('x'.repeat(1000))
    // A value too long to hold even as one line of the code interpreter's answer is left out with a note.
    const huge = await sandbox.runCode("'q' * 200000")
    expect(huge.text).toMatch(/^\[sandkeep: a result of \d+ bytes from the code interpreter was left out/)
    expect(huge.results).toEqual([{ isMainResult: true, text: huge.text }])
    // The interpreter is fine afterwards.
    expect((await sandbox.runCode('1 + 1')).text).toBe('2')
  })

  it('aborts a running cell when its signal fires', async () => {
    const provider = createE2BProvider(options())
    const sandbox = await provider.create({ metadata: {} })
    created.push(sandbox.id)
    const controller = new AbortController()
    const running = sandbox.runCode('import time\ntime.sleep(30)', {
      signal: controller.signal,
      timeoutMs: 60_000,
    })
    setTimeout(() => controller.abort(new Error('the user left')), 300)
    await expect(running).rejects.toMatchObject({ code: 'ABORTED' })
    // The kernel was interrupted, not left busy: the next cell runs.
    expect((await sandbox.runCode('21 * 2', { timeoutMs: 30_000 })).text).toBe('42')
  })

  // Rich tool output: execution.results reach CodeResult.results, provider-neutral.
  it('carries rich results (display() images, JSON, HTML) into CodeResult.results', async () => {
    const provider = createE2BProvider(options())
    const sandbox = await provider.create({ metadata: {} })
    created.push(sandbox.id)
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC',
      'base64',
    )
    const result = await sandbox.runCode(
      [
        'import base64',
        `PNG = base64.b64decode(${JSON.stringify(png.toString('base64'))})`,
        'class Plot:',
        '    def _repr_png_(self): return PNG',
        '    def __repr__(self): return "<Plot>"',
        'class Data:',
        '    def _repr_json_(self): return {"a": [1, 2]}',
        '    def _repr_html_(self): return "<b>a</b>"',
        '    def __repr__(self): return "Data()"',
        'display(Plot())',
        'Data()',
      ].join('\n'),
    )
    expect(result.error).toBeNull()
    expect(result.text).toBe('Data()')
    expect(result.results).toEqual([
      { isMainResult: false, text: '<Plot>', png: png.toString('base64') },
      { isMainResult: true, text: 'Data()', html: '<b>a</b>', json: { a: [1, 2] } },
    ])
    // A cell without a value or display has no results; the contract's array is still there.
    expect((await sandbox.runCode('y = 1')).results).toEqual([])
  })

  it('a 400 from the code interpreter is INVALID_ARGUMENT, a 5xx a retryable SANDBOX_UNAVAILABLE', async () => {
    const provider = createE2BProvider(options())
    const sandbox = await provider.create({ metadata: {} })
    created.push(sandbox.id)
    host.faults.failNext('execute', { status: 400, sandboxId: sandbox.id })
    expect(await sandbox.runCode('1').catch((e: unknown) => e)).toMatchObject({
      code: 'INVALID_ARGUMENT',
      retryable: false,
    })
    for (const status of [500, 503]) {
      host.faults.failNext('execute', { status, sandboxId: sandbox.id })
      expect(await sandbox.runCode('1').catch((e: unknown) => e)).toMatchObject({
        code: 'SANDBOX_UNAVAILABLE',
        retryable: true,
      })
    }
    expect((await sandbox.runCode('1 + 1')).text).toBe('2')
  })

  it('lists with a metadata filter across pages', async () => {
    const provider = createE2BProvider(options())
    const tag = `page-${Date.now()}`
    for (let i = 0; i < 3; i++) created.push((await provider.create({ metadata: { tag } })).id)
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = await provider.list!({ metadata: { tag }, limit: 2, ...(cursor ? { cursor } : {}) })
      seen.push(...page.sandboxes.map((s) => s.sandboxId))
      cursor = page.cursor
    } while (cursor)
    expect(seen.sort()).toEqual(created.slice(-3).sort())
  })

  it('passes lifecycle through: a sandbox made with onTimeout pause is paused at its timeout, not killed', async () => {
    const provider = createE2BProvider(options())
    expect(provider.createCapabilities).toEqual(['lifecycle', 'network', 'secure'])
    const paused = host.events.waitFor('sandbox-pause', () => true)
    const sandbox = await provider.create({
      metadata: {},
      timeoutMs: 2000,
      lifecycle: { onTimeout: 'pause', autoResume: false },
    })
    created.push(sandbox.id)
    expect(await sandbox.native.getInfo()).toMatchObject({
      lifecycle: { onTimeout: 'pause', autoResume: false },
    })
    await sandbox.writeFile('/home/user/kept.txt', 'still here')
    const event = await paused
    expect(event.sandboxId).toBe(sandbox.id)
    expect(host.events.list({ type: 'sandbox-timeout', sandboxId: sandbox.id })[0]?.detail).toEqual({
      action: 'pause',
    })
    expect((await provider.getInfo?.(sandbox.id))?.state).toBe('paused')
    const resumed = await provider.connect(sandbox.id, { timeoutMs: 60_000 })
    expect(await resumed.readFile('/home/user/kept.txt')).toBe('still here')
  })

  it('without lifecycle the platform kills at the timeout (the SDK default the manager changes)', async () => {
    const provider = createE2BProvider(options())
    const sandbox = await provider.create({ metadata: {}, timeoutMs: 2000 })
    created.push(sandbox.id)
    expect(await sandbox.native.getInfo()).toMatchObject({ lifecycle: { onTimeout: 'kill' } })
  })

  it('passes network ingress through: allowPublicTraffic false makes port requests want the traffic token', async () => {
    const provider = createE2BProvider(options())
    const portRequest = (sandboxId: string) =>
      fetch(`${host.sandboxUrl}/`, { headers: { 'E2b-Sandbox-Id': sandboxId, 'E2b-Sandbox-Port': '8000' } })
    const sandbox = await provider.create({ metadata: {}, network: { allowPublicTraffic: false } })
    created.push(sandbox.id)
    const denied = await portRequest(sandbox.id)
    expect(denied.status).toBe(403)
    expect(await denied.text()).toContain('traffic access token')
    const open = await provider.create({ metadata: {} })
    created.push(open.id)
    // Nothing listens on 8000: the public sandbox's request reaches the port (and finds it closed).
    const reached = await portRequest(open.id)
    expect(reached.status).not.toBe(403)
    await reached.body?.cancel()
  })

  it('a host that cannot honour egress rules refuses them with a clear INVALID_ARGUMENT, creating nothing', async () => {
    const provider = createE2BProvider(options())
    const before = (await provider.list?.())?.sandboxes.length
    const error = await provider
      .create({ metadata: {}, network: { allowOut: ['api.example.com'], denyOut: ['0.0.0.0/0'] } })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(String((error as Error).message)).toMatch(/cannot honour network\.allowOut, network\.denyOut/)
    expect((await provider.list?.())?.sandboxes.length).toBe(before)
  })

  it('secure: false is CAPABILITY_UNSUPPORTED before any request (E2B secures every sandbox)', async () => {
    const provider = createE2BProvider({
      apiKey: 'x',
      apiUrl: 'http://127.0.0.1:9',
      sandboxUrl: 'http://127.0.0.1:9',
    })
    await expect(provider.create({ metadata: {}, secure: false })).rejects.toMatchObject({
      code: 'CAPABILITY_UNSUPPORTED',
    })
  })
})
