// envd's filesystem.Filesystem service: Stat, ListDir, MakeDir, Move, Remove, WatchDir (the plain `/files`
// endpoints are envd-files.ts). Every path is walked race-free by SandboxFs (no check-then-open by name:
// sandbox code may swap a component for a symlink at any time).
import { type Stats, watch } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { posix } from 'node:path'
import { ConnectError, decodeEnvelopes, openServerStream, parseJson, writeUnary } from './connect-protocol.js'
import { authorizationUser, sandboxUserOf, UnknownUserError } from './envd-user.js'
import { readMetadata } from './file-metadata.js'
import { normalizeSandboxPath, PathEscapeError } from './paths.js'
import type { Sandbox } from './sandbox.js'
import { isUploadTemp, type SandboxFs, SandboxFsError } from './sandbox-fs.js'
import type { UploadNote } from './upload-notes.js'

/** Maps a path or filesystem failure to the RPC error the SDK expects. */
function rpcError(error: unknown, path: unknown): unknown {
  if (error instanceof PathEscapeError) return new ConnectError('invalid_argument', error.message)
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  if (code === 'ENOENT') return new ConnectError('not_found', `path '${path}' does not exist`)
  if (code === 'EEXIST') return new ConnectError('already_exists', `path '${path}' already exists`)
  if (
    code === 'ENOTDIR' ||
    code === 'EISDIR' ||
    code === 'ELOOP' ||
    code === 'EINVAL' ||
    code === 'ENOTEMPTY'
  )
    return new ConnectError(
      'invalid_argument',
      error instanceof SandboxFsError ? error.message : `${code} on '${path}'`,
    )
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return new ConnectError('resource_exhausted', `no space left for '${path}'`)
  return error
}

function pathArgument(path: unknown): string {
  if (typeof path !== 'string') throw new ConnectError('invalid_argument', 'path must be a string')
  return path
}

function permissions(stats: Stats): string {
  const type = stats.isDirectory() ? 'd' : stats.isSymbolicLink() ? 'L' : '-'
  const bits = 'rwxrwxrwx'
  let text = type
  for (let index = 0; index < 9; index++) text += stats.mode & (1 << (8 - index)) ? bits[index] : '-'
  return text
}

function fileType(stats: Stats): string {
  if (stats.isDirectory()) return 'FILE_TYPE_DIRECTORY'
  if (stats.isSymbolicLink()) return 'FILE_TYPE_SYMLINK'
  return 'FILE_TYPE_FILE'
}

/**
 * The absolute path a symlink at `sandboxPath` resolves to, as envd reports it (Go's filepath.EvalSymlinks:
 * every link of the path followed; the link's own path when that fails, e.g. a dangling link). Links are
 * followed inside the sandbox's writable tree; a target outside it is given as its normalized path.
 */
async function symlinkTargetOf(
  fs: SandboxFs,
  sandboxPath: string,
  readLink: () => Promise<string>,
): Promise<string> {
  try {
    const located = await fs.locate(sandboxPath, { followLast: true })
    try {
      await fs.lstat(located)
      return located.path
    } finally {
      await located.dir.close()
    }
  } catch (error) {
    if (!(error instanceof PathEscapeError)) return sandboxPath
    try {
      const text = await readLink()
      return normalizeSandboxPath(text.startsWith('/') ? text : posix.join(posix.dirname(sandboxPath), text))
    } catch {
      return sandboxPath
    }
  }
}

/**
 * Builds an EntryInfo from the lstat of an entry shown at `sandboxPath`; a symlink is reported with the
 * stats of its target when that resolves inside the sandbox's writable tree (else with its own).
 */
async function entryFromStats(
  fs: SandboxFs,
  sandboxPath: string,
  linkStats: Stats,
  readLink: () => Promise<string>,
  readMetadataOf: () => Promise<Record<string, string> | undefined>,
): Promise<Record<string, unknown>> {
  let stats = linkStats
  let symlinkTarget: string | undefined
  if (linkStats.isSymbolicLink()) {
    symlinkTarget = await symlinkTargetOf(fs, sandboxPath, readLink)
    stats = (await fs.statFollowing(sandboxPath)) ?? linkStats
  }
  const info: Record<string, unknown> = {
    name: posix.basename(sandboxPath),
    type: fileType(stats),
    path: sandboxPath,
    size: String(stats.size),
    mode: stats.mode & 0o777,
    permissions: permissions(stats),
    owner: 'user',
    group: 'user',
    modifiedTime: stats.mtime.toISOString(),
  }
  if (symlinkTarget !== undefined) info.symlinkTarget = symlinkTarget
  const metadata = linkStats.isSymbolicLink() ? undefined : await readMetadataOf()
  if (metadata) info.metadata = metadata
  return info
}

/** EntryInfo of a sandbox path (the entry itself, walked race-free). */
async function entryInfo(fs: SandboxFs, path: string): Promise<Record<string, unknown>> {
  const shown = fs.normalize(path)
  const located = await fs.locate(shown, { followLast: false })
  try {
    const stats = await fs.lstat(located)
    return await entryFromStats(
      fs,
      shown,
      stats,
      () => fs.readlink(located),
      () => readMetadata(located.dir, located.name),
    )
  } finally {
    await located.dir.close()
  }
}

