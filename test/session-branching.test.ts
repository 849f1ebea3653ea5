// Checkpoints, rewind and fork on the real stack: Redis under a random prefix, a local-e2b host driven by the
// unmodified E2B SDK (whose snapshots keep the files, not the memory). A rewind brings back turn 1's files and
// rebuilds its variables from the journal; a fork has its own state; a snapshot deleted on the platform falls
// back to the journal; a process killed between making the restored sandbox and mapping it leaves the session
// rewound (never half) and a sandbox gc kills; bad input is refused with every Redis key as it was.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { createSessionManager, type ResumeReport, type SessionManagerEvents, type Turn } from '@sandkeep/core'
import { Sandbox } from 'e2b'
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { conversation, REDIS_URL, useRig } from './helpers/sessions.js'

const checkpoints = { every: 'turn', keep: 10 } as const

/** One turn's work: a file and a Python variable, both journaled. */
async function work(turn: Turn, file: string, x: number): Promise<void> {
  await turn.sandbox.writeFile(file, `written at x=${x}`)
  await turn.journal.record({ kind: 'file', path: file, content: `written at x=${x}` })
  await turn.sandbox.runCode(`x = ${x}`)
  await turn.journal.record({ kind: 'code', code: `x = ${x}` })
}

describe('rewind and fork on Redis and local-e2b (snapshots keep files only)', () => {
  const rig = useRig({ pauseMode: 'memory' }, { checkpoints })
  const options = () => ({ tenant: rig().tenant })
  const connection = () => ({
    apiKey: rig().host.apiKey,
    apiUrl: rig().host.apiUrl,
    sandboxUrl: rig().host.sandboxUrl,
  })

  /** Two turns: turn 1 writes a.txt with x = 1, turn 2 b.txt with x = 2. */
  async function twoTurns(id: string) {
    const { sessions } = rig()
    const first = await sessions.beginTurn(id, options())
    await work(first, '/home/user/a.txt', 1)
    const one = (await first.end()).checkpoint!
    const second = await sessions.beginTurn(id, options())
    await work(second, '/home/user/b.txt', 2)
    const sandboxId = second.report!.sandboxId
    const two = (await second.end()).checkpoint!
    return { one, two, sandboxId }
  }

  async function snapshotIds(): Promise<string[]> {
    const listed = await rig().sessions.provider.listSnapshots!({ namePrefix: 'sandkeep-' })
    return listed.snapshots.map((snapshot) => snapshot.snapshotId)
  }

  it('rewind: the next turn has turn 1’s file, not turn 2’s, and x rebuilt from the journal', async () => {
    const id = conversation()
    const { one, two, sandboxId } = await twoTurns(id)
    expect(one).toMatchObject({ turn: 1, journalLength: 2, snapshot: { keeps: { memory: false } } })
    expect(await snapshotIds()).toEqual(expect.arrayContaining([one.snapshot!.snapshotId]))

    const rewound = await rig().sessions.rewind(id, { toTurn: 1, ...options() })
    expect(rewound).toMatchObject({
      toTurn: 1,
      source: 'snapshot',
      droppedTurns: [],
      killedSandboxId: sandboxId,
    })
    expect(rig().host.getSandbox(sandboxId)?.state ?? 'gone').not.toMatch(/running|paused/)
    // A rewind deletes nothing: turn 2's checkpoint and snapshot stay on their branch, restorable by id.
    const left = await snapshotIds()
    expect(left).toContain(one.snapshot!.snapshotId)
    expect(left).toContain(two.snapshot!.snapshotId)

    const third = await rig().sessions.beginTurn(id, options())
    try {
      expect(third.report).toMatchObject({
        outcome: 'rewound',
        restored: { kind: 'rewound', turn: 1, source: 'snapshot', snapshotId: one.snapshot!.snapshotId },
        survived: { memory: false, filesystem: true },
        // The variables were rebuilt from the journal, not kept: the model is told.
        stateLost: true,
      })
      expect(third.report!.sandboxId).not.toBe(sandboxId)
      expect(await third.sandbox.readFile('/home/user/a.txt')).toBe('written at x=1')
      expect(await third.sandbox.exists('/home/user/b.txt')).toBe(false)
      expect((await third.sandbox.runCode('x')).text).toBe('1')
      expect(await third.journal.list()).toHaveLength(2)
    } finally {
      expect((await third.end()).checkpoint?.turn).toBe(2)
    }
    expect(await rig().sessions.getSession(id, options())).toMatchObject({ restore: null, turnCount: 2 })
  })

  it('fork: the new conversation starts from turn 1 with its own state; the source is untouched', async () => {
    const id = conversation()
    const { sandboxId } = await twoTurns(id)
    const forked = await rig().sessions.fork(id, `${id}-b`, { atTurn: 1, ...options() })
    expect(forked).toMatchObject({ atTurn: 1, source: 'snapshot', record: { sandboxId: null, turnCount: 1 } })

    await rig().sessions.withTurn(
      `${id}-b`,
      async (branch) => {
        expect(branch.report).toMatchObject({
          outcome: 'forked',
          restored: { kind: 'forked', turn: 1, source: 'snapshot', fromConversationId: id },
        })
        expect(branch.report!.sandboxId).not.toBe(sandboxId)
        expect(await branch.sandbox.exists('/home/user/b.txt')).toBe(false)
        expect((await branch.sandbox.runCode('x')).text).toBe('1')
        await work(branch, '/home/user/c.txt', 100)
      },
      options(),
    )
    await rig().sessions.withTurn(
      id,
      async (source) => {
        expect(source.report).toMatchObject({ outcome: 'resumed', sandboxId, stateLost: false })
        expect(await source.sandbox.readFile('/home/user/b.txt')).toBe('written at x=2')
        expect(await source.sandbox.exists('/home/user/c.txt')).toBe(false)
        expect((await source.sandbox.runCode('x')).text).toBe('2')
        expect(await source.journal.list()).toHaveLength(4)
      },
      options(),
    )
    await rig().sessions.withTurn(
      `${id}-b`,
      async (branch) => {
        expect(branch.report).toMatchObject({ outcome: 'resumed' })
        expect((await branch.sandbox.runCode('x')).text).toBe('100')
        expect(await branch.journal.list()).toHaveLength(4)
      },
      options(),
    )
  })

  it('a snapshot deleted on the platform before the restore: journal fallback, stateLost, snapshotLost', async () => {
    const id = conversation()
    const { one } = await twoTurns(id)
    await rig().sessions.rewind(id, { toTurn: 1, ...options() })
    const snapshotId = one.snapshot!.snapshotId
    expect(await Sandbox.deleteSnapshot(snapshotId, connection())).toBe(true)

    const errors: SessionManagerEvents['error'][] = []
    const off = rig().sessions.on('error', (event) => errors.push(event))
    try {
      await rig().sessions.withTurn(
        id,
        async (turn) => {
          expect(turn.report).toMatchObject({
            outcome: 'rewound',
            stateLost: true,
            restored: { kind: 'rewound', turn: 1, source: 'journal', snapshotId, snapshotLost: true },
          })
          expect(await turn.sandbox.readFile('/home/user/a.txt')).toBe('written at x=1')
          expect(await turn.sandbox.exists('/home/user/b.txt')).toBe(false)
          expect((await turn.sandbox.runCode('x')).text).toBe('1')
        },
        options(),
      )
    } finally {
      off()
    }
    expect(errors.map((event) => event.phase)).toContain('restore-snapshot')
  })

  it('a process killed after the sandbox was made from the snapshot, before mapping it: still rewound, gc kills the leak, the next turn restores', async () => {
    const id = conversation()
    const { one } = await twoTurns(id)
    await rig().sessions.rewind(id, { toTurn: 1, ...options() })
    const key = { tenant: rig().tenant, conversationId: id }
    const journalBefore = await rig().store.readJournal(key)

    const leaseMs = 1500
    const leaked = await stallChild({
      redisUrl: REDIS_URL,
      prefix: rig().prefix,
      connection: connection(),
      conversationId: id,
      tenant: rig().tenant,
      leaseMs,
    })
    expect(rig().host.getSandbox(leaked)?.state).toBe('running')

    // Never half: the restore is still pending and no sandbox is mapped.
    expect(await rig().store.get(key)).toMatchObject({
      sandboxId: null,
      turnCount: 1,
      restore: { kind: 'rewound', turn: 1, snapshot: { snapshotId: one.snapshot!.snapshotId } },
    })
    expect(await rig().store.readJournal(key)).toEqual(journalBefore)

    // gc, with a grace (createWaitMs + leaseMs) the leaked sandbox is older than, finds it by its metadata.
    const collector = createSessionManager({
      store: rig().store,
      provider: rig().sessions.provider,
      createWaitMs: 0,
      leaseMs: 500,
    })
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const collected = await collector.gc(options())
    expect(collected.killedSandboxes).toContain(leaked)
    expect(rig().host.getSandbox(leaked)?.state ?? 'gone').not.toMatch(/running|paused/)

    // The dead child's lease lapses; the next turn carries the restore out.
    await new Promise((resolve) => setTimeout(resolve, leaseMs))
    await rig().sessions.withTurn(
      id,
      async (turn) => {
        const report = turn.report as ResumeReport
        expect(report).toMatchObject({ outcome: 'rewound', restored: { turn: 1, source: 'snapshot' } })
        expect(report.sandboxId).not.toBe(leaked)
        expect(await turn.sandbox.readFile('/home/user/a.txt')).toBe('written at x=1')
        expect(await turn.sandbox.exists('/home/user/b.txt')).toBe(false)
        expect((await turn.sandbox.runCode('x')).text).toBe('1')
      },
      options(),
    )
    expect(await rig().store.get(key)).toMatchObject({ restore: null, turnCount: 2 })
  }, 120_000)

  it('turn.checkpoint() records the sandbox as it is at the call; a restore to it probes against that', async () => {
    const { sessions } = rig()
    const id = conversation()
    const first = await sessions.beginTurn(id, options())
    await work(first, '/home/user/a.txt', 1)
    await first.end()
    const second = await sessions.beginTurn(id, options())
    await work(second, '/home/user/b.txt', 2)
    const step = await second.checkpoint()
    await work(second, '/home/user/b.txt', 3)
    await second.end()
    // The manifest is the one written for this call, naming b.txt as it was then, not turn 1's.
    expect(step.manifest).toMatchObject({ sandboxId: second.report!.sandboxId })
    const witnesses = step.manifest!.filesystem!.witnesses!
    expect(witnesses.find((w) => w.path === '/home/user/b.txt')?.sha256).toBe(
      createHash('sha256').update('written at x=2').digest('hex'),
    )
    await sessions.restore(id, { checkpoint: step.id, ...options() })
    const third = await sessions.beginTurn(id, options())
    try {
      expect(third.report).toMatchObject({
        restored: { source: 'snapshot' },
        survived: { filesystem: true },
      })
      expect(await third.sandbox.readFile('/home/user/b.txt')).toBe('written at x=2')
      expect((await third.sandbox.runCode('x')).text).toBe('2')
    } finally {
      await third.end()
    }
  })

  it('refuses bad rewinds and forks before writing: every Redis key is as it was', async () => {
    const { store, provider } = rig().sessions
    const keepOne = createSessionManager({ store, provider, checkpoints: { every: 'turn', keep: 1 } })
    const withoutCheckpoints = createSessionManager({ store, provider })
    const id = conversation()
    for (const file of ['/home/user/a.txt', '/home/user/b.txt']) {
      await keepOne.withTurn(id, (turn) => work(turn, file, 1), options())
    }
    const never = conversation()
    await withoutCheckpoints.withTurn(never, (turn) => work(turn, '/home/user/n.txt', 1), options())
    const before = await dumpKeys(rig().prefix)
    const calls: Array<[string, () => Promise<unknown>, string, RegExp]> = [
      ['pruned', () => keepOne.rewind(id, { toTurn: 1, ...options() }), 'CHECKPOINT_NOT_FOUND', /pruned/],
      ['past', () => keepOne.rewind(id, { toTurn: 3, ...options() }), 'CHECKPOINT_NOT_FOUND', /2 turn\(s\)/],
      [
        'never',
        () => keepOne.rewind(never, { toTurn: 1, ...options() }),
        'CHECKPOINT_NOT_FOUND',
        /none was taken/,
      ],
      ['negative', () => keepOne.rewind(id, { toTurn: -1, ...options() }), 'INVALID_ARGUMENT', /toTurn/],
      [
        'fork onto an existing id',
        () => keepOne.fork(id, never, options()),
        'SESSION_EXISTS',
        /already exists/,
      ],
      [
        'fork at a pruned turn',
        () => keepOne.fork(id, `${id}-x`, { atTurn: 1, ...options() }),
        'CHECKPOINT_NOT_FOUND',
        /pruned/,
      ],
    ]
    for (const [name, call, code, message] of calls) {
      const error = await call().catch((caught: unknown) => caught)
      expect(error, name).toMatchObject({ code, message: expect.stringMatching(message) })
    }
    expect(await dumpKeys(rig().prefix)).toEqual(before)
  })
})

