// The turn manifest a store keeps: checked deeply on the way in, and again when a stored one is read.
import type { FileWitness, TurnManifest } from '../contract/session-store.js'
import { invalidArgument, validateInteger, validateSandboxId } from '../contract/validation.js'
import { MAX_MANIFEST_BYTES, MAX_MANIFEST_WITNESSES, utf8Bytes } from './limits.js'
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

const SHA256_HEX = /^[0-9a-f]{64}$/

function witnessEntry(entry: Record<string, unknown>): FileWitness {
  const sha256 = text('filesystem.witnesses[].sha256', entry.sha256)
  if (!SHA256_HEX.test(sha256)) {
    throw invalidArgument('manifest.filesystem.witnesses[].sha256', 'must be 64 lowercase hex digits.')
  }
  return { path: text('filesystem.witnesses[].path', entry.path), sha256 }
}

function filesystemOf(value: unknown): TurnManifest['filesystem'] {
  if (value === null || value === undefined) return null
  if (!isPlainObject(value)) throw invalidArgument('manifest.filesystem', 'must be an object or null.')
  const filesystem: NonNullable<TurnManifest['filesystem']> = {
    path: text('filesystem.path', value.path),
    value: text('filesystem.value', value.value),
  }
  const witnesses = entries('filesystem.witnesses', value.witnesses, witnessEntry)
  if (witnesses && witnesses.length > MAX_MANIFEST_WITNESSES) {
    throw invalidArgument('manifest.filesystem.witnesses', `holds at most ${MAX_MANIFEST_WITNESSES} entries.`)
  }
  if (witnesses) filesystem.witnesses = witnesses
  return filesystem
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
