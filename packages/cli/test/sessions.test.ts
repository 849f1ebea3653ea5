// `sandkeep sessions` against real Redis (127.0.0.1:6379, a random prefix and tenant) and a real
// `sandkeep host` child process: demo runs leave sessions behind (--keep-session), then list/show/end/gc.
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, type Background, cleanEnv, runCli, startCli, waitFor } from './helpers.js'

const prefix = `sk-cli-sessions-${process.pid}-${Date.now()}`
const tenant = `t${Date.now().toString(36)}`
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

async function demo(conversation: string, file = transcript): Promise<void> {
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

async function json<T>(args: string[]): Promise<T> {
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

describe('sandkeep sessions on Redis', () => {
  it('list, show, end and gc the sessions demo runs left behind', async () => {
    await demo('kept-a')
    await demo('kept-b')

    const listed = await json<{ sessions: Session[]; cursor: string | null }>(['sessions', 'list'])
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

    const shown = await json<{ session: Session; journal: Array<{ step: { kind: string } }> }>([
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
    const idle = await json<{ killedSandboxes: string[]; deletedSessions: unknown[] }>([
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
    const kept = await json<Gc>(['sessions', 'gc'])
    expect(kept.keptSessions.map((session) => session.conversationId)).toEqual(['kept-b'])
    expect(kept.deletedSessions).toEqual([])
    expect((await json<{ sessions: Session[] }>(['sessions', 'list'])).sessions).toHaveLength(2)
    const keptText = await runCli(['sessions', 'gc', '--tenant', tenant], { env })
    expect(keptText.stdout).toBe(
      `kill 0 orphaned sandboxes\nkeep 1 session whose sandbox is gone: ${tenant}/kept-b (the next turn recreates and replays the journal)\n`,
    )
    const dry = await json<Gc>(['sessions', 'gc', '--dry-run', '--delete-sessions'])
    expect(dry.dryRun).toBe(true)
    expect(dry.deletedSessions.map((session) => session.conversationId)).toEqual(['kept-b'])
    expect((await json<{ sessions: Session[] }>(['sessions', 'list'])).sessions).toHaveLength(2)
    const collected = await json<Gc>(['sessions', 'gc', '--delete-sessions'])
    expect(collected.deletedSessions.map((session) => session.conversationId)).toEqual(['kept-b'])
    // a's sandbox is mapped, so it is never an orphan.
    expect(collected.killedSandboxes).toEqual([])
    const human = await runCli(['sessions', 'gc', '--tenant', tenant, '--delete-sessions'], { env })
    expect(human.stdout).toBe('kill 0 orphaned sandboxes\ndelete 0 sessions whose sandbox is gone\n')

    // --forget drops a record without asking the platform.
    await demo('kept-c')
    const forgot = await json<{ ended: boolean; killed: boolean }>(['sessions', 'end', 'kept-c', '--forget'])
    expect(forgot).toMatchObject({ ended: true, killed: false })

    // End a: its sandbox is killed and the record is gone.
    const ended = await runCli(['sessions', 'end', 'kept-a', '--tenant', tenant], { env })
    expect(ended.code).toBe(0)
    expect(ended.stdout).toBe('ended kept-a: sandbox killed, session deleted\n')
    const gone = await runCli(['sessions', 'show', 'kept-a', '--tenant', tenant], { env })
    expect(gone.code).toBe(1)
    expect(gone.stderr).toContain('no session "kept-a"')
    expect((await json<{ sessions: Session[] }>(['sessions', 'list'])).sessions).toEqual([])
  }, 300_000)

  it('show lists the checkpoints; rewind and fork work from them and refuse what they cannot do', async () => {
    // The branching transcript leaves two sessions: the main conversation (3 turns after its rewinds) and its fork.
    await demo('branch-a', 'branching')
    type Checkpoint = {
      id: string
      parentId: string | null
      turn: number
      snapshot: { snapshotId: string } | null
      journalLength: number
    }
    type Shown = { session: Session & { restore: unknown }; checkpoints: Checkpoint[] }
    const shown = await json<Shown>(['sessions', 'show', 'branch-a'])
    // The regenerated answers' checkpoints stay on their branches (checkpoint trees): three of turn 2.
    expect(shown.checkpoints.map((checkpoint) => checkpoint.turn)).toEqual([1, 2, 2, 2, 3])
    expect(shown.session.restore).toBeNull()
    const text = await runCli(['sessions', 'show', 'branch-a', '--tenant', tenant], { env })
    expect(text.stdout).toContain('checkpoints  5 kept (rewind or fork to any of these turns)')
    expect(text.stdout).toMatch(/^\s+turn\s+when\s+snapshot\s+journal$/m)
    // Turn 2 on the head's path: the parent of turn 3 (a rewind to turn 2 goes there).
    const second = shown.checkpoints.find((c) => c.id === shown.checkpoints.at(-1)!.parentId)!
    const row = text.stdout.split('\n').find((line) => line.includes(second.snapshot!.snapshotId))
    expect(row).toMatch(/^\s+2\s+\d{4}-\S+Z \(\d+s ago\)\s+\S+\s+\d+ steps$/)
    expect(row).toContain(`${second.journalLength} steps`)

    const rewound = await json<{
      toTurn: number
      source: string
      droppedTurns: number[]
      killedSandboxId: string
    }>(['sessions', 'rewind', 'branch-a', '--to-turn', '2'])
    expect(rewound).toMatchObject({
      toTurn: 2,
      source: 'snapshot',
      // A rewind deletes nothing since checkpoint trees: turn 3 stays on its branch.
      droppedTurns: [],
      killedSandboxId: shown.session.sandboxId,
    })
    const pending = await runCli(['sessions', 'show', 'branch-a', '--tenant', tenant], { env })
    expect(pending.stdout).toContain(
      `restore      pending: rewound to the end of turn 2, from snapshot ${second.snapshot!.snapshotId} (the next turn carries it out)`,
    )
    expect(pending.stdout).toContain('sandbox      —')

    const past = await runCli(['sessions', 'rewind', 'branch-a', '--to-turn', '3', '--tenant', tenant], {
      env,
    })
    expect(past.code).toBe(1)
    expect(past.stderr).toMatch(
      /^sandkeep sessions rewind: CHECKPOINT_NOT_FOUND: .*turn 3.*the current branch has 2 turn\(s\) so far.*Nothing was changed/,
    )
    const onto = await runCli(['sessions', 'fork', 'branch-a', 'branch-a-rankine', '--tenant', tenant], {
      env,
    })
    expect(onto.code).toBe(1)
    expect(onto.stderr).toMatch(
      /^sandkeep sessions fork: SESSION_EXISTS: A session with this conversation id already exists/,
    )

    const forked = await json<{ atTurn: number; source: string; record: { restore: { kind: string } } }>([
      'sessions',
      'fork',
      'branch-a',
      'branch-c',
      '--at-turn',
      '1',
    ])
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
