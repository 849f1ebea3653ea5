import { randomUUID } from 'node:crypto'
import { SandkeepError } from '@sandkeep/core'
import type { SandboxHandle, SandboxProvider, SnapshotKeeps } from '@sandkeep/core/provider'
import { type ProviderConformanceTestApi, runnerTestApi } from './test-api.js'

/** What a pause keeps on the platform under test; the suite checks exactly this after pause + connect. */
export interface PauseFidelity {
  /** Interpreter variables survive. */
  memory: boolean
  /** Files survive. */
  filesystem: boolean
  /** Background processes survive: `true` with the same pids, `'restarted'` with new pids, `false` gone. */
  processes: boolean | 'restarted'
}

/** Options of {@link sandboxProviderConformance}. */
export interface SandboxProviderConformanceOptions {
  /** Suite name, e.g. `'e2b on local-e2b (memory)'`. */
  name: string
  /** Makes the provider; called once before the suite. */
  provider: () => SandboxProvider | Promise<SandboxProvider>
  /** Extra metadata for every sandbox the suite creates (e.g. a platform's pause-mode key). */
  metadata?: Record<string, string>
  /** What a pause keeps; default everything (E2B cloud). */
  pauseKeeps?: PauseFidelity
  /**
   * What a snapshot keeps on the platform under test: the suite checks that the provider declares exactly
   * this (`false`: no snapshot capability). Default: whatever the provider declares, checked as declared.
   */
  snapshotKeeps?: SnapshotKeeps | false
  /** Sandbox timeout for created sandboxes, ms; default 120 000. */
  sandboxTimeoutMs?: number
  /** Skip the interpreter tests (platforms without a code interpreter). */
  skipCode?: boolean
  /**
   * Fetch a server the sandbox runs through `portEndpoint`, before and after a pause, from this process: needs
   * `python3` in the template and the platform's ports reachable from here. Default false (the URLs' shape
   * is still checked when the handles have the capability).
   */
  reachablePorts?: boolean
  /** Skip the whole suite (visibly), e.g. when credentials are missing. */
  skip?: boolean | string
  /** Per-test timeout, ms; default 60 000. */
  testTimeoutMs?: number
  /** The test runner's functions (vitest's API); default the running vitest's. */
  testApi?: ProviderConformanceTestApi
}

/** What the groups of provider tests share; `provider` and `sandbox` are set by the suite's beforeAll. */
interface ProviderSuite {
  api: ProviderConformanceTestApi
  options: SandboxProviderConformanceOptions
  keeps: PauseFidelity
  timeout: number
  run: string
  metadata: Record<string, string>
  created: string[]
  /** Snapshots the suite took; deleted afterwards. */
  snapshots: string[]
  provider: SandboxProvider
  sandbox: SandboxHandle
  expectCode(promise: Promise<unknown>, code: string): Promise<SandkeepError>
}

function expectCodeWith(expect: ProviderConformanceTestApi['expect']) {
  return async (promise: Promise<unknown>, code: string) => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(SandkeepError.isInstance(error), `expected a SandkeepError ${code}, got ${String(error)}`).toBe(
      true,
    )
    expect((error as SandkeepError).code).toBe(code)
    return error as SandkeepError
  }
}

