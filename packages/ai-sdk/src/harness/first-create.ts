// onFirstCreate: what the harness sets up once per sandbox (its bridge files and installs, the caller's
// bootstrap). sandkeep's journal replays recorded steps after a recreation, but a function is no step: so
// the hook runs again on any sandbox where its marker file is missing (a new sandbox, a recreated one, one
// whose files a pause lost) or names another identity (another bootstrap). A lock directory in the sandbox
// (mkdir is atomic there, whichever process asks) lets one holder run it while concurrent createSession
// calls for the same conversation wait for its marker instead of running it twice.
import { posix } from 'node:path'
import { SandkeepError } from '@sandkeep/core'
import { shellQuote } from '@sandkeep/core/provider'
import { providerError } from '../errors.js'
import type { SandkeepSandboxSession } from '../sandbox-session/index.js'

/** The harness's hook, as `createSession` gets it. */
export type FirstCreateHook = (
  session: SandkeepSandboxSession,
  options: { abortSignal?: AbortSignal },
) => Promise<void>

/** How often a waiting holder looks for the marker, ms. */
const POLL_MS = 250

/**
 * Takes the lock directory, or takes over one older than `staleSeconds` (its holder is taken for dead); says
 * `acquired` or `busy`. A lock whose timestamp is not written yet counts as fresh, so a holder is never
 * robbed between its mkdir and its date.
 */
function lockScript(lock: string, staleSeconds: number): string {
  const path = shellQuote(lock)
  const take = `if mkdir ${path} 2>/dev/null; then date +%s > ${path}/since; echo acquired; exit 0; fi`
  return [
    `mkdir -p "$(dirname ${path})" || exit 2`,
    take,
    `since=$(cat ${path}/since 2>/dev/null || date +%s)`,
    `if [ $(( $(date +%s) - since )) -ge ${staleSeconds} ]; then rm -rf ${path}; ${take}; fi`,
    'echo busy',
  ].join('\n')
}

/** Where the marker of a session's sandbox lives. */
export function firstCreateMarker(session: SandkeepSandboxSession): string {
  return posix.join(session.workingDirectory, '.sandkeep', 'harness-first-create')
}

/**
 * Runs `hook` unless the sandbox's marker says it already ran for `identity`; waits (up to `timeoutMs`)
 * while another holder runs it. Returns true when this call ran it.
 * @throws SandkeepError SESSION_BUSY when another holder's run outlasts `timeoutMs`; whatever the hook throws
 *   (the marker is then not written, so the next session runs it again).
 */
export async function ensureFirstCreate(input: {
  session: SandkeepSandboxSession
  hook: FirstCreateHook
  identity: string | undefined
  timeoutMs: number
  abortSignal: AbortSignal | undefined
}): Promise<boolean> {
  const { session, hook, timeoutMs, abortSignal } = input
  const tag = input.identity ?? ''
  const marker = firstCreateMarker(session)
  const lock = `${marker}.lock`
  const take = lockScript(lock, Math.ceil(timeoutMs / 1000))
  const signal = abortSignal ? { abortSignal } : {}
  // A little past the staleness: by then a dead holder's lock is taken over, not waited for.
  const deadline = Date.now() + timeoutMs + 5_000
  for (;;) {
    if ((await session.readTextFile({ path: marker, ...signal })) === tag) return false
    const attempt = await session.run({ command: take, ...signal })
    if (attempt.exitCode !== 0) {
      throw providerError(
        `Could not prepare ${posix.dirname(marker)} in the sandbox: ${attempt.stderr.trim()}`,
      )
    }
    if (attempt.stdout.trim() === 'acquired') {
      try {
        await hook(session, signal)
        await session.writeTextFile({ path: marker, content: tag, ...signal })
      } finally {
        await Promise.resolve(session.run({ command: `rm -rf ${shellQuote(lock)}` })).catch(() => undefined)
      }
      return true
    }
    if (Date.now() >= deadline) {
      throw new SandkeepError({
        code: 'SESSION_BUSY',
        message: `Another holder has run onFirstCreate on this sandbox for over ${timeoutMs} ms; retry later.`,
        conversationId: session.conversationId,
        tenant: session.tenant,
      })
    }
    await sleep(POLL_MS, abortSignal)
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
