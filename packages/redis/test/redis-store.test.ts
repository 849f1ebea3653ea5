import { createHash, randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { type AddressInfo, createServer, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { SandkeepError, type SandkeepErrorCode, type SessionKey, type SessionStore } from '@sandkeep/core'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createRedisSessionStore, sessionKeys } from '../src/index.js'
import { deletePrefix, REDIS_URL, randomPrefix } from './helpers.js'
import { freePort, startAofServer, type TestAofServer } from './redis-servers.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function failure(promise: Promise<unknown>): Promise<SandkeepError> {
  try {
    await promise
  } catch (error) {
    if (SandkeepError.isInstance(error)) return error
    throw new Error(`expected a SandkeepError, got ${String(error)}`)
  }
  throw new Error('expected the call to fail')
}

async function expectCode(promise: Promise<unknown>, code: SandkeepErrorCode): Promise<SandkeepError> {
  const error = await failure(promise)
  expect(error.code, error.message).toBe(code)
  return error
}

const manifest = (sandboxId: string) => ({
  writtenAt: Date.now(),
  sandboxId,
  memory: [],
  filesystem: { path: '/tmp/.marker', value: 'm' },
  processes: [{ pid: 7, command: 'python -m http.server' }],
})

const prefix = randomPrefix()
const raw = new Redis(REDIS_URL, { lazyConnect: true })
const stores: SessionStore[] = []
const open = (options: Parameters<typeof createRedisSessionStore>[0] = {}) => {
  const store = createRedisSessionStore({ redis: REDIS_URL, prefix, commandTimeoutMs: 10_000, ...options })
  stores.push(store)
  return store
}
const newKey = (): SessionKey => ({ tenant: `t-${randomUUID().slice(0, 8)}`, conversationId: randomUUID() })

afterEach(async () => {
  await Promise.allSettled(stores.splice(0).map((store) => store.close()))
})

afterAll(async () => {
  await deletePrefix(raw, prefix)
  await raw.quit()
})

describe('keys', () => {
  it('builds every key from a hash under one hash tag, never from the raw id', () => {
    for (const conversationId of ['a:b', '{x}', '*', 'x}{y', '🦊'.repeat(128)]) {
      const keys = sessionKeys('sk', { tenant: 'acme', conversationId })
      for (const name of [keys.record, keys.lease, keys.journal, keys.checkpoints]) {
        expect(name).toMatch(/^sk:\{acme:[A-Za-z0-9_-]{22}\}:(record|lease|journal|checkpoints)$/)
        expect(name).not.toContain(conversationId)
      }
      expect(keys.index).toBe('sk:{acme}:index')
    }
    const one = sessionKeys('sk', { tenant: 'acme', conversationId: 'c' })
    const other = sessionKeys('sk', { tenant: 'other', conversationId: 'c' })
    expect(one.record).not.toBe(other.record)
  })
})

