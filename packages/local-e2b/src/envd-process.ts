// envd's process.Process service: Start, Connect, List, SendInput, CloseStdin, SendSignal, Update (pty size).
// Processes with a terminal are envd-pty.ts's.
import { existsSync, readFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  ConnectError,
  decodeEnvelopes,
  openServerStream,
  parseJson,
  type ServerStream,
  writeUnary,
} from './connect-protocol.js'
import { createPtyTerminal, type PtySize, parsePtySize, ptyCommand } from './envd-pty.js'
import { authorizationUser, sandboxUserOf, UnknownUserError, userEnvironment } from './envd-user.js'
import type { HostEventLog } from './events.js'
import { isWritableSandboxPath, normalizeSandboxPath, type PathEscapeError, SANDBOX_HOME } from './paths.js'
import { SANDBOX_PATH, type SandboxUser } from './runtime/etc-files.js'
import { waitFor } from './runtime/freezer.js'
import type { ManagedProcess, ProcessConfig, Sandbox } from './sandbox.js'

/**
 * The environment every sandbox process of `user` starts from (nothing of the host's own environment leaks
 * in); the working directory is the template's, /home/user, for root too, as envd's default workdir.
 */
export function baseEnvironment(user: SandboxUser = 'user'): Record<string, string> {
  return {
    PATH: SANDBOX_PATH,
    ...userEnvironment(user),
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    PWD: SANDBOX_HOME,
  }
}

function asRecord(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value))
    throw new ConnectError('invalid_argument', `${what} must be an object`)
  return value as Record<string, unknown>
}

function asStringMap(value: unknown, what: string): Record<string, string> {
  const record = asRecord(value, what)
  const out: Record<string, string> = {}
  for (const [key, entry] of Object.entries(record)) {
    if (typeof entry !== 'string')
      throw new ConnectError('invalid_argument', `${what}.${key} must be a string`)
    out[key] = entry
  }
  return out
}

/** Parses a ProcessConfig message. */
function parseProcessConfig(value: unknown): ProcessConfig {
  const config = asRecord(value, 'process')
  if (typeof config.cmd !== 'string' || config.cmd.length === 0) {
    throw new ConnectError('invalid_argument', 'process.cmd must be a non-empty string')
  }
  const args = config.args ?? []
  if (!Array.isArray(args) || args.some((arg) => typeof arg !== 'string')) {
    throw new ConnectError('invalid_argument', 'process.args must be an array of strings')
  }
  const parsed: ProcessConfig = {
    cmd: config.cmd,
    args: args as string[],
    envs: asStringMap(config.envs, 'process.envs'),
  }
  if (config.cwd !== undefined && config.cwd !== null && config.cwd !== '') {
    if (typeof config.cwd !== 'string')
      throw new ConnectError('invalid_argument', 'process.cwd must be a string')
    parsed.cwd = config.cwd
  }
  return parsed
}

function selectProcess(sandbox: Sandbox, selector: unknown): ManagedProcess {
  const value = asRecord(selector, 'process')
  if (typeof value.pid === 'number') {
    const entry = sandbox.processes.get(value.pid)
    if (entry && !entry.ended) return entry
    throw new ConnectError('not_found', `process with pid ${value.pid} not found`)
  }
  if (typeof value.tag === 'string') {
    for (const entry of sandbox.processes.values()) if (entry.tag === value.tag && !entry.ended) return entry
    throw new ConnectError('not_found', `process with tag ${value.tag} not found`)
  }
  throw new ConnectError('invalid_argument', 'process selector needs a pid or a tag')
}

function broadcast(entry: ManagedProcess, event: unknown): void {
  if (entry.backlog) entry.backlog.push(event)
  else for (const stream of entry.subscribers) stream.send({ event })
}

