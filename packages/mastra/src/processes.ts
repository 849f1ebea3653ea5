import {
  type CommandResult,
  type MastraSandbox,
  ProcessHandle,
  type ProcessInfo,
  SandboxProcessManager,
  type SpawnProcessOptions,
} from '@mastra/core/workspace'
import type { SandboxHandle } from '@sandkeep/core'
import { shellQuote } from '@sandkeep/core/provider'

// Background processes run through sandkeep's startProcess, which outlives the call, the turn and a pause.
// Their output and exit code go to files in the sandbox (so they survive a pause too) and are read back
// when Mastra asks for them: sandkeep's process API streams nothing after the start.
const DIR = '/tmp/.sandkeep-mastra'
/** Attempts of `wait()` at reading the exit file, 250 ms apart (a wait on a server would never end). */
const WAIT_ATTEMPTS = 2400
/** Between the three files in one read (record separators, which command output rarely holds). */
const SEPARATOR = '\\036sandkeep\\036'
const SEPARATOR_TEXT = '\u001esandkeep\u001e'

interface Spawned {
  handle: () => SandboxHandle
  pid: number
  base: string
  startedAt: number
}

/** A process started by {@link SandkeepProcessManager}; output and exit code read from its files. */
class SandkeepProcessHandle extends ProcessHandle {
  readonly pid: string
  #exitCode: number | undefined
  #shown = { stdout: 0, stderr: 0 }
  readonly #spawned: Spawned

  constructor(spawned: Spawned, options: SpawnProcessOptions) {
    super(options)
    this.#spawned = spawned
    this.pid = String(spawned.pid)
  }

  get exitCode(): number | undefined {
    return this.#exitCode
  }

  /** Reads the output files and the exit file; emits what is new. */
  async refresh(): Promise<void> {
    const { base } = this.#spawned
    const read = await this.#spawned
      .handle()
      .runCommand(
        `cat ${base}.exit 2>/dev/null; printf '${SEPARATOR}'; cat ${base}.out; printf '${SEPARATOR}'; cat ${base}.err`,
      )
    const [exit = '', stdout = '', stderr = ''] = read.stdout.split(SEPARATOR_TEXT)
    if (stdout.length > this.#shown.stdout) this.emitStdout(stdout.slice(this.#shown.stdout))
    if (stderr.length > this.#shown.stderr) this.emitStderr(stderr.slice(this.#shown.stderr))
    this.#shown = { stdout: stdout.length, stderr: stderr.length }
    const code = exit.trim()
    if (code !== '' && this.#exitCode === undefined) this.#exitCode = Number(code)
  }

  async kill(): Promise<boolean> {
    if (this.#exitCode !== undefined) return false
    const { base } = this.#spawned
    // The command's subshell and its children; the wrapper then records 137 as the exit code.
    const killed = await this.#spawned
      .handle()
      .runCommand(
        `p=$(cat ${base}.pid) && kill -0 "$p" 2>/dev/null && { pkill -KILL -P "$p"; kill -KILL "$p"; }`,
      )
    if (killed.exitCode !== 0) return false
    this.#exitCode = 137
    return true
  }

  async sendStdin(): Promise<void> {
    throw new Error('sandkeep background processes take no stdin: pass the input in the command.')
  }

  override async wait(): Promise<CommandResult> {
    for (let attempt = 0; this.#exitCode === undefined && attempt < WAIT_ATTEMPTS; attempt++) {
      await this.refresh()
      if (this.#exitCode === undefined) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    const exitCode = this.#exitCode ?? -1
    return {
      success: exitCode === 0,
      exitCode,
      stdout: this.stdout,
      stderr: this.stderr,
      executionTimeMs: Date.now() - this.#spawned.startedAt,
      ...(this.#exitCode === undefined ? { timedOut: true } : {}),
      ...(this.command ? { command: this.command } : {}),
    }
  }
}

/** Mastra's process manager over the thread's sandkeep sandbox. */
export class SandkeepProcessManager extends SandboxProcessManager<MastraSandbox> {
  #next = 0

  override async spawn(command: string, options: SpawnProcessOptions = {}): Promise<ProcessHandle> {
    const sandbox = this.sandbox as MastraSandbox & { handle: SandboxHandle }
    const handle = () => sandbox.handle
    const base = `${DIR}/${Date.now().toString(36)}-${this.#next++}`
    const wrapped =
      // A subshell, so an `exit` in the command ends it and not the wrapper that records the code.
      `mkdir -p ${DIR}; ( ${command}\n) >${base}.out 2>${base}.err & echo $! >${base}.pid; wait $!; ` +
      `echo $? >${base}.exit.tmp; mv ${base}.exit.tmp ${base}.exit`
    const envs: Record<string, string> = {}
    for (const [name, value] of Object.entries(options.env ?? {})) if (value !== undefined) envs[name] = value
    const cwd = options.cwd ?? sandbox.workingDirectory
    const { pid } = await handle().startProcess(`bash -c ${shellQuote(wrapped)}`, {
      envs,
      ...(cwd === undefined ? {} : { cwd }),
    })
    const process = new SandkeepProcessHandle({ handle, pid, base, startedAt: Date.now() }, options)
    this._tracked.set(process.pid, process)
    return process
  }

  /** This object's processes (with exit codes), then the sandbox's other running ones (another process's, a repair's). */
  override async list(): Promise<ProcessInfo[]> {
    const sandbox = this.sandbox as MastraSandbox & { handle: SandboxHandle }
    const running = await sandbox.handle.listProcesses()
    const runningPids = new Set(running.map((info) => String(info.pid)))
    const infos: ProcessInfo[] = []
    for (const [pid, process] of this._tracked) {
      const exitCode = process.exitCode
      infos.push({
        pid,
        ...(process.command ? { command: process.command } : {}),
        running: exitCode === undefined && runningPids.has(pid),
        ...(exitCode === undefined ? {} : { exitCode }),
      })
    }
    for (const info of running) {
      const pid = String(info.pid)
      if (!this._tracked.has(pid)) infos.push({ pid, command: info.command, running: true })
    }
    return infos
  }

  override async get(pid: string): Promise<ProcessHandle | undefined> {
    const process = this._tracked.get(pid)
    if (process instanceof SandkeepProcessHandle) await process.refresh()
    return process
  }
}
