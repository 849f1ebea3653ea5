// The turn manifest a store keeps: checked deeply on the way in, and again when a stored one is read.
import type { TurnManifest } from '../session-store.js'
import { invalidArgument, validateInteger, validateSandboxId } from '../validation.js'
import { MAX_MANIFEST_BYTES, utf8Bytes } from './limits.js'
import { isPlainObject } from './shape.js'

function text(name: string, value: unknown): string {
  if (typeof value !== 'string') throw invalidArgument(`manifest ${name}`, 'must be a string.')
  return value
}

/** The entries of an optional array field (`null` when absent), each checked by `each`. */
function entries<T>(name: string, value: unknown, each: (entry: Record<string, unknown>) => T): T[] | null {
  if (value === null || value === undefined) return null
  if (!Array.isArray(value)) throw invalidArgument(`manifest.${name}`, 'must be an array or null.')
  return value.map((entry: unknown) => {
    if (!isPlainObject(entry)) throw invalidArgument(`manifest.${name} entries`, 'must be objects.')
    return each(entry)
  })
}

function memoryEntry(entry: Record<string, unknown>): NonNullable<TurnManifest['memory']>[number] {
  if (entry.contextId !== null && typeof entry.contextId !== 'string') {
    throw invalidArgument('manifest.memory[].contextId', 'must be a string or null.')
  }
  return {
    language: text('memory[].language', entry.language),
    contextId: entry.contextId as string | null,
    variable: text('memory[].variable', entry.variable),
    value: text('memory[].value', entry.value),
  }
}

function processEntry(entry: Record<string, unknown>): NonNullable<TurnManifest['processes']>[number] {
  const pid = validateInteger('manifest.processes[].pid', entry.pid, 0, 2 ** 31)
  const process: { pid: number; command: string; cwd?: string } = {
    pid,
    command: text('processes[].command', entry.command),
  }
  if (entry.cwd !== undefined) process.cwd = text('processes[].cwd', entry.cwd)
  return process
}

function filesystemOf(value: unknown): TurnManifest['filesystem'] {
  if (value === null || value === undefined) return null
  if (!isPlainObject(value)) throw invalidArgument('manifest.filesystem', 'must be an object or null.')
  return { path: text('filesystem.path', value.path), value: text('filesystem.value', value.value) }
}

/**
 * Checks a manifest deeply and returns a copy holding only the contract's fields, at most
 * {@link MAX_MANIFEST_BYTES} of JSON.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkManifest(manifest: unknown): TurnManifest {
  if (!isPlainObject(manifest)) throw invalidArgument('manifest', 'must be an object or null.')
  if (typeof manifest.writtenAt !== 'number' || !Number.isFinite(manifest.writtenAt)) {
    throw invalidArgument('manifest.writtenAt', 'must be a finite number (epoch ms).')
  }
  const copy: TurnManifest = {
    writtenAt: manifest.writtenAt,
    sandboxId: validateSandboxId(manifest.sandboxId),
    memory: entries('memory', manifest.memory, memoryEntry),
    filesystem: filesystemOf(manifest.filesystem),
    processes: entries('processes', manifest.processes, processEntry),
  }
  const bytes = utf8Bytes(JSON.stringify(copy))
  if (bytes > MAX_MANIFEST_BYTES) {
    throw invalidArgument('manifest', `is ${bytes} bytes of JSON; the limit is ${MAX_MANIFEST_BYTES}.`)
  }
  return copy
}