/** Options of {@link startProcess}. */
export interface StartProcessOptions {
  config: ProcessConfig
  tag?: string
  /** Keep stdin open (SendInput); otherwise it is closed at once. */
  stdin: boolean
  /** Kill the process after this many ms (Connect-Timeout-Ms); 0 = never. */
  timeoutMs: number
  /**
   * Keep every event until the Start stream attaches ({@link attachStartStream}): as envd's Start, that
   * stream gets all the output from the spawn on. Without it (a process restarted on resume), output nobody
   * listens to is dropped, as envd drops it.
   */
  holdOutput?: boolean
  /** Run the command on a terminal of this size (envd's `pty`): its output arrives as `pty` data. */
  pty?: PtySize
  /** Who it runs as (default: the sandbox's template user). */
  user?: SandboxUser
}

/** Starts a process inside the sandbox and registers it in the sandbox's process table. */
export async function startProcess(
  sandbox: Sandbox,
  events: HostEventLog,
  options: StartProcessOptions,
): Promise<ManagedProcess> {
  let cwd: string
  try {
    cwd = normalizeSandboxPath(options.config.cwd ?? SANDBOX_HOME)
  } catch (error) {
    throw new ConnectError('invalid_argument', (error as PathEscapeError).message)
  }
  // The cwd is checked on the host side when it lies in the sandbox's own tree (the rest is read-only system).
  if (isWritableSandboxPath(cwd)) {
    // Walked race-free like every file operation: a swapped symlink must not make the host stat its own dirs.
    const stats = await sandbox.fs.statFollowing(cwd)
    if (!stats?.isDirectory()) {
      throw new ConnectError('invalid_argument', `cwd '${cwd}' does not exist`)
    }
  }
  await sandbox.runtime.boot()
  const user = options.user ?? sandbox.runtime.defaultUser
  const env = { ...baseEnvironment(user), ...sandbox.record.envVars, ...options.config.envs, PWD: cwd }
  const spawnStarted = performance.now()
  // Output is read from the spawn on (the entry, and so its pid, exists only after the handshake).
  const early: unknown[] = []
  let publish = (event: unknown): void => {
    early.push(event)
  }
  const { pty } = options
  const [command, args] = pty
    ? ptyCommand(sandbox, options.config, pty)
    : [options.config.cmd, options.config.args]
  // A terminal has one output; what reaches the helper's own stderr (it failed) is shown on it too.
  const [out, err] = pty ? ['pty', 'pty'] : ['stdout', 'stderr']
  const spawned = await sandbox.runtime.spawn(command, args, { cwd, env, user }, (child) => {
    child.stdout.on('data', (chunk: Buffer) => publish({ data: { [out]: chunk.toString('base64') } }))
    child.stderr.on('data', (chunk: Buffer) => publish({ data: { [err]: chunk.toString('base64') } }))
  })
  const spawnMs = performance.now() - spawnStarted
  const entry: ManagedProcess = {
    pid: spawned.pid,
    config: options.config,
    spawned,
    subscribers: new Set(),
    ended: false,
    startedAt: Date.now(),
  }
  if (options.holdOutput) entry.backlog = early
  publish = (event) => broadcast(entry, event)
  if (options.tag !== undefined) entry.tag = options.tag
  sandbox.processes.set(entry.pid, entry)
  sandbox.record.lastPid = Math.max(sandbox.record.lastPid ?? 0, entry.pid)
  const { child } = spawned
  // A terminal's helper reads its frames from stdin, which therefore stays open.
  if (pty) entry.terminal = createPtyTerminal(child)
  else if (!options.stdin) child.stdin.end()
  child.stdin.on('error', () => {})
  if (options.timeoutMs > 0) {
    entry.deadline = setTimeout(() => {
      events.record('process-timeout', sandbox.id, { pid: entry.pid, timeoutMs: options.timeoutMs })
      signalProcess(entry, 'SIGKILL')
    }, options.timeoutMs)
    entry.deadline.unref()
  }
  events.record('process-start', sandbox.id, { pid: entry.pid, cmd: options.config.cmd, spawnMs })
  const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
    endWhenDrained(sandbox, events, entry, { code, signal, spawnStarted, spawnMs })
  // A fast command (`echo`) can exit while the spawn awaited its pid handshake, on a busy host (many commands
  // at once): its exit event has then already fired, and waiting for it would hold the stream open until the
  // command's timeout.
  if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode)
  else child.once('exit', onExit)
  return entry
}

