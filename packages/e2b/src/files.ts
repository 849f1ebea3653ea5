// Files over the SDK's `sandbox.files`.
import type { Sandbox } from '@e2b/code-interpreter'
import {
  checkMaxBytes,
  type FileEntry,
  type ReadFileOptions,
  readAtMost,
  readLimitError,
  type SandboxHandle,
} from '@sandkeep/core'
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
        await sandbox.files.write(path, typeof data === 'string' ? data : toBuffer(data), {
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

function toBuffer(data: Uint8Array): ArrayBuffer {
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer
}
