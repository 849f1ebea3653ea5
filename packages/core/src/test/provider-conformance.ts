import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandkeepError } from '../errors.js'
import type { SandboxHandle, SandboxProvider } from '../sandbox-provider.js'

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
  /** Sandbox timeout for created sandboxes, ms; default 120 000. */
  sandboxTimeoutMs?: number
  /** Skip the interpreter tests (platforms without a code interpreter). */
  skipCode?: boolean
  /** Skip the whole suite (visibly), e.g. when credentials are missing. */
  skip?: boolean | string
  /** Per-test timeout, ms; default 60 000. */
  testTimeoutMs?: number
}

const expectCode = async (promise: Promise<unknown>, code: string) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(SandkeepError.isInstance(error), `expected a SandkeepError ${code}, got ${String(error)}`).toBe(true)
  expect((error as SandkeepError).code).toBe(code)
}

/**
 * The contract every SandboxProvider must meet, as a vitest suite: create with metadata, commands (a non-zero
 * exit is a result), files, background processes, the code interpreter, pause (twice) and connect with the
 * platform's declared fidelity, getInfo, list by metadata, setTimeout, kill (twice) and SANDBOX_NOT_FOUND
 * afterwards. Call it at the top level of a test file. Every sandbox it creates is killed afterwards.
 */
