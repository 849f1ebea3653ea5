// Reads bounded by a byte count, for providers implementing `readFile`'s `maxBytes` and for callers that
// get a stream: the bound is on what is read, not on a size looked up beforehand (a file can change
// between the two).
import { SandkeepError } from './errors.js'
import { invalidArgument } from './validation.js'

/**
 * Checks a `maxBytes` option: undefined (no limit) or a positive safe integer.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkMaxBytes(maxBytes: unknown): number | undefined {
  if (maxBytes === undefined) return undefined
  if (typeof maxBytes !== 'number' || !Number.isSafeInteger(maxBytes) || maxBytes < 1) {
    throw invalidArgument('maxBytes', 'must be a positive integer (bytes).')
  }
  return maxBytes
}

/** The error of a read that found more than `maxBytes` in `path` (INVALID_ARGUMENT: the file is too large). */
export function readLimitError(path: string, maxBytes: number, sandboxId?: string): SandkeepError {
  return new SandkeepError({
    code: 'INVALID_ARGUMENT',
    message:
      `${path} holds more than ${maxBytes} bytes, the read's limit; the read stopped there. Read a part of ` +
      'it with a command (head, tail, sed -n) instead.',
    ...(sandboxId === undefined ? {} : { sandboxId }),
  })
}

/**
 * Reads `stream` to its end and returns its bytes, or `undefined` as soon as more than `maxBytes` arrived
 * (`Infinity`: no limit): the stream is then cancelled, so the rest is neither transferred nor held (memory
 * stays within `maxBytes` plus one chunk). `signal` is checked before each chunk (its reason is thrown).
 */
export async function readAtMost(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<Uint8Array | undefined> {
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    for (;;) {
      signal?.throwIfAborted()
      const { done, value } = await reader.read()
      if (done) break
      total += value.byteLength
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined)
        return undefined
      }
      chunks.push(value)
    }
  } finally {
    reader.releaseLock()
  }
  if (chunks.length === 1) return chunks[0]
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}
