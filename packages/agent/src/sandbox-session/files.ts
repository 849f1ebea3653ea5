// The file operations of the AI SDK's sandbox contract (readFile, writeFile, stat, listDirectory, deleteFile, ...) and sandkeep's
// listDir, over the sandbox handle. A missing file is `null`, as the contract asks, never an error.
import { type FileEntry, type SandboxHandle, SandkeepError } from '@sandkeep/core'
import { checkMaxBytes, shellQuote } from '@sandkeep/core/provider'
import { invalid, providerError } from '../errors.js'
import { sliceLines } from '../output.js'
import { checkLine, collectBytes, encodeText, makeDecoder } from './paths.js'
import type {
  PathOptions,
  ReadBinaryFileOptions,
  ReadTextFileOptions,
  SandboxDirectoryEntry,
  SandboxFileStat,
  SandboxSession,
  SessionContext,
  WriteBinaryFileOptions,
  WriteFileOptions,
  WriteTextFileOptions,
} from './types.js'

/**
 * Reads get the turn's handle before its resume is over: a lazy turn's first read goes beside the resume's
 * probes (see @sandkeep/core's manager/assess.ts). Writes wait for the resume.
 */
const EARLY = true

type FileOperations = Pick<
  SandboxSession,
  | 'readFile'
  | 'readBinaryFile'
  | 'readTextFile'
  | 'writeFile'
  | 'writeBinaryFile'
  | 'writeTextFile'
  | 'stat'
  | 'listDirectory'
  | 'deleteFile'
  | 'listDir'
>

export function fileOperations(context: SessionContext): FileOperations {
  const { operation, resolvePath } = context
  const bytes = byteOperations(context)
  return {
    readFile: async ({ path, abortSignal }: PathOptions) => {
      const content = await bytes.read(path, abortSignal)
      if (content === null) return null
      return new ReadableStream<Uint8Array>({
        start(controller) {
          if (content.byteLength > 0) controller.enqueue(content)
          controller.close()
        },
      })
    },
    readBinaryFile: ({ path, abortSignal, maxBytes }: ReadBinaryFileOptions) =>
      bytes.read(path, abortSignal, maxBytes),
    readTextFile: async ({
      path,
      abortSignal,
      encoding,
      startLine,
      endLine,
      maxBytes,
    }: ReadTextFileOptions) => {
      checkLine(startLine, 'startLine')
      checkLine(endLine, 'endLine')
      const decoder = makeDecoder(encoding)
      const content = await bytes.read(path, abortSignal, maxBytes)
      if (content === null) return null
      return sliceLines(decoder.decode(content), startLine ?? 1, endLine)
    },
    writeFile: async ({ path, content, abortSignal }: WriteFileOptions) => {
      resolvePath(path)
      const collected = await collectBytes(content, abortSignal)
      await bytes.write(path, collected, abortSignal)
    },
    writeBinaryFile: ({ path, content, abortSignal }: WriteBinaryFileOptions) => {
      if (!(content instanceof Uint8Array))
        return Promise.reject(invalid('writeBinaryFile needs Uint8Array content.'))
      return bytes.write(path, content, abortSignal)
    },
    writeTextFile: ({ path, content, abortSignal, encoding }: WriteTextFileOptions) => {
      if (typeof content !== 'string') return Promise.reject(invalid('writeTextFile needs string content.'))
      return bytes.write(path, encodeText(content, encoding), abortSignal)
    },
    stat: ({ path, abortSignal }: PathOptions) => {
      const resolved = resolvePath(path)
      // Its command may carry the resume's marker test (see @sandkeep/core's fidelity-carried-command.ts).
      return operation(abortSignal, (handle, signal) => statPath(handle, resolved, signal), EARLY)
    },
    listDirectory: ({ path, abortSignal }: PathOptions) => {
      const resolved = resolvePath(path)
      return operation(
        abortSignal,
        async (handle, signal): Promise<SandboxDirectoryEntry[] | null> => {
          const entries = await orNullIfMissing(handle.listDir(resolved, { depth: 1, signal }))
          return (
            entries?.map((entry) => ({
              name: entry.name,
              type: entry.type === 'dir' ? 'directory' : entry.type,
            })) ?? null
          )
        },
        EARLY,
      )
    },
    deleteFile: ({ path, abortSignal }: PathOptions) => {
      const resolved = resolvePath(path)
      return operation(abortSignal, (handle, signal) => deletePath(handle, resolved, signal))
    },
    listDir: (path, listOptions = {}) => {
      const resolved = resolvePath(path)
      const depth = listOptions.depth ?? 1
      if (!Number.isInteger(depth) || depth < 1)
        return Promise.reject(invalid('listDir: depth must be an integer >= 1.'))
      return operation(
        listOptions.abortSignal,
        (handle, signal) => orNullIfMissing<FileEntry[]>(handle.listDir(resolved, { depth, signal })),
        EARLY,
      )
    },
  }
}

