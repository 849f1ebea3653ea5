// A newcomer's rough edges: what a fresh clone ran into, each checked against the built CLI (or,
// for the TTY case, `main` in this process with a stream that says it is a terminal).
import { createHook } from 'node:async_hooks'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { createRedisSessionStore } from '@sandkeep/redis'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { main } from '../src/cli.js'
import { assertBuilt, cleanEnv, runCli, startCli, waitFor } from './helpers.js'

beforeAll(assertBuilt)
const twoTurns = fileURLToPath(new URL('./fixtures/two-turns.json', import.meta.url))
const scratch: string[] = []
afterEach(async () => {
  for (const dir of scratch.splice(0)) await rm(dir, { recursive: true, force: true })
})

/** A private TMPDIR for a child, so what it leaves behind can be listed. */
async function privateTmp(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sandkeep-cli-newcomer-'))
  scratch.push(dir)
  return dir
}

describe('sandkeep host cleans up', () => {
  it('without --state-dir, SIGINT removes its temporary directory (and the api-key file in it)', async () => {
    const tmp = await privateTmp()
    const host = startCli(['host', '--json'], cleanEnv({ TMPDIR: tmp }))
    const ready = await waitFor(() => {
      const line = host
        .stdout()
        .split('\n')
        .find((entry) => entry.includes('"host-ready"'))
      return line ? (JSON.parse(line) as { stateDir: string; apiKeyFile: string }) : undefined
    })
    expect(ready.stateDir.startsWith(tmp)).toBe(true)
    // (local-e2b also keeps its helper binaries in TMPDIR, shared by every host: not this run's state.)
    const hostDirs = async () => (await readdir(tmp)).filter((name) => name.startsWith('sandkeep-host-'))
    expect(await hostDirs()).toHaveLength(1)
    expect(await host.stop()).toBe(0)
    expect(await hostDirs()).toEqual([])
  }, 60_000)

  it('a port in use is one line naming the port and --port, exit 2, and no temporary directory left', async () => {
    const tmp = await privateTmp()
    const taken: Server = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as { port: number }).port
    try {
      const result = await runCli(['host', '--port', String(port)], {
        env: cleanEnv({ TMPDIR: tmp }),
        timeoutMs: 30_000,
      })
      expect(result.code).toBe(2)
      expect(result.stderr).toBe(
        `sandkeep host: port ${port} on 127.0.0.1 is already in use; choose another with --port <port> (--port 0 picks a free one)\n`,
      )
      expect(result.stderr).not.toContain('EADDRINUSE')
      expect((await readdir(tmp)).filter((name) => name.startsWith('sandkeep-host-'))).toEqual([])
    } finally {
      await new Promise((resolve) => taken.close(resolve))
    }
  }, 60_000)
})

describe('an unreachable Redis', () => {
  it('demo says the store is unreachable and exits 2 before any turn', async () => {
    const result = await runCli(['demo', '--idle', '0', '--transcript', twoTurns], {
      env: cleanEnv({ REDIS_URL: 'redis://127.0.0.1:1' }),
      timeoutMs: 60_000,
    })
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(
      /^sandkeep demo: the session store is unreachable: Redis at redis:\/\/127\.0\.0\.1:1 did not answer\..*No turn was run\.\n$/,
    )
    expect(result.stdout).not.toContain('turn 1')
    expect(result.stdout).not.toContain('running s')
  }, 60_000)
})

/**
 * Follows the timers and TCP sockets made from now on, by identity (async_hooks), so a transient timer of
 * the test runner's cannot hide one left behind, as counting them could. `live()` lists those still keeping
 * a process alive: referenced timers not yet fired or cleared, sockets not yet closed.
 */
function trackHandles() {
  const timers = new Set<NodeJS.Timeout>()
  const sockets = new Set<number>()
  const hook = createHook({
    init(asyncId, type, _trigger, resource) {
      if (type === 'Timeout') timers.add(resource as NodeJS.Timeout)
      if (type === 'TCPWRAP') sockets.add(asyncId)
    },
    destroy(asyncId) {
      sockets.delete(asyncId)
    },
  }).enable()
  const live = () => [
    ...[...timers]
      .filter((timer) => timer.hasRef() && !(timer as unknown as { _destroyed: boolean })._destroyed)
      .map((timer) => `timer of ${(timer as unknown as { _idleTimeout: number })._idleTimeout} ms`),
    ...[...sockets].map(() => 'socket'),
  ]
  return {
    live,
    /** Waits a bounded number of event-loop turns for the asynchronous closes, then stops following. */
    async settled(): Promise<string[]> {
      for (let i = 0; i < 50 && live().length > 0; i++) await new Promise((resolve) => setImmediate(resolve))
      hook.disable()
      return live()
    },
  }
}

describe('sessions commands exit promptly (a timer left behind kept each one alive 2.0 s after printing)', () => {
  it('the Redis store leaves no timer behind after close()', async () => {
    const handles = trackHandles()
    const store = createRedisSessionStore({
      redis: 'redis://127.0.0.1:6379',
      prefix: `sk-cli-newcomer-${process.pid}`,
    })
    await store.list('default')
    await store.close()
    // The socket's own close is asynchronous (ioredis clears its disconnect timer on 'close').
    expect(await handles.settled()).toEqual([])
  })

  // It used to sit out the store's 2 s disconnect timer after printing. Checked in this process, by what is
  // left to keep a process alive once `main` returned, rather than by how soon a child exits (which a loaded
  // machine stretches past any bound close to 2 s).
  it('sessions list leaves no timer or socket behind once it has printed', async () => {
    const handles = trackHandles()
    const stdout = new PassThrough()
    let out = ''
    stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8')
    })
    const code = await main(['sessions', 'list'], {
      stdout,
      stderr: new PassThrough(),
      env: cleanEnv({
        REDIS_URL: 'redis://127.0.0.1:6379',
        SANDKEEP_REDIS_PREFIX: `sk-cli-newcomer-${process.pid}`,
      }),
      signal: new AbortController().signal,
    })
    expect(code).toBe(0)
    expect(out).toBe('no sessions for tenant default\n')
    expect(await handles.settled()).toEqual([])
  })
})

describe('NO_COLOR on a terminal', () => {
  it('the demo writes no escape codes at all: no colours and no spinner erase-line codes', async () => {
    const stdout = Object.assign(new PassThrough(), { isTTY: true, columns: 80 })
    const stderr = Object.assign(new PassThrough(), { isTTY: true })
    let out = ''
    stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8')
    })
    const code = await main(['demo', '--idle', '0', '--transcript', twoTurns], {
      stdout,
      stderr,
      env: cleanEnv({ NO_COLOR: '1' }),
      signal: new AbortController().signal,
    })
    expect(code, out).toBe(0)
    expect(out).toContain('turn 2/2')
    expect(out).not.toContain('\u001b')
    expect(out).not.toContain('\r')
  }, 120_000)
})
