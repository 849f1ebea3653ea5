// The snapshots a host keeps, in stateDir/snapshots/ beside the registry: an index (index.json) and, per
// snapshot, a manifest of its files whose content is kept once across all snapshots (kind `content`, see
// content-store.ts), or, in the format before (kinds `image` and `tree`, still read, and still made with
// `snapshotStorage: 'copy'`), a whole copy of the sandbox's ext4 image or directory tree. They outlive the
// sandbox they were taken from and host restarts, and belong to the API key that made them. A team's limits
// count a blob its snapshots share once. Everything here is private to the host user: the directory is 0700,
// every file 0600. Memory is never part of a snapshot.
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { ContentStore, type Manifest, removeTree } from './content-store.js'

const run = promisify(execFile)

/** The namespace of named snapshots, where E2B puts the team's slug (`<namespace>/<name>:<tag>`). */
export const SNAPSHOT_NAMESPACE = 'local'

/** E2B's tag of a build made without one. */
export const DEFAULT_TAG = 'default'

/** A copy longer than this is given up (a 2 GiB image copies in well under a second on a plain disk). */
const COPY_TIMEOUT_MS = 10 * 60_000

/** One kept snapshot (a build of a snapshot template, in E2B's words). */
export interface SnapshotRecord {
  /** Its template id: 20 lowercase letters and digits, as E2B's. */
  templateId: string
  /** The tag of this build (`default` unless the name carried one). */
  tag: string
  /** The name it was given, without namespace or tag. */
  alias?: string
  /** Who made it: a hash of the API key, never the key. */
  team: string
  /** The sandbox it was taken from. */
  sourceSandboxId: string
  /** The template that sandbox ran: its user and limits apply to sandboxes made from the snapshot. */
  baseTemplateId: string
  /** The environment variables that sandbox was created with; sandboxes made from it start with them. */
  envVars: Record<string, string>
  /** Epoch ms. */
  createdAt: number
  /**
   * `content`: a manifest of its files, their content in shared blobs; `image`: a copy of the sandbox's ext4
   * disk image; `tree`: a copy of its directory.
   */
  kind: 'content' | 'image' | 'tree'
  /**
   * Bytes it took on the host's disk when made (allocated blocks): the whole copy (`image`, `tree`), or what
   * it added (`content`: its manifest and the blobs no kept snapshot of the team held before).
   */
  bytes: number
  /** Its manifest under snapshots/manifests/ (kind `content`), file (`image`) or directory (`tree`) under snapshots/. */
  file: string
  /** Kind `content`: the apparent size of its files (bytes). */
  contentBytes?: number
  /**
   * The host id range its files belong to (the source's; `legacy` or absent: a host before ranges); a
   * sandbox made from it moves them onto its own.
   */
  filesRange?: number | 'legacy'
}

/** What a reference (`abc:default`, `local/name:v1`, `name`) names. */
export interface SnapshotReference {
  /** Template id, name, or namespace/name. */
  identifier: string
  /** The tag after the last `:`, when one is given. */
  tag: string | undefined
}

/** Splits `identifier[:tag]`. */
export function parseSnapshotReference(reference: string): SnapshotReference {
  const colon = reference.lastIndexOf(':')
  if (colon <= 0) return { identifier: reference, tag: undefined }
  return { identifier: reference.slice(0, colon), tag: reference.slice(colon + 1) }
}

/** The id E2B answers for a snapshot: `namespace/name:tag` when named, `templateId:tag` otherwise. */
export function snapshotIdOf(record: SnapshotRecord): string {
  return record.alias
    ? `${SNAPSHOT_NAMESPACE}/${record.alias}:${record.tag}`
    : `${record.templateId}:${record.tag}`
}

/** E2B's `names`: the namespaced name of a named snapshot, nothing for an unnamed one. */
export function snapshotNamesOf(record: SnapshotRecord): string[] {
  return record.alias ? [`${SNAPSHOT_NAMESPACE}/${record.alias}`] : []
}

/** True when `identifier` names the record's template (by id, name or namespaced name). */
function namesTemplate(record: SnapshotRecord, identifier: string): boolean {
  return (
    identifier === record.templateId ||
    (record.alias !== undefined &&
      (identifier === record.alias || identifier === `${SNAPSHOT_NAMESPACE}/${record.alias}`))
  )
}

