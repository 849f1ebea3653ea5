import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { CommandResult, SandboxHandle } from '../contract/sandbox-provider.js'
import { CARRIED_KEPT_LINE, CARRIED_LOST_ERROR } from './fidelity-carried.js'
import { CARRIED_LOST_EXIT, carriedCommand, runCarriedCommand } from './fidelity-carried-command.js'

const run = promisify(execFile)

/** Runs a script in a real bash, as the platform runs a command. */
async function bash(script: string): Promise<CommandResult> {
  try {
    const { stdout, stderr } = await run('bash', ['-c', script], { timeout: 10_000 })
    return { exitCode: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { exitCode: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

describe("the carried command's first line, in a real bash", () => {
  let dir: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "carried ' cmd-"))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  const script = (path: string) =>
    carriedCommand({ path, value: 'm-1' }, `echo ran >> ${JSON.stringify(join(dir, 'runs'))}; echo out`)

  it('marker kept: the kept line, then the user script', async () => {
    const marker = join(dir, 'marker')
    writeFileSync(marker, 'm-1')
    const result = await bash(script(marker))
    expect(result).toEqual({ exitCode: 0, stdout: `${CARRIED_KEPT_LINE}\nout\n`, stderr: '' })
  })

  it.each([
    ['missing', (_path: string) => {}],
    ['changed', (path: string) => writeFileSync(path, 'm-2')],
    ['with a trailing newline', (path: string) => writeFileSync(path, 'm-1\n')],
    [
      'a symlink to the right value',
      (path: string) => {
        writeFileSync(`${path}.real`, 'm-1')
        symlinkSync(`${path}.real`, path)
      },
    ],
    ['a FIFO (would block a read)', (path: string) => execFileSync('mkfifo', [path])],
  ])('marker %s: the test exits before any of the user script ran', async (_, make) => {
    const marker = join(dir, 'marker')
    make(marker)
    const result = await bash(script(marker))
    expect(result).toEqual({ exitCode: CARRIED_LOST_EXIT, stdout: '', stderr: `${CARRIED_LOST_ERROR}\n` })
    expect(await bash(`test -e ${JSON.stringify(join(dir, 'runs'))}`)).toMatchObject({ exitCode: 1 })
  })
})

describe('runCarriedCommand', () => {
  /** A handle whose command and cell answers are given (what the platform would answer). */
  function handle(command: CommandResult, cellKept: boolean): SandboxHandle & { cells: number } {
    const fake = {
      cells: 0,
      runCommand: async (_: string, options?: { onStdout?: (chunk: string) => void }) => {
        if (command.stdout) options?.onStdout?.(command.stdout)
        return command
      },
      runCode: async () => {
        fake.cells++
        return cellKept
          ? { text: null, results: [], stdout: `${CARRIED_KEPT_LINE}\n`, stderr: '', error: null }
          : {
              text: null,
              results: [],
              stdout: '',
              stderr: '',
              error: { name: CARRIED_LOST_ERROR, value: '', traceback: '' },
            }
      },
    }
    return fake as unknown as SandboxHandle & { cells: number }
  }
  const marker = { path: '/m', value: 'm-1' }
  const kept: CommandResult = { exitCode: 0, stdout: `${CARRIED_KEPT_LINE}\nout\n`, stderr: '' }
  const lost: CommandResult = { exitCode: CARRIED_LOST_EXIT, stdout: '', stderr: `${CARRIED_LOST_ERROR}\n` }

  it('kept files and memory: kept, the kept line out of the result and the stream, the sentinel probed beside it', async () => {
    const sandbox = handle(kept, true)
    const chunks: string[] = []
    const carried = runCarriedCommand(sandbox, { sentinel: { variable: 'v', value: 's' }, marker }, 'x', {
      onStdout: (chunk) => chunks.push(chunk),
    })
    expect(await carried.verdict).toBe('kept')
    expect((await carried.result).stdout).toBe('out\n')
    expect(chunks.join('')).toBe('out\n')
    expect(sandbox.cells).toBe(1)
  })

  it('no sentinel: no cell at all', async () => {
    const sandbox = handle(kept, true)
    expect(await runCarriedCommand(sandbox, { sentinel: null, marker }, 'x', {}).verdict).toBe('kept')
    expect(sandbox.cells).toBe(0)
  })

  it('marker gone: not kept (the command did not run, it runs again after the repair)', async () => {
    const carried = runCarriedCommand(handle(lost, true), { sentinel: null, marker }, 'x', {})
    expect(await carried.verdict).toBe('not-kept')
  })

  it("files kept, memory lost: unknown (the command ran: its result is the user's, the full probes decide)", async () => {
    const carried = runCarriedCommand(
      handle(kept, false),
      { sentinel: { variable: 'v', value: 's' }, marker },
      'x',
      {},
    )
    expect(await carried.files).toBe('kept')
    expect(await carried.verdict).toBe('unknown')
    expect((await carried.result).stdout).toBe('out\n')
  })

  it("the same exit code without the test's own stderr is the user's: unknown", async () => {
    const own: CommandResult = { exitCode: CARRIED_LOST_EXIT, stdout: '', stderr: 'boom\n' }
    expect(await runCarriedCommand(handle(own, true), { sentinel: null, marker }, 'x', {}).verdict).toBe(
      'unknown',
    )
  })
})