export function sandboxProviderConformance(options: SandboxProviderConformanceOptions): void {
  const keeps = options.pauseKeeps ?? { memory: true, filesystem: true, processes: true }
  const timeout = options.testTimeoutMs ?? 60_000
  const run = `conf-${randomUUID().slice(0, 8)}`
  const metadata = { ...options.metadata, 'sandkeep.conformance': run }
  const suite = options.skip ? describe.skip : describe
  const title = typeof options.skip === 'string' ? `${options.name} (skipped: ${options.skip})` : options.name

  suite(`sandboxProviderConformance: ${title}`, () => {
    let provider: SandboxProvider
    let sandbox: SandboxHandle
    const created: string[] = []

    beforeAll(async () => {
      provider = await options.provider()
      sandbox = await provider.create({ metadata, timeoutMs: options.sandboxTimeoutMs ?? 120_000 })
      created.push(sandbox.id)
    }, timeout)

    afterAll(async () => {
      for (const id of created) await provider?.kill(id).catch(() => false)
    }, timeout)

    it('declares its contract version and id', () => {
      expect(provider.specificationVersion).toBe('v1')
      expect(typeof provider.providerId).toBe('string')
      expect(provider.providerId.length).toBeGreaterThan(0)
      expect(sandbox.providerId).toBe(provider.providerId)
      expect(typeof sandbox.id).toBe('string')
    })

    it('runs commands: output, exit codes as results, stdin, env and cwd', { timeout }, async () => {
      const echo = await sandbox.runCommand('echo sandkeep-conformance')
      expect(echo).toEqual({ exitCode: 0, stdout: 'sandkeep-conformance\n', stderr: '' })
      const failed = await sandbox.runCommand('exit 3')
      expect(failed.exitCode).toBe(3)
      const piped = await sandbox.runCommand('cat', { stdin: 'from stdin' })
      expect(piped.stdout).toBe('from stdin')
    })

    it('writes, reads, lists and removes files; a missing file is FILE_NOT_FOUND', { timeout }, async () => {
      const dir = `/home/user/${run}`
      await sandbox.writeFile(`${dir}/nested/a.txt`, 'alpha ü')
      await sandbox.writeFile(`${dir}/b.bin`, new Uint8Array([0, 1, 2, 255]))
      expect(await sandbox.readFile(`${dir}/nested/a.txt`)).toBe('alpha ü')
      expect([...(await sandbox.readFile(`${dir}/b.bin`, { format: 'bytes' }))]).toEqual([0, 1, 2, 255])
      const entries = await sandbox.listDir(dir)
      expect(entries.map((e) => [e.name, e.type]).sort()).toEqual([
        ['b.bin', 'file'],
        ['nested', 'dir'],
      ])
      expect(await sandbox.exists(`${dir}/nested/a.txt`)).toBe(true)
      expect(await sandbox.exists(`${dir}/nope`)).toBe(false)
      await sandbox.remove(`${dir}/nested`)
      expect(await sandbox.exists(`${dir}/nested/a.txt`)).toBe(false)
      await expectCode(sandbox.readFile(`${dir}/nope.txt`), 'FILE_NOT_FOUND')
    })

    it('starts, lists and kills background processes', { timeout }, async () => {
      const command = `sleep 3600 # ${run}-kill`
      const { pid } = await sandbox.startProcess(command)
      expect(pid).toBeGreaterThan(0)
      const listed = await sandbox.listProcesses()
      expect(listed.find((p) => p.pid === pid)?.command).toBe(command)
      expect(await sandbox.killProcess(pid)).toBe(true)
      // The platform reaps it asynchronously; once it is gone, a second kill says it was not running.
      const deadline = Date.now() + 10_000
      while ((await sandbox.listProcesses()).some((p) => p.pid === pid)) {
        if (Date.now() > deadline) throw new Error(`process ${pid} still listed 10 s after it was killed`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(await sandbox.killProcess(pid)).toBe(false)
    })

    it.skipIf(options.skipCode)(
      'keeps interpreter state across cells; an exception is a result',
      { timeout },
      async () => {
        await sandbox.runCode('x = 41 + 1')
        const value = await sandbox.runCode('x')
        expect(value.text).toBe('42')
        // Rich results are optional in the contract; a provider that reports them lists the value as main.
        if (value.results !== undefined) {
          expect(value.results.filter((result) => result.isMainResult)).toEqual([
            expect.objectContaining({ isMainResult: true, text: '42' }),
          ])
        }
        const failed = await sandbox.runCode('undefined_name_for_conformance')
        expect(failed.error?.name).toBe('NameError')
      },
    )

    // The session manager records at a turn's end the list its resume read when the turn only ran code:
    // that relies on code (and finished commands) leaving nothing in the list.
    it('does not list a command that finished', { timeout }, async () => {
      const before = (await sandbox.listProcesses()).map((p) => p.pid).sort()
      const done = await sandbox.runCommand(`echo ${run}-finished`)
      expect(done.exitCode).toBe(0)
      const after = await sandbox.listProcesses()
      expect(after.map((p) => p.pid).sort()).toEqual(before)
    })

    it.skipIf(options.skipCode)(
      'does not list a process a Python cell spawned',
      { timeout },
      async (context) => {
        const before = (await sandbox.listProcesses()).map((p) => p.pid).sort()
        const spawned = await sandbox.runCode(
          `import subprocess\n_conformance_child = subprocess.Popen(['sleep', '3600'])\n_conformance_child.pid`,
        )
        // An interpreter that is not Python (a test double's) cannot parse this: nothing to check there.
        if (spawned.error?.name === 'SyntaxError') context.skip()
        expect(spawned.error).toBeNull()
        expect(Number(spawned.text)).toBeGreaterThan(0)
        expect((await sandbox.listProcesses()).map((p) => p.pid).sort()).toEqual(before)
        await sandbox.runCode('_conformance_child.kill(); _conformance_child.wait(); del _conformance_child')
      },
    )

    it('reads its info and finds it by metadata', { timeout }, async () => {
      if (provider.getInfo) {
        const info = await provider.getInfo(sandbox.id)
        expect(info.sandboxId).toBe(sandbox.id)
        expect(info.metadata['sandkeep.conformance']).toBe(run)
        expect(info.state).toBe('running')
      }
      if (provider.list) {
        const page = await provider.list({ metadata: { 'sandkeep.conformance': run } })
        expect(page.sandboxes.map((s) => s.sandboxId)).toContain(sandbox.id)
        const none = await provider.list({ metadata: { 'sandkeep.conformance': `${run}-none` } })
        expect(none.sandboxes).toEqual([])
      }
      if (provider.setTimeout) await provider.setTimeout(sandbox.id, 120_000)
    })

    it('pauses (twice: the second says already paused) and connect resumes what the platform keeps', {
      timeout,
    }, async (context) => {
      if (!provider.pause) return context.skip()
      const file = `/home/user/${run}-kept.txt`
      await sandbox.writeFile(file, 'kept')
      if (!options.skipCode) await sandbox.runCode('kept_value = 7')
      const server = `sleep 3600 # ${run}-server`
      const { pid } = await sandbox.startProcess(server)
      expect(await provider.pause(sandbox.id)).toBe(true)
      expect(await provider.pause(sandbox.id)).toBe(false)
      if (provider.getInfo) expect((await provider.getInfo(sandbox.id)).state).toBe('paused')
      const resumed = await provider.connect(sandbox.id)
      if (resumed.id !== sandbox.id) created.push(resumed.id)
      sandbox = resumed
      if (provider.getInfo) expect((await provider.getInfo(sandbox.id)).state).toBe('running')
      expect(await sandbox.exists(file)).toBe(keeps.filesystem)
      const found = (await sandbox.listProcesses()).find((p) => p.command === server)
      if (keeps.processes === true) expect(found?.pid).toBe(pid)
      else if (keeps.processes === 'restarted') expect(found).toBeDefined()
      else expect(found).toBeUndefined()
      if (!options.skipCode) {
        const memory = await sandbox.runCode("globals().get('kept_value')")
        expect(memory.text === '7').toBe(keeps.memory)
      }
    })

    it('kills (twice: the second says false); a killed sandbox is SANDBOX_NOT_FOUND', {
      timeout,
    }, async () => {
      const victim = await provider.create({ metadata, timeoutMs: 60_000 })
      created.push(victim.id)
      expect(await provider.kill(victim.id)).toBe(true)
      expect(await provider.kill(victim.id)).toBe(false)
      await expectCode(provider.connect(victim.id), 'SANDBOX_NOT_FOUND')
      if (provider.getInfo) await expectCode(provider.getInfo(victim.id), 'SANDBOX_NOT_FOUND')
      if (provider.pause) await expectCode(provider.pause(victim.id), 'SANDBOX_NOT_FOUND')
    })

    it('connect to an id that never existed is SANDBOX_NOT_FOUND', { timeout }, async () => {
      await expectCode(provider.connect(`never-${run}`), 'SANDBOX_NOT_FOUND')
    })
  })
}