/** True when `reference` names this build; without a tag, any build of the template matches. */
export function matchesReference(record: SnapshotRecord, reference: SnapshotReference): boolean {
  return namesTemplate(record, reference.identifier) && (reference.tag ?? record.tag) === record.tag
}

/** The team an API key stands for, as stored with its snapshots (a hash: the key is never written down). */
export function teamOf(apiKey: string): string {
  return createHash('sha256').update('sandkeep-local-e2b team\0').update(apiKey).digest('hex').slice(0, 32)
}

/** A new template id in E2B's shape: 20 lowercase letters or digits. */
export function newTemplateId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'
  const bytes = randomBytes(20)
  let id = ''
  for (const byte of bytes) id += alphabet[byte % alphabet.length]
  return id
}

/** Copies a file keeping its holes, sharing blocks instead where the filesystem can (reflink). */
export async function copySparse(from: string, to: string): Promise<void> {
  await run('cp', ['--reflink=auto', '--sparse=always', from, to], { timeout: COPY_TIMEOUT_MS })
  chmodSync(to, 0o600)
}

/** Copies a directory tree with owners, modes, links and holes (`to` must not exist yet). */
export async function copyTree(from: string, to: string): Promise<void> {
  try {
    await run('cp', ['-a', '--reflink=auto', '--sparse=always', from, to], { timeout: COPY_TIMEOUT_MS })
  } catch (error) {
    // A cp without GNU's options (macOS, unisolated development only) still keeps owners and modes with -pR.
    if (existsSync(to)) throw error
    await run('cp', ['-pR', from, to], { timeout: COPY_TIMEOUT_MS })
  }
}

/** Bytes a file or tree takes on disk: its allocated blocks, so a sparse image counts what it holds. */
export function allocatedBytes(path: string): number {
  const stat = lstatSync(path)
  if (!stat.isDirectory()) return stat.blocks * 512
  let total = stat.blocks * 512
  for (const name of readdirSync(path)) total += allocatedBytes(join(path, name))
  return total
}

/** A partial copy a crash left behind (`.partial-<random>`), removed at load. */
const PARTIAL_PREFIX = '.partial-'

function isRecord(value: unknown): value is SnapshotRecord {
  const record = value as Partial<SnapshotRecord> | null
  return (
    typeof record === 'object' &&
    record !== null &&
    typeof record.templateId === 'string' &&
    /^[a-z0-9]{1,64}$/.test(record.templateId) &&
    typeof record.tag === 'string' &&
    typeof record.team === 'string' &&
    typeof record.file === 'string' &&
    /^[a-z0-9._-]{1,128}$/.test(record.file) &&
    (record.kind === 'content' || record.kind === 'image' || record.kind === 'tree') &&
    typeof record.bytes === 'number' &&
    typeof record.createdAt === 'number' &&
    typeof record.baseTemplateId === 'string' &&
    typeof record.sourceSandboxId === 'string' &&
    typeof record.envVars === 'object' &&
    record.envVars !== null
  )
}

export class SnapshotStore {
  /** `stateDir/snapshots`. */
  readonly directory: string
  readonly #index: string
  readonly #logger: (line: string) => void
  #records: SnapshotRecord[] = []
  #queue: Promise<unknown> = Promise.resolve()
  /** The files' content of `content` snapshots. */
  readonly content: ContentStore
  /** The manifest of each kept `content` record. */
  readonly #manifests = new Map<SnapshotRecord, Manifest>()
  /** Bytes each kept `content` record's manifest file takes. */
  readonly #manifestBytes = new Map<SnapshotRecord, number>()
  /** Per team: blob → how many of its kept snapshots name it, and the bytes those blobs take (once each). */
  readonly #teamBlobs = new Map<string, { counts: Map<string, number>; bytes: number }>()

  constructor(stateDir: string, logger: (line: string) => void) {
    this.directory = join(stateDir, 'snapshots')
    this.#index = join(this.directory, 'index.json')
    this.#logger = logger
    this.content = new ContentStore(this.directory, logger)
  }