describe('Lua scripts', () => {
  const directory = fileURLToPath(new URL('../src/commands/', import.meta.url))
  const files = readdirSync(directory).filter((name) => name.endsWith('.lua'))

  it('are named <name>-<numKeys>.lua, document KEYS, ARGV and the return, and stay within their KEYS', () => {
    expect(files.length).toBeGreaterThanOrEqual(11)
    for (const name of readdirSync(`${directory}includes`)) {
      // The shared helpers only use the keys their callers hand them.
      expect(readFileSync(`${directory}includes/${name}`, 'utf8'), name).not.toMatch(/KEYS\[/)
    }
    for (const file of files) {
      const source = readFileSync(`${directory}${file}`, 'utf8')
      const numberOfKeys = Number(/-(\d+)\.lua$/.exec(file)?.[1])
      expect(numberOfKeys, file).toBeGreaterThan(0)
      const header = source.slice(0, source.indexOf(']]'))
      expect(header, file).toMatch(/KEYS\[1\]/)
      expect(header, file).toMatch(/Returns/)
      const used = [...source.matchAll(/KEYS\[(\d+)\]/g)].map((match) => Number(match[1]))
      expect(Math.max(...used), file).toBe(numberOfKeys)
      // Every command names a key from KEYS (directly, or through a helper's `key`/`keys[i]` parameter).
      for (const match of source.matchAll(/redis\.p?call\('([A-Z]+)'(?:,\s*([^,)]+))?/g)) {
        if (match[1] === 'TIME') continue
        expect(match[2], `${file}: ${match[0]}`).toMatch(/^(KEYS\[\d\]|key|keys\[i\])$/)
      }
    }
  })
})

describe('createRedisSessionStore', () => {
  it('does no I/O until first use, and never closes a client it was given', async () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true })
    try {
      const store = createRedisSessionStore({ redis: client, prefix })
      expect(client.status).toBe('wait')
      // Invalid input fails before any I/O: the lazy client is still not connected.
      await expectCode(store.get({ tenant: 'bad tenant', conversationId: 'c' }), 'INVALID_ARGUMENT')
      await expectCode(store.acquire(newKey(), { holderId: '', leaseMs: 1000 }), 'INVALID_ARGUMENT')
      expect(client.status).toBe('wait')
      expect(await store.get(newKey())).toBeNull()
      expect(client.status).toBe('ready')
      await store.close()
      expect(client.status).toBe('ready')
      await expectCode(store.get(newKey()), 'STORE_UNAVAILABLE')
      expect(await client.ping()).toBe('PONG')
    } finally {
      client.disconnect()
    }
  })

  it('rejects bad options before any I/O', () => {
    const bad: unknown[] = [
      { redis: 'http://127.0.0.1:6379' },
      { redis: 42 },
      { redis: {} },
      { prefix: 'a{b}' },
      { prefix: '' },
      { prefix: 'has space' },
      { ttlMs: 0 },
      { commandTimeoutMs: -1 },
      { maxJournalSteps: 0 },
      { redisOptions: 'fast' },
      { tll: 5 },
    ]
    for (const options of bad) {
      let caught: unknown
      try {
        createRedisSessionStore(options as never)
      } catch (error) {
        caught = error
      }
      expect(SandkeepError.hasCode(caught, 'INVALID_ARGUMENT'), JSON.stringify(options)).toBe(true)
    }
  })

  it('gives STORE_UNAVAILABLE within the command timeout when Redis is unreachable', async () => {
    const port = await freePort()
    const store = open({ redis: `redis://127.0.0.1:${port}`, commandTimeoutMs: 500 })
    const started = Date.now()
    const error = await expectCode(
      store.acquire(newKey(), { holderId: 'h', leaseMs: 1000 }),
      'STORE_UNAVAILABLE',
    )
    expect(error.retryable).toBe(true)
    expect(error.message).toMatch(/Redis/)
    // Bounded: the timeout plus scheduling slack on a busy machine, nowhere near an unbounded queue.
    expect(Date.now() - started).toBeLessThan(500 + 4_000)
    await expectCode(store.get(newKey()), 'STORE_UNAVAILABLE')
    await expectCode(store.list('default'), 'STORE_UNAVAILABLE')
  })

  it('a begin that joins an end waiting for the connection names its own call', async () => {
    const port = await freePort()
    const store = open({ redis: `redis://127.0.0.1:${port}`, commandTimeoutMs: 500 })
    const key = newKey()
    const lease = { holderId: 'h', fencingToken: 1, expiresAt: Date.now() + 1000 }
    // The end starts the wait for the connection; the begin arrives while it is under way and shares it.
    const ending = failure(store.release(key, lease, { turnEndedAt: Date.now() }))
    const beginning = failure(store.acquire(key, { holderId: 'h2', leaseMs: 1000 }))
    const [ended, began] = await Promise.all([ending, beginning])
    expect(ended.message).toMatch(/could not end the turn/)
    expect(began.code).toBe('STORE_UNAVAILABLE')
    expect(began.message).toMatch(/could not begin the turn/)
  })
})

