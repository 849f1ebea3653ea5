// `sandkeep sessions` against real Redis (127.0.0.1:6379, a random prefix and tenant) and a real
// `sandkeep host` child process: demo runs leave sessions behind (--keep-session), then list/show/end/gc.
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, type Background, cleanEnv, runCli, startCli, waitFor } from './helpers.js'

const prefix = `sk-cli-sessions-${process.pid}-${Date.now()}`
/** A tenant of each test's own, so the tests (side by side) never list each other's sessions. */
const newTenant = () => `t${Date.now().toString(36)}${randomUUID().slice(0, 6)}`
const transcript = fileURLToPath(new URL('./fixtures/two-turns.json', import.meta.url))
let host: Background
let env: NodeJS.ProcessEnv

beforeAll(async () => {
  assertBuilt()
  host = startCli(['host', '--json'], cleanEnv())
  const ready = await waitFor(() => {
    const line = host
      .stdout()
      .split('\n')
      .find((entry) => entry.includes('"host-ready"'))
    return line ? (JSON.parse(line) as { apiUrl: string; sandboxUrl: string; apiKeyFile: string }) : undefined
  })
  // The key is read from the file the host wrote, the way its printed export line does.
  const apiKey = (await readFile(ready.apiKeyFile, 'utf8')).trim()
  env = cleanEnv({
    REDIS_URL: 'redis://127.0.0.1:6379',
    SANDKEEP_REDIS_PREFIX: prefix,
    E2B_API_KEY: apiKey,
    E2B_API_URL: ready.apiUrl,
    E2B_SANDBOX_URL: ready.sandboxUrl,
  })
})

