// A lazy turn's first code cell (or command) carries the resume's built-in probes: on the real stack (Redis, the
// unmodified E2B SDK, a local-e2b host behind a proxy that logs every request), a resume where nothing was
// lost sends the user's cell and nothing else of its own to the sandbox; one that lost the interpreter's
// memory replays the journal before any of the user's code runs, and runs the user's cell exactly once.
import { randomUUID } from 'node:crypto'
import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RequestLog, startRequestLog } from './helpers/request-log.js'
import { conversation, REDIS_URL } from './helpers/sessions.js'

describe("a lazy turn's first code cell carries the resume's probes", () => {
  let host: LocalE2BHost
  let log: RequestLog
  const tenant = `carry-${randomUUID().slice(0, 8)}`
  const store = createRedisSessionStore({
    redis: REDIS_URL,
    prefix: `sandkeep-it-${randomUUID().slice(0, 8)}`,
  })
  const sessions = () =>
    createSessionManager({
      store,
      provider: createE2BProvider({ apiKey: host.apiKey, apiUrl: log.url, sandboxUrl: log.url }),
    })

  beforeAll(async () => {
    host = await startLocalE2B({ logger: () => {}, pauseMode: 'memory' })
    log = await startRequestLog(host.apiUrl, { delayMs: 20 })
  })
  afterAll(async () => {
    await store.close()
    await log?.close()
    await host?.close()
  })

  /** A first turn that used the interpreter (journaled) and wrote a file; the sandbox is paused after it. */
  async function firstTurn(manager: ReturnType<typeof sessions>, id: string): Promise<string> {
    let sandboxId = ''
    await manager.withTurn(
      id,
      async (turn) => {
        await turn.sandbox.runCode('state = 41')
        await turn.journal.record({ kind: 'code', code: 'state = 41' })
        sandboxId = turn.sandbox.id
      },
      { tenant },
    )
    return sandboxId
  }

  it('nothing lost: the connect and the user cell, no probe call before it', async () => {
    const manager = sessions()
    const id = conversation()
    try {
      await firstTurn(manager, id)
      const turn = await manager.beginTurn(id, { tenant, lazy: true })
      const from = log.requests.length
      const result = await turn.sandbox.runCode('state + 1')
      const before = log.requests.slice(from)
      expect(result.text).toBe('42')
      // The user's cell saw none of the probe: no output of its own, `_` untouched by a cell of sandkeep's.
      expect(result.stdout).toBe('')
      expect((await turn.sandbox.runCode('_')).text).toBe('42')
      await turn.end()
      expect(turn.report).toMatchObject({ outcome: 'resumed', stateLost: false })
      expect(Object.fromEntries(turn.report!.checks.map((c) => [c.name, c.status]))).toEqual({
        memory: 'passed',
        filesystem: 'passed',
        processes: 'skipped',
      })
      const sandboxCalls = before.filter((r) => r.sandboxId !== undefined)
      const connects = before.filter((r) => r.sandboxId === undefined && r.path.includes('/connect'))
      expect(connects).toHaveLength(1)
      // One request to the sandbox before the result: the user's cell (the probe cell made it two).
      expect(sandboxCalls.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /execute'])
    } finally {
      await manager.endSession(id, { tenant }).catch(() => false)
    }
  }, 120_000)

  it('memory lost: the journal is replayed before the user cell, which runs exactly once', async () => {
    const manager = sessions()
    const id = conversation()
    try {
      const sandboxId = await firstTurn(manager, id)
      await host.faults.dropMemory(sandboxId)
      const turn = await manager.beginTurn(id, { tenant, lazy: true })
      // Appends a line per run, and reads the variable only the replay brings back.
      const result = await turn.sandbox.runCode("open('/home/user/runs.txt', 'a').write('run\\n')\nstate + 1")
      expect(result.error).toBeNull()
      expect(result.text).toBe('42')
      expect(await turn.sandbox.readFile('/home/user/runs.txt')).toBe('run\n')
      await turn.end()
      expect(turn.report).toMatchObject({ outcome: 'resumed', stateLost: true, rehydratedSteps: 1 })
      expect(turn.report!.survived).toMatchObject({ memory: false, filesystem: true })
      expect(turn.report!.checks.find((c) => c.name === 'memory')?.status).toBe('repaired')
    } finally {
      await manager.endSession(id, { tenant }).catch(() => false)
    }
  }, 120_000)

  it('a cell that does not compile is answered as the user wrote it, after a full probe', async () => {
    const manager = sessions()
    const id = conversation()
    try {
      await firstTurn(manager, id)
      const turn = await manager.beginTurn(id, { tenant, lazy: true })
      const result = await turn.sandbox.runCode('state +')
      expect(result.error?.name).toBe('SyntaxError')
      expect((await turn.sandbox.runCode('state + 1')).text).toBe('42')
      await turn.end()
      expect(turn.report).toMatchObject({ outcome: 'resumed', stateLost: false })
      expect(turn.report!.survived).toMatchObject({ memory: true, filesystem: true })
    } finally {
      await manager.endSession(id, { tenant }).catch(() => false)
    }
  }, 120_000)

  it('first call a command, nothing lost: the command first, no probe before it, the sentinel cell after', async () => {
    const manager = sessions()
    const id = conversation()
    try {
      await firstTurn(manager, id)
      const turn = await manager.beginTurn(id, { tenant, lazy: true })
      const from = log.requests.length
      const chunks: string[] = []
      const result = await turn.sandbox.runCommand('echo $((40 + 2))', { onStdout: (c) => chunks.push(c) })
      const before = log.requests.slice(from)
      // The user sees their command's output only, streamed and answered.
      expect(result).toMatchObject({ exitCode: 0, stdout: '42\n', stderr: '' })
      expect(chunks.join('')).toBe('42\n')
      expect((await turn.sandbox.runCode('state + 1')).text).toBe('42')
      await turn.end()
      expect(turn.report).toMatchObject({ outcome: 'resumed', stateLost: false })
      expect(Object.fromEntries(turn.report!.checks.map((c) => [c.name, c.status]))).toEqual({
        memory: 'passed',
        filesystem: 'passed',
        processes: 'skipped',
      })
      const sandboxCalls = before.filter((r) => r.sandboxId !== undefined).map((r) => `${r.method} ${r.path}`)
      // The user's command first (the full probe sent a cell before it); the sentinel's cell leaves once the
      // command has begun, and the result may or may not come before it.
      expect(sandboxCalls[0]).toBe('POST /process.Process/Start')
      expect(['POST /process.Process/Start', 'POST /process.Process/Start,POST /execute']).toContain(
        sandboxCalls.join(','),
      )
    } finally {
      await manager.endSession(id, { tenant }).catch(() => false)
    }
  }, 120_000)

  it('first call a command, marker gone: repaired before the command, which runs exactly once', async () => {
    const manager = sessions()
    const id = conversation()
    try {
      await firstTurn(manager, id)
      await manager.withTurn(id, (turn) => turn.sandbox.runCommand('rm -f /home/user/.sandkeep/marker'), {
        tenant,
      })
      const turn = await manager.beginTurn(id, { tenant, lazy: true })
      const result = await turn.sandbox.runCommand('echo run >> /home/user/runs.txt; cat /home/user/runs.txt')
      expect(result).toMatchObject({ exitCode: 0, stdout: 'run\n' })
      await turn.end()
      expect(turn.report).toMatchObject({ outcome: 'resumed', stateLost: false })
      expect(turn.report!.checks.find((c) => c.name === 'filesystem')?.status).toBe('repaired')
    } finally {
      await manager.endSession(id, { tenant }).catch(() => false)
    }
  }, 120_000)

  it('first call a command, memory lost: the command runs once, the replay before the next user cell', async () => {
    const manager = sessions()
    const id = conversation()
    try {
      const sandboxId = await firstTurn(manager, id)
      await host.faults.dropMemory(sandboxId)
      const turn = await manager.beginTurn(id, { tenant, lazy: true })
      const result = await turn.sandbox.runCommand('echo run >> /home/user/runs.txt; cat /home/user/runs.txt')
      expect(result).toMatchObject({ exitCode: 0, stdout: 'run\n' })
      expect((await turn.sandbox.runCode('state + 1')).text).toBe('42')
      await turn.end()
      expect(turn.report).toMatchObject({ outcome: 'resumed', stateLost: true, rehydratedSteps: 1 })
      expect(turn.report!.survived).toMatchObject({ memory: false, filesystem: true })
      expect(turn.report!.checks.find((c) => c.name === 'memory')?.status).toBe('repaired')
    } finally {
      await manager.endSession(id, { tenant }).catch(() => false)
    }
  }, 120_000)

  /** The first turn, with a file written too (for the read-first tests). */
  async function firstTurnWithFile(manager: ReturnType<typeof sessions>, id: string): Promise<string> {
    const sandboxId = await firstTurn(manager, id)
    await manager.withTurn(id, (turn) => turn.sandbox.writeFile('/home/user/notes.txt', 'kept'), { tenant })
    return sandboxId
  }
  const fileReads = (requests: readonly { path: string }[]) =>
    requests.filter((r) => r.path.startsWith('/files') && r.path.includes('notes.txt'))

  it('first call a file read, nothing lost: the read goes side by side with the probe cell', async () => {
    const manager = sessions()
    const id = conversation()
    try {
      await firstTurnWithFile(manager, id)
      const turn = await manager.beginTurn(id, { tenant, lazy: true })
      const from = log.requests.length
      expect(await turn.sandbox.readFile('/home/user/notes.txt')).toBe('kept')
      // The report is made by the time the answer is there (nothing was lost: no replay to wait for).
      expect(turn.report).toMatchObject({ outcome: 'resumed', stateLost: false })
      const before = log.requests.slice(from)
      await turn.end()
      const probe = before.find((r) => r.sandboxId !== undefined && r.path === '/execute')
      const [read, ...again] = fileReads(before)
      expect(probe && read).toBeTruthy()
      expect(again).toHaveLength(0)
      // Sent before the probe's answer came back (after it, they would be one after the other).
      expect(read!.startedAt).toBeLessThan(probe!.endedAt)
      expect(probe!.startedAt).toBeLessThan(read!.endedAt)
    } finally {
      await manager.endSession(id, { tenant }).catch(() => false)
    }
  }, 120_000)

  it('first call a file read, memory lost: the answer stands (read once), the replay before the next cell', async () => {
    const manager = sessions()
    const id = conversation()
    try {
      const sandboxId = await firstTurnWithFile(manager, id)
      await host.faults.dropMemory(sandboxId)
      const turn = await manager.beginTurn(id, { tenant, lazy: true })
      const from = log.requests.length
      expect(await turn.sandbox.readFile('/home/user/notes.txt')).toBe('kept')
      expect((await turn.sandbox.runCode('state + 1')).text).toBe('42')
      await turn.end()
      expect(fileReads(log.requests.slice(from))).toHaveLength(1)
      expect(turn.report).toMatchObject({ outcome: 'resumed', stateLost: true, rehydratedSteps: 1 })
      expect(turn.report!.survived).toMatchObject({ memory: false, filesystem: true })
      expect(turn.report!.checks.find((c) => c.name === 'memory')?.status).toBe('repaired')
    } finally {
      await manager.endSession(id, { tenant }).catch(() => false)
    }
  }, 120_000)
})
