// Splits a kernel's stdout into protocol messages and raw output.
//
// A kernel writes each message as MARKER + JSON + "\n" (MARKER = "\x1e" + a per-kernel random nonce + ":"). Any
// other bytes on the same pipe were written by user code or a child process straight to fd 1: they are raw output
// of the running cell. JSON text never contains a raw newline, so a message ends at the first "\n" after its
// marker; a message cut short (a kernel killed mid-write) is dropped at the next marker.
import { StringDecoder } from 'node:string_decoder'

/** One message of the kernel protocol (see kernels/python-kernel.py). */
export interface KernelMessage {
  /** Message type: ready, start, stdout, stderr, result, error, done, fatal. */
  t: string
  [field: string]: unknown
}

export interface FrameReaderOptions {
  /** The kernel's nonce (hex); the marker is "\x1e" + nonce + ":". */
  nonce: string
  /** Called for each complete, well-formed message. */
  onMessage: (message: KernelMessage) => void
  /** Called with raw output found between messages, decoded as UTF-8 (split characters are kept whole). */
  onRaw: (text: string) => void
}

export interface FrameReader {
  /** Feeds the next chunk of the kernel's stdout. */
  push(chunk: Buffer): void
  /** The stream ended: whatever raw output is still held back is delivered. */
  end(): void
}

/** The message in `bytes` (one frame without its marker and newline), or undefined when it is not one. */
function parseMessage(bytes: Buffer): KernelMessage | undefined {
  let message: unknown
  try {
    message = JSON.parse(bytes.toString('utf8'))
  } catch {
    return undefined
  }
  if (typeof message === 'object' && message !== null && typeof (message as KernelMessage).t === 'string') {
    return message as KernelMessage
  }
  return undefined
}

/** How many trailing bytes of `bytes` could be the start of `marker` (held back until more arrives). */
function partialMarkerLength(bytes: Buffer, marker: Buffer): number {
  const longest = Math.min(bytes.length, marker.length - 1)
  for (let length = longest; length > 0; length -= 1) {
    if (bytes.subarray(bytes.length - length).equals(marker.subarray(0, length))) return length
  }
  return 0
}

export function createFrameReader(options: FrameReaderOptions): FrameReader {
  const marker = Buffer.from(`\x1e${options.nonce}:`, 'utf8')
  const decoder = new StringDecoder('utf8')
  // Outside a message: bytes not yet delivered as raw output (at most a partial marker between pushes).
  let pending: Buffer = Buffer.alloc(0)
  // Inside a message (its marker removed): the chunks of it so far, and its last bytes, where the start of
  // a marker that goes on in the next chunk would be. Each chunk is searched once, on its own: a message of
  // many megabytes costs its length, not its length times the number of chunks it came in.
  let inMessage = false
  let parts: Buffer[] = []
  let tail: Buffer = Buffer.alloc(0)

  const raw = (bytes: Buffer) => {
    if (bytes.length === 0) return
    const text = decoder.write(bytes)
    if (text) options.onRaw(text)
  }

  const startMessage = () => {
    inMessage = true
    parts = []
    tail = Buffer.alloc(0)
  }

  /** Feeds message bytes; returns what follows the message's end (or a marker that cut it), else undefined. */
  const continueMessage = (chunk: Buffer): Buffer | undefined => {
    const window = tail.length === 0 ? chunk : Buffer.concat([tail, chunk])
    const newline = chunk.indexOf(0x0a)
    const nextMarker = window.indexOf(marker)
    if (nextMarker >= 0 && (newline < 0 || nextMarker < newline + tail.length)) {
      // The message was cut off by another one: drop the broken part and resync on the new marker.
      startMessage()
      return window.subarray(nextMarker + marker.length)
    }
    if (newline < 0) {
      parts.push(chunk)
      tail = window.subarray(Math.max(0, window.length - (marker.length - 1)))
      return undefined
    }
    parts.push(chunk.subarray(0, newline))
    const message = parseMessage(parts.length === 1 ? parts[0]! : Buffer.concat(parts))
    if (message) options.onMessage(message)
    inMessage = false
    parts = []
    tail = Buffer.alloc(0)
    return chunk.subarray(newline + 1)
  }

  const drain = (input: Buffer) => {
    let rest: Buffer | undefined = input
    while (rest !== undefined && rest.length > 0) {
      if (inMessage) {
        rest = continueMessage(rest)
        continue
      }
      pending = pending.length === 0 ? rest : Buffer.concat([pending, rest])
      rest = undefined
      const start = pending.indexOf(marker)
      if (start >= 0) {
        raw(pending.subarray(0, start))
        rest = pending.subarray(start + marker.length)
        pending = Buffer.alloc(0)
        startMessage()
        continue
      }
      const keep = partialMarkerLength(pending, marker)
      raw(pending.subarray(0, pending.length - keep))
      pending = pending.subarray(pending.length - keep)
    }
  }

  return {
    push(chunk) {
      drain(chunk)
    },
    end() {
      if (!inMessage) raw(pending)
      pending = Buffer.alloc(0)
      inMessage = false
      parts = []
      tail = Buffer.alloc(0)
      const rest = decoder.end()
      if (rest) options.onRaw(rest)
    },
  }
}
