// Shared setup for the contract tests: a host per file and SDK connection options pointing at it.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { NotFoundError } from '@e2b/code-interpreter'
import { Sandbox } from 'e2b'
import { afterAll, beforeAll } from 'vitest'
import { type LocalE2BHost, type LocalE2BOptions, startLocalE2B } from '../src/index.js'

export interface TestHost {
  host: LocalE2BHost
  /** Connection options for `Sandbox.create/connect` of the e2b SDKs. */
  opts: { apiKey: string; apiUrl: string; sandboxUrl: string; requestTimeoutMs: number }
}

/** A Python HTTP server on 127.0.0.1:8080 that answers each GET with how many GETs it has served. */
export const COUNTING_SERVER = [
  'import http.server',
  'count = 0',
  'class H(http.server.BaseHTTPRequestHandler):',
  '    def do_GET(self):',
  '        global count',
  '        count += 1',
  '        self.send_response(200); self.end_headers(); self.wfile.write(str(count).encode())',
  '    def log_message(self, *a): pass',
  "http.server.HTTPServer(('127.0.0.1', 8080), H).serve_forever()",
].join('\n')

export async function startTestHost(options: LocalE2BOptions = {}): Promise<TestHost> {
  const host = await startLocalE2B({ logger: () => {}, ...options })
  return {
    host,
    opts: { apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl, requestTimeoutMs: 30_000 },
  }
}

/**
 * A host for the enclosing `describe`: started in `beforeAll`, its sandboxes killed and the host closed in
 * `afterAll`. `host` and `opts` are readable from the tests on.
 */
export function useTestHost(options: LocalE2BOptions = {}): TestHost {
  let started: TestHost | undefined
  beforeAll(async () => {
    started = await startTestHost(options)
  })
  afterAll(() => stopTestHost(started))
  const current = (): TestHost => {
    if (!started) throw new Error('the test host starts in beforeAll; use it from a test')
    return started
  }
  return {
    get host() {
      return current().host
    },
    get opts() {
      return current().opts
    },
  }
}

/** Kills every sandbox the host still has (through the SDK, as a user would) and closes the host. */
export async function stopTestHost(t: TestHost | undefined): Promise<void> {
  if (!t) return
  for (const view of t.host.listSandboxes()) await Sandbox.kill(view.sandboxId, t.opts).catch(() => {})
  await t.host.close()
}

/** The result of a command, also when it exits non-zero (the SDK throws then). */
export async function commandResult(
  sandbox: Sandbox,
  command: string,
  options: { user?: 'root' | 'user'; timeoutMs?: number } = {},
): Promise<{ exitCode: number; stdout: string; stderr: string; error?: string }> {
  try {
    return await sandbox.commands.run(command, options)
  } catch (error) {
    const result = (
      error as { result?: { exitCode: number; stdout: string; stderr: string; error?: string } }
    ).result
    if (!result) throw error
    return result
  }
}

/**
 * A python3 -c script that forks up to `tries` sleeping children and prints `EAGAIN True` when a fork fails
 * with EAGAIN before `limit` children exist (then kills them all).
 */
export function forkPastPidsScript(tries: number, limit: number): string {
  return [
    'import os, time, signal',
    'children = []',
    'try:',
    `    for i in range(${tries}):`,
    '        pid = os.fork()',
    '        if pid == 0:',
    '            time.sleep(60)',
    '            os._exit(0)',
    '        children.append(pid)',
    '    print("no limit", len(children))',
    'except BlockingIOError as error:',
    `    print("EAGAIN" if error.errno == 11 else error, len(children) < ${limit})`,
    'for pid in children: os.kill(pid, signal.SIGKILL)',
  ].join('\n')
}

/** Restarts the host through its admin route (the restart fault) and waits until it is back. */
export async function restartHost(t: TestHost): Promise<void> {
  const restarted = t.host.events.waitFor('host-restart')
  const response = await fetch(`${t.host.apiUrl}/_local/restart`, {
    method: 'POST',
    headers: { 'x-api-key': t.host.apiKey },
  })
  if (response.status !== 202) throw new Error(`restart answered ${response.status}`)
  await restarted
}