/** Whole-file reads and writes of bytes, the ground the read/write variants stand on. */
function byteOperations({ operation, resolvePath }: SessionContext) {
  return {
    async read(path: string, abortSignal?: AbortSignal, maxBytes?: number): Promise<Uint8Array | null> {
      const resolved = resolvePath(path)
      const limit = checkMaxBytes(maxBytes)
      return operation(
        abortSignal,
        (handle, signal) =>
          orNullIfMissing(
            handle.readFile(resolved, {
              format: 'bytes',
              signal,
              ...(limit === undefined ? {} : { maxBytes: limit }),
            }),
          ),
        EARLY,
      )
    },
    async write(path: string, data: Uint8Array | string, abortSignal?: AbortSignal): Promise<void> {
      const resolved = resolvePath(path)
      return operation(abortSignal, (handle, signal) => handle.writeFile(resolved, data, { signal }))
    },
  }
}

/** The value, or `null` when the sandbox says FILE_NOT_FOUND. */
async function orNullIfMissing<T>(promise: Promise<T>): Promise<T | null> {
  try {
    return await promise
  } catch (error) {
    if (SandkeepError.hasCode(error, 'FILE_NOT_FOUND')) return null
    throw error
  }
}

async function statPath(
  handle: SandboxHandle,
  resolved: string,
  signal: AbortSignal,
): Promise<SandboxFileStat | null> {
  // SandboxHandle has no stat; GNU stat in the sandbox follows symlinks (-L) as the contract asks.
  const result = await handle.runCommand(`stat -L -c '%F|%s' -- ${shellQuote(resolved)}`, {
    timeoutMs: 30_000,
    signal,
  })
  if (result.exitCode !== 0) {
    if (/No such file|cannot statx?/i.test(result.stderr)) return null
    throw providerError(`stat ${resolved} failed: ${result.stderr.trim()}`)
  }
  const [kind = '', size = '0'] = result.stdout.trim().split('|')
  const type = kind.includes('directory') ? 'directory' : kind.includes('regular') ? 'file' : 'other'
  return { type, size: Number(size) }
}

async function deletePath(handle: SandboxHandle, resolved: string, signal: AbortSignal): Promise<boolean> {
  // One round trip that tells "deleted", "missing" and "is a directory" apart; a symlink to a
  // directory is a file here (it is removed, not followed).
  const quoted = shellQuote(resolved)
  const script =
    `if [ -d ${quoted} ] && [ ! -L ${quoted} ]; then exit 21; fi; ` +
    `if [ -e ${quoted} ] || [ -L ${quoted} ]; then rm -f -- ${quoted} && echo deleted; else echo missing; fi`
  const result = await handle.runCommand(script, { timeoutMs: 30_000, signal })
  if (result.exitCode === 21) throw invalid(`deleteFile: ${resolved} is a directory.`)
  if (result.exitCode !== 0) throw providerError(`deleteFile ${resolved} failed: ${result.stderr.trim()}`)
  return result.stdout.trim() === 'deleted'
}
