// envd's plain file endpoints: `GET /files` (download, gzip on request) and `POST /files` (multipart or
// octet-stream uploads streamed to disk, never buffered whole, under the host's upload caps).
import type { IncomingMessage, ServerResponse } from 'node:http'
import { posix } from 'node:path'
import { PassThrough, Readable, Transform } from 'node:stream'
import { createGunzip, createGzip } from 'node:zlib'
import busboy from 'busboy'
import { sandboxUserOf, UnknownUserError } from './envd-user.js'
import { metadataProblem, writeMetadata } from './file-metadata.js'
import { HttpError } from './http.js'
import { PathEscapeError } from './paths.js'
import type { Sandbox } from './sandbox.js'
import { type SandboxFs, SandboxFsError } from './sandbox-fs.js'

function httpError(error: unknown, path: string | null): unknown {
  if (error instanceof HttpError) return error
  if (error instanceof PathEscapeError) return new HttpError(400, error.message)
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  if (code === 'ENOENT') return new HttpError(404, `file '${path}' does not exist`)
  if (code === 'EISDIR') return new HttpError(400, `path '${path}' is a directory`)
  if (code === 'ENOTDIR' || code === 'ELOOP' || code === 'EINVAL')
    return new HttpError(400, error instanceof SandboxFsError ? error.message : `${code} on '${path}'`)
  if (code === 'ENOSPC' || code === 'EDQUOT') return new HttpError(507, `no space left for '${path}'`)
  return error
}

/** The file operations for the `username` a /files request names (as envd: 401 for a user it lacks). */
function fsOfRequest(sandbox: Sandbox, url: URL): SandboxFs {
  try {
    return sandbox.fsAs(sandboxUserOf(url.searchParams.get('username'), sandbox.runtime.defaultUser))
  } catch (error) {
    if (error instanceof UnknownUserError) throw new HttpError(401, error.message)
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
  if (!path) throw new HttpError(400, 'query parameter path is required')
  const { handle, stats } = await fsOfRequest(sandbox, url)
    .openRead(path)
    .catch((error) => {
      throw httpError(error, path)
    })
  const gzip = request.headers['accept-encoding'] === 'gzip'
  if (gzip) {
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' })
    const stream = handle.createReadStream()
    response.on('close', () => stream.destroy())
    stream.pipe(createGzip()).pipe(response)
    return
  }
  response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': stats.size })
  if (stats.size === 0) {
    await handle.close()
    response.end()
    return
  }
  await new Promise<void>((resolvePipe, reject) => {
    // The length was taken from this fd's fstat; never send more than it announced.
    const stream = handle.createReadStream({ end: stats.size - 1 })
    stream.on('error', reject)
    response.on('finish', () => resolvePipe())
    response.on('close', () => {
      stream.destroy()
      resolvePipe()
    })
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

/** Upload caps shared by every sandbox of one host, so that no upload or tenant takes all of its disk. */
export class UploadLimits {
  #inFlight = 0
  constructor(
    /** Most bytes one upload request may carry (on the wire and after gzip decoding). */
    readonly maxUploadBytes: number,
    /** Most upload bytes in flight across the host at once. */
    readonly maxConcurrentUploadBytes: number,
  ) {}

  /** Bytes of uploads currently reserved. */
  get inFlight(): number {
    return this.#inFlight
  }

  /** Reserves `bytes` of the concurrent budget; false when that would pass it. */
  reserve(bytes: number): boolean {
    if (this.#inFlight + bytes > this.maxConcurrentUploadBytes) return false
    this.#inFlight += bytes
    return true
  }

  release(bytes: number): void {
    this.#inFlight = Math.max(0, this.#inFlight - bytes)
  }
}

function tooLarge(limits: UploadLimits): HttpError {
  return new HttpError(413, `upload is larger than the host's limit of ${limits.maxUploadBytes} bytes`)
}

function busy(limits: UploadLimits): HttpError {
  return new HttpError(
    429,
    `the host already receives ${limits.maxConcurrentUploadBytes} bytes of uploads; retry shortly`,
    { 'retry-after': '1' },
  )
}

/** Counts bytes through and fails past `max`; with `limits`, also reserves concurrent budget as they come. */
function meter(
  max: number,
  onOver: () => HttpError,
  limits?: UploadLimits,
  onReserved?: (n: number) => void,
) {
  let total = 0
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      total += chunk.length
      if (total > max) return callback(onOver())
      if (limits) {
        if (!limits.reserve(chunk.length)) return callback(busy(limits))
        onReserved?.(chunk.length)
      }
      callback(null, chunk)
    },
  })
}

/**
 * `POST /files?path=`: multipart (`file` parts named by their path) or a raw octet-stream body, streamed from
 * the request to disk (never buffered whole), each file into a temp file renamed into place when complete.
 * The request is refused with 413 past `maxUploadBytes` and 429 (Retry-After) past the host's concurrent
 * budget. The body is not consumed yet when this is called.
 */
export async function handleFileUpload(
  sandbox: Sandbox,
  url: URL,
  request: IncomingMessage,
  response: ServerResponse,
  limits: UploadLimits,
) {
  const contentType = request.headers['content-type'] ?? ''
  const queryPath = url.searchParams.get('path')
  const fs = fsOfRequest(sandbox, url)
  const metadata = metadataFromHeaders(request)
  const declared =
    request.headers['content-length'] === undefined ? undefined : Number(request.headers['content-length'])
  try {
    const problem = metadata && metadataProblem(metadata)
    if (problem) throw new HttpError(400, problem)
    if (declared !== undefined && declared > limits.maxUploadBytes) throw tooLarge(limits)
    // A declared length is reserved up front; a chunked body reserves as its bytes arrive.
    let reserved = declared ?? 0
    if (!limits.reserve(reserved)) throw busy(limits)
    try {
      const wire =
        declared === undefined
          ? meter(
              limits.maxUploadBytes,
              () => tooLarge(limits),
              limits,
              (bytes) => {
                reserved += bytes
              },
            )
          : meter(limits.maxUploadBytes, () => tooLarge(limits))
      let source: Readable = request.pipe(wire)
      request.on('error', (error) => wire.destroy(error))
      if (request.headers['content-encoding'] === 'gzip') {
        const gunzip = createGunzip()
        wire.on('error', (error) => gunzip.destroy(error))
        const decoded = meter(limits.maxUploadBytes, () => tooLarge(limits))
        gunzip.on('error', (error) =>
          decoded.destroy(error instanceof HttpError ? error : new HttpError(400, 'body is not valid gzip')),
        )
        source = wire.pipe(gunzip).pipe(decoded)
      }
      const written = contentType.startsWith('multipart/form-data')
        ? await writeMultipart(sandbox, fs, source, request, queryPath, metadata, limits)
        : [await writeOne(sandbox, fs, queryPath, source, metadata)]
      const payload = JSON.stringify(written)
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(payload),
      })
      response.end(payload)
    } finally {
      limits.release(reserved)
    }
  } catch (error) {
    discardRest(request)
    throw error
  }
}

