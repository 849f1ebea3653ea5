import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The BUILT CLI: tests run what users run (`pnpm --filter sandkeep... build` first). */
export const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
export const repositoryRoot = fileURLToPath(new URL('../../../', import.meta.url))

export function assertBuilt(): void {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run pnpm --filter sandkeep... build`)
}

/** What a CLI run produced. */
export interface RunResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Environment for a child CLI: no inherited Redis/E2B configuration unless the test sets it. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const key of Object.keys(env)) {
    if (key.startsWith('E2B_') || key === 'REDIS_URL' || key.startsWith('SANDKEEP_') || key === 'NO_COLOR')
      delete env[key]
  }
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key]
    else env[key] = value
  }
  return env
}

/** Runs `node dist/bin.js ...args` to completion (stdout is a pipe, so never a TTY). */
export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<RunResult> {
  return runToEnd(process.execPath, [bin, ...args], {
    env: options.env ?? cleanEnv(),
    timeoutMs: options.timeoutMs ?? 150_000,
    label: `sandkeep ${args.join(' ')}`,
  })
}

/** Runs a command in the repository root to completion; past `timeoutMs` it is killed and the promise rejects. */
export function runToEnd(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; timeoutMs: number; label: string },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: repositoryRoot,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const output = collectOutput(child)
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(
          `${options.label} did not finish in time\nstdout:\n${output.stdout()}\nstderr:\n${output.stderr()}`,
        ),
      )
    }, options.timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout: output.stdout(), stderr: output.stderr() })
    })
  })
}

/** A child's stdout and stderr so far, as text. */
function collectOutput(child: ChildProcess): { stdout(): string; stderr(): string } {
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  return { stdout: () => stdout, stderr: () => stderr }
}

/** Parses `--json` output: every line must be one JSON object with a string `type`. */
export function parseJsonLines(stdout: string): Array<Record<string, unknown> & { type: string }> {
  const lines = stdout.split('\n').filter((line) => line.length > 0)
  return lines.map((line, index) => {
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch {
      throw new Error(`line ${index + 1} is not JSON: ${line.slice(0, 200)}`)
    }
    if (
      typeof value !== 'object' ||
      value === null ||
      typeof (value as { type?: unknown }).type !== 'string'
    ) {
      throw new Error(`line ${index + 1} has no string type: ${line.slice(0, 200)}`)
    }
    return value as Record<string, unknown> & { type: string }
  })
}

/** A long-running CLI child (e.g. `sandkeep host`) with its output so far. */
export interface Background {
  child: ChildProcess
  stdout(): string
  stderr(): string
  stop(): Promise<number | null>
}

export function startCli(args: string[], env: NodeJS.ProcessEnv): Background {
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: repositoryRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const output = collectOutput(child)
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  return {
    child,
    ...output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGINT')
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      const code = await exited
      clearTimeout(timer)
      return code
    },
  }
}

/** Waits until `predicate` holds, polling. */
export async function waitFor<T>(read: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = read()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