/**
 * A process exited: once its output is drained, its subscribers get the end event and it leaves the table.
 * Output written just before the exit can still be in the pipes. A grandchild that kept them open
 * (`server &`) must not hold the end event back forever, so stop waiting once the pipes have been quiet
 * for a while; a busy event loop (timers can fire before pending reads) must not cut output short.
 */
function endWhenDrained(
  sandbox: Sandbox,
  events: HostEventLog,
  entry: ManagedProcess,
  exit: { code: number | null; signal: NodeJS.Signals | null; spawnStarted: number; spawnMs: number },
): void {
  const { code, signal, spawnStarted, spawnMs } = exit
  const child = entry.spawned.child
  if (entry.deadline) clearTimeout(entry.deadline)
  const exitedAt = performance.now()
  const drained = Promise.all([
    new Promise((resolve) =>
      child.stdout.readableEnded ? resolve(null) : child.stdout.once('end', resolve),
    ),
    new Promise((resolve) =>
      child.stderr.readableEnded ? resolve(null) : child.stderr.once('end', resolve),
    ),
  ])
  let lastData = performance.now()
  const onData = () => {
    lastData = performance.now()
  }
  child.stdout.on('data', onData)
  child.stderr.on('data', onData)
  const grace = new Promise<void>((resolve) => {
    const quiet = () => {
      const now = performance.now()
      return now - exitedAt >= 300 && now - lastData >= 200
    }
    // A timer runs before the loop's poll phase: after a stall (a loaded host), the output and the end of
    // the pipes may be waiting unread while the timer finds them quiet. The decision is taken again from
    // setImmediate, after one poll phase has read whatever was pending.
    const check = () => {
      if (!quiet()) return void setTimeout(check, 50).unref()
      setImmediate(() => (quiet() ? resolve() : setTimeout(check, 50).unref())).unref()
    }
    setTimeout(check, 100).unref()
  })
  void Promise.race([drained, grace]).then(() => {
    entry.ended = true
    const end: { exitCode: number; exited: boolean; status: string; error?: string } =
      signal !== null
        ? { exitCode: -1, exited: false, status: `signal: ${signalName(signal)}` }
        : { exitCode: code ?? -1, exited: true, status: `exit status ${code ?? -1}` }
    // As envd: a process that did not exit 0 carries its status as the error too (the SDK's
    // CommandExitError message).
    if (end.exitCode !== 0) end.error = end.status
    broadcast(entry, { end })
    events.record('process-end', sandbox.id, {
      pid: entry.pid,
      exitCode: end.exitCode,
      status: end.status,
      drainMs: performance.now() - exitedAt,
      runMs: exitedAt - spawnStarted - spawnMs,
    })
    for (const stream of entry.subscribers) stream.end()
    entry.subscribers.clear()
    if (sandbox.processes.get(entry.pid) === entry) sandbox.processes.delete(entry.pid)
  })
}

/** Signals the process: through its terminal's relay when it has one, else its whole process group. */
function signalProcess(entry: ManagedProcess, signal: NodeJS.Signals): void {
  if (!entry.terminal?.signal(signal)) entry.spawned.child.kill(signal)
}

/** Host pid of the command an isolated launcher forked into the sandbox (the launcher waits for it). */
function commandHostPid(sandbox: Sandbox, entry: ManagedProcess): number | undefined {
  const launcher = entry.spawned.child.pid
  // Unisolated, the launcher execs the command: it is the command.
  if (launcher === undefined || !sandbox.runtime.isolated) return launcher
  try {
    const [first] = readFileSync(`/proc/${launcher}/task/${launcher}/children`, 'utf8').split(/\s+/)
    return first ? Number(first) : undefined
  } catch {
    return undefined
  }
}

/** How long SendSignal with SIGKILL waits for the process to be gone before it answers anyway. */
const KILL_WAIT_MS = 2_000

const gone = (pid: number | undefined) => pid === undefined || !existsSync(`/proc/${pid}`)

/**
 * SIGKILL, answered once the process is gone and reaped, so that a `kill -0 <pid>` sent right after fails.
 * The command dies first, alone, so that the launcher waiting for it reaps it at once; killed together, the
 * command would outlive the launcher as a zombie of the host's init, which may reap it only seconds later.
 * Then the rest of its process group.
 */