/**
 * Runs the child that begins the rewound session's next turn and stalls once its sandbox is made from the
 * snapshot; SIGKILLs it there and returns that sandbox's id.
 */
function stallChild(config: Record<string, unknown>): Promise<string> {
  const script = fileURLToPath(new URL('./helpers/stall-after-restore.mjs', import.meta.url))
  const child = spawn(process.execPath, [script, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return new Promise((resolve, reject) => {
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the child never made the sandbox from the snapshot\n${stdout}\n${stderr}`))
    }, 60_000)
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      const line = stdout.split('\n').find((entry) => entry.includes('createdFromSnapshot'))
      if (!line) return
      clearTimeout(timer)
      const sandboxId = (JSON.parse(line) as { createdFromSnapshot: string }).createdFromSnapshot
      child.once('exit', () => resolve(sandboxId))
      child.kill('SIGKILL')
    })
    child.once('exit', (code, signal) => {
      if (signal !== 'SIGKILL') {
        clearTimeout(timer)
        reject(new Error(`the child exited (${code}) before stalling\n${stdout}\n${stderr}`))
      }
    })
  })
}

/** Every key under `prefix` with its type and content, sorted: what a refused call must leave as it was. */
async function dumpKeys(prefix: string): Promise<Record<string, unknown>> {
  const redis = new Redis(REDIS_URL)
  try {
    const keys: string[] = []
    let cursor = '0'
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500)
      cursor = next
      keys.push(...found)
    } while (cursor !== '0')
    const dump: Record<string, unknown> = {}
    for (const key of keys.sort()) {
      const type = await redis.type(key)
      dump[key] =
        type === 'string'
          ? await redis.get(key)
          : type === 'hash'
            ? await redis.hgetall(key)
            : type === 'list'
              ? await redis.lrange(key, 0, -1)
              : type === 'zset'
                ? await redis.zrange(key, 0, -1, 'WITHSCORES')
                : type === 'set'
                  ? (await redis.smembers(key)).sort()
                  : type
    }
    return dump
  } finally {
    redis.disconnect()
  }
}
