// Java cells through the unmodified @e2b/code-interpreter SDK, as E2B's template runs them (a notebook kernel
// there; a JShell kernel of this package on the machine's JDK here): values shown as JShell shows them (a
// String without quotes), environment variables as system properties (the sandbox's and one execution's),
// the home as working directory, output, errors, interrupts.
import { Sandbox } from '@e2b/code-interpreter'
import { describe, expect, it } from 'vitest'
import { useTestHost } from './helpers.js'

describe('the Java kernel', () => {
  const t = useTestHost()
  const java = { language: 'java' } as const

  it('shows values, with the environment as system properties, in /home/user', async () => {
    const sandbox = await Sandbox.create({
      ...t.opts,
      template: 'code-interpreter-v1',
      envs: { TEST_ENV_VAR: 'supertest' },
    } as never)
    expect((await sandbox.runCode('System.getProperty("TEST_ENV_VAR")', java)).results[0]?.text).toBe(
      'supertest',
    )
    const overwritten = await sandbox.runCode('System.getProperty("TEST_ENV_VAR")', {
      ...java,
      envs: { TEST_ENV_VAR: 'overwrite', FOO: 'bar' },
    })
    expect(overwritten.text).toBe('overwrite')
    expect((await sandbox.runCode('System.getProperty("TEST_ENV_VAR")', java)).text).toBe('supertest')
    expect((await sandbox.runCode('System.getProperty("FOO", "default")', java)).text).toBe('default')
    expect((await sandbox.runCode('System.getProperty("user.dir")', java)).text).toBe('/home/user')
    // State across cells; each expression's value shown, the last as the main result.
    await sandbox.runCode('int x = 41;', java)
    const shown = await sandbox.runCode('x;\nx + 1', java)
    expect(shown.results.map((result) => [result.text, result.isMainResult])).toEqual([
      ['41', false],
      ['42', true],
    ])
    await sandbox.kill()
  })

  it('streams output, reports exceptions and compile errors, and stops an abandoned cell', async () => {
    const sandbox = await Sandbox.create({ ...t.opts, template: 'code-interpreter-v1' } as never)
    const output = await sandbox.runCode('System.out.println("out"); System.err.println("err");', java)
    expect(output.logs.stdout).toEqual(['out\n'])
    expect(output.logs.stderr).toEqual(['err\n'])
    const thrown = await sandbox.runCode('throw new IllegalStateException("boom");', java)
    expect(thrown.error).toMatchObject({ name: 'java.lang.IllegalStateException', value: 'boom' })
    expect((await sandbox.runCode('int y = ;', java)).error?.name).toBe('CompilationException')
    // An abandoned cell is stopped; the kernel, and what it holds, goes on.
    await sandbox.runCode('long kept = ProcessHandle.current().pid();', java)
    await expect(sandbox.runCode('while (true) {}', { ...java, timeoutMs: 2_000 })).rejects.toThrow()
    expect(
      (await sandbox.runCode('kept == ProcessHandle.current().pid()', { ...java, timeoutMs: 30_000 })).text,
    ).toBe('true')
    expect(t.host.events.list({ type: 'kernel-kill', sandboxId: sandbox.sandboxId })).toEqual([])
    await sandbox.kill()
  })
})
