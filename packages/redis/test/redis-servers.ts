// Private redis-server processes for tests: a 3-master Cluster, a single AOF server, a volatile server (no
// persistence, restartable empty) and a master watched by a Sentinel, each on free loopback ports (in a temp
// dir where they keep files), shut down and deleted afterwards.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)))
  })
}

/** A free loopback port whose cluster bus port (+10000) is free too. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = 20_000 + Math.floor(Math.random() * 20_000)
    if ((await portIsFree(port)) && (await portIsFree(port + 10_000))) return port
  }
  throw new Error('no free loopback port found')
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args])
  return stdout
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      if (await check()) return
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

/** A running 3-master Redis Cluster on loopback. */
export interface TestCluster {
  /** Ports of the three masters. */
  ports: number[]
  /** Shuts the nodes down and deletes their directory. */
  stop(): Promise<void>
}

export async function startRedisCluster(): Promise<TestCluster> {
  const directory = await mkdtemp(join(tmpdir(), 'sandkeep-cluster-'))
  const ports: number[] = []
  try {
    for (let index = 0; index < 3; index += 1) {
      let port = await freePort()
      while (ports.includes(port)) port = await freePort()
      ports.push(port)
      await run('redis-server', [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(directory, `nodes-${port}.conf`),
        '--dir',
        directory,
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'yes',
        '--pidfile',
        join(directory, `redis-${port}.pid`),
        '--logfile',
        join(directory, `redis-${port}.log`),
      ])
    }
    for (const port of ports) {
      await waitFor(async () => (await cli(port, 'ping')).trim() === 'PONG', 10_000, `node ${port}`)
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((port) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ])
    for (const port of ports) {
      await waitFor(
        async () => (await cli(port, 'cluster', 'info')).includes('cluster_state:ok'),
        30_000,
        `cluster_state:ok on ${port}`,
      )
    }
  } catch (error) {
    await stopAll(ports, directory)
    throw error
  }
  return { ports, stop: () => stopAll(ports, directory) }
}

async function stopAll(ports: number[], directory: string): Promise<void> {
  await Promise.allSettled(ports.map((port) => cli(port, 'shutdown', 'nosave')))
  await rm(directory, { recursive: true, force: true })
}

/** A private redis-server with AOF (`appendfsync always`) that a test can SIGKILL and restart. */
export interface TestAofServer {
  port: number
  url: string
  /** SIGKILL: no shutdown, no final fsync beyond what `always` already did. */
  kill(): Promise<void>
  /** Starts it again on the same port and directory (replays the AOF). */
  start(): Promise<void>
  /** Stops it and deletes its directory. */
  stop(): Promise<void>
}

/** A redis-server run in the foreground (so a test holds the process and can SIGKILL it) on a fixed port. */
function foregroundServer(port: number, args: string[], what: string) {
  let child: ChildProcess | undefined
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', ...args], {
      stdio: 'ignore',
    })
    await waitFor(async () => (await cli(port, 'ping')).trim() === 'PONG', 10_000, `${what} on ${port}`)
  }
  const kill = async () => {
    const running = child
    if (!running || running.exitCode !== null) return
    const exited = new Promise((resolve) => running.once('exit', resolve))
    running.kill('SIGKILL')
    await exited
  }
  return { start, kill }
}

export async function startAofServer(): Promise<TestAofServer> {
  const directory = await mkdtemp(join(tmpdir(), 'sandkeep-aof-'))
  const port = await freePort()
  const { start, kill } = foregroundServer(
    port,
    [
      '--dir',
      directory,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
      '--logfile',
      join(directory, 'redis.log'),
    ],
    'AOF server',
  )
  await start()
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill,
    start,
    stop: async () => {
      await kill()
      await rm(directory, { recursive: true, force: true })
    },
  }
}

/** A private redis-server without persistence, which a test may stall (DEBUG SLEEP) or restart empty. */
export interface TestVolatileServer {
  port: number
  url: string
  /** SIGKILL and start again on the same port: the data is gone. */
  restart(): Promise<void>
  stop(): Promise<void>
}

export async function startVolatileServer(): Promise<TestVolatileServer> {
  const port = await freePort()
  const { start, kill } = foregroundServer(
    port,
    ['--save', '', '--appendonly', 'no', '--enable-debug-command', 'local'],
    'volatile server',
  )
  await start()
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    restart: async () => {
      await kill()
      await start()
    },
    stop: kill,
  }
}

/** A master and one Sentinel that monitors it under {@link SENTINEL_MASTER_NAME}. */
export interface TestSentinel {
  masterPort: number
  sentinelPort: number
  /** Stops both and deletes their directory. */
  stop(): Promise<void>
}

export const SENTINEL_MASTER_NAME = 'sandkeep-test'

export async function startSentinel(): Promise<TestSentinel> {
  const directory = await mkdtemp(join(tmpdir(), 'sandkeep-sentinel-'))
  const masterPort = await freePort()
  const sentinelPort = await freePort()
  const children: ChildProcess[] = []
  const stop = async () => {
    for (const child of children) {
      if (child.exitCode !== null) continue
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
    await rm(directory, { recursive: true, force: true })
  }
  try {
    children.push(
      spawn(
        'redis-server',
        ['--port', String(masterPort), '--bind', '127.0.0.1', '--dir', directory, '--save', ''],
        { stdio: 'ignore' },
      ),
    )
    await waitFor(async () => (await cli(masterPort, 'ping')).trim() === 'PONG', 10_000, 'master')
    // Sentinel rewrites its config file, so it gets one of its own.
    const config = join(directory, 'sentinel.conf')
    await writeFile(
      config,
      [
        `port ${sentinelPort}`,
        'bind 127.0.0.1',
        `dir ${directory}`,
        `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${masterPort} 1`,
        '',
      ].join('\n'),
    )
    children.push(spawn('redis-server', [config, '--sentinel'], { stdio: 'ignore' }))
    await waitFor(
      async () =>
        (await cli(sentinelPort, 'sentinel', 'get-master-addr-by-name', SENTINEL_MASTER_NAME)).includes(
          String(masterPort),
        ),
      10_000,
      'sentinel',
    )
  } catch (error) {
    await stop()
    throw error
  }
  return { masterPort, sentinelPort, stop }
}
