// The host's sandboxes by id, persisted to stateDir/registry.json (written whole through a temp file and a
// rename). Records it cannot use are kept as they are and written back, so nothing in the file is lost.
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { HttpError } from './http.js'
import type { Sandbox, SandboxRecord } from './sandbox.js'
import { PRIVATE_FILE_MODE } from './state-dir.js'

/** A new id in E2B's shape: `i` and 19 lowercase letters or digits. */
export function newSandboxId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'
  const bytes = randomBytes(20)
  let id = 'i'
  for (let index = 1; index < 20; index++) id += alphabet[(bytes[index] ?? 0) % alphabet.length]
  return id
}

export class SandboxRegistry {
  readonly path: string
  readonly #sandboxes = new Map<string, Sandbox>()
  /** Records the registry could not use; kept and written back so that nothing is lost. */
  #unusable: unknown[] = []
  readonly #logger: (line: string) => void

  constructor(stateDir: string, logger: (line: string) => void) {
    this.path = join(stateDir, 'registry.json')
    this.#logger = logger
  }

  get size(): number {
    return this.#sandboxes.size
  }

  get(sandboxId: string): Sandbox | undefined {
    return this.#sandboxes.get(sandboxId)
  }

  has(sandboxId: string): boolean {
    return this.#sandboxes.has(sandboxId)
  }

  /** The sandbox, or a 404 `HttpError`. */
  lookup(sandboxId: string): Sandbox {
    const sandbox = this.#sandboxes.get(sandboxId)
    if (!sandbox) throw new HttpError(404, `sandbox ${sandboxId} not found`)
    return sandbox
  }

  /** True while `sandbox` is still the one registered under its id (not killed, not replaced). */
  holds(sandbox: Sandbox): boolean {
    return this.#sandboxes.get(sandbox.id) === sandbox
  }

  values(): IterableIterator<Sandbox> {
    return this.#sandboxes.values()
  }

  runningCount(): number {
    let count = 0
    for (const sandbox of this.#sandboxes.values()) if (sandbox.record.state === 'running') count++
    return count
  }

  add(sandbox: Sandbox): void {
    this.#sandboxes.set(sandbox.id, sandbox)
  }

  delete(sandbox: Sandbox): void {
    this.#sandboxes.delete(sandbox.id)
  }

  /** Moves a sandbox to another id (the change-id fault); the old id is then unknown. */
  rename(sandbox: Sandbox, newId: string): void {
    this.#sandboxes.delete(sandbox.id)
    sandbox.record.sandboxId = newId
    this.#sandboxes.set(newId, sandbox)
  }

  /** Forgets every sandbox (not the file). */
  clear(): void {
    this.#sandboxes.clear()
  }

  save(): void {
    const records = [...this.#sandboxes.values()].map((sandbox) => sandbox.record)
    const temp = `${this.path}.${process.pid}.tmp`
    // Every sandbox's envd token and env vars: for the host's user only.
    writeFileSync(temp, JSON.stringify({ version: 1, sandboxes: [...records, ...this.#unusable] }), {
      mode: PRIVATE_FILE_MODE,
    })
    renameSync(temp, this.path)
  }

  /**
   * Reads the file and registers `revive(record)` for every usable record, then writes it back. An
   * unreadable file is moved aside (never overwritten with an empty registry).
   */
  load(revive: (record: SandboxRecord) => Sandbox): void {
    if (!existsSync(this.path)) return
    let parsed: { sandboxes?: unknown }
    try {
      parsed = JSON.parse(readFileSync(this.path, 'utf8')) as { sandboxes?: unknown }
      if (typeof parsed !== 'object' || parsed === null) throw new Error('not an object')
    } catch (error) {
      const aside = `${this.path}.unreadable-${Date.now()}`
      renameSync(this.path, aside)
      this.#logger(
        `[sandkeep-local-e2b] registry ${this.path} is unreadable (${String(error)}); moved to ${aside}, starting empty`,
      )
      return
    }
    this.#unusable = []
    for (const record of Array.isArray(parsed.sandboxes) ? (parsed.sandboxes as unknown[]) : []) {
      if (isUsableRecord(record)) this.add(revive(record))
      else this.#unusable.push(record)
    }
    if (this.#unusable.length > 0) {
      this.#logger(
        `[sandkeep-local-e2b] ${this.#unusable.length} registry record(s) are malformed; kept as they are`,
      )
    }
    this.save()
  }
}

/** A registry record the host can serve (anything else is kept untouched in the file). */
function isUsableRecord(value: unknown): value is SandboxRecord {
  const record = value as Partial<SandboxRecord> | null
  return (
    typeof record === 'object' &&
    record !== null &&
    typeof record.sandboxId === 'string' &&
    /^[A-Za-z0-9_-]{1,128}$/.test(record.sandboxId) &&
    typeof record.rootDir === 'string' &&
    typeof record.envdAccessToken === 'string' &&
    typeof record.templateId === 'string' &&
    (record.state === 'running' || record.state === 'paused') &&
    Array.isArray(record.pauses) &&
    typeof record.metadata === 'object' &&
    record.metadata !== null &&
    typeof record.envVars === 'object' &&
    record.envVars !== null &&
    typeof record.startedAt === 'number' &&
    typeof record.endAt === 'number'
  )
}