afterAll(async () => {
  await host?.stop()
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

async function demo(tenant: string, conversation: string, file = transcript): Promise<void> {
  const result = await runCli(
    [
      'demo',
      '--provider',
      'e2b',
      '--transcript',
      file,
      '--conversation',
      conversation,
      '--tenant',
      tenant,
      '--keep-session',
      '--idle',
      '0',
    ],
    { env },
  )
  expect(result.code, result.stdout + result.stderr).toBe(0)
  expect(result.stdout).toContain(`sessions      redis redis://127.0.0.1:6379 (prefix ${prefix})`)
  expect(result.stdout).toMatch(/sandboxes\s+E2B at http:\/\/127\.0\.0\.1:\d+/)
}

async function json<T>(tenant: string, args: string[]): Promise<T> {
  const result = await runCli([...args, '--tenant', tenant, '--json'], { env })
  expect(result.code, result.stderr).toBe(0)
  const lines = result.stdout.trim().split('\n')
  expect(lines).toHaveLength(1)
  return JSON.parse(lines[0] ?? '') as T
}

interface Session {
  conversationId: string
  sandboxId: string
  state: string
  turnCount: number
}

// The tests run side by side, each with its own tenant, conversations and CLI processes; most of their
// time is CLI processes waiting on sandboxes.
describe.concurrent('sandkeep sessions on Redis', () => {
  it('list, show, end and gc the sessions demo runs left behind', async () => {
    const tenant = newTenant()
    // Two conversations of their own: their demo runs go side by side.
    await Promise.all([demo(tenant, 'kept-a'), demo(tenant, 'kept-b')])

    const listed = await json<{ sessions: Session[]; cursor: string | null }>(tenant, ['sessions', 'list'])
    expect(listed.sessions.map((session) => session.conversationId).sort()).toEqual(['kept-a', 'kept-b'])
    for (const session of listed.sessions) {
      expect(session.state).toBe('paused')
      expect(session.turnCount).toBe(2)
    }
    const table = await runCli(['sessions', 'list', '--tenant', tenant], { env })
    expect(table.code).toBe(0)
    expect(table.stdout.split('\n')[0]).toMatch(
      /^conversation\s+sandbox\s+state\s+turns\s+running s\s+paused s\s+last turn/,
    )
    expect(table.stdout).toMatch(/kept-a\s+\S+\s+paused\s+2/)

    const shown = await json<{ session: Session; journal: Array<{ step: { kind: string } }> }>(tenant, [
      'sessions',
      'show',
      'kept-a',
    ])
    expect(shown.session.conversationId).toBe('kept-a')
    expect(shown.journal.map((entry) => entry.step.kind)).toEqual(['file', 'code'])
    const shownText = await runCli(['sessions', 'show', 'kept-a', '--tenant', tenant], { env })
    expect(shownText.stdout).toContain(`sandbox      ${shown.session.sandboxId}`)
    expect(shownText.stdout).toContain('journal      2 steps')

    // Nothing to collect yet: both sandboxes are mapped.
    const idle = await json<{ killedSandboxes: string[]; deletedSessions: unknown[] }>(tenant, [
      'sessions',
      'gc',
      '--dry-run',
    ])
    expect(idle.killedSandboxes).toEqual([])

    // b's sandbox disappears behind sandkeep's back (killed on the platform): gc reports the session and keeps
    // it with its journal (its next turn recreates the sandbox from it), or deletes it when asked to.
    const vanished = listed.sessions.find((session) => session.conversationId === 'kept-b')!.sandboxId
    const killed = await fetch(`${env.E2B_API_URL}/sandboxes/${vanished}`, {
      method: 'DELETE',
      headers: { 'X-API-KEY': env.E2B_API_KEY ?? '' },
    })
    expect(killed.status).toBe(204)
    type Gc = {
      dryRun: boolean
      keptSessions: Array<{ conversationId: string }>
      deletedSessions: Array<{ conversationId: string }>
      killedSandboxes: string[]
    }
    const kept = await json<Gc>(tenant, ['sessions', 'gc'])
    expect(kept.keptSessions.map((session) => session.conversationId)).toEqual(['kept-b'])
    expect(kept.deletedSessions).toEqual([])
    expect((await json<{ sessions: Session[] }>(tenant, ['sessions', 'list'])).sessions).toHaveLength(2)
    const keptText = await runCli(['sessions', 'gc', '--tenant', tenant], { env })
    expect(keptText.stdout).toBe(
      `kill 0 orphaned sandboxes\nkeep 1 session whose sandbox is gone: ${tenant}/kept-b (the next turn recreates and replays the journal)\n`,
    )
    const dry = await json<Gc>(tenant, ['sessions', 'gc', '--dry-run', '--delete-sessions'])
    expect(dry.dryRun).toBe(true)
    expect(dry.deletedSessions.map((session) => session.conversationId)).toEqual(['kept-b'])
    expect((await json<{ sessions: Session[] }>(tenant, ['sessions', 'list'])).sessions).toHaveLength(2)
    const collected = await json<Gc>(tenant, ['sessions', 'gc', '--delete-sessions'])
    expect(collected.deletedSessions.map((session) => session.conversationId)).toEqual(['kept-b'])
    // a's sandbox is mapped, so it is never an orphan.
    expect(collected.killedSandboxes).toEqual([])
    const human = await runCli(['sessions', 'gc', '--tenant', tenant, '--delete-sessions'], { env })
    expect(human.stdout).toBe('kill 0 orphaned sandboxes\ndelete 0 sessions whose sandbox is gone\n')

    // --forget drops a record without asking the platform.
    await demo(tenant, 'kept-c')
    const forgot = await json<{ ended: boolean; killed: boolean }>(tenant, [
      'sessions',
      'end',
      'kept-c',
      '--forget',
    ])
    expect(forgot).toMatchObject({ ended: true, killed: false })

    // End a: its sandbox is killed and the record is gone.
    const ended = await runCli(['sessions', 'end', 'kept-a', '--tenant', tenant], { env })
    expect(ended.code).toBe(0)
    expect(ended.stdout).toBe('ended kept-a: sandbox killed, session deleted\n')
    const gone = await runCli(['sessions', 'show', 'kept-a', '--tenant', tenant], { env })
    expect(gone.code).toBe(1)
    expect(gone.stderr).toContain('no session "kept-a"')
    expect((await json<{ sessions: Session[] }>(tenant, ['sessions', 'list'])).sessions).toEqual([])
  }, 300_000)

  it('show draws the checkpoint tree; restore, rewind and fork work from it and refuse what they cannot do', async () => {
    const tenant = newTenant()
    // The branching transcript leaves the main conversation's tree (turn 1; three turn 2s: the first answer,
    // its regenerate, the Kelvin edit; a turn 3 on the Kelvin branch, and one on the regenerated branch it
    // switched back to) and the fork.
    await demo(tenant, 'branch-a', 'branching')
    type Checkpoint = {
      id: string
      parentId: string | null
      turn: number
      snapshot: { snapshotId: string } | null
      journalLength: number
    }
    type Shown = { session: Session & { restore: unknown; head: string | null }; checkpoints: Checkpoint[] }
    const shown = await json<Shown>(tenant, ['sessions', 'show', 'branch-a'])
    expect(shown.checkpoints.map((checkpoint) => checkpoint.turn).sort()).toEqual([1, 2, 2, 2, 3, 3])
    expect(shown.session.restore).toBeNull()
    const head = shown.checkpoints.find((checkpoint) => checkpoint.id === shown.session.head)!
    expect(head.turn).toBe(3)
    const text = await runCli(['sessions', 'show', 'branch-a', '--tenant', tenant], { env })
    expect(text.stdout).toContain(
      'checkpoints  6 kept, as a tree (restore to any: sandkeep sessions restore branch-a --checkpoint <id>)',
    )
    const rows = text.stdout.split('\n').filter((line) => /[├└]─ ck_/.test(line))
    expect(rows).toHaveLength(6)
    const headRow = rows.find((line) => line.includes(head.id))!
    expect(headRow).toMatch(/turn 3\s+\d+[smh] ago\s+snapshot \S+\s+◀ head$/)
    expect(rows.filter((line) => line.includes('◀ head'))).toHaveLength(1)
    // The three turn 2s are siblings under turn 1.
    const one = shown.checkpoints.find((checkpoint) => checkpoint.turn === 1)!
    expect(shown.checkpoints.filter((checkpoint) => checkpoint.parentId === one.id)).toHaveLength(3)

    // Restore to the first answer 2 (the rounded Fahrenheit one, a branch the transcript left behind).
    const first = shown.checkpoints.filter((checkpoint) => checkpoint.parentId === one.id)[0]!
    const restored = await runCli(
      ['sessions', 'restore', 'branch-a', '--checkpoint', first.id, '--tenant', tenant],
      { env },
    )
    expect(restored.code, restored.stderr).toBe(0)
    expect(restored.stdout).toBe(
      `restored branch-a to checkpoint ${first.id} (turn 2): its next turn starts from the snapshot ${first.snapshot!.snapshotId} (killed ${shown.session.sandboxId}; every other branch is kept)\n`,
    )
    const after = await json<Shown>(tenant, ['sessions', 'show', 'branch-a'])
    expect(after.session.head).toBe(first.id)
    expect(after.checkpoints).toHaveLength(6)
    const foreign = await runCli(
      ['sessions', 'restore', 'branch-a', '--checkpoint', 'ck_AAAAAAAAAAAAAAAAAAAAAA', '--tenant', tenant],
      { env },
    )
    expect(foreign.code).toBe(1)
    expect(foreign.stderr).toMatch(/^sandkeep sessions restore: CHECKPOINT_NOT_FOUND: /)
    expect((await json<Shown>(tenant, ['sessions', 'show', 'branch-a'])).session.head).toBe(first.id)

    const rewound = await json<{ toTurn: number; source: string; droppedTurns: number[] }>(tenant, [
      'sessions',
      'rewind',
      'branch-a',
      '--to-turn',
      '1',
    ])
    expect(rewound).toMatchObject({ toTurn: 1, source: 'snapshot', droppedTurns: [] })
    expect((await json<Shown>(tenant, ['sessions', 'show', 'branch-a'])).checkpoints).toHaveLength(6)
    const back = await json<{ toTurn: number }>(tenant, [
      'sessions',
      'restore',
      'branch-a',
      '--checkpoint',
      first.id,
    ])
    expect(back.toTurn).toBe(2)

    const past = await runCli(['sessions', 'rewind', 'branch-a', '--to-turn', '3', '--tenant', tenant], {
      env,
    })
    expect(past.code).toBe(1)
    expect(past.stderr).toMatch(/^sandkeep sessions rewind: CHECKPOINT_NOT_FOUND: /)
    const onto = await runCli(['sessions', 'fork', 'branch-a', 'branch-a-rankine', '--tenant', tenant], {
      env,
    })
    expect(onto.code).toBe(1)
    expect(onto.stderr).toMatch(
      /^sandkeep sessions fork: SESSION_EXISTS: A session with this conversation id already exists/,
    )

    const forked = await json<{ atTurn: number; source: string; record: { restore: { kind: string } } }>(
      tenant,
      ['sessions', 'fork', 'branch-a', 'branch-c', '--at-turn', '1'],
    )
    expect(forked).toMatchObject({ atTurn: 1, source: 'snapshot', record: { restore: { kind: 'forked' } } })
    const latest = await runCli(['sessions', 'fork', 'branch-a', 'branch-d', '--tenant', tenant], { env })
    expect(latest.stdout).toBe(
      'forked branch-a at turn 2 into branch-d: its first turn starts from its snapshot\n',
    )
    const rewoundText = await runCli(
      ['sessions', 'rewind', 'branch-d', '--to-turn', '0', '--tenant', tenant],
      { env },
    )
    expect(rewoundText.stdout).toMatch(
      /^rewound branch-d to the end of turn 0: its next turn starts from a fresh sandbox and the journal \((dropped turns? [\d, ]+|no later turn to drop); no sandbox was mapped\)\n$/,
    )
    for (const id of ['branch-a', 'branch-a-rankine', 'branch-c', 'branch-d']) {
      const ended = await runCli(['sessions', 'end', id, '--tenant', tenant], { env })
      expect(ended.code, ended.stderr).toBe(0)
    }
  }, 300_000)

  it('refuses bad ids before touching Redis, and reports an unreachable Redis as a failure', async () => {
    const tenant = newTenant()
    const bad = await runCli(['sessions', 'show', 'x\ny', '--tenant', tenant], { env })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/^sandkeep sessions show: conversationId contains a control character/)
    expect(bad.stderr.trim().split('\n')).toHaveLength(1)
    const down = await runCli(['sessions', 'list'], { env: { ...env, REDIS_URL: 'redis://127.0.0.1:1' } })
    expect(down.code).toBe(1)
    expect(down.stderr).toMatch(/^sandkeep sessions list: STORE_UNAVAILABLE: /)
    expect(down.stderr.trim().split('\n')).toHaveLength(1)
  }, 60_000)
})
