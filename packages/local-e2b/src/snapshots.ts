// E2B's snapshot and fork routes: `POST /sandboxes/{id}/snapshots`, `GET /snapshots`, `DELETE /templates/{id}`
// (how the SDK deletes a snapshot) and `POST /sandboxes/{id}/fork`, plus what create needs to start a sandbox
// from a snapshot. A snapshot of a running sandbox is taken as E2B takes one: the sandbox is frozen (its
// processes, then its filesystem, so the copy is consistent and holds what is still in the page cache), its
// disk is copied, and it goes on running. Memory is not kept (this kernel has no working process
// checkpointing), so a sandbox made from a snapshot, or a fork, boots cold with the files. With content storage
// (the default) the frozen sandbox's files are read through its mounted disk and only what changed since its
// previous capture is read and kept anew (content-store.ts); a sandbox made from it gets the files written
// into a fresh disk (its image is made from them, `mkfs.ext4 -d`).
import { execFile, execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, renameSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { type Capture, type Manifest, removeTree } from './content-store.js'
import type { HostEventLog } from './events.js'
import { HttpError, type Json, readJson, safeDecode, sendJson, timeoutSeconds } from './http.js'
import type { ResolvedOptions } from './options.js'
import { newSandboxId, type SandboxRegistry } from './registry.js'
import { diskImageOf, isMountPoint } from './runtime/disk-image.js'
import { filesRangeOf, newToken, type Sandbox, type SandboxRecord, SNAPSHOT_METADATA_KEY } from './sandbox.js'
import { sandboxJson } from './sandbox-json.js'
import {
  allocatedBytes,
  copySparse,
  copyTree,
  DEFAULT_TAG,
  matchesReference,
  newTemplateId,
  parseSnapshotReference,
  SNAPSHOT_NAMESPACE,
  type SnapshotRecord,
  type SnapshotStore,
  snapshotIdOf,
  snapshotNamesOf,
} from './snapshot-store.js'

const run = promisify(execFile)

/** The answer to a snapshot past the team's quota: 507 Insufficient Storage, which no client retries as a rate limit. */
export const SNAPSHOT_QUOTA_STATUS = 507
/** E2B's bound on one fork request. */
const MAX_FORK_COUNT = 100
/** E2B's timeout of a fork whose request gives none (the API's default sandbox timeout, in seconds). */
const FORK_DEFAULT_TIMEOUT_SECONDS = 15
/** E2B's page size of the snapshot list, and its most. */
const LIST_LIMIT = 100

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
const TAG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

export interface SnapshotServiceOptions {
  settings: ResolvedOptions
  stateDir: string
  /** The team of the host's API key: snapshots of any other team are not found. */
  team: string
  events: HostEventLog
  registry: SandboxRegistry
  store: SnapshotStore
  /** Boots and registers a new sandbox of `record` after `prepareDisk` placed its files (429 past the limit). */
  startSandbox: (record: SandboxRecord, prepareDisk: () => Promise<void>) => Promise<Sandbox>
  /** Answers a snapshot request with an injected fault when one is due (`faults.failNext('snapshot')`); true then. */
  applyFault: (sandboxId: string, response: ServerResponse) => Promise<boolean>
  /** True when the sandbox of `record` will boot on a disk image (its files then go in as the image's seed). */
  usesDiskImage: (record: SandboxRecord) => boolean
}

/** A disk copied out of a sandbox: a whole copy at the destination, or a capture of its content. */
type CapturedDisk =
  | { kind: 'image' | 'tree'; frozenMs: number }
  | { kind: 'content'; frozenMs: number; capture: Capture }

/** The name a snapshot request gives: `[local/]name[:tag]`; 400 for anything else. */
function parseSnapshotName(value: unknown): { alias: string; tag: string } | undefined {
  if (value === undefined || value === null || value === '') return undefined
  if (typeof value !== 'string') throw new HttpError(400, 'name must be a string')
  const { identifier, tag } = parseSnapshotReference(value)
  const slash = identifier.indexOf('/')
  const namespace = slash === -1 ? undefined : identifier.slice(0, slash)
  const alias = slash === -1 ? identifier : identifier.slice(slash + 1)
  if (namespace !== undefined && namespace !== SNAPSHOT_NAMESPACE) {
    throw new HttpError(400, `namespace '${namespace}' is not this team's ('${SNAPSHOT_NAMESPACE}')`)
  }
  if (!NAME_PATTERN.test(alias)) {
    throw new HttpError(
      400,
      'Invalid name: a snapshot name is 1-128 letters, digits, dots, dashes or underscores, optionally followed by :tag',
    )
  }
  if (tag !== undefined && !TAG_PATTERN.test(tag)) throw new HttpError(400, `Invalid tag '${tag}'`)
  return { alias, tag: tag ?? DEFAULT_TAG }
}

/** A snapshot id or name, as a create's `templateID` or a delete's path carries it (not a base template). */
function looksLikeSnapshot(templateId: string): boolean {
  return templateId.includes(':') || templateId.includes('/')
}

/** Places a whole-copy disk as the disk of a sandbox not yet booted (its image beside rootDir, or its tree). */
async function placeDisk(
  kind: 'image' | 'tree',
  from: string,
  rootDir: string,
  move: boolean,
): Promise<void> {
  const to = kind === 'image' ? diskImageOf(rootDir) : rootDir
  try {
    if (move) renameSync(from, to)
    else if (kind === 'image') await copySparse(from, to)
    else await copyTree(from, to)
  } catch (error) {
    removeTree(to)
    throw error
  }
}

/**
 * Checks a copied image and marks it clean (the copy of a mounted filesystem says "not clean"; a sandbox
 * booting from it would mount an unchecked filesystem). A machine without e2fsck skips the check.
 */
async function checkImage(image: string): Promise<void> {
  try {
    await run('e2fsck', ['-f', '-p', image], { timeout: 5 * 60_000 })
  } catch (error) {
    const code: unknown = (error as { code?: unknown }).code
    if (code === 'ENOENT') return
    // Exit status 1: errors were corrected; anything else means the copy is not usable.
    if (code === 1) return
    throw new HttpError(500, `the snapshot's disk copy failed its check (e2fsck exit ${String(code)})`)
  }
}

/** The record of a fork: a new sandbox with the source's settings, running `timeoutMs` from now. */
function forkRecord(source: SandboxRecord, stateDir: string, timeoutMs: number): SandboxRecord {
  const sandboxId = newSandboxId()
  const now = Date.now()
  // The process list a `processes`-mode pause recorded is the source's own, not something a fork restarts.
  const { [SNAPSHOT_METADATA_KEY]: _recorded, ...metadata } = source.metadata
  const record: SandboxRecord = {
    sandboxId,
    templateId: source.templateId,
    envdAccessToken: newToken(),
    metadata,
    envVars: { ...source.envVars },
    startedAt: now,
    endAt: now + timeoutMs,
    state: 'running',
    autoPause: source.autoPause,
    autoPauseMemory: source.autoPauseMemory,
    autoResume: source.autoResume,
    allowInternetAccess: source.allowInternetAccess,
    ...(source.ingress ? { ingress: { ...source.ingress } } : {}),
    rootDir: join(stateDir, 'sandboxes', sandboxId),
    memoryLost: false,
    pauses: [],
  }
  if (source.baseTemplateId) record.baseTemplateId = source.baseTemplateId
  if (source.alias) record.alias = source.alias
  // The copied files carry the source's host ids; the fork's first boot gives them to its own range.
  record.rebaseFrom = filesRangeOf(source)
  return record
}

/**
 * A host that died while copying a disk leaves that sandbox's filesystem frozen, and the next boot of the
 * sandbox would hang on it: let go of every sandbox disk still mounted when a host starts.
 */
export function unfreezeLeftoverDisks(registry: SandboxRegistry): void {
  for (const sandbox of registry.values()) {
    const rootDir = sandbox.record.rootDir
    if (!existsSync(diskImageOf(rootDir)) || !isMountPoint(rootDir)) continue
    try {
      execFileSync('fsfreeze', ['--unfreeze', rootDir], { stdio: 'ignore', timeout: 10_000 })
    } catch {
      // Not frozen (the usual case): fsfreeze says so and nothing is to be done.
    }
  }
}

export class SnapshotService {
  readonly #options: SnapshotServiceOptions
  /** Disk copies in progress (each holds a sandbox frozen until it ends). */
  readonly #copies = new Set<Promise<unknown>>()
  /** Sandbox id → the snapshot files its first boot writes into its fresh disk image. */
  readonly #pendingFiles = new Map<string, { manifest: Manifest; release: () => void; snapshotId?: string }>()

  constructor(options: SnapshotServiceOptions) {
    this.#options = options
  }

  /** Resolves once no disk copy is in progress, so that a closing host never unmounts a frozen disk. */
  async idle(): Promise<void> {
    while (this.#copies.size > 0) await Promise.allSettled([...this.#copies])
  }

  /**
   * Serves `GET /snapshots`, `DELETE /templates/{id}`, `POST /sandboxes/{id}/snapshots` and
   * `POST /sandboxes/{id}/fork` (`path` without the `v2` prefix); false for any other route.
   */
  async handle(
    method: string,
    path: string[],
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
  ): Promise<boolean> {
    const [resource, id, action] = path
    if (resource === 'snapshots' && path.length === 1 && method === 'GET') {
      this.#list(url, response)
      return true
    }
    if (resource === 'templates' && path.length === 2 && id !== undefined && method === 'DELETE') {
      await this.#delete(safeDecode(id), response)
      return true
    }
    if (resource !== 'sandboxes' || path.length !== 3 || method !== 'POST' || id === undefined) return false
    if (action === 'snapshots') {
      const body = await readJson(request)
      if (!(await this.#options.applyFault(id, response))) await this.#create(id, body, response)
      return true
    }
    if (action === 'fork') {
      await this.#fork(id, await readJson(request), response)
      return true
    }
    return false
  }

  /**
   * The snapshot a create's `templateID` names, or undefined when it names none. An id or name of the snapshot
   * form (`…:tag`, `namespace/…`) that no snapshot of this team has is E2B's 404.
   */
  resolve(templateId: string): SnapshotRecord | undefined {
    const { store, team } = this.#options
    const snapshot = store.find(team, parseSnapshotReference(templateId))
    if (!snapshot && looksLikeSnapshot(templateId))
      throw new HttpError(404, `template '${templateId}' not found`)
    return snapshot
  }

  /**
   * Fills the record of a sandbox to create from `snapshot`: its template, base template and environment
   * (the create's own variables win), and returns what places the snapshot's disk before the first boot.
   */
  prepareFromSnapshot(snapshot: SnapshotRecord, record: SandboxRecord): () => Promise<void> {
    record.templateId = snapshot.templateId
    record.baseTemplateId = snapshot.baseTemplateId
    record.envVars = { ...snapshot.envVars, ...record.envVars }
    if (snapshot.alias) record.alias = snapshot.alias
    record.rebaseFrom = snapshot.filesRange ?? 'legacy'
    const { store, events } = this.#options
    return () =>
      store.serialize(async () => {
        // Deleted between the create's lookup and now: the same answer as if it had never been there.
        if (!store.holds(snapshot)) throw new HttpError(404, `template '${snapshotIdOf(snapshot)}' not found`)
        const started = performance.now()
        mkdirSync(join(record.rootDir, '..'), { recursive: true })
        if (snapshot.kind === 'content') {
          const manifest = store.manifestOf(snapshot)
          if (!manifest) throw new HttpError(404, `template '${snapshotIdOf(snapshot)}' not found`)
          // Recorded by whoever writes the files: now, or the first boot (populateDisk).
          this.#writeFiles(record, manifest, snapshotIdOf(snapshot))
          return
        }
        await placeDisk(snapshot.kind, store.pathOf(snapshot), record.rootDir, false)
        events.record('snapshot-restore', record.sandboxId, {
          snapshotId: snapshotIdOf(snapshot),
          copyMs: performance.now() - started,
          bytes: snapshot.bytes,
        })
      })
  }

  /**
   * Writes a captured disk's files for a sandbox not yet booted: its directory now when it runs without a disk
   * image, or into its fresh image once its first boot mounted it ({@link populateDisk}).
   */
  #writeFiles(record: SandboxRecord, manifest: Manifest, snapshotId?: string): void {
    const { store } = this.#options
    if (this.#options.usesDiskImage(record)) {
      // Its blobs are held until the boot wrote them (a delete meanwhile frees nothing they need). A boot that
      // fails before its disk was mounted leaves them held until the host restarts.
      this.#pendingFiles.set(record.sandboxId, {
        manifest,
        release: store.content.hold(manifest),
        ...(snapshotId ? { snapshotId } : {}),
      })
      return
    }
    try {
      this.#materialize(record.sandboxId, manifest, record.rootDir, snapshotId)
    } catch (error) {
      removeTree(record.rootDir)
      throw new HttpError(500, `could not write the snapshot's files: ${(error as Error).message}`)
    }
  }

  #materialize(sandboxId: string, manifest: Manifest, destination: string, snapshotId?: string): void {
    const started = performance.now()
    this.#options.store.content.materialize(manifest, destination)
    if (snapshotId) {
      this.#options.events.record('snapshot-restore', sandboxId, {
        snapshotId,
        copyMs: performance.now() - started,
        bytes: manifest.contentBytes,
      })
    }
  }

  /**
   * Called by a sandbox's boot once its disk is mounted: writes the snapshot files it was made from, the first
   * time only. Throws (and the boot fails) when they cannot be written.
   */
  populateDisk(sandboxId: string, rootDir: string): void {
    const pending = this.#pendingFiles.get(sandboxId)
    if (!pending) return
    this.#pendingFiles.delete(sandboxId)
    try {
      this.#materialize(sandboxId, pending.manifest, rootDir, pending.snapshotId)
    } finally {
      pending.release()
    }
  }

  /** Runs `task` under the sandbox's lock once it still runs: 404 when gone, 409 while paused (as E2B). */
  async #withRunning(
    sandboxId: string,
    doing: string,
    task: (sandbox: Sandbox) => Promise<void>,
  ): Promise<void> {
    const { registry } = this.#options
    const sandbox = registry.lookup(sandboxId)
    await sandbox.serialize(async () => {
      if (!registry.holds(sandbox)) throw new HttpError(404, `sandbox ${sandboxId} not found`)
      if (sandbox.record.state !== 'running') {
        throw new HttpError(409, `Sandbox '${sandboxId}' is paused and cannot be ${doing}; resume it first`)
      }
      await task(sandbox)
    })
  }

  /**
   * Copies the sandbox's disk to `destination` while it stands still: its processes frozen first (a frozen
   * process is never inside a write), then its filesystem (flushed and held consistent for the copy), and
   * both let go again however the copy ends.
   */
  #capture(sandbox: Sandbox, destination: string): Promise<CapturedDisk> {
    const copy = this.#copy(sandbox, destination)
    this.#copies.add(copy)
    return copy.finally(() => this.#copies.delete(copy))
  }

  async #copy(sandbox: Sandbox, destination: string): Promise<CapturedDisk> {
    const rootDir = sandbox.record.rootDir
    const image = diskImageOf(rootDir)
    const mounted = existsSync(image) && isMountPoint(rootDir)
    const started = performance.now()
    const { store, settings } = this.#options
    // An image that is not mounted cannot be read file by file: it is copied whole.
    const byContent = settings.snapshotStorage === 'content' && (mounted || !existsSync(image))
    if (byContent) {
      const previous = store.latestManifestOf(sandbox.id)
      if (previous) store.content.recall(sandbox.id, previous)
    }
    await sandbox.runtime.freeze()
    let filesystemFrozen = false
    try {
      if (byContent) {
        // Frozen processes are never inside a write, and the files are read through the mounted filesystem
        // (page cache included): no filesystem freeze is needed.
        const capture = store.content.capture(rootDir, sandbox.id, mounted ? ['lost+found'] : [])
        if (capture.errors.length > 0) {
          settings.logger(
            `[sandkeep-local-e2b] snapshot of sandbox ${sandbox.id}: ${capture.errors.length} entries could not be read (first: ${capture.errors[0]?.message.slice(0, 200)})`,
          )
        }
        return { kind: 'content', frozenMs: performance.now() - started, capture }
      }
      if (existsSync(image)) {
        if (mounted) {
          await run('fsfreeze', ['--freeze', rootDir], { timeout: 60_000 })
          filesystemFrozen = true
        }
        await copySparse(image, destination)
        return { kind: 'image', frozenMs: performance.now() - started }
      }
      await copyTree(rootDir, destination)
      // The copy keeps the modes inside (the sandbox's own); its top is private like every snapshot file.
      chmodSync(destination, 0o700)
      return { kind: 'tree', frozenMs: performance.now() - started }
    } catch (error) {
      removeTree(destination)
      throw error
    } finally {
      if (filesystemFrozen) {
        await run('fsfreeze', ['--unfreeze', rootDir], { timeout: 60_000 }).catch((error: unknown) =>
          this.#options.settings.logger(
            `[sandkeep-local-e2b] could not unfreeze the disk of sandbox ${sandbox.id}: ${String(error)}`,
          ),
        )
      }
      await sandbox.runtime.thaw()
    }
  }

  /**
   * 507 when one more snapshot of `bytes` would pass the team's count or bytes quota: a full quota is not a
   * rate limit (429 tells clients to retry; this only clears once a snapshot is deleted).
   */
  #checkLimits(bytes: number, replacing: SnapshotRecord | undefined): void {
    const { store, team, settings } = this.#options
    const usage = store.usage(team, replacing)
    if (usage.count >= settings.maxSnapshots) {
      throw new HttpError(
        SNAPSHOT_QUOTA_STATUS,
        `snapshot quota exceeded: this host keeps at most ${settings.maxSnapshots} snapshots for this API key; delete one (Sandbox.deleteSnapshot)`,
      )
    }
    if (usage.bytes + bytes > settings.maxSnapshotBytes) {
      throw new HttpError(
        SNAPSHOT_QUOTA_STATUS,
        `snapshot quota exceeded: this snapshot needs ${bytes} bytes and the kept ones take ${usage.bytes} of at most ${settings.maxSnapshotBytes} for this API key; delete one (Sandbox.deleteSnapshot)`,
      )
    }
  }

  /**
   * `POST /sandboxes/{id}/snapshots {name?}` → 201 `{snapshotID, names, sizeBytes}`. `sizeBytes` (this host's
   * addition; E2B answers without it) is what the snapshot added to the host's disk: with content storage its
   * manifest and the blobs no earlier snapshot of the team stored (a blob shared with earlier snapshots was
   * counted by the one that stored it), else the copy's allocated size. It counts toward `maxSnapshotBytes`.
   */
  async #create(sandboxId: string, body: Json, response: ServerResponse): Promise<void> {
    const { store, team, events } = this.#options
    const name = parseSnapshotName(body.name)
    let created: SnapshotRecord | undefined
    await this.#withRunning(sandboxId, 'snapshotted', async (sandbox) => {
      const existing = name
        ? store.template(team, name.alias).find((record) => record.alias === name.alias)
        : undefined
      const templateId = existing?.templateId ?? newTemplateId()
      const tag = name?.tag ?? DEFAULT_TAG
      const replacing = existing && store.find(team, { identifier: templateId, tag })
      const image = diskImageOf(sandbox.record.rootDir)
      const byContent = this.#options.settings.snapshotStorage === 'content'
      // Checked before copying with what the copy will at most take (content: what is already kept), and
      // again with what it took.
      this.#checkLimits(
        byContent ? 0 : existsSync(image) ? allocatedBytes(image) : allocatedBytes(sandbox.record.rootDir),
        replacing,
      )
      const partial = store.partialPath()
      const started = performance.now()
      const disk = await this.#capture(sandbox, partial)
      const record: SnapshotRecord = {
        templateId,
        tag,
        team,
        sourceSandboxId: sandbox.id,
        baseTemplateId: sandbox.record.baseTemplateId ?? sandbox.record.templateId,
        envVars: { ...sandbox.record.envVars },
        createdAt: Date.now(),
        kind: disk.kind,
        bytes: 0,
        file: `${templateId}-${randomBytes(6).toString('hex')}${disk.kind === 'image' ? '.img' : disk.kind === 'content' ? '.json' : ''}`,
        filesRange: filesRangeOf(sandbox.record),
      }
      if (name) record.alias = name.alias
      if (disk.kind === 'content') {
        const { capture } = disk
        let kept = false
        try {
          const manifestBytes = store.content.writeManifest(record.file, capture.manifest)
          record.contentBytes = capture.manifest.contentBytes
          await store.serialize(async () => {
            const current = store.find(team, { identifier: templateId, tag })
            record.bytes = manifestBytes + store.addedBytes(team, capture.manifest)
            this.#checkLimits(record.bytes, current)
            store.commitContent(record, capture.manifest, manifestBytes)
            kept = true
          })
          store.content.remember(sandbox.id, capture)
        } finally {
          if (!kept) store.content.discardManifest(record.file)
          capture.release()
        }
      } else {
        try {
          if (disk.kind === 'image') await checkImage(partial)
          record.bytes = allocatedBytes(partial)
          await store.serialize(async () => {
            const current = store.find(team, { identifier: templateId, tag })
            this.#checkLimits(record.bytes, current)
            store.commit(record, partial)
          })
        } finally {
          removeTree(partial)
        }
      }
      created = record
      events.record('snapshot-create', sandbox.id, {
        snapshotId: snapshotIdOf(record),
        kind: record.kind,
        bytes: record.bytes,
        frozenMs: disk.frozenMs,
        createMs: performance.now() - started,
        ...(disk.kind === 'content'
          ? { filesRead: disk.capture.filesRead, newBlobs: disk.capture.newBlobs }
          : {}),
      })
    })
    if (!created) throw new HttpError(500, 'the snapshot was not kept')
    sendJson(response, 201, {
      snapshotID: snapshotIdOf(created),
      names: snapshotNamesOf(created),
      sizeBytes: created.bytes,
    })
  }

  /** `GET /snapshots?sandboxID&name&limit&nextToken` → the team's snapshots, newest first, paged. */
  #list(url: URL, response: ServerResponse): void {
    const { store, team } = this.#options
    const params = url.searchParams
    const limitRaw = params.get('limit')
    const limit = limitRaw === null ? LIST_LIMIT : Number(limitRaw)
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT)
      throw new HttpError(400, `limit must be 1-${LIST_LIMIT}`)
    const sandboxId = params.get('sandboxID')
    const name = params.get('name')
    const reference = name ? parseSnapshotReference(name) : undefined
    let matches = store
      .list(team)
      .filter(
        (record) =>
          (!sandboxId || record.sourceSandboxId === sandboxId) &&
          (!reference || matchesReference(record, reference)),
      )
    const token = params.get('nextToken')
    if (token) {
      const after = decodeToken(token)
      const position = matches.findIndex(
        (record) => record.createdAt === after.createdAt && record.file === after.file,
      )
      // A token of a snapshot deleted since: go on from where it would have been.
      matches =
        position >= 0
          ? matches.slice(position + 1)
          : matches.filter((record) => record.createdAt < after.createdAt)
    }
    const page = matches.slice(0, limit)
    const last = page.at(-1)
    const headers: Record<string, string> = {}
    if (matches.length > limit && last) {
      headers['x-next-token'] = Buffer.from(
        JSON.stringify({ createdAt: last.createdAt, file: last.file }),
      ).toString('base64url')
    }
    sendJson(
      response,
      200,
      page.map((record) => ({ snapshotID: snapshotIdOf(record), names: snapshotNamesOf(record) })),
      headers,
    )
  }

  /** `DELETE /templates/{id}`: every build of the team's snapshot template, and its disk. 404 when none. */
  async #delete(reference: string, response: ServerResponse): Promise<void> {
    const { store, team, events } = this.#options
    const { identifier } = parseSnapshotReference(reference)
    await store.serialize(async () => {
      const records = store.template(team, identifier)
      if (records.length === 0) throw new HttpError(404, `template '${reference}' not found`)
      const bytes = records.reduce((sum, record) => sum + record.bytes, 0)
      store.remove(records)
      events.record('snapshot-delete', undefined, { snapshotId: reference, bytes })
    })
    sendJson(response, 204, undefined)
  }

  /**
   * `POST /sandboxes/{id}/fork {timeout?, count?}` → 201 with one `{sandbox}` or `{error}` per fork. The
   * source is frozen once for one copy of its disk, then goes on; every fork boots cold from that copy.
   */
  async #fork(sandboxId: string, body: Json, response: ServerResponse): Promise<void> {
    const { settings, stateDir, store, events, startSandbox } = this.#options
    const count = body.count ?? 1
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 1)
      throw new HttpError(400, 'Count must be at least 1')
    if (count > MAX_FORK_COUNT) throw new HttpError(400, `Count cannot be greater than ${MAX_FORK_COUNT}`)
    // The source holds one of the host's slots, so this many forks could never all run.
    if (count >= settings.maxSandboxes) {
      throw new HttpError(
        400,
        `Count must be lower than the maximum number of concurrent sandboxes (${settings.maxSandboxes})`,
      )
    }
    const timeout = timeoutSeconds(body.timeout)
    if (timeout === 0) throw new HttpError(400, 'Timeout must be greater than 0')
    const timeoutMs = (timeout ?? FORK_DEFAULT_TIMEOUT_SECONDS) * 1000
    const staging = store.partialPath()
    let source: SandboxRecord | undefined
    let disk: CapturedDisk | undefined
    await this.#withRunning(sandboxId, 'forked', async (sandbox) => {
      source = sandbox.record
      disk = await this.#capture(sandbox, staging)
    })
    if (!source || !disk) throw new HttpError(500, 'the fork was not taken')
    const captured = disk
    if (captured.kind === 'content') store.content.remember(sandboxId, captured.capture)
    events.record('sandbox-fork', sandboxId, { count, kind: captured.kind, frozenMs: captured.frozenMs })
    const results: Json[] = []
    try {
      for (let index = 0; index < count; index++) {
        const record = forkRecord(source, stateDir, timeoutMs)
        // The last fork takes a whole copy itself; the others get copies of it.
        const last = index === count - 1
        try {
          const sandbox = await startSandbox(record, async () => {
            if (captured.kind === 'content') {
              const { manifest } = captured.capture
              this.#writeFiles(record, manifest)
            } else await placeDisk(captured.kind, staging, record.rootDir, last)
          })
          results.push({ sandbox: sandboxJson(sandbox, this.#options.settings.domain) })
        } catch (error) {
          const status = error instanceof HttpError ? error.status : 500
          results.push({ error: { code: status, message: (error as Error).message } })
        }
      }
    } finally {
      if (captured.kind === 'content') captured.capture.release()
      removeTree(staging)
    }
    sendJson(response, 201, results)
  }
}

function decodeToken(token: string): { createdAt: number; file: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
      createdAt?: unknown
      file?: unknown
    }
    if (typeof parsed.createdAt === 'number' && typeof parsed.file === 'string')
      return { createdAt: parsed.createdAt, file: parsed.file }
  } catch {}
  throw new HttpError(400, 'Invalid next token')
}
