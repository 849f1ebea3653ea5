// envd's filesystem.Filesystem service (Stat, ListDir, MakeDir, Move, Remove, WatchDir) and the plain
// `/files` download/upload endpoints. Every path goes through resolveSandboxPath, which refuses escapes.
import { createReadStream, type Stats, watch } from 'node:fs'
import { lchown, lstat, mkdir, readdir, readlink, rename, rm, stat, writeFile } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { basename, dirname, join } from 'node:path'
import { createGzip, gunzipSync } from 'node:zlib'
import { ConnectError, decodeEnvelopes, openServerStream, parseJson, writeUnary } from './connect-protocol.js'
import { PathEscapeError, resolveSandboxPath, toSandboxPath } from './paths.js'
import type { Sandbox } from './sandbox.js'

/**
 * Hands what the host just created (`firstCreated` down to `hostPath`) to the sandbox's user, whose
 * processes could not write it otherwise. Interim: the race-free file operations replace this.
 */
async function giveToOwner(
  sandbox: Sandbox,
  hostPath: string,
  firstCreated: string | undefined,
): Promise<void> {
  const owner = sandbox.record.owner
  if (!owner || firstCreated === undefined) return
  for (let path = hostPath; path.length >= firstCreated.length; path = dirname(path)) {
    await lchown(path, owner.uid, owner.gid)
    if (path === firstCreated) break
  }
}