  /** Reads the index (made private if it was not), drops entries whose copy is gone, removes partial copies. */
  load(): void {
    mkdirSync(this.directory, { recursive: true, mode: 0o700 })
    chmodSync(this.directory, 0o700)
    for (const name of readdirSync(this.directory)) {
      if (name.startsWith(PARTIAL_PREFIX)) removeTree(join(this.directory, name))
    }
    this.#records = []
    this.#manifests.clear()
    this.#manifestBytes.clear()
    this.#teamBlobs.clear()
    if (!existsSync(this.#index)) {
      this.content.load([])
      return
    }
    let entries: unknown
    try {
      entries = (JSON.parse(readFileSync(this.#index, 'utf8')) as { snapshots?: unknown }).snapshots
    } catch (error) {
      const aside = `${this.#index}.unreadable-${Date.now()}`
      renameSync(this.#index, aside)
      this.#logger(
        `[sandkeep-local-e2b] snapshot index ${this.#index} is unreadable (${String(error)}); moved to ${aside}`,
      )
      return
    }
    for (const entry of Array.isArray(entries) ? entries : []) {
      if (isRecord(entry) && existsSync(this.pathOf(entry))) this.#records.push(entry)
      else this.#logger('[sandkeep-local-e2b] a snapshot index entry has no usable copy; dropped')
    }
    const contentRecords = this.#records.filter((record) => record.kind === 'content')
    const { manifests, broken } = this.content.load(contentRecords.map((record) => record.file))
    for (const record of contentRecords) {
      const manifest = manifests.get(record.file)
      if (!manifest || broken.has(record.file)) {
        this.#logger(
          `[sandkeep-local-e2b] snapshot ${snapshotIdOf(record)} has a missing or cut-short file; dropped`,
        )
        this.#records = this.#records.filter((other) => other !== record)
        continue
      }
      this.#account(record, manifest, lstatSync(this.pathOf(record)).blocks * 512)
    }
    this.save()
  }

  /** Counts a kept `content` record in its team's usage. */
  #account(record: SnapshotRecord, manifest: Manifest, manifestBytes: number): void {
    this.#manifests.set(record, manifest)
    this.#manifestBytes.set(record, manifestBytes)
    let team = this.#teamBlobs.get(record.team)
    if (!team) {
      team = { counts: new Map(), bytes: 0 }
      this.#teamBlobs.set(record.team, team)
    }
    for (const blob of ContentStore.blobsOf(manifest)) {
      const count = team.counts.get(blob) ?? 0
      if (count === 0) team.bytes += this.content.blobBytes(blob)
      team.counts.set(blob, count + 1)
    }
  }

  /** Takes a `content` record out of its team's usage. */
  #unaccount(record: SnapshotRecord): Manifest | undefined {
    const manifest = this.#manifests.get(record)
    if (!manifest) return undefined
    this.#manifests.delete(record)
    this.#manifestBytes.delete(record)
    const team = this.#teamBlobs.get(record.team)
    if (team) {
      for (const blob of ContentStore.blobsOf(manifest)) {
        const count = (team.counts.get(blob) ?? 0) - 1
        if (count > 0) team.counts.set(blob, count)
        else {
          team.counts.delete(blob)
          team.bytes -= this.content.blobBytes(blob)
        }
      }
    }
    return manifest
  }

  /** The manifest of a kept `content` record. */
  manifestOf(record: SnapshotRecord): Manifest | undefined {
    return this.#manifests.get(record)
  }

  /** The newest kept `content` manifest taken from `sandboxId` (what its previous capture saw). */
  latestManifestOf(sandboxId: string): Manifest | undefined {
    let latest: SnapshotRecord | undefined
    for (const record of this.#manifests.keys()) {
      if (record.sourceSandboxId === sandboxId && (!latest || record.createdAt > latest.createdAt))
        latest = record
    }
    return latest && this.#manifests.get(latest)
  }

  /** Bytes a snapshot of `team` with `manifest` would add: the blobs none of its kept snapshots names. */
  addedBytes(team: string, manifest: Manifest): number {
    const counts = this.#teamBlobs.get(team)?.counts
    let bytes = 0
    for (const blob of ContentStore.blobsOf(manifest))
      if (!counts?.has(blob)) bytes += this.content.blobBytes(blob)
    return bytes
  }

  /** Runs changes of the store one at a time (a copy out of it never races a delete). */
  serialize<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(task, task)
    this.#queue = result.catch(() => {})
    return result
  }