async function listDir(
  fs: SandboxFs,
  handle: FileHandle,
  sandboxPath: string,
  depth: number,
  out: Record<string, unknown>[],
) {
  const names = await fs.readdir(handle)
  names.sort()
  for (const name of names) {
    const child = `${sandboxPath === '/' ? '' : sandboxPath}/${name}`
    let info: Record<string, unknown>
    try {
      const stats = await fs.lstatIn(handle, name)
      info = await entryFromStats(
        fs,
        child,
        stats,
        () => fs.readlink({ dir: handle, name, path: child }),
        () => readMetadata(handle, name),
      )
    } catch {
      continue
    }
    out.push(info)
    if (depth > 1 && info.type === 'FILE_TYPE_DIRECTORY' && info.symlinkTarget === undefined) {
      const sub = await fs.openChildDirectory(handle, name)
      if (!sub) continue
      try {
        await listDir(fs, sub, child, depth - 1, out)
      } finally {
        await sub.close()
      }
    }
  }
}

/** Serves `/filesystem.Filesystem/<method>`. */
export async function handleFilesystemRpc(
  method: string,
  sandbox: Sandbox,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
): Promise<void> {
  let fs: SandboxFs
  try {
    fs = sandbox.fsAs(sandboxUserOf(authorizationUser(request), sandbox.runtime.defaultUser))
  } catch (error) {
    if (error instanceof UnknownUserError) throw new ConnectError('unauthenticated', error.message)
    throw error
  }
  if (method === 'WatchDir') return watchDir(sandbox, fs, request, response, body)
  const message = (parseJson(body) ?? {}) as Record<string, unknown>
  try {
    writeUnary(response, await unaryCall(method, fs, message))
  } catch (error) {
    throw rpcError(error, message.path)
  }
}

/** The unary methods: their answer message. */
async function unaryCall(method: string, fs: SandboxFs, message: Record<string, unknown>): Promise<unknown> {
  const path = () => pathArgument(message.path)
  switch (method) {
    case 'Stat':
      return { entry: await entryInfo(fs, path()) }
    case 'ListDir': {
      const depth = typeof message.depth === 'number' && message.depth > 0 ? Math.min(message.depth, 64) : 1
      const opened = await fs.openDirectory(path())
      try {
        const entries: Record<string, unknown>[] = []
        await listDir(fs, opened.handle, fs.normalize(path()), depth, entries)
        return { entries }
      } finally {
        await opened.handle.close()
      }
    }
    case 'MakeDir':
      await fs.makeDir(path())
      return { entry: await entryInfo(fs, path()) }
    case 'Move': {
      const source = pathArgument(message.source)
      const destination = pathArgument(message.destination)
      try {
        await fs.move(source, destination)
      } catch (error) {
        throw rpcError(error, (error as NodeJS.ErrnoException).code === 'ENOENT' ? source : destination)
      }
      return { entry: await entryInfo(fs, destination) }
    }
    case 'Remove':
      await fs.remove(path())
      return {}
    default:
      throw new ConnectError('unimplemented', `filesystem.Filesystem/${method} is not supported`)
  }
}

/** WatchDir: a server stream of the directory's events, until the client goes away. */
async function watchDir(
  sandbox: Sandbox,
  fs: SandboxFs,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
): Promise<void> {
  const [message] = decodeEnvelopes(body)
  const watchRequest = (message ?? {}) as { path?: unknown; recursive?: unknown; includeEntry?: unknown }
  const path = pathArgument(watchRequest.path)
  // The watch is set on the directory held by fd, so a later swap of the path cannot retarget it.
  const opened = await fs.openDirectory(path).catch((error) => {
    throw rpcError(error, path)
  })
  const shown = fs.normalize(path)
  let watcher: ReturnType<typeof watch>
  try {
    watcher = watch(fs.pathOf(opened.handle), { recursive: watchRequest.recursive === true })
  } catch (error) {
    await opened.handle.close()
    throw error
  }
  const stream = openServerStream(response)
  // Uploads this watch has already reported (each is reported once, even if the rename shows twice).
  const reported = new WeakSet<UploadNote>()
  watcher.on('change', (eventType, filename) => {
    if (!filename) return
    const name = filename.toString()
    // The host's own upload temp files are not the sandbox's: their rename is the upload's write.
    if (isUploadTemp(posix.basename(name))) return
    const upload = eventType === 'rename' ? sandbox.uploads.find(`${opened.path}/${name}`) : undefined
    if (upload && reported.has(upload)) return
    if (upload) reported.add(upload)
    void entryInfo(fs, `${shown}/${name}`).then(
      (entry) => {
        const types = upload
          ? [...(upload.existed ? [] : ['EVENT_TYPE_CREATE']), 'EVENT_TYPE_WRITE']
          : [eventType === 'rename' ? 'EVENT_TYPE_CREATE' : 'EVENT_TYPE_WRITE']
        for (const type of types) {
          const event: Record<string, unknown> = { name, type }
          if (watchRequest.includeEntry === true) event.entry = entry
          stream.send({ filesystem: event })
        }
      },
      () => stream.send({ filesystem: { name, type: 'EVENT_TYPE_REMOVE' } }),
    )
  })
  watcher.on('error', () => stream.end(new ConnectError('internal', 'watcher failed')))
  const interval = Number(request.headers['keepalive-ping-interval'])
  const keepalive =
    Number.isFinite(interval) && interval > 0
      ? setInterval(() => stream.send({ keepalive: {} }), interval * 1000)
      : undefined
  keepalive?.unref()
  stream.onClose(() => {
    watcher.close()
    void opened.handle.close().catch(() => {})
    if (keepalive) clearInterval(keepalive)
  })
  stream.send({ start: {} })
}
