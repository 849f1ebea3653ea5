// The readFile tool's limit holds for the read itself, on a real local-e2b sandbox (through the E2B provider
// and SDK): a file that is small when the tool looks at its size and large when it is read is refused.
import { randomUUID } from 'node:crypto'
import type { SessionManager } from '@sandkeep/core'
import type { LocalE2BHost } from '@sandkeep/local-e2b'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandboxSession } from '../src/sandbox-session/index.js'
import { sandboxTools } from '../src/sandbox-tools.js'
import { startLocalSessions, stopLocalSessions } from './helpers.js'

let host: LocalE2BHost
let sessions: SessionManager
const conversationId = `read-limit-${randomUUID()}`

beforeAll(async () => {
  ;({ host, sessions } = await startLocalSessions())
}, 120_000)

afterAll(() => stopLocalSessions({ host, sessions }, [conversationId]), 120_000)

type Tools = ReturnType<typeof sandboxTools>

async function call(tools: Tools, name: keyof Tools, input: object) {
  const execute = tools[name].execute as unknown as (input: unknown, options: unknown) => Promise<unknown>
  return (await execute(input, { toolCallId: 'c1', messages: [], context: {} })) as Record<string, unknown>
}

// The sandbox's login shell reads ~/.bash_profile, so this `stat` swaps the file right after reporting its
// size: exactly the window between the tool's size check and its read.
const SWAP_AFTER_STAT =
  'stat() { command stat "$@"; status=$?; mv -f /home/user/big.txt /home/user/data.txt 2>/dev/null; return $status; }\n'

describe('the readFile tool on local-e2b: a file swapped after its size was checked', () => {
  it('is refused at the limit by the bounded read', async () => {
    const maxReadBytes = 1024 * 1024
    await using session = createSandboxSession({ sessions, conversationId })
    const tools = sandboxTools({ session, maxReadBytes })
    await session.writeTextFile({ path: 'data.txt', content: 'small' })
    const setup = await session.runCommand(
      `head -c ${32 * 1024 * 1024} /dev/zero | tr '\\0' x > /home/user/big.txt && printf '%s' '${SWAP_AFTER_STAT}' > /home/user/.bash_profile`,
    )
    expect(setup.exitCode).toBe(0)
    const result = await call(tools, 'readFile', { path: 'data.txt' })
    expect(result).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(String(result.error)).toMatch(/more than 1048576 bytes/)
    // The swap did happen: the file the tool was asked for is now the large one.
    expect((await session.stat({ path: 'data.txt' }))?.size).toBe(32 * 1024 * 1024)
    await session.runCommand('rm -f /home/user/.bash_profile')
    // A file within the limit still reads whole.
    await session.writeTextFile({ path: 'fits.txt', content: 'y'.repeat(maxReadBytes) })
    expect(await call(tools, 'readFile', { path: 'fits.txt' })).not.toHaveProperty('code')
  }, 120_000)
})
