// What files in a sandbox hold, compared by SHA-256 without bringing them over: one shell command looks at
// many paths, reads at most a bounded prefix of each, and never opens what is not a regular file (a FIFO would
// never end). Used to tell whether files sandkeep saw written are still there as written (the filesystem
// probe, when the marker is missing) and whether a journal file step would replace a file (the replay).
import { createHash } from 'node:crypto'
import type { SandboxHandle } from '../contract/sandbox-provider.js'
import { shellQuote } from '../contract/shell.js'

/**
 * Content compared by its digest is at most this many bytes: a file holding more differs from it, whatever
 * it starts with, so the command reads at most one byte past it.
 */
export const MAX_DIGEST_BYTES = 1024 * 1024

/** Paths looked at by one command (keeps the command line well below the shell's limits). */
const PATHS_PER_COMMAND = 100

/** Bound of one digest command, ms. */
const DIGEST_TIMEOUT_MS = 15_000

/** What the sandbox holds at a path: a regular file's digest, nothing, or something that is not a regular file. */
export type FileDigest = { sha256: string } | 'missing' | 'other'

/** SHA-256 of `content` as written to a file (UTF-8 for text), hex; undefined past {@link MAX_DIGEST_BYTES}. */
export function contentDigest(content: string | Uint8Array): string | undefined {
  const bytes = typeof content === 'string' ? Buffer.byteLength(content, 'utf8') : content.byteLength
  if (bytes > MAX_DIGEST_BYTES) return undefined
  return createHash('sha256').update(content).digest('hex')
}

const HEX_DIGEST = /^[0-9a-f]{64}$/

/**
 * What the sandbox holds at each of `paths` (relative paths are under its home), in as few commands as the
 * paths need. Undefined when a command did not answer as expected (a sandbox without a POSIX shell and
 * coreutils): the caller then knows nothing about any of the paths.
 */
export async function fileDigests(
  sandbox: SandboxHandle,
  paths: readonly string[],
  signal: AbortSignal,
): Promise<Map<string, FileDigest> | undefined> {
  const digests = new Map<string, FileDigest>()
  const distinct = [...new Set(paths)]
  for (let start = 0; start < distinct.length; start += PATHS_PER_COMMAND) {
    const chunk = distinct.slice(start, start + PATHS_PER_COMMAND)
    const command =
      `for p in ${chunk.map(shellQuote).join(' ')}; do ` +
      `if [ -f "$p" ] && [ -r "$p" ]; then head -c ${MAX_DIGEST_BYTES + 1} -- "$p" | sha256sum | cut -c1-64; ` +
      `elif [ -e "$p" ] || [ -L "$p" ]; then echo other; else echo missing; fi; done`
    const result = await sandbox.runCommand(command, { signal, timeoutMs: DIGEST_TIMEOUT_MS })
    const lines = result.stdout.split('\n').filter((line) => line.length > 0)
    if (result.exitCode !== 0 || lines.length !== chunk.length) return undefined
    for (const [index, line] of lines.entries()) {
      if (line === 'missing' || line === 'other') digests.set(chunk[index]!, line)
      else if (HEX_DIGEST.test(line)) digests.set(chunk[index]!, { sha256: line })
      else return undefined
    }
  }
  return digests
}