  /** Where a record's copy (or manifest) is. */
  pathOf(record: SnapshotRecord): string {
    return record.kind === 'content'
      ? this.content.manifestPath(record.file)
      : join(this.directory, record.file)
  }

  /** A fresh path under snapshots/ for a copy in progress (removed at the next load if never committed). */
  partialPath(): string {
    return join(this.directory, `${PARTIAL_PREFIX}${randomBytes(8).toString('hex')}`)
  }

  /** The team's snapshots, newest first. */
  list(team: string): SnapshotRecord[] {
    return this.#records
      .filter((record) => record.team === team)
      .sort((a, b) => b.createdAt - a.createdAt || a.templateId.localeCompare(b.templateId))
  }

  /** The team's build that `reference` names (a reference without a tag means `default`). */
  find(team: string, reference: SnapshotReference): SnapshotRecord | undefined {
    const wanted = { identifier: reference.identifier, tag: reference.tag ?? DEFAULT_TAG }
    return this.#records.find((record) => record.team === team && matchesReference(record, wanted))
  }

  /** Every build of the team's template named `identifier`. */
  template(team: string, identifier: string): SnapshotRecord[] {
    return this.#records.filter((record) => record.team === team && namesTemplate(record, identifier))
  }

  /** True while `record` is still kept. */
  holds(record: SnapshotRecord): boolean {
    return this.#records.includes(record)
  }

  /**
   * How many snapshots the team keeps and the bytes they take (a blob several of them share counted once),
   * leaving out the build `replacing` replaces.
   */
  usage(team: string, replacing?: SnapshotRecord): { count: number; bytes: number } {
    let count = 0
    let bytes = this.#teamBlobs.get(team)?.bytes ?? 0
    for (const record of this.#records) {
      if (record.team !== team || record === replacing) continue
      count++
      bytes += record.kind === 'content' ? (this.#manifestBytes.get(record) ?? 0) : record.bytes
    }
    const replaced = replacing && this.#manifests.get(replacing)
    if (replaced) {
      // What only the replaced build holds is freed with it.
      const counts = this.#teamBlobs.get(team)?.counts
      for (const blob of ContentStore.blobsOf(replaced))
        if (counts?.get(blob) === 1) bytes -= this.content.blobBytes(blob)
    }
    return { count, bytes }
  }

  /**
   * Keeps `record`, whose copy is at `partial`; a build with the same template and tag is replaced and its
   * copy deleted. Caller holds the store's lock.
   */
  commit(record: SnapshotRecord, partial: string): void {
    renameSync(partial, this.pathOf(record))
    this.#keep(record)
  }

  /**
   * Keeps the `content` record whose manifest (`manifest`, written at its path, `manifestBytes` on disk) and
   * blobs are in place; as {@link commit} otherwise. Caller holds the store's lock.
   */
  commitContent(record: SnapshotRecord, manifest: Manifest, manifestBytes: number): void {
    this.content.keep(manifest)
    this.#account(record, manifest, manifestBytes)
    this.#keep(record)
  }

  #keep(record: SnapshotRecord): void {
    const replaced = this.#records.find(
      (other) =>
        other.team === record.team && other.templateId === record.templateId && other.tag === record.tag,
    )
    this.#records = this.#records.filter((other) => other !== replaced)
    this.#records.push(record)
    this.save()
    if (replaced) this.#deleteFiles(replaced)
  }

  /** Forgets the records and deletes their copies (their disk space is freed). Caller holds the lock. */
  remove(records: SnapshotRecord[]): void {
    this.#records = this.#records.filter((record) => !records.includes(record))
    this.save()
    for (const record of records) this.#deleteFiles(record)
  }

  /** Deletes a forgotten record's copy, or its manifest and the blobs nothing else holds. */
  #deleteFiles(record: SnapshotRecord): void {
    const manifest = this.#unaccount(record)
    if (record.kind !== 'content') removeTree(this.pathOf(record))
    else if (manifest) this.content.drop(record.file, manifest)
  }

  /** Writes the index whole through a private temp file and a rename. */
  save(): void {
    const temp = `${this.#index}.${process.pid}.tmp`
    writeFileSync(temp, JSON.stringify({ version: 1, snapshots: this.#records }), { mode: 0o600 })
    chmodSync(temp, 0o600)
    renameSync(temp, this.#index)
  }
}