/** Most bytes of a `file` part sent as a plain form field (busboy holds a field in memory whole). */
const FIELD_LIMIT = 16 * 1024 * 1024

/** Most bytes of a refused upload read and dropped so the client sees the answer; past it the socket closes. */
const DISCARD_LIMIT = 64 * 1024 * 1024

/**
 * Reads and drops what is left of a refused request body: a client (undici) sends its whole body before
 * reading the answer, so a body left unread would hang it instead of showing it the 413/429.
 */
function discardRest(request: IncomingMessage): void {
  if (request.complete) return
  request.unpipe()
  request.removeAllListeners('data')
  let dropped = 0
  request.on('data', (chunk: Buffer) => {
    dropped += chunk.length
    if (dropped > DISCARD_LIMIT) request.socket.destroy()
  })
  request.resume()
}

async function writeOne(
  sandbox: Sandbox,
  fs: SandboxFs,
  path: string | null,
  source: Readable,
  metadata: Record<string, string> | undefined,
): Promise<Record<string, unknown>> {
  if (!path) throw new HttpError(400, 'query parameter path is required')
  let stored = false
  const written = await fs
    .writeStream(path, source, async ({ dir, temp, path: target, existed }) => {
      // On the temp file, so the metadata arrives with the content and replaces the old file's.
      if (metadata) stored = await writeMetadata(dir, temp, metadata)
      sandbox.uploads.note(target, existed)
    })
    .catch((error) => {
      throw httpError(error, path)
    })
  const info: Record<string, unknown> = { name: posix.basename(written), path: written, type: 'file' }
  // Only what was kept, as envd reads it back from the file.
  if (metadata && stored) info.metadata = metadata
  return info
}

function writeMultipart(
  sandbox: Sandbox,
  fs: SandboxFs,
  source: Readable,
  request: IncomingMessage,
  queryPath: string | null,
  metadata: Record<string, string> | undefined,
  limits: UploadLimits,
): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy
    try {
      // preservePath: the SDK names each part by its full sandbox path.
      parser = busboy({
        headers: request.headers,
        preservePath: true,
        limits: { fileSize: limits.maxUploadBytes, fieldSize: Math.min(limits.maxUploadBytes, FIELD_LIMIT) },
      })
    } catch {
      reject(new HttpError(400, 'malformed multipart body'))
      return
    }
    const writes: Promise<Record<string, unknown>>[] = []
    const parts = new Set<PassThrough>()
    let failed = false
    // The answer waits until every part's write has given up and removed its temp file.
    const fail = (error: unknown) => {
      if (failed) return
      failed = true
      source.unpipe(parser)
      source.resume()
      for (const part of parts) part.destroy(error instanceof Error ? error : new Error(String(error)))
      void Promise.allSettled(writes).then(() => reject(error))
    }
    parser.on('file', (field, stream, info) => {
      if (field !== 'file' || failed) {
        stream.resume()
        return
      }
      // busboy truncates a part at `fileSize` and says so; the write must fail, not keep a prefix.
      const part = new PassThrough()
      stream.on('limit', () => part.destroy(tooLarge(limits)))
      stream.on('error', (error) => part.destroy(error))
      stream.pipe(part)
      parts.add(part)
      // The write reports the part's failure; a part whose write gave up early has nobody reading it.
      part.on('error', () => {})
      part.on('close', () => parts.delete(part))
      // The query's path first, as envd resolves it; the part's file name names it otherwise.
      const write = writeOne(sandbox, fs, queryPath || info.filename || null, part, metadata)
      write.catch(fail)
      writes.push(write)
    })
    // A `file` part without a file name (a string appended to a FormData) is the content too, as in envd.
    parser.on('field', (field, value: string, info) => {
      if (field !== 'file' || failed) return
      if (info.valueTruncated) return fail(tooLarge(limits))
      const write = writeOne(sandbox, fs, queryPath, Readable.from([Buffer.from(value)]), metadata)
      write.catch(fail)
      writes.push(write)
    })
    parser.on('error', () => fail(new HttpError(400, 'malformed multipart body')))
    parser.on('close', () => {
      if (failed) return
      if (writes.length === 0) {
        fail(new HttpError(400, 'multipart body has no file part'))
        return
      }
      Promise.all(writes).then(resolve, fail)
    })
    source.on('error', fail)
    source.pipe(parser)
  })
}