async function killAndWait(sandbox: Sandbox, entry: ManagedProcess): Promise<void> {
  const launcher = entry.spawned.child.pid
  const command = commandHostPid(sandbox, entry)
  const signalled = entry.terminal?.signal('SIGKILL') ?? false
  if (!signalled && command !== undefined && command !== launcher) {
    try {
      process.kill(command, 'SIGKILL')
    } catch {}
  }
  await waitFor(() => gone(command) || command === launcher, KILL_WAIT_MS).catch(() => {})
  entry.spawned.child.kill('SIGKILL')
  await waitFor(() => gone(command) && gone(launcher), KILL_WAIT_MS).catch(() => {})
}

function signalName(signal: NodeJS.Signals): string {
  const names: Partial<Record<NodeJS.Signals, string>> = {
    SIGKILL: 'killed',
    SIGTERM: 'terminated',
    SIGINT: 'interrupt',
    SIGHUP: 'hangup',
  }
  return names[signal] ?? signal
}

/**
 * Gives the Start stream its process: the start event, then what the process wrote (or its end) while the
 * host was still answering Start. The backlog is small: the host attaches right after the pid handshake,
 * and the process reports its pid before it execs the command, so only a few reads can come first.
 */
export function attachStartStream(
  entry: ManagedProcess,
  stream: ServerStream,
  keepaliveSeconds: number,
): void {
  stream.send({ event: { start: { pid: entry.pid } } })
  subscribe(entry, stream, keepaliveSeconds)
  const held = entry.backlog ?? []
  entry.backlog = undefined
  for (const event of held) stream.send({ event })
  if (entry.ended) {
    entry.subscribers.delete(stream)
    stream.end()
  }
}

function subscribe(entry: ManagedProcess, stream: ServerStream, keepaliveSeconds: number): void {
  entry.subscribers.add(stream)
  let keepalive: NodeJS.Timeout | undefined
  if (keepaliveSeconds > 0) {
    keepalive = setInterval(() => stream.send({ event: { keepalive: {} } }), keepaliveSeconds * 1000)
    keepalive.unref()
  }
  // The client going away does not stop the process (background commands outlive their stream).
  stream.onClose(() => {
    if (keepalive) clearInterval(keepalive)
    entry.subscribers.delete(stream)
  })
  const original = stream.end.bind(stream)
  stream.end = (error) => {
    if (keepalive) clearInterval(keepalive)
    original(error)
  }
}

function headerNumber(request: IncomingMessage, name: string): number {
  const raw = request.headers[name]
  const value = Number(Array.isArray(raw) ? raw[0] : raw)
  return Number.isFinite(value) && value > 0 ? value : 0
}

/** One RPC method: answers on `response` (a unary message or a server stream). */
type ProcessMethod = (call: {
  sandbox: Sandbox
  events: HostEventLog
  request: IncomingMessage
  response: ServerResponse
  body: Buffer
}) => Promise<void> | void