function resolve(sandbox: Sandbox, path: unknown): string {
  if (typeof path !== 'string') throw new ConnectError('invalid_argument', 'path must be a string')
  try {
    return resolveSandboxPath(sandbox.record.rootDir, path)
  } catch (error) {
    if (error instanceof PathEscapeError) throw new ConnectError('invalid_argument', error.message)
    throw error
  }
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

/** Builds an EntryInfo for a host path (the path shown is the sandbox's). */
export async function entryInfo(sandbox: Sandbox, hostPath: string): Promise<Record<string, unknown>> {
  const linkStats = await lstat(hostPath)
  let stats = linkStats
  let symlinkTarget: string | undefined
  if (linkStats.isSymbolicLink()) {
    symlinkTarget = await readlink(hostPath)
    stats = await stat(hostPath).catch(() => linkStats)
  }
  const info: Record<string, unknown> = {
    name: basename(hostPath),
    type: fileType(stats),
    path: toSandboxPath(sandbox.record.rootDir, hostPath),
    size: String(stats.size),
    mode: stats.mode & 0o777,
    permissions: permissions(stats),
    owner: 'user',
    group: 'user',
    modifiedTime: stats.mtime.toISOString(),
  }
  if (symlinkTarget !== undefined) info.symlinkTarget = symlinkTarget
  return info
}

async function statOrNotFound(hostPath: string, sandboxPath: string): Promise<Stats> {
  try {
    return await stat(hostPath)
  } catch {
    throw new ConnectError('not_found', `path '${sandboxPath}' does not exist`)
  }
}

async function listDir(sandbox: Sandbox, hostPath: string, depth: number, out: Record<string, unknown>[]) {
  const names = await readdir(hostPath)
  names.sort()
  for (const name of names) {
    const child = join(hostPath, name)
    let info: Record<string, unknown>
    try {
      info = await entryInfo(sandbox, child)
    } catch {
      continue
    }
    out.push(info)
    if (depth > 1 && info.type === 'FILE_TYPE_DIRECTORY' && info.symlinkTarget === undefined) {
      await listDir(sandbox, child, depth - 1, out)
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
  if (method === 'WatchDir') {
    const [message] = decodeEnvelopes(body)
    const watchRequest = (message ?? {}) as { path?: unknown; recursive?: unknown; includeEntry?: unknown }
    const hostPath = resolve(sandbox, watchRequest.path)
    const stats = await statOrNotFound(hostPath, String(watchRequest.path))
    if (!stats.isDirectory())
      throw new ConnectError('invalid_argument', `path '${watchRequest.path}' is not a directory`)
    const stream = openServerStream(response)
    const watcher = watch(hostPath, { recursive: watchRequest.recursive === true }, (eventType, filename) => {
      if (!filename) return
      const name = filename.toString()
      const target = join(hostPath, name)
      void lstat(target).then(
        async () => {
          const event: Record<string, unknown> = {
            name,
            type: eventType === 'rename' ? 'EVENT_TYPE_CREATE' : 'EVENT_TYPE_WRITE',
          }
          if (watchRequest.includeEntry === true)
            event.entry = await entryInfo(sandbox, target).catch(() => undefined)
          stream.send({ filesystem: event })
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
      if (keepalive) clearInterval(keepalive)
    })
    stream.send({ start: {} })
    return
  }
  const message = (parseJson(body) ?? {}) as Record<string, unknown>
  switch (method) {
    case 'Stat': {
      const hostPath = resolve(sandbox, message.path)
      await statOrNotFound(hostPath, String(message.path))
      writeUnary(response, { entry: await entryInfo(sandbox, hostPath) })
      return
    }
    case 'ListDir': {
      const hostPath = resolve(sandbox, message.path)
      const stats = await statOrNotFound(hostPath, String(message.path))
      if (!stats.isDirectory())
        throw new ConnectError('invalid_argument', `path '${message.path}' is not a directory`)
      const depth = typeof message.depth === 'number' && message.depth > 0 ? Math.min(message.depth, 64) : 1
      const entries: Record<string, unknown>[] = []
      await listDir(sandbox, hostPath, depth, entries)
      writeUnary(response, { entries })
      return
    }
    case 'MakeDir': {
      const hostPath = resolve(sandbox, message.path)
      const existing = await lstat(hostPath).catch(() => undefined)
      if (existing) throw new ConnectError('already_exists', `path '${message.path}' already exists`)
      await giveToOwner(sandbox, hostPath, await mkdir(hostPath, { recursive: true }))
      writeUnary(response, { entry: await entryInfo(sandbox, hostPath) })
      return
    }
    case 'Move': {
      const source = resolve(sandbox, message.source)
      const destination = resolve(sandbox, message.destination)
      await statOrNotFound(source, String(message.source))
      await giveToOwner(sandbox, dirname(destination), await mkdir(dirname(destination), { recursive: true }))
      await rename(source, destination)
      writeUnary(response, { entry: await entryInfo(sandbox, destination) })
      return
    }
    case 'Remove': {
      const hostPath = resolve(sandbox, message.path)
      await lstat(hostPath).catch(() => {
        throw new ConnectError('not_found', `path '${message.path}' does not exist`)
      })
      await rm(hostPath, { recursive: true, force: true })
      writeUnary(response, {})
      return
    }
    default:
      throw new ConnectError('unimplemented', `filesystem.Filesystem/${method} is not supported`)
  }
}

/** An error of the plain HTTP endpoints: `{code, message}` with the HTTP status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

function resolveHttp(sandbox: Sandbox, path: string | null): string {
  if (!path) throw new HttpError(400, 'query parameter path is required')
  try {
    return resolveSandboxPath(sandbox.record.rootDir, path)
  } catch (error) {
    if (error instanceof PathEscapeError) throw new HttpError(400, error.message)
    throw error
  }
}

/** `GET /files?path=`: the raw bytes (gzip when the client asked for it explicitly). */
export async function handleFileDownload(
  sandbox: Sandbox,
  url: URL,
  request: IncomingMessage,
  response: ServerResponse,
) {
  const path = url.searchParams.get('path')
  const hostPath = resolveHttp(sandbox, path)
  const stats = await stat(hostPath).catch(() => undefined)
  if (!stats) throw new HttpError(404, `file '${path}' does not exist`)
  if (stats.isDirectory()) throw new HttpError(400, `path '${path}' is a directory`)
  const gzip = request.headers['accept-encoding'] === 'gzip'
  if (gzip) {
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' })
    createReadStream(hostPath).pipe(createGzip()).pipe(response)
    return
  }
  response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': stats.size })
  if (stats.size === 0) {
    response.end()
    return
  }
  await new Promise<void>((resolvePipe, reject) => {
    const stream = createReadStream(hostPath)
    stream.on('error', reject)
    response.on('finish', () => resolvePipe())
    response.on('close', () => resolvePipe())
    stream.pipe(response)
  })
}

function metadataFromHeaders(request: IncomingMessage): Record<string, string> | undefined {
  const metadata: Record<string, string> = {}
  for (const [key, value] of Object.entries(request.headers)) {
    if (key.startsWith('x-metadata-') && typeof value === 'string')
      metadata[key.slice('x-metadata-'.length)] = value
  }
  return Object.keys(metadata).length > 0 ? metadata : undefined
}

async function writeOne(sandbox: Sandbox, path: string, data: Uint8Array, metadata?: Record<string, string>) {
  const hostPath = resolveHttp(sandbox, path)
  const existing = await stat(hostPath).catch(() => undefined)
  if (existing?.isDirectory()) throw new HttpError(400, `path '${path}' is a directory`)
  await giveToOwner(sandbox, dirname(hostPath), await mkdir(dirname(hostPath), { recursive: true }))
  await writeFile(hostPath, data)
  await giveToOwner(sandbox, hostPath, hostPath)
  const info: Record<string, unknown> = {
    name: basename(hostPath),
    path: toSandboxPath(sandbox.record.rootDir, hostPath),
    type: 'file',
  }
  if (metadata) info.metadata = metadata
  return info
}

/** `POST /files?path=`: multipart (`file` parts named by their path) or a raw octet-stream body. */
export async function handleFileUpload(
  sandbox: Sandbox,
  url: URL,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
) {
  const contentType = request.headers['content-type'] ?? ''
  const queryPath = url.searchParams.get('path')
  const metadata = metadataFromHeaders(request)
  const written: Record<string, unknown>[] = []
  let data = body
  if (request.headers['content-encoding'] === 'gzip') {
    try {
      data = gunzipSync(body)
    } catch {
      throw new HttpError(400, 'body is not valid gzip')
    }
  }
  if (contentType.startsWith('multipart/form-data')) {
    let form: FormData
    try {
      form = await new Response(data, { headers: { 'content-type': contentType } }).formData()
    } catch {
      throw new HttpError(400, 'malformed multipart body')
    }
    const parts = form.getAll('file')
    if (parts.length === 0) throw new HttpError(400, 'multipart body has no file part')
    for (const part of parts) {
      if (typeof part === 'string') throw new HttpError(400, 'file part must be a file')
      const path = (parts.length === 1 && queryPath) || part.name || queryPath
      if (!path) throw new HttpError(400, 'file part has no path')
      written.push(await writeOne(sandbox, path, new Uint8Array(await part.arrayBuffer()), metadata))
    }
  } else {
    if (!queryPath) throw new HttpError(400, 'query parameter path is required')
    written.push(await writeOne(sandbox, queryPath, data, metadata))
  }
  const payload = JSON.stringify(written)
  response.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
  })
  response.end(payload)
}
