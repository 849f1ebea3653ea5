// Files over the SDK's `sandbox.files`.
import type { Sandbox } from '@e2b/code-interpreter'
import {
  checkMaxBytes,
  type FileEntry,
  type ReadFileOptions,
  readAtMost,
  readLimitError,
  type SandboxHandle,
} from '@sandkeep/core/provider'
import { type ErrorContext, withE2BErrors } from './errors.js'

type FileCapabilities = Pick<
  SandboxHandle<Sandbox>,
  'readFile' | 'writeFile' | 'listDir' | 'exists' | 'remove'
>

export function fileCapabilities(
  sandbox: Sandbox,
  at: (operation: string, path: string) => ErrorContext,
): FileCapabilities {
  async function readFile(path: string, options?: ReadFileOptions & { format?: 'text' | 'bytes' }) {
    const maxBytes = checkMaxBytes(options?.maxBytes)
    return withE2BErrors(at('files.read', path), async () => {
      const signal = options?.signal ? { signal: options.signal } : {}
      if (maxBytes !== undefined) {
        // Streamed and cancelled past the limit: a whole-file read would pull in whatever the file holds
        // by the time it is sent, however small it was when someone looked.
        const stream = await sandbox.files.read(path, { format: 'stream', ...signal })
        const bytes = await readAtMost(stream, maxBytes)
        if (bytes === undefined) throw readLimitError(path, maxBytes, sandbox.sandboxId)
        return options?.format === 'bytes' ? bytes : new TextDecoder().decode(bytes)
      }
      if (options?.format === 'bytes') return sandbox.files.read(path, { format: 'bytes', ...signal })
      return sandbox.files.read(path, { format: 'text', ...signal })
    })
  }
  return {
    readFile: readFile as SandboxHandle['readFile'],
    writeFile: (path, data, options) =>
      withE2BErrors(at('files.write', path), async () => {
        await sandbox.files.write(path, uploadBody(data), {
          ...(options?.signal ? { signal: options.signal } : {}),
        })
      }),
    listDir: (path, options) =>
      withE2BErrors(at('files.list', path), async () => {
        const entries = await sandbox.files.list(path, { depth: options?.depth ?? 1 })
        return entries.map(
          (e): FileEntry => ({
            name: e.name,
            path: e.path,
            type:
              e.type === 'file' ? 'file' : e.type === 'dir' ? 'dir' : e.symlinkTarget ? 'symlink' : 'other',
            size: e.size,
          }),
        )
      }),
    exists: (path) => withE2BErrors(at('files.exists', path), () => sandbox.files.exists(path)),
    remove: (path) => withE2BErrors(at('files.remove', path), () => sandbox.files.remove(path)),
  }
}

/** Data past this size is uploaded as a stream of chunks rather than handed to the SDK in one piece. */
const STREAMED_UPLOAD_BYTES = 1024 * 1024
/** Bytes (or, for text, characters) per chunk of a streamed upload. */
const UPLOAD_CHUNK = 1024 * 1024

/**
 * The body the SDK uploads. Small data goes as it is. Large data goes as a stream that hands out one chunk
 * at a time and yields to the event loop between chunks: given whole, the SDK copies it into a Blob (and a
 * Uint8Array was copied once more here) in one synchronous stretch, 2 to 6 s for 1 GB, long enough for a
 * lease-renewal timer to miss its turn. Text is encoded chunk by chunk, never split inside a surrogate pair.
 */
function uploadBody(data: string | Uint8Array): string | ArrayBuffer | ReadableStream<Uint8Array> {
  const size = typeof data === 'string' ? data.length * 3 : data.byteLength
  if (size <= STREAMED_UPLOAD_BYTES) {
    if (typeof data === 'string') return data
    return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer
  }
  const encoder = new TextEncoder()
  let offset = 0
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // A macrotask between chunks: timers (lease renewal among them) run while a large upload goes out.
      await new Promise((resolve) => setImmediate(resolve))
      if (offset >= data.length) {
        controller.close()
        return
      }
      let end = Math.min(data.length, offset + UPLOAD_CHUNK)
      if (typeof data === 'string') {
        const code = data.charCodeAt(end - 1)
        if (end < data.length && code >= 0xd800 && code <= 0xdbff) end -= 1
        controller.enqueue(encoder.encode(data.slice(offset, end)))
      } else {
        // A view, not a copy: writeFile returns only once the upload is over.
        controller.enqueue(data.subarray(offset, end))
      }
      offset = end
    },
  })
}