/** Identity, commands, files and background processes. */
function basicTests(s: ProviderSuite): void {
  const { it, expect } = s.api
  const { timeout, run, expectCode } = s
  it('declares its contract version and id', { timeout }, () => {
    expect(s.provider.specificationVersion).toBe('v1')
    expect(typeof s.provider.providerId).toBe('string')
    expect(s.provider.providerId.length).toBeGreaterThan(0)
    expect(s.sandbox.providerId).toBe(s.provider.providerId)
    expect(typeof s.sandbox.id).toBe('string')
  })

  it('runs commands: output, exit codes as results, stdin, env and cwd', { timeout }, async () => {
    const echo = await s.sandbox.runCommand('echo sandkeep-conformance')
    expect(echo).toEqual({ exitCode: 0, stdout: 'sandkeep-conformance\n', stderr: '' })
    const failed = await s.sandbox.runCommand('exit 3')
    expect(failed.exitCode).toBe(3)
    const piped = await s.sandbox.runCommand('cat', { stdin: 'from stdin' })
    expect(piped.stdout).toBe('from stdin')
  })

  it('writes, reads, lists and removes files; a missing file is FILE_NOT_FOUND', { timeout }, async () => {
    const dir = `/home/user/${run}`
    await s.sandbox.writeFile(`${dir}/nested/a.txt`, 'alpha ü')
    await s.sandbox.writeFile(`${dir}/b.bin`, new Uint8Array([0, 1, 2, 255]))
    expect(await s.sandbox.readFile(`${dir}/nested/a.txt`)).toBe('alpha ü')
    expect([...(await s.sandbox.readFile(`${dir}/b.bin`, { format: 'bytes' }))]).toEqual([0, 1, 2, 255])
    const entries = await s.sandbox.listDir(dir)
    expect(entries.map((e) => [e.name, e.type]).sort()).toEqual([
      ['b.bin', 'file'],
      ['nested', 'dir'],
    ])
    expect(await s.sandbox.exists(`${dir}/nested/a.txt`)).toBe(true)
    expect(await s.sandbox.exists(`${dir}/nope`)).toBe(false)
    await s.sandbox.remove(`${dir}/nested`)
    expect(await s.sandbox.exists(`${dir}/nested/a.txt`)).toBe(false)
    await expectCode(s.sandbox.readFile(`${dir}/nope.txt`), 'FILE_NOT_FOUND')
  })

  it('bounds a read by maxBytes: a larger file fails with INVALID_ARGUMENT, one that fits is read whole', {
    timeout,
  }, async () => {
    const path = `/home/user/${run}/bounded.txt`
    await s.sandbox.writeFile(path, 'x'.repeat(4096))
    expect(await s.sandbox.readFile(path, { maxBytes: 4096 })).toBe('x'.repeat(4096))
    expect((await s.sandbox.readFile(path, { format: 'bytes', maxBytes: 4096 })).byteLength).toBe(4096)
    const error = await expectCode(s.sandbox.readFile(path, { maxBytes: 4095 }), 'INVALID_ARGUMENT')
    expect(error.message).toContain('4095')
    await expectCode(s.sandbox.readFile(path, { format: 'bytes', maxBytes: 10 }), 'INVALID_ARGUMENT')
    await expectCode(s.sandbox.readFile(path, { maxBytes: 0 }), 'INVALID_ARGUMENT')
  })

  it('starts, lists and kills background processes', { timeout }, async () => {
    const command = `sleep 3600 # ${run}-kill`
    const { pid } = await s.sandbox.startProcess(command)
    expect(pid).toBeGreaterThan(0)
    const listed = await s.sandbox.listProcesses()
    expect(listed.find((p) => p.pid === pid)?.command).toBe(command)
    expect(await s.sandbox.killProcess(pid)).toBe(true)
    // The platform reaps it asynchronously; once it is gone, a second kill says it was not running.
    const deadline = Date.now() + 10_000
    while ((await s.sandbox.listProcesses()).some((p) => p.pid === pid)) {
      if (Date.now() > deadline) throw new Error(`process ${pid} still listed 10 s after it was killed`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(await s.sandbox.killProcess(pid)).toBe(false)
  })
}

/** The code interpreter, and what the process list leaves out. */
function codeTests(s: ProviderSuite): void {
  const { it, expect } = s.api
  const { options, timeout, run } = s
  it.skipIf(options.skipCode)(
    'keeps interpreter state across cells; an exception is a result',
    { timeout },
    async () => {
      await s.sandbox.runCode('x = 41 + 1')
      const value = await s.sandbox.runCode('x')
      expect(value.text).toBe('42')
      // Rich results are optional in the contract; a provider that reports them lists the value as main.
      if (value.results !== undefined) {
        expect(value.results.filter((result) => result.isMainResult)).toEqual([
          expect.objectContaining({ isMainResult: true, text: '42' }),
        ])
      }
      const failed = await s.sandbox.runCode('undefined_name_for_conformance')
      expect(failed.error?.name).toBe('NameError')
    },
  )

  // The session manager records at a turn's end the list its resume read when the turn only ran code:
  // that relies on code (and finished commands) leaving nothing in the list.
  it('does not list a command that finished', { timeout }, async () => {
    const before = (await s.sandbox.listProcesses()).map((p) => p.pid).sort()
    const done = await s.sandbox.runCommand(`echo ${run}-finished`)
    expect(done.exitCode).toBe(0)
    const after = await s.sandbox.listProcesses()
    expect(after.map((p) => p.pid).sort()).toEqual(before)
  })

  it.skipIf(options.skipCode)(
    'does not list a process a Python cell spawned',
    { timeout },
    async (context) => {
      const before = (await s.sandbox.listProcesses()).map((p) => p.pid).sort()
      const spawned = await s.sandbox.runCode(
        `import subprocess\n_conformance_child = subprocess.Popen(['sleep', '3600'])\n_conformance_child.pid`,
      )
      // An interpreter that is not Python (a test double's) cannot parse this: nothing to check there.
      if (spawned.error?.name === 'SyntaxError') context.skip()
      expect(spawned.error).toBeNull()
      expect(Number(spawned.text)).toBeGreaterThan(0)
      expect((await s.sandbox.listProcesses()).map((p) => p.pid).sort()).toEqual(before)
      await s.sandbox.runCode('_conformance_child.kill(); _conformance_child.wait(); del _conformance_child')
    },
  )
}

/** A tiny HTTP server for the port tests: answers every GET with `token` (argv[2]) on port argv[1]. */
const PORT_SERVER = [
  'import http.server, sys',
  'class Answer(http.server.BaseHTTPRequestHandler):',
  '    def do_GET(self):',
  '        body = sys.argv[2].encode()',
  '        self.send_response(200)',
  "        self.send_header('content-length', str(len(body)))",
  '        self.end_headers()',
  '        self.wfile.write(body)',
  '    def log_message(self, *args): pass',
  "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), Answer).serve_forever()",
].join('\n')

/** Fetches `path` on a port endpoint, following its headers; the status and the body. */
async function fetchEndpoint(
  endpoint: { url: string; headers: Record<string, string> },
  path: string,
): Promise<{ status: number; body: string }> {
  const response = await fetch(`${endpoint.url}${path}`, {
    headers: endpoint.headers,
    signal: AbortSignal.timeout(15_000),
  })
  return { status: response.status, body: await response.text() }
}

/** Port endpoints: their shape, their stability, and (when reachable) a server fetched through one. */
function portTests(s: ProviderSuite): void {
  const { it, expect } = s.api
  const { options, keeps, timeout, run, created } = s
  it('names a port by a URL that stays the same; a bad port is INVALID_ARGUMENT', {
    timeout,
  }, async (context) => {
    if (!s.sandbox.portEndpoint) return context.skip()
    const http = s.sandbox.portEndpoint(8000)
    expect(['http:', 'https:']).toContain(new URL(http.url).protocol)
    expect(Object.values(http.headers).every((value) => typeof value === 'string')).toBe(true)
    if (http.previewUrl !== undefined)
      expect(['http:', 'https:']).toContain(new URL(http.previewUrl).protocol)
    expect(s.sandbox.portEndpoint(8000, { protocol: 'http' })).toEqual(http)
    const ws = s.sandbox.portEndpoint(8000, { protocol: 'ws' })
    expect(['ws:', 'wss:']).toContain(new URL(ws.url).protocol)
    // Another port is another address: by its URL, or by its routing headers.
    const other = s.sandbox.portEndpoint(8001)
    const address = (endpoint: { url: string; headers: Record<string, string> }) =>
      JSON.stringify([endpoint.url, Object.entries(endpoint.headers).sort()])
    expect(address(other) === address(http), 'ports 8000 and 8001 have the same address').toBe(false)
    for (const port of [0, 65_536, 80.5, Number.NaN, '8000' as unknown as number]) {
      await s.expectCode(
        Promise.resolve().then(() => s.sandbox.portEndpoint?.(port)),
        'INVALID_ARGUMENT',
      )
    }
  })

  it.skipIf(!options.reachablePorts)(
    'reaches a server the sandbox runs through its endpoint, before and after a pause',
    { timeout },
    async (context) => {
      if (!s.sandbox.portEndpoint) return context.skip()
      const port = 8123
      const token = `${run}-port`
      await s.sandbox.writeFile(`/home/user/${run}-server.py`, PORT_SERVER)
      const server = `python3 /home/user/${run}-server.py ${port} ${token}`
      const { pid } = await s.sandbox.startProcess(server)
      const listening = await s.sandbox.runCommand(
        `for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1`,
      )
      expect(listening.exitCode).toBe(0)
      const endpoint = s.sandbox.portEndpoint(port)
      expect(await fetchEndpoint(endpoint, '/')).toEqual({ status: 200, body: token })
      if (s.provider.pause && keeps.processes === true) {
        await s.provider.pause(s.sandbox.id)
        const resumed = await s.provider.connect(s.sandbox.id)
        if (resumed.id !== s.sandbox.id) created.push(resumed.id)
        else expect(resumed.portEndpoint?.(port)).toEqual(endpoint)
        s.sandbox = resumed
        const again = resumed.portEndpoint?.(port)
        expect(again && (await fetchEndpoint(again, '/'))).toEqual({ status: 200, body: token })
      }
      await s.sandbox.killProcess(pid).catch(() => false)
    },
  )
}

/** Info and list, pause and connect, kill, unknown ids. */
function lifecycleTests(s: ProviderSuite): void {
  const { it, expect } = s.api
  const { options, keeps, timeout, run, metadata, created, expectCode } = s
  it('reads its info and finds it by metadata', { timeout }, async () => {
    if (s.provider.getInfo) {
      const info = await s.provider.getInfo(s.sandbox.id)
      expect(info.sandboxId).toBe(s.sandbox.id)
      expect(info.metadata['sandkeep.conformance']).toBe(run)
      expect(info.state).toBe('running')
    }
    if (s.provider.list) {
      const page = await s.provider.list({ metadata: { 'sandkeep.conformance': run } })
      expect(page.sandboxes.map((s) => s.sandboxId)).toContain(s.sandbox.id)
      const none = await s.provider.list({ metadata: { 'sandkeep.conformance': `${run}-none` } })
      expect(none.sandboxes).toEqual([])
    }
    if (s.provider.setTimeout) await s.provider.setTimeout(s.sandbox.id, 120_000)
  })

  it('pauses (twice: the second says already paused) and connect resumes what the platform keeps', {
    timeout,
  }, async (context) => {
    if (!s.provider.pause) return context.skip()
    const file = `/home/user/${run}-kept.txt`
    await s.sandbox.writeFile(file, 'kept')
    if (!options.skipCode) await s.sandbox.runCode('kept_value = 7')
    const server = `sleep 3600 # ${run}-server`
    const { pid } = await s.sandbox.startProcess(server)
    expect(await s.provider.pause(s.sandbox.id)).toBe(true)
    expect(await s.provider.pause(s.sandbox.id)).toBe(false)
    if (s.provider.getInfo) expect((await s.provider.getInfo(s.sandbox.id)).state).toBe('paused')
    const resumed = await s.provider.connect(s.sandbox.id)
    if (resumed.id !== s.sandbox.id) created.push(resumed.id)
    s.sandbox = resumed
    if (s.provider.getInfo) expect((await s.provider.getInfo(s.sandbox.id)).state).toBe('running')
    expect(await s.sandbox.exists(file)).toBe(keeps.filesystem)
    const found = (await s.sandbox.listProcesses()).find((p) => p.command === server)
    if (keeps.processes === true) expect(found?.pid).toBe(pid)
    else if (keeps.processes === 'restarted') expect(found).toBeDefined()
    else expect(found).toBeUndefined()
    if (!options.skipCode) {
      const memory = await s.sandbox.runCode("globals().get('kept_value')")
      expect(memory.text === '7').toBe(keeps.memory)
    }
  })

  it('kills (twice: the second says false); a killed sandbox is SANDBOX_NOT_FOUND', {
    timeout,
  }, async () => {
    const victim = await s.provider.create({ metadata, timeoutMs: 60_000 })
    created.push(victim.id)
    expect(await s.provider.kill(victim.id)).toBe(true)
    expect(await s.provider.kill(victim.id)).toBe(false)
    await expectCode(s.provider.connect(victim.id), 'SANDBOX_NOT_FOUND')
    if (s.provider.getInfo) await expectCode(s.provider.getInfo(victim.id), 'SANDBOX_NOT_FOUND')
    if (s.provider.pause) await expectCode(s.provider.pause(victim.id), 'SANDBOX_NOT_FOUND')
  })

  it('connect to an id that never existed is SANDBOX_NOT_FOUND', { timeout }, async () => {
    await expectCode(s.provider.connect(`never-${run}`), 'SANDBOX_NOT_FOUND')
  })
}

/** The provider's snapshot methods, when it has the capability. */
type Snapshots = Required<
  Pick<SandboxProvider, 'snapshotKeeps' | 'createSnapshot' | 'createFromSnapshot' | 'deleteSnapshot'>
>

/** The snapshot capability: present whole or not at all, and what a snapshot keeps is what it declares. */
function snapshotTests(s: ProviderSuite): void {
  const { it, expect } = s.api
  const { options, timeout, run, metadata, created, snapshots, expectCode } = s
  const sandboxTimeout = options.sandboxTimeoutMs ?? 120_000
  /** The capability, or a skip when the provider has none. */
  const capability = (context: { skip: () => void }): Snapshots => {
    if (!s.provider.snapshotKeeps) context.skip()
    return s.provider as Snapshots
  }
  // For the helpers below: the tests that call them have checked the capability first.
  const provider = () => s.provider as Snapshots
  const snapshot = async (sandboxId: string, name?: string) => {
    const taken = await provider().createSnapshot(sandboxId, name ? { name } : {})
    snapshots.push(taken.snapshotId)
    return taken.snapshotId
  }
  const createFrom = async (snapshotId: string) => {
    const sandbox = await provider().createFromSnapshot(snapshotId, {
      metadata,
      timeoutMs: sandboxTimeout,
    })
    created.push(sandbox.id)
    return sandbox
  }
  const newSource = async () => {
    const sandbox = await s.provider.create({ metadata, timeoutMs: sandboxTimeout })
    created.push(sandbox.id)
    return sandbox
  }

  it('has the snapshot methods together with snapshotKeeps, or none of them', { timeout }, () => {
    const keeps = s.provider.snapshotKeeps
    const methods = [s.provider.createSnapshot, s.provider.createFromSnapshot, s.provider.deleteSnapshot]
    expect(methods.map((method) => typeof method)).toEqual(
      methods.map(() => (keeps ? 'function' : 'undefined')),
    )
    if (keeps) {
      expect(typeof keeps.files).toBe('boolean')
      expect(typeof keeps.memory).toBe('boolean')
    } else {
      expect(s.provider.listSnapshots).toBeUndefined()
    }
    if (options.snapshotKeeps !== undefined) expect(keeps ?? false).toEqual(options.snapshotKeeps)
  })

  it('a sandbox from a snapshot has the files written before it, not after, and memory as declared; the source runs on', {
    timeout,
  }, async (context) => {
    const { snapshotKeeps: keeps } = capability(context)
    const source = await newSource()
    const dir = `/home/user/${run}-snapshot`
    await source.writeFile(`${dir}/before.txt`, 'before the snapshot')
    if (!options.skipCode) await source.runCode('conformance_snapshot_value = 42')
    const snapshotId = await snapshot(source.id)
    expect(typeof snapshotId).toBe('string')
    await source.writeFile(`${dir}/after.txt`, 'after the snapshot')

    // The source was not paused or replaced: same id, its files and memory as they were.
    expect((await source.runCommand('echo still-running')).stdout).toBe('still-running\n')
    expect(await source.readFile(`${dir}/before.txt`)).toBe('before the snapshot')
    if (s.provider.getInfo) expect((await s.provider.getInfo(source.id)).state).toBe('running')
    if (!options.skipCode) expect((await source.runCode('conformance_snapshot_value')).text).toBe('42')

    const copy = await createFrom(snapshotId)
    expect(copy.id === source.id, 'the copy has its own id').toBe(false)
    expect(copy.providerId).toBe(s.provider.providerId)
    if (s.provider.getInfo) {
      expect((await s.provider.getInfo(copy.id)).metadata['sandkeep.conformance']).toBe(run)
    }
    expect(await copy.exists(`${dir}/before.txt`)).toBe(keeps.files)
    if (keeps.files) expect(await copy.readFile(`${dir}/before.txt`)).toBe('before the snapshot')
    expect(await copy.exists(`${dir}/after.txt`)).toBe(false)
    if (!options.skipCode) {
      const memory = await copy.runCode("globals().get('conformance_snapshot_value')")
      expect(memory.text === '42', `memory kept: ${memory.text}`).toBe(keeps.memory)
    }
    // Each has its own copy from now on.
    await copy.writeFile(`${dir}/before.txt`, 'changed in the copy')
    expect(await source.readFile(`${dir}/before.txt`)).toBe('before the snapshot')
  })

  it('deleteSnapshot says true, then false (and false for an unknown id); createFromSnapshot of a deleted one is SNAPSHOT_NOT_FOUND', {
    timeout,
  }, async (context) => {
    const provider = capability(context)
    const source = await newSource()
    const file = `/home/user/${run}-deleted.txt`
    await source.writeFile(file, 'kept by the copy')
    const snapshotId = await snapshot(source.id)
    const before = await createFrom(snapshotId)
    expect(await provider.deleteSnapshot(snapshotId)).toBe(true)
    expect(await provider.deleteSnapshot(snapshotId)).toBe(false)
    await expectCode(provider.createFromSnapshot(snapshotId, { metadata }), 'SNAPSHOT_NOT_FOUND')
    // A sandbox made from it before keeps its own copy.
    if (provider.snapshotKeeps.files) expect(await before.readFile(file)).toBe('kept by the copy')
    // Only a deleted id is asked for: one never made may be refused for its shape first (local-e2b answers
    // 400 unknown template to an id that is not shaped like a snapshot's).
    expect(await provider.deleteSnapshot(`never-${run}`)).toBe(false)
    await expectCode(provider.createSnapshot(`never-${run}`), 'SANDBOX_NOT_FOUND')
  })

  it('listSnapshots with a namePrefix finds a named snapshot and leaves out the others', {
    timeout,
  }, async (context) => {
    capability(context)
    const list = s.provider.listSnapshots
    if (!list) return context.skip()
    const source = await newSource()
    const named = await snapshot(source.id, `${run}-named`)
    const other = await snapshot(source.id, `other-${run}`)
    /** Every snapshot the listing pages through. */
    const listed = async (namePrefix?: string) => {
      const ids: string[] = []
      let cursor: string | undefined
      for (let page = 0; page < 100; page++) {
        const answer = await list({ ...(namePrefix ? { namePrefix } : {}), ...(cursor ? { cursor } : {}) })
        ids.push(...answer.snapshots.map((info) => info.snapshotId))
        cursor = answer.cursor
        if (!cursor) break
      }
      return ids
    }
    expect(await listed(`${run}-na`)).toEqual([named])
    expect(await listed(`${run}-none`)).toEqual([])
    const all = await listed()
    expect(all).toContain(named)
    expect(all).toContain(other)
  })

  it('refuses bad snapshot ids, names and list options with INVALID_ARGUMENT', {
    timeout,
  }, async (context) => {
    const provider = capability(context)
    for (const bad of ['', 'x'.repeat(257), 'a\nb', 7 as unknown as string]) {
      await expectCode(provider.createFromSnapshot(bad, { metadata }), 'INVALID_ARGUMENT')
      await expectCode(provider.deleteSnapshot(bad), 'INVALID_ARGUMENT')
    }
    await expectCode(provider.createSnapshot(''), 'INVALID_ARGUMENT')
    for (const name of ['', '-leading', 'has space', 'team/name', 'x'.repeat(129)]) {
      await expectCode(provider.createSnapshot(s.sandbox.id, { name }), 'INVALID_ARGUMENT')
    }
    if (s.provider.listSnapshots) {
      await expectCode(s.provider.listSnapshots({ namePrefix: 'a/b' }), 'INVALID_ARGUMENT')
      await expectCode(s.provider.listSnapshots({ limit: 0 }), 'INVALID_ARGUMENT')
    }
  })
}

/**
 * The contract every SandboxProvider must meet, as a test suite on the runner's functions (`options.testApi`,
 * default the running vitest's): create with metadata, commands (a non-zero exit is a result), files, background processes, the code interpreter, port endpoints (when the handles have them), pause (twice) and connect with the
 * platform's declared fidelity, getInfo, list by metadata, setTimeout, kill (twice) and SANDBOX_NOT_FOUND
 * afterwards, and snapshots (when the provider has them: files and memory as `snapshotKeeps` declares, the
 * source running on, SNAPSHOT_NOT_FOUND once deleted, the list by name prefix). Call it at the top level of a test file. Every sandbox it creates is killed afterwards.
 */
export function sandboxProviderConformance(options: SandboxProviderConformanceOptions): void {
  const keeps = options.pauseKeeps ?? { memory: true, filesystem: true, processes: true }
  const timeout = options.testTimeoutMs ?? 60_000
  const run = `conf-${randomUUID().slice(0, 8)}`
  const metadata = { ...options.metadata, 'sandkeep.conformance': run }
  const api = options.testApi ?? runnerTestApi('sandboxProviderConformance')
  const suite = options.skip ? api.describe.skip : api.describe
  const title = typeof options.skip === 'string' ? `${options.name} (skipped: ${options.skip})` : options.name

  suite(`sandboxProviderConformance: ${title}`, () => {
    const created: string[] = []
    const snapshots: string[] = []
    // provider and sandbox are set by beforeAll, before any test reads them.
    const state = {
      api,
      options,
      keeps,
      timeout,
      run,
      metadata,
      created,
      snapshots,
    } as Partial<ProviderSuite> as ProviderSuite
    state.expectCode = expectCodeWith(api.expect)
    api.beforeAll(async () => {
      state.provider = await options.provider()
      state.sandbox = await state.provider.create({
        metadata,
        timeoutMs: options.sandboxTimeoutMs ?? 120_000,
      })
      created.push(state.sandbox.id)
    }, timeout)
    api.afterAll(async () => {
      for (const id of created) await state.provider?.kill(id).catch(() => false)
      for (const id of snapshots) await state.provider?.deleteSnapshot?.(id).catch(() => false)
    }, timeout)
    basicTests(state)
    codeTests(state)
    portTests(state)
    snapshotTests(state)
    lifecycleTests(state)
  })
}
