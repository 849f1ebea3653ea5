// No output is ever lost: what a process writes while the host is still answering envd's Start (before the
// stream has a subscriber) reaches the Start stream, under many commands at once. A Connect to a running
// process gets what the process writes from then on, as envd's Connect does.
import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { useTestHost, waitUntil } from './helpers.js'

/** Commands at once per round; the loss showed in 12–25 of 50 before the fix. */
const CONCURRENCY = 50
/** Rounds of the race loop (bounded: the loop never runs longer than this many rounds). */
const ROUNDS = 3
/**
 * Rounds of fresh sandboxes: one. Fifty sandboxes at once are where the loss showed (12–25 of 50 in a single
 * round), and each round costs 50 creations and kills; the race itself, Start before the stream has a
 * subscriber, is run three rounds over in one shared sandbox above.
 */
const FRESH_ROUNDS = 1

describe('command output under concurrency', () => {
  const t = useTestHost()

  it(`${CONCURRENCY} concurrent 'echo 42' in one shared sandbox all return stdout '42\\n'`, async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const results = await Promise.all(
          Array.from({ length: CONCURRENCY }, () => sandbox.commands.run('echo 42')),
        )
        const wrong = results.filter((result) => result.exitCode !== 0 || result.stdout !== '42\n')
        expect(wrong.map((result) => JSON.stringify(result.stdout))).toEqual([])
      }
    } finally {
      await sandbox.kill()
    }
  }, 120_000)

  it(`${CONCURRENCY} fresh sandboxes at once: each one's first 'echo 42' returns stdout '42\\n'`, async () => {
    for (let round = 0; round < FRESH_ROUNDS; round++) {
      const sandboxes = await Promise.all(
        Array.from({ length: CONCURRENCY }, () => Sandbox.create({ ...t.opts })),
      )
      try {
        const results = await Promise.all(sandboxes.map((sandbox) => sandbox.commands.run('echo 42')))
        const wrong = results.filter((result) => result.exitCode !== 0 || result.stdout !== '42\n')
        expect(wrong.map((result) => JSON.stringify(result.stdout))).toEqual([])
      } finally {
        await Promise.all(sandboxes.map((sandbox) => sandbox.kill().catch(() => false)))
      }
    }
  }, 180_000)

  it('stderr and an exit status written at once by a fast command arrive too', async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    try {
      const results = await Promise.all(
        Array.from({ length: CONCURRENCY }, (_, index) =>
          sandbox.commands.run(`echo out${index}; echo err${index} >&2; exit 3`).catch((error) => error),
        ),
      )
      const seen = results.map(({ exitCode, stdout, stderr, message }) => ({
        exitCode,
        stdout,
        stderr,
        message,
      }))
      // The message is envd's status of the exit, as E2B's CommandExitError carries it.
      expect(seen).toEqual(
        results.map((_, index) => ({
          exitCode: 3,
          stdout: `out${index}\n`,
          stderr: `err${index}\n`,
          message: 'exit status 3',
        })),
      )
    } finally {
      await sandbox.kill()
    }
  }, 120_000)

  it('connect to a running command gets what it writes from then on, and its end', async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    try {
      // Prints "before" at once, then waits for a file, then prints "after".
      const early: string[] = []
      const handle = await sandbox.commands.run(
        'echo before; while [ ! -e /tmp/go ]; do sleep 0.02; done; echo after',
        { background: true, onStdout: (data) => early.push(data) },
      )
      await waitUntil(() => early.join('') === 'before\n')
      const seen: string[] = []
      const connected = await sandbox.commands.connect(handle.pid, { onStdout: (data) => seen.push(data) })
      await sandbox.files.write('/tmp/go', '')
      const result = await connected.wait()
      expect(result.exitCode).toBe(0)
      expect(result.stdout).toBe('after\n')
      expect(seen.join('')).toBe('after\n')
      // The Start stream itself saw everything.
      expect((await handle.wait()).stdout).toBe('before\nafter\n')
    } finally {
      await sandbox.kill()
    }
  }, 60_000)
})
