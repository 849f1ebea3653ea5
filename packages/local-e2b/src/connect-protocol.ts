// The part of the Connect protocol (JSON codec) that envd speaks: unary calls with a JSON body and
// server-streaming calls framed as envelopes (flag byte + uint32 big-endian length + JSON), ending in an
// end-stream frame (flag 0x02). The SDK's client rejects a stream that lacks that frame.
import type { ServerResponse } from 'node:http'

/** Connect error codes used here (https://connectrpc.com/docs/protocol#error-codes). */
export type ConnectCode =
  | 'canceled'
  | 'unknown'
  | 'invalid_argument'
  | 'deadline_exceeded'
  | 'not_found'
  | 'already_exists'
  | 'permission_denied'
  | 'resource_exhausted'
  | 'failed_precondition'
  | 'unimplemented'
  | 'internal'
  | 'unavailable'
  | 'unauthenticated'

const HTTP_STATUS: Record<ConnectCode, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  unauthenticated: 401,
}

/** An RPC failure with its Connect code; thrown by handlers, turned into the wire error by the router. */
export class ConnectError extends Error {
  override readonly name = 'ConnectError'
  constructor(
    readonly code: ConnectCode,
    message: string,
  ) {
    super(message)
  }
}

const FLAG_END_STREAM = 0x02
const FLAG_COMPRESSED = 0x01

/** Frames one JSON message as a Connect envelope. */
export function encodeEnvelope(message: unknown, flags = 0): Buffer {
  const payload = Buffer.from(JSON.stringify(message))
  const header = Buffer.alloc(5)
  header.writeUInt8(flags, 0)
  header.writeUInt32BE(payload.length, 1)
  return Buffer.concat([header, payload])
}

/** Reads the messages of a streaming request body (server-streaming calls carry exactly one). */
export function decodeEnvelopes(body: Buffer): unknown[] {
  const messages: unknown[] = []
  let offset = 0
  while (offset < body.length) {
    if (body.length - offset < 5) throw new ConnectError('invalid_argument', 'truncated envelope header')
    const flags = body.readUInt8(offset)
    const length = body.readUInt32BE(offset + 1)
    if (flags & FLAG_COMPRESSED)
      throw new ConnectError('invalid_argument', 'compressed envelopes are not supported')
    const start = offset + 5
    if (start + length > body.length) throw new ConnectError('invalid_argument', 'truncated envelope payload')
    if (!(flags & FLAG_END_STREAM)) messages.push(parseJson(body.subarray(start, start + length)))
    offset = start + length
  }
  return messages
}

/** Parses a JSON request message; an empty body is the empty message. */
export function parseJson(body: Buffer): unknown {
  if (body.length === 0) return {}
  try {
    return JSON.parse(body.toString('utf8'))
  } catch {
    throw new ConnectError('invalid_argument', 'request body is not valid JSON')
  }
}

/** Writes a unary error the way connect-web parses it (HTTP status + `{code, message}`). */
export function writeUnaryError(response: ServerResponse, error: ConnectError): void {
  if (response.headersSent) {
    response.end()
    return
  }
  const body = JSON.stringify({ code: error.code, message: error.message })
  response.writeHead(HTTP_STATUS[error.code], {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  })
  response.end(body)
}

/** Writes a unary success. */
export function writeUnary(response: ServerResponse, message: unknown): void {
  const body = JSON.stringify(message)
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  response.end(body)
}

/** A server stream: messages, then exactly one end-stream frame (also on error or client abort). */
export interface ServerStream {
  /** Sends one message; ignored once the stream ended. */
  send(message: unknown): void
  /** Sends the end-stream frame, with an error when given, and ends the response. Idempotent. */
  end(error?: ConnectError): void
  /**
   * Drops the connection without an end-stream frame: what a client sees when the sandbox's machine goes
   * away mid-stream (the SDK then checks the sandbox's health and reports it killed). Idempotent.
   */
  abort(): void
  /** True once `end` ran or the client went away. */
  readonly closed: boolean
  /** Registers a callback for the client going away before `end`. */
  onClose(callback: () => void): void
}

/** Starts a server-streaming response: headers go out at once so the client sees the stream open. */
export function openServerStream(response: ServerResponse): ServerStream {
  response.writeHead(200, { 'content-type': 'application/connect+json' })
  // Headers alone do not reach the client until the first body byte; flush them now.
  response.flushHeaders()
  let ended = false
  const closeCallbacks: Array<() => void> = []
  response.on('close', () => {
    if (!ended) {
      ended = true
      for (const callback of closeCallbacks) callback()
    }
  })
  return {
    send(message) {
      if (ended) return
      response.write(encodeEnvelope(message))
    },
    end(error) {
      if (ended) return
      ended = true
      const trailer = error ? { error: { code: error.code, message: error.message } } : {}
      response.end(encodeEnvelope(trailer, FLAG_END_STREAM))
    },
    abort() {
      if (ended) return
      ended = true
      response.destroy()
      for (const callback of closeCallbacks) callback()
    },
    get closed() {
      return ended
    },
    onClose(callback) {
      closeCallbacks.push(callback)
    },
  }
}