const PROCESS_METHODS: Record<string, ProcessMethod> = {
  async Start({ sandbox, events, request, response, body }) {
    const [message] = decodeEnvelopes(body)
    const start = asRecord(message, 'request')
    const config = parseProcessConfig(start.process)
    const pty = start.pty === undefined || start.pty === null ? undefined : parsePtySize(start.pty)
    // As envd: the named user, else the template's; root is uid 0 of the sandbox's user namespace.
    let user: SandboxUser
    try {
      user = sandboxUserOf(authorizationUser(request), sandbox.runtime.defaultUser)
    } catch (error) {
      if (error instanceof UnknownUserError) throw new ConnectError('unauthenticated', error.message)
      throw error
    }
    const options: StartProcessOptions = {
      user,
      config,
      holdOutput: true,
      stdin: start.stdin === true,
      timeoutMs: headerNumber(request, 'connect-timeout-ms'),
    }
    if (typeof start.tag === 'string') options.tag = start.tag
    if (pty) options.pty = pty
    const entry = await startProcess(sandbox, events, options)
    attachStartStream(entry, openServerStream(response), headerNumber(request, 'keepalive-ping-interval'))
  },
  Connect({ sandbox, request, response, body }) {
    const [message] = decodeEnvelopes(body)
    const entry = selectProcess(sandbox, asRecord(message, 'request').process)
    const stream = openServerStream(response)
    subscribe(entry, stream, headerNumber(request, 'keepalive-ping-interval'))
    stream.send({ event: { start: { pid: entry.pid } } })
  },
  List({ sandbox, response }) {
    const processes = [...sandbox.processes.values()]
      .filter((entry) => !entry.ended)
      .map((entry) => ({
        pid: entry.pid,
        config: {
          cmd: entry.config.cmd,
          args: entry.config.args,
          envs: entry.config.envs,
          cwd: entry.config.cwd ?? SANDBOX_HOME,
        },
        ...(entry.tag === undefined ? {} : { tag: entry.tag }),
      }))
    writeUnary(response, { processes })
  },
  SendInput({ sandbox, response, body }) {
    const message = asRecord(parseJson(body), 'request')
    const entry = selectProcess(sandbox, message.process)
    const input = asRecord(message.input, 'input')
    // envd keeps the two apart: a terminal is typed into, a pipe is written to.
    if (typeof input.pty === 'string') {
      if (!entry.terminal)
        throw new ConnectError('internal', `process ${entry.pid} has no terminal; send stdin`)
      entry.terminal.type(Buffer.from(input.pty, 'base64'))
    } else if (typeof input.stdin === 'string') {
      if (entry.terminal) {
        throw new ConnectError('internal', `process ${entry.pid} runs on a terminal; send pty input`)
      }
      if (entry.spawned.child.stdin.writableEnded) {
        throw new ConnectError('failed_precondition', `stdin of process ${entry.pid} is closed`)
      }
      entry.spawned.child.stdin.write(Buffer.from(input.stdin, 'base64'))
    }
    writeUnary(response, {})
  },
  CloseStdin({ sandbox, response, body }) {
    const entry = selectProcess(sandbox, asRecord(parseJson(body), 'request').process)
    if (entry.terminal) {
      throw new ConnectError('unknown', `process ${entry.pid} runs on a terminal; type Ctrl+D (0x04) instead`)
    }
    entry.spawned.child.stdin.end()
    writeUnary(response, {})
  },
  async SendSignal({ sandbox, events, response, body }) {
    const message = asRecord(parseJson(body), 'request')
    const entry = selectProcess(sandbox, message.process)
    const signal =
      message.signal === 'SIGNAL_SIGTERM' || message.signal === 15
        ? 'SIGTERM'
        : message.signal === 'SIGNAL_SIGKILL' || message.signal === 9
          ? 'SIGKILL'
          : undefined
    if (!signal) throw new ConnectError('invalid_argument', `unsupported signal ${String(message.signal)}`)
    if (signal === 'SIGKILL') await killAndWait(sandbox, entry)
    else signalProcess(entry, signal)
    events.record('process-signal', sandbox.id, { pid: entry.pid, signal })
    writeUnary(response, {})
  },
  Update({ sandbox, response, body }) {
    const message = asRecord(parseJson(body), 'request')
    const entry = selectProcess(sandbox, message.process)
    if (message.pty !== undefined && message.pty !== null) {
      const size = parsePtySize(message.pty)
      if (!entry.terminal) throw new ConnectError('internal', `process ${entry.pid} has no terminal`)
      entry.terminal.resize(size)
    }
    writeUnary(response, {})
  },
  StreamInput() {
    throw new ConnectError('unimplemented', 'StreamInput (client streaming) is not supported; use SendInput')
  },
}

/** Serves `/process.Process/<method>`. */
export async function handleProcessRpc(
  method: string,
  sandbox: Sandbox,
  events: HostEventLog,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
): Promise<void> {
  const handler = Object.hasOwn(PROCESS_METHODS, method) ? PROCESS_METHODS[method] : undefined
  if (!handler) throw new ConnectError('unimplemented', `process.Process/${method} does not exist`)
  await handler({ sandbox, events, request, response, body })
}
