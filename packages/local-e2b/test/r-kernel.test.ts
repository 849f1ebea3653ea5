// R cells through the unmodified @e2b/code-interpreter SDK, as E2B's template runs them (IRkernel there; a
// kernel of this package on Debian's R here): values shown as R prints them, environment variables of the
// sandbox and of one execution, the home as working directory, output, errors, interrupts, contexts.
import { Sandbox } from '@e2b/code-interpreter'
import { describe, expect, it } from 'vitest'
import { contextsOf, useTestHost } from './helpers.js'

describe('the R kernel', () => {
  const t = useTestHost()
  const create = (envs?: Record<string, string>) =>
    Sandbox.create({ ...t.opts, template: 'code-interpreter-v1', ...(envs ? { envs } : {}) } as never)

  it('shows values as R prints them, with the sandbox’s and the execution’s environment, in /home/user', async () => {
    const sandbox = await create({ TEST_ENV_VAR: 'supertest' })
    const r = { language: 'r' } as const
    expect((await sandbox.runCode('Sys.getenv("TEST_ENV_VAR")', r)).results[0]?.text).toBe('[1] "supertest"')
    const overwritten = await sandbox.runCode('Sys.getenv("TEST_ENV_VAR")', {
      ...r,
      envs: { TEST_ENV_VAR: 'overwrite', FOO: 'bar' },
    })
    expect(overwritten.results[0]?.text).toBe('[1] "overwrite"')
    expect((await sandbox.runCode('Sys.getenv("TEST_ENV_VAR")', r)).text).toBe('[1] "supertest"')
    expect((await sandbox.runCode('Sys.getenv("FOO", unset = "default")', r)).text).toBe('[1] "default"')
    expect((await sandbox.runCode('getwd()', r)).text).toBe('[1] "/home/user"')
    // State is kept across cells; every visible value is shown, the last as the main result.
    await sandbox.runCode('x <- 41', r)
    const shown = await sandbox.runCode('x\nx + 1', r)
    expect(shown.results.map((result) => [result.text, result.isMainResult])).toEqual([
      ['[1] 41', false],
      ['[1] 42', true],
    ])
    expect((await sandbox.runCode('data.frame(a = 1:2, b = c("x", "y"))', r)).text).toBe(
      '  a b\n1 1 x\n2 2 y',
    )
    await sandbox.kill()
  })

  it('streams output, reports errors, stops an abandoned cell, and makes contexts', async () => {
    const sandbox = await create()
    const r = { language: 'r' } as const
    const output = await sandbox.runCode(
      'cat("out\\n"); message("note"); system("echo from-child"); invisible(1)',
      r,
    )
    expect(output.logs.stdout.join('')).toBe('out\nfrom-child\n')
    expect(output.logs.stderr.join('')).toBe('note\n')
    expect(output.results).toEqual([])
    const failed = await sandbox.runCode('stop("boom")', r)
    expect(failed.error).toMatchObject({ name: 'Error', value: 'boom' })
    expect((await sandbox.runCode('f <- function(', r)).error?.name).toBe('SyntaxError')
    // An abandoned cell is interrupted; the kernel, and what it holds, goes on.
    await sandbox.runCode('kept <- Sys.getpid()', r)
    await expect(sandbox.runCode('Sys.sleep(600)', { ...r, timeoutMs: 1_000 })).rejects.toThrow()
    expect((await sandbox.runCode('kept == Sys.getpid()', { ...r, timeoutMs: 30_000 })).text).toBe('[1] TRUE')
    expect(t.host.events.list({ type: 'kernel-kill', sandboxId: sandbox.sandboxId })).toEqual([])

    await sandbox.files.makeDir('/home/user/project')
    const context = await contextsOf(sandbox, t.opts.sandboxUrl).create({
      language: 'r',
      cwd: '/home/user/project',
    })
    expect(context.language).toBe('r')
    expect((await sandbox.runCode('getwd()', { context })).text).toBe('[1] "/home/user/project"')
    // The kernel's own state is not the cell's: the global environment starts empty.
    expect((await sandbox.runCode('ls()', { context })).text).toBe('character(0)')
    await sandbox.kill()
  })
})