export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** What `promise` rejected with (fails the test when it resolves); `statusCode` is the SDK's, when it has one. */
export async function rejection(promise: Promise<unknown>): Promise<Error & { statusCode?: number }> {
  try {
    await promise
  } catch (error) {
    return error as Error & { statusCode?: number }
  }
  throw new Error('expected a rejection')
}

/** A host running as its own process (the built bin), as an operator runs it. */
export interface HostProcess {
  child: ChildProcessWithoutNullStreams
  /** Connection options for the SDKs. */
  opts: { apiKey: string; apiUrl: string; sandboxUrl: string; requestTimeoutMs: number }
  stateDir: string
  /** Everything the host wrote on stderr so far. */
  stderr: () => string
  /** Resolves with the exit code (or signal) once the process ended. */
  exited: Promise<number | string | null>
}

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))

/** Starts `dist/bin.js` on `stateDir` (build the package first); resolves once it printed its exports. */
export async function startHostProcess(
  stateDir: string,
  options: { args?: string[]; env?: NodeJS.ProcessEnv; apiKey?: string; spawnAs?: string[] } = {},
): Promise<HostProcess> {
  const apiKey = options.apiKey ?? `e2b_test_${randomBytes(12).toString('hex')}`
  const args = [BIN, '--port', '0', '--state-dir', stateDir, '--api-key', apiKey, ...(options.args ?? [])]
  const command = options.spawnAs ? [...options.spawnAs, process.execPath] : [process.execPath]
  const child = spawn(command[0] as string, [...command.slice(1), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env ?? process.env,
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  )
  const apiUrl = await new Promise<string>((resolve, reject) => {
    let stdout = ''
    const timer = setTimeout(() => reject(new Error(`host did not start in time: ${stderr}`)), 30_000)
    void exited.then((code) => reject(new Error(`host exited early (${code}): ${stderr}`)))
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const url = /^export E2B_API_URL=(\S+)$/m.exec(stdout)?.[1]
      if (url && stdout.includes('E2B_DOMAIN')) {
        clearTimeout(timer)
        resolve(url)
      }
    })
  })
  return {
    child,
    opts: { apiKey, apiUrl, sandboxUrl: apiUrl, requestTimeoutMs: 30_000 },
    stateDir,
    stderr: () => stderr,
    exited,
  }
}

/** Rejects when `promise` takes longer than `ms` (so that a hang fails the test with a reason). */
export function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/** A code-interpreter context as the SDK describes it. */
export interface CodeContext {
  id: string
  language: string
  cwd: string
}

/**
 * The interpreter's context routes, called with the sandbox's envd access token in X-Access-Token, as E2B's
 * code-interpreter server wants on every route but /health. @e2b/code-interpreter 2.8's createCodeContext,
 * listCodeContexts, restartCodeContext and removeCodeContext send only the traffic token, which never opens
 * port 49999 (it is meant for the sandbox's own ports): they get 401, on E2B as here.
 */
export function contextsOf(sandbox: { sandboxId: string }, sandboxUrl: string) {
  const token = (sandbox as { envdAccessToken?: string }).envdAccessToken ?? ''
  const call = async (method: string, path: string, body?: unknown): Promise<Response> => {
    const response = await fetch(`${sandboxUrl}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        'E2b-Sandbox-Id': sandbox.sandboxId,
        'E2b-Sandbox-Port': '49999',
        'X-Access-Token': token,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    if (response.status === 404) throw new NotFoundError(await response.text())
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}: ${await response.text()}`)
    return response
  }
  const idOf = (context: CodeContext | string) => (typeof context === 'string' ? context : context.id)
  return {
    async create(options: { language?: string; cwd?: string } = {}): Promise<CodeContext> {
      return (await (await call('POST', '/contexts', options)).json()) as CodeContext
    },
    async list(): Promise<CodeContext[]> {
      return (await (await call('GET', '/contexts')).json()) as CodeContext[]
    },
    async restart(context: CodeContext | string): Promise<void> {
      await call('POST', `/contexts/${idOf(context)}/restart`)
    },
    async remove(context: CodeContext | string): Promise<void> {
      await call('DELETE', `/contexts/${idOf(context)}`)
    },
  }
}
