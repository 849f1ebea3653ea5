// `sandkeep sessions end` says what the platform did: a sandbox killed and its checkpoint snapshots deleted
// (exit 0), or a snapshot the platform does not know with the key given, left behind (exit 1); `sessions gc`
// without --tenant sweeps every tenant. Real Redis (127.0.0.1:6379, a random prefix), an in-process
// local-e2b host and the built CLI as a child process.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, bin, cleanEnv, type RunResult, runToEnd } from './helpers.js'

const prefix = `sk-cli-end-${process.pid}-${Date.now()}`
const keyA = `e2b_${'a1'.repeat(20)}`
const keyB = `e2b_${'b2'.repeat(20)}`
let stateDir: string
let host: LocalE2BHost | undefined

beforeAll(async () => {
  assertBuilt()
  stateDir = await mkdtemp(join(tmpdir(), 'sk-cli-end-'))
})

afterAll(async () => {
  await host?.close()
  await rm(stateDir, { recursive: true, force: true })
  const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true })
  await redis.connect()
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
    cursor = next
    if (keys.length) await redis.del(...keys)
  } while (cursor !== '0')
  redis.disconnect()
})

/** One turn of `conversationId` with checkpoints on, so the session keeps a checkpoint snapshot. */
async function sessionWithCheckpoint(on: LocalE2BHost, conversationId: string): Promise<string> {
  const store = createRedisSessionStore({ redis: 'redis://127.0.0.1:6379', prefix })
  const provider = createE2BProvider({
    apiKey: on.apiKey,
    apiUrl: on.apiUrl,
    sandboxUrl: on.sandboxUrl,
    domain: on.domain,
    snapshots: { keepsMemory: false },
  })
  const sessions = createSessionManager({ store, provider, checkpoints: { every: 'turn', keep: 10 } })
  try {
    await sessions.withTurn(conversationId, async (turn) => {
      await turn.sandbox.runCode('x = 1')
    })
    const checkpoints = await sessions.listCheckpoints(conversationId)
    const snapshot = (Array.isArray(checkpoints) ? checkpoints : checkpoints.checkpoints)[0]?.snapshot
    expect(snapshot, 'the turn end took a checkpoint snapshot').toBeTruthy()
    return snapshot!.snapshotId
  } finally {
    await store.close()
  }
}

/** `sandkeep sessions end <id>` against `on` with `apiKey` (the child runs while this process serves the host). */
function end(
  on: LocalE2BHost,
  apiKey: string,
  conversationId: string,
  extra: string[] = [],
): Promise<RunResult> {
  return cli(on, apiKey, ['sessions', 'end', conversationId, ...extra])
}

/** The built CLI with `args` against `on` with `apiKey`. */
function cli(on: LocalE2BHost, apiKey: string, args: string[]): Promise<RunResult> {
  return runToEnd(process.execPath, [bin, ...args], {
    env: cleanEnv({
      REDIS_URL: 'redis://127.0.0.1:6379',
      SANDKEEP_REDIS_PREFIX: prefix,
      E2B_API_KEY: apiKey,
      E2B_API_URL: on.apiUrl,
      E2B_SANDBOX_URL: on.sandboxUrl,
    }),
    timeoutMs: 120_000,
    label: `sandkeep ${args.join(' ')}`,
  })
}

describe('sandkeep sessions end', () => {
  it('says the sandbox was killed and the checkpoint snapshot deleted, exit 0', async () => {
    host = await startLocalE2B({ stateDir, apiKey: keyA })
    await sessionWithCheckpoint(host, 'end-ok')
    const result = await end(host, keyA, 'end-ok')
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(
      'ended end-ok: sandbox killed, session deleted, 1 checkpoint snapshot deleted\n',
    )
    expect(host.listSandboxes().filter((sandbox) => sandbox.state !== 'killed')).toEqual([])
  }, 180_000)

  it('exits 1 and names the snapshot it left behind when the platform does not know it with this key', async () => {
    host ??= await startLocalE2B({ stateDir, apiKey: keyA })
    const snapshotId = await sessionWithCheckpoint(host, 'end-other-key')
    // The same host state under another key: key A's snapshots are not key B's (404).
    await host.close()
    host = await startLocalE2B({ stateDir, apiKey: keyB })
    const result = await end(host, keyB, 'end-other-key', ['--json'])
    expect(result.code, result.stderr).toBe(1)
    const report = JSON.parse(result.stdout) as {
      ended: boolean
      leftBehind: boolean
      missingSnapshots: string[]
    }
    expect(report).toMatchObject({ ended: true, leftBehind: true, missingSnapshots: [snapshotId] })
  }, 180_000)

  it('sessions gc without --tenant sweeps every tenant; --tenant only that one', async () => {
    host ??= await startLocalE2B({ stateDir, apiKey: keyA })
    const on = host
    const store = createRedisSessionStore({ redis: 'redis://127.0.0.1:6379', prefix })
    const provider = createE2BProvider({ apiKey: on.apiKey, apiUrl: on.apiUrl, sandboxUrl: on.sandboxUrl })
    const sessions = createSessionManager({ store, provider })
    const tenants = [`gc-a-${process.pid}`, `gc-b-${process.pid}`]
    try {
      for (const tenant of tenants) {
        // one session that keeps its sandbox, one whose sandbox is killed behind sandkeep's back
        for (const id of ['live', 'vanished']) {
          await sessions.withTurn(id, async (turn) => void (await turn.sandbox.runCode('1')), { tenant })
        }
        const record = await sessions.getSession('vanished', { tenant })
        const killed = await fetch(`${on.apiUrl}/sandboxes/${record?.sandboxId}`, {
          method: 'DELETE',
          headers: { 'X-API-KEY': on.apiKey },
        })
        expect(killed.status).toBe(204)
      }
    } finally {
      await store.close()
    }
    type Gc = { tenant: string | null; keptSessions: Array<{ tenant: string; conversationId: string }> }
    const every = await cli(on, on.apiKey, ['sessions', 'gc', '--dry-run', '--json'])
    expect(every.code, every.stderr).toBe(0)
    const all = JSON.parse(every.stdout) as Gc
    expect(all.tenant).toBeNull()
    expect(
      all.keptSessions
        .filter((session) => tenants.includes(session.tenant))
        .sort((a, b) => a.tenant.localeCompare(b.tenant)),
    ).toEqual(tenants.map((tenant) => ({ tenant, conversationId: 'vanished' })))
    const one = await cli(on, on.apiKey, ['sessions', 'gc', '--dry-run', '--json', '--tenant', tenants[1]!])
    expect(one.code, one.stderr).toBe(0)
    const only = JSON.parse(one.stdout) as Gc
    expect(only.tenant).toBe(tenants[1])
    expect(only.keptSessions).toEqual([{ tenant: tenants[1], conversationId: 'vanished' }])
  }, 180_000)
})