describe('a Redis that accepts connections but never answers', () => {
  it("gives STORE_UNAVAILABLE in bounded time, with the store's own client and with one passed in", async () => {
    const sockets = new Set<Socket>()
    const server = createServer((socket) => {
      sockets.add(socket)
      socket.on('error', () => {})
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const passed = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 })
    passed.on('error', () => {})
    try {
      for (const store of [
        open({ redis: `redis://127.0.0.1:${port}`, commandTimeoutMs: 500 }),
        open({ redis: passed, commandTimeoutMs: 500 }),
      ]) {
        const started = Date.now()
        const error = await expectCode(
          store.acquire(newKey(), { holderId: 'h', leaseMs: 1000 }),
          'STORE_UNAVAILABLE',
        )
        expect(error.retryable).toBe(true)
        expect(Date.now() - started).toBeLessThan(500 + 4_000)
      }
    } finally {
      passed.disconnect()
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('corrupt records', () => {
  const cases: Array<{ name: string; damage: (keys: ReturnType<typeof sessionKeys>) => Promise<unknown> }> = [
    {
      name: 'a counter that is not a number',
      damage: (keys) => raw.hset(keys.record, 'turnCount', '3 or so'),
    },
    { name: 'an unknown schemaVersion', damage: (keys) => raw.hset(keys.record, 'schemaVersion', '2') },
    { name: 'a missing field', damage: (keys) => raw.hdel(keys.record, 'createdAt') },
    { name: 'an unknown state', damage: (keys) => raw.hset(keys.record, 'state', 'asleep') },
    { name: 'a manifest that does not parse', damage: (keys) => raw.hset(keys.record, 'manifest', '[oops') },
    {
      name: 'a truncated manifest',
      damage: (keys) => raw.hset(keys.record, 'manifest', '{"writtenAt":1,"sandboxId":"sbx-1","memo'),
    },
    {
      name: 'a record key of the wrong Redis type',
      damage: async (keys) => {
        await raw.del(keys.record)
        return raw.set(keys.record, '{"schemaVersion":1}')
      },
    },
    {
      name: 'the record of another conversation (hash collision or tampering)',
      damage: (keys) => raw.hset(keys.record, 'conversationId', 'someone-else'),
    },
  ]

  for (const { name, damage } of cases) {
    it(`refuses ${name} with STORE_CORRUPT naming the key, and never writes over it`, async () => {
      const store = open()
      const key = newKey()
      const keys = sessionKeys(prefix, key)
      const begun = await store.acquire(key, { holderId: 'creator', leaseMs: 60_000 })
      await store.setSandbox(key, begun.lease, {
        sandboxId: 'sbx-1',
        expectedSandboxId: null,
        providerId: 'p',
      })
      await store.release(key, begun.lease, { turnEndedAt: Date.now(), manifest: manifest('sbx-1') })
      const live = await store.acquire(key, { holderId: 'live', leaseMs: 60_000 })
      await damage(keys)
      const before = await Promise.all([raw.dump(keys.record), raw.dump(keys.lease)])

      const calls: Array<() => Promise<unknown>> = [
        () => store.get(key),
        () => store.acquire(key, { holderId: 'next', leaseMs: 60_000 }),
        () => store.claimCreation(key, live.lease),
        () =>
          store.setSandbox(key, live.lease, {
            sandboxId: 'sbx-2',
            expectedSandboxId: 'sbx-1',
            providerId: 'p',
          }),
        () =>
          store.release(key, live.lease, {
            turnEndedAt: Date.now(),
            manifest: manifest('sbx-1'),
            stateIfLast: 'paused',
          }),
        () => store.setState(key, 'paused'),
        () => store.list(key.tenant),
      ]
      for (const call of calls) {
        const error = await expectCode(call(), 'STORE_CORRUPT')
        expect(error.message).toContain(keys.record)
        expect(error.message).toMatch(/untouched/)
      }
      expect(await Promise.all([raw.dump(keys.record), raw.dump(keys.lease)])).toEqual(before)
      expect(await store.delete(key)).toBe(true)
      expect(await store.get(key)).toBeNull()
    })
  }

  it('skips decoding a manifest whose digest a turn stored, and checks any other in full', async () => {
    const store = open()
    const key = newKey()
    const keys = sessionKeys(prefix, key)
    const begun = await store.acquire(key, { holderId: 'creator', leaseMs: 60_000 })
    await store.setSandbox(key, begun.lease, { sandboxId: 'sbx-1', expectedSandboxId: null, providerId: 'p' })
    await store.release(key, begun.lease, { turnEndedAt: Date.now(), manifest: manifest('sbx-1') })
    // The turn's end stored the digest of the manifest it wrote (the client checked it before sending).
    const sha1 = (text: string | null) => createHash('sha1').update(String(text)).digest('hex')
    const written = await raw.hget(keys.record, 'manifest')
    expect(await raw.hget(keys.record, 'checked')).toBe(sha1(written))
    // A manifest changed outside the scripts that parses but has the wrong shape: refused before any write.
    await raw.hset(keys.record, 'manifest', '{"writtenAt":"yesterday","sandboxId":"sbx-1"}')
    const before = await Promise.all([raw.hgetall(keys.record), raw.hgetall(keys.lease)])
    await expectCode(store.acquire(key, { holderId: 'second', leaseMs: 60_000 }), 'STORE_CORRUPT')
    expect(await Promise.all([raw.hgetall(keys.record), raw.hgetall(keys.lease)])).toEqual(before)
    // One that passes the checks, written by anything else: checked in full, then its digest stored.
    const other = JSON.stringify({ ...manifest('sbx-1'), writtenAt: 1 })
    await raw.hset(keys.record, 'manifest', other)
    const third = await store.acquire(key, { holderId: 'third', leaseMs: 60_000 })
    expect(third.record?.sandboxId).toBe('sbx-1')
    expect(await raw.hget(keys.record, 'checked')).toBe(sha1(other))
    expect(await store.delete(key)).toBe(true)
  })

  it('refuses a journal entry that does not parse', async () => {
    const store = open()
    const key = newKey()
    await store.appendJournal(key, { kind: 'command', command: 'ls' })
    await raw.rpush(sessionKeys(prefix, key).journal, 'not json')
    const error = await expectCode(store.readJournal(key), 'STORE_CORRUPT')
    expect(error.message).toContain(sessionKeys(prefix, key).journal)
  })
})

describe('tenant index', () => {
  it('never expires while sessions may live, and drops entries of expired sessions when listing meets them', async () => {
    const store = open({ ttlMs: 600 })
    const tenant = `t-${randomUUID().slice(0, 8)}`
    const keep = { tenant, conversationId: 'kept' }
    const expire = { tenant, conversationId: 'expires' }
    for (const key of [keep, expire]) {
      const begun = await store.acquire(key, { holderId: 'h', leaseMs: 60_000 })
      await store.setSandbox(key, begun.lease, {
        sandboxId: `sbx-${key.conversationId}`,
        expectedSandboxId: null,
        providerId: 'p',
      })
      await store.release(key, begun.lease, { turnEndedAt: Date.now() })
    }
    const index = sessionKeys(prefix, keep).index
    expect(await raw.pttl(index)).toBe(-1)
    expect(await raw.zcard(index)).toBe(2)
    // Only `kept` sees further turns; `expires` is left to its TTL.
    for (let turn = 0; turn < 6; turn += 1) {
      await sleep(250)
      const begun = await store.acquire(keep, { holderId: `h${turn}`, leaseMs: 60_000 })
      await store.release(keep, begun.lease, { turnEndedAt: Date.now() })
    }
    expect(await raw.zscore(index, sessionKeys(prefix, expire).member)).not.toBeNull()
    const listed = await store.list(tenant)
    expect(listed.sessions.map((record) => record.conversationId)).toEqual(['kept'])
    expect(await raw.zscore(index, sessionKeys(prefix, expire).member)).toBeNull()
    expect(await raw.zscore(index, sessionKeys(prefix, keep).member)).not.toBeNull()
  })
})

describe('a holder that dies', () => {
  it('stops counting once its lease lapses, so the last live holder is told it is last', async () => {
    const key = newKey()
    const survivor = open()
    const begun = await survivor.acquire(key, { holderId: 'survivor', leaseMs: 60_000 })
    await survivor.setSandbox(key, begun.lease, {
      sandboxId: 'sbx-1',
      expectedSandboxId: null,
      providerId: 'p',
    })

    // Another process joins the session, then dies: its client goes away without releasing.
    const doomed = createRedisSessionStore({ redis: REDIS_URL, prefix })
    const dead = await doomed.acquire(key, { holderId: 'doomed', leaseMs: 700 })
    expect(dead.holders).toBe(2)
    await doomed.close()

    const whileAlive = await survivor.acquire(key, { holderId: 'probe', leaseMs: 60_000 })
    expect(whileAlive.holders).toBe(3)
    await survivor.release(key, whileAlive.lease, { turnEndedAt: Date.now() })
    await sleep(1_200)
    const end = await survivor.release(key, begun.lease, { turnEndedAt: Date.now(), stateIfLast: 'paused' })
    expect(end.last).toBe(true)
    expect(end.record?.state).toBe('paused')
    expect(await raw.hkeys(sessionKeys(prefix, key).lease)).not.toContain('h:doomed')
  })
})

describe('a Redis killed and restarted mid-run (AOF, appendfsync always)', () => {
  let server: TestAofServer

  beforeAll(async () => {
    server = await startAofServer()
  }, 60_000)

  afterAll(async () => {
    await server?.stop()
  })

  it('costs one command to begin a turn and one to end it on a single node', async () => {
    // Count what goes over the wire by wrapping the client's sendCommand, and cross-check with the
    // server's own per-command counters.
    const client = new Redis(server.url)
    const sent: string[] = []
    const sendCommand = client.sendCommand.bind(client)
    client.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
      sent.push(command.name)
      return (sendCommand as (...args: unknown[]) => unknown)(command, ...rest)
    }) as typeof client.sendCommand
    const admin = new Redis(server.url)
    const store = open({ redis: client, prefix: 'rt' })
    try {
      const key = newKey()
      const first = await store.acquire(key, { holderId: 'h0', leaseMs: 60_000 })
      await store.setSandbox(key, first.lease, { sandboxId: 'sbx', expectedSandboxId: null, providerId: 'p' })
      await store.release(key, first.lease, { turnEndedAt: Date.now() })
      const evalsha = async () =>
        Number(/cmdstat_evalsha:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0)
      const before = await evalsha()
      sent.length = 0
      const turn = await store.acquire(key, { holderId: 'h1', leaseMs: 60_000 })
      expect(sent).toEqual(['evalsha'])
      sent.length = 0
      await store.release(key, turn.lease, { turnEndedAt: Date.now(), manifest: manifest('sbx') })
      expect(sent).toEqual(['evalsha'])
      expect((await evalsha()) - before).toBe(2)
    } finally {
      await store.close()
      client.disconnect()
      admin.disconnect()
    }
  })

  it('answers STORE_UNAVAILABLE while down, in bounded time, and loses no acknowledged session', async () => {
    const store = open({ redis: server.url, prefix: 'aof', commandTimeoutMs: 1_000 })
    const tenant = `t-${randomUUID().slice(0, 8)}`
    const sessions = Array.from({ length: 20 }, (_, index) => ({ tenant, conversationId: `conv-${index}` }))
    const acknowledged = new Map<string, number>()
    for (const [index, key] of sessions.entries()) {
      const begun = await store.acquire(key, { holderId: `c-${index}`, leaseMs: 60_000 })
      await store.setSandbox(key, begun.lease, {
        sandboxId: `sbx-${index}`,
        expectedSandboxId: null,
        providerId: 'p',
      })
      await store.appendJournal(key, { kind: 'command', command: `setup ${index}` })
      await store.release(key, begun.lease, { turnEndedAt: Date.now(), manifest: manifest(`sbx-${index}`) })
      acknowledged.set(key.conversationId, 1)
    }

    // Turns keep running while the server is killed and restarted.
    const errors: SandkeepError[] = []
    let running = true
    const worker = (async () => {
      let turn = 0
      while (running) {
        const key = sessions[turn % sessions.length]!
        turn += 1
        try {
          const begun = await store.acquire(key, { holderId: `w-${turn}`, leaseMs: 60_000 })
          expect(begun.create).toBe(false)
          const end = await store.release(key, begun.lease, { turnEndedAt: Date.now(), runningSeconds: 1 })
          acknowledged.set(key.conversationId, end.record!.turnCount)
        } catch (error) {
          if (!SandkeepError.isInstance(error)) throw error
          errors.push(error)
          await sleep(50)
        }
      }
    })()

    await sleep(300)
    await server.kill()
    const downAt = Date.now()
    const whileDown = Date.now()
    const error = await expectCode(store.get(sessions[0]!), 'STORE_UNAVAILABLE')
    expect(error.retryable).toBe(true)
    expect(Date.now() - whileDown).toBeLessThan(1_000 + 4_000)
    await expectCode(store.acquire(sessions[1]!, { holderId: 'down', leaseMs: 1000 }), 'STORE_UNAVAILABLE')
    while (Date.now() - downAt < 1_500) await sleep(100)
    await server.start()

    // Back: the same store object recovers on its own.
    let back = false
    for (let attempt = 0; attempt < 100 && !back; attempt += 1) {
      try {
        await store.get(sessions[0]!)
        back = true
      } catch (error) {
        expect(SandkeepError.hasCode(error, 'STORE_UNAVAILABLE')).toBe(true)
        await sleep(100)
      }
    }
    expect(back).toBe(true)
    await sleep(300)
    running = false
    await worker

    expect(errors.length).toBeGreaterThan(0)
    expect(errors.every((e) => e.code === 'STORE_UNAVAILABLE')).toBe(true)
    for (const [index, key] of sessions.entries()) {
      const record = await store.get(key)
      expect(record?.sandboxId, key.conversationId).toBe(`sbx-${index}`)
      expect(record!.turnCount).toBeGreaterThanOrEqual(acknowledged.get(key.conversationId)!)
      expect(record!.manifest?.sandboxId).toBe(`sbx-${index}`)
      expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([
        { kind: 'command', command: `setup ${index}` },
      ])
    }
    expect((await store.list(tenant, { limit: 100 })).sessions).toHaveLength(20)
  })
})
