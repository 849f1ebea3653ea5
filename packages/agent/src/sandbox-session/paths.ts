// Paths and bytes between the AI SDK's file contract and the sandbox: resolution against the base
// directory, text encodings, line ranges and stream collection.
import { posix } from 'node:path'
import { readAtMost } from '@sandkeep/core/provider'
import { invalid } from '../errors.js'

/** Resolves `path` against `workingDirectory`; INVALID_ARGUMENT for an empty path or a NUL character. */
export function resolveSandboxPath(workingDirectory: string, path: string): string {
  if (typeof path !== 'string' || path.length === 0)
    throw invalid('A sandbox path must be a non-empty string.')
  if (hasNul(path)) throw invalid('A sandbox path must not contain a NUL character.')
  return posix.resolve(workingDirectory, path)
}

export function hasNul(value: string): boolean {
  return value.includes('\u0000')
}

/** Checks a 1-based line number of `readTextFile`. */
export function checkLine(value: unknown, name: string): void {
  if (value === undefined) return
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw invalid(
      `readTextFile: \`${name}\` must be an integer >= 1 (lines are 1-based), got ${String(value)}.`,
    )
  }
}

export function makeDecoder(encoding: string | undefined): { decode(bytes: Uint8Array): string } {
  try {
    return new TextDecoder(encoding ?? 'utf-8')
  } catch {
    throw invalid(`readTextFile: unknown encoding ${JSON.stringify(encoding)}.`)
  }
}

export function encodeText(content: string, encoding: string | undefined): Uint8Array {
  const name = (encoding ?? 'utf-8').toLowerCase()
  if (name === 'utf-8' || name === 'utf8') return new TextEncoder().encode(content)
  if (Buffer.isEncoding(name)) return new Uint8Array(Buffer.from(content, name))
  throw invalid(`writeTextFile: unsupported encoding ${JSON.stringify(encoding)}.`)
}

/** Reads a byte stream to its end into one array; checks `signal` between chunks. */
export async function collectBytes(
  stream: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  if (!(stream instanceof ReadableStream))
    throw invalid('writeFile needs a ReadableStream<Uint8Array> as content.')
  return (await readAtMost(stream, Number.POSITIVE_INFINITY, signal)) ?? new Uint8Array(0)
}
