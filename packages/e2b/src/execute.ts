// `/execute` read by the provider itself, as the SDK's runCode sends it, because the SDK's reader is the
// one thing here that is not linear: it appends every network chunk to a string and searches that whole
// string for a newline, so one NDJSON line of N bytes (a cell whose value is tens of megabytes) costs N²
// (a 40 MiB value took 8.8 s), and it keeps every output whole until the cell ends. This reader searches
// each chunk once, keeps at most `maxOutputChars` of each stream (a line longer than it is never held
// whole), and can be aborted.
import { Sandbox } from '@e2b/code-interpreter'
import { type CodeOutput, SandkeepError } from '@sandkeep/core/provider'
import { NotFoundError, SandboxError, TimeoutError } from 'e2b'
import { type CappedText, capText } from './output.js'

/** The port of the code interpreter inside an E2B sandbox. */
const JUPYTER_PORT = 49999

/**
 * The SDK's `Sandbox` (it is the handle's `native`), which also tells the provider how to reach its code
 * interpreter the way the SDK's runCode does (the URL and the tokens are the SDK's own protected fields).
 */
export class ExecutingSandbox extends Sandbox {
  /** The `/execute` URL, the headers the SDK's runCode sends, and its default request timeout (ms). */
  executeRequest(): { url: string; headers: Record<string, string>; requestTimeoutMs: number } {
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'E2b-Sandbox-Id': this.sandboxId,
      'E2b-Sandbox-Port': String(JUPYTER_PORT),
    }
    if (this.trafficAccessToken) headers['E2B-Traffic-Access-Token'] = this.trafficAccessToken
    if (this.envdAccessToken) headers['X-Access-Token'] = this.envdAccessToken
    return {
      url: `${this.jupyterUrl}/execute`,
      headers,
      requestTimeoutMs: this.connectionConfig.requestTimeoutMs,
    }
  }
}

/** What one cell sends and how long it may take. */
export interface ExecuteCell {
  code: string
  language?: string
  contextId?: string
  envs?: Record<string, string>
  /** Until the response starts, ms (0: no limit); default the connection's. */
  requestTimeoutMs?: number
  /** For the whole output, ms (0: no limit). */
  timeoutMs: number
  signal?: AbortSignal
}

/** What a cell printed and returned, as the provider collects it. */
export interface ExecuteOutput {
  stdout: CappedText
  stderr: CappedText
  maxChars: number
  onStdout?: (text: string) => void
  onStderr?: (text: string) => void
}

/** What `/execute` answered, already within the caps. */
export interface Executed {
  text: string | null
  results: CodeOutput[]
  error: { name: string; value: string; traceback: string } | null
}

/**
 * Runs one cell through `/execute` and reads its NDJSON lines. Errors are the SDK's own classes with its
 * messages (so the provider maps them as it maps the SDK's runCode), or ABORTED when `signal` fired (the
 * request is cancelled, and the code interpreter interrupts a cell whose client went away).
 */
export async function executeCell(
  sandbox: ExecutingSandbox,
  cell: ExecuteCell,
  output: ExecuteOutput,
): Promise<Executed> {
  const { url, headers, requestTimeoutMs } = sandbox.executeRequest()
  const controller = new AbortController()
  let timedOut = false
  const onAbort = () => controller.abort(cell.signal?.reason)
  cell.signal?.addEventListener('abort', onAbort, { once: true })
  let timer = startTimer(cell.requestTimeoutMs ?? requestTimeoutMs, () => {
    timedOut = true
    controller.abort()
  })
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        code: cell.code,
        context_id: cell.contextId,
        language: cell.contextId ? undefined : cell.language,
        env_vars: cell.envs,
      }),
      signal: controller.signal,
      keepalive: true,
    })
    if (!response.ok) throw await responseError(response)
    if (!response.body) throw new SandboxError(`No response body: ${response.statusText}`)
    clearTimeout(timer)
    timer = startTimer(cell.timeoutMs, () => {
      timedOut = true
      controller.abort()
    })
    const executed: Executed = { text: null, results: [], error: null }
    await readLines(response.body, lineLimit(output.maxChars), (line) => take(line, executed, output))
    return executed
  } catch (error) {
    if (cell.signal?.aborted) {
      throw new SandkeepError({
        code: 'ABORTED',
        message: 'runCode was aborted; the code interpreter interrupts the cell.',
        sandboxId: sandbox.sandboxId,
        cause: cell.signal.reason,
      })
    }
    if (timedOut)
      throw new TimeoutError('Execution timed out: the timeoutMs option can be used to increase this timeout')
    throw error
  } finally {
    clearTimeout(timer)
    cell.signal?.removeEventListener('abort', onAbort)
  }
}

function startTimer(ms: number, fire: () => void): NodeJS.Timeout | undefined {
  return ms > 0 ? setTimeout(fire, ms) : undefined
}

/** The SDK's errors for a status that is not 200 (the same classes and messages as its runCode). */
async function responseError(response: Response): Promise<Error> {
  const body = await response.text().catch(() => '')
  if (response.status === 502) {
    return new TimeoutError(
      `${body}: This error is likely due to sandbox timeout. You can modify the sandbox timeout by passing 'timeoutMs' when starting the sandbox or calling '.setTimeout' on the sandbox with the desired timeout.`,
    )
  }
  if (response.status === 404) return new NotFoundError(body)
  return new SandboxError(`${response.status} ${response.statusText}`)
}

/**
 * Longest NDJSON line held whole, in bytes: room for a capped text (up to 3 bytes a character in UTF-8,
 * 6 when JSON-escaped) plus the line's other fields. A longer line is reduced to its beginning and end.
 */
function lineLimit(maxChars: number): number {
  return maxChars * 6 + 64 * 1024
}

/** A line, whole, or (when over the limit) its first and last bytes and its length. */
type Line = { whole: Uint8Array } | { head: Uint8Array; tail: Uint8Array; bytes: number }

/** The bytes kept of each end of a line over the limit: enough for its type and its last fields. */
const LINE_END_BYTES = 64 * 1024

/** Splits a byte stream into lines, searching each chunk once; a line over `limit` is never held whole. */
async function readLines(
  body: ReadableStream<Uint8Array>,
  limit: number,
  onLine: (line: Line) => void,
): Promise<void> {
  let parts: Uint8Array[] = []
  let held = 0
  // For a line over the limit: its first bytes, the last chunks seen, and how long it is.
  let head: Uint8Array | undefined
  let bytes = 0
  const finish = (last: Uint8Array) => {
    parts.push(last)
    held += last.byteLength
    bytes += last.byteLength
    if (head === undefined) {
      if (held > 0) onLine({ whole: concat(parts, held) })
    } else {
      const tailBytes = concat(parts, held)
      onLine({ head, tail: tailBytes.subarray(Math.max(0, tailBytes.byteLength - LINE_END_BYTES)), bytes })
    }
    parts = []
    held = 0
    head = undefined
    bytes = 0
  }
  for await (const chunk of body) {
    let start = 0
    for (let newline = chunk.indexOf(0x0a); newline >= 0; newline = chunk.indexOf(0x0a, start)) {
      finish(chunk.subarray(start, newline))
      start = newline + 1
    }
    if (start >= chunk.byteLength) continue
    const rest = chunk.subarray(start)
    parts.push(rest)
    held += rest.byteLength
    bytes += rest.byteLength
    if (head === undefined && held > limit) {
      head = concat(parts, held).subarray(0, LINE_END_BYTES)
      parts = []
      held = 0
    } else if (head !== undefined && held > 2 * LINE_END_BYTES) {
      // Of a line over the limit, only its end is kept from here on.
      const end = concat(parts, held)
      parts = [end.subarray(end.byteLength - LINE_END_BYTES)]
      held = LINE_END_BYTES
    }
  }
  if (held > 0 || head !== undefined) finish(new Uint8Array(0))
}

function concat(parts: readonly Uint8Array[], length: number): Uint8Array {
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, length)
}

const decoder = new TextDecoder()

/** One NDJSON line of `/execute` into the cell's outputs. */
function take(line: Line, executed: Executed, output: ExecuteOutput): void {
  if (!('whole' in line)) {
    takeOversized(line, executed, output)
    return
  }
  let message: Record<string, unknown>
  try {
    message = JSON.parse(decoder.decode(line.whole)) as Record<string, unknown>
  } catch {
    return
  }
  switch (message.type) {
    case 'stdout':
    case 'stderr': {
      const text = typeof message.text === 'string' ? message.text : ''
      const stream = message.type === 'stdout' ? output.stdout : output.stderr
      stream.push(text)
      ;(message.type === 'stdout' ? output.onStdout : output.onStderr)?.(text)
      return
    }
    case 'result': {
      const result = toCodeOutput(message, output.maxChars)
      executed.results.push(result)
      if (result.isMainResult) executed.text = result.text ?? null
      return
    }
    case 'error':
      executed.error = {
        name: String(message.name ?? ''),
        value: String(message.value ?? ''),
        traceback: String(message.traceback ?? ''),
      }
  }
}

/** A line over the limit: what its type was, and a marker in place of its content. */
function takeOversized(
  line: { head: Uint8Array; tail: Uint8Array; bytes: number },
  executed: Executed,
  output: ExecuteOutput,
): void {
  const start = decoder.decode(line.head)
  const end = decoder.decode(line.tail)
  const type = /"type"\s*:\s*"(\w+)"/.exec(start)?.[1]
  const note = `[sandkeep: a ${type ?? 'message'} of ${line.bytes} bytes from the code interpreter was left out, over the provider's maxOutputChars of ${output.maxChars}. Write large output to a file and read parts of it.]`
  if (type === 'stdout') output.stdout.push(note)
  else if (type === 'stderr') output.stderr.push(note)
  else if (type === 'result') {
    const main = /"is_main_result"\s*:\s*true/.test(end) || /"is_main_result"\s*:\s*true/.test(start)
    executed.results.push({ isMainResult: main, text: note })
    if (main) executed.text = note
  }
}

/** Formats that are text a reader may cut; `text` itself is capped, the others are kept whole. */
const OUTPUT_STRINGS = [
  'text',
  'html',
  'markdown',
  'svg',
  'png',
  'jpeg',
  'pdf',
  'latex',
  'javascript',
] as const

/** Fields of a `result` line that are not formats. */
const RESULT_FIELDS = new Set([...OUTPUT_STRINGS, 'type', 'is_main_result', 'json', 'data', 'chart', 'extra'])

/** A `result` line as a provider-neutral CodeOutput: the formats present, unknown fields under `extra`. */
export function toCodeOutput(raw: Record<string, unknown>, maxChars: number): CodeOutput {
  const output: CodeOutput = { isMainResult: raw.is_main_result === true }
  for (const key of OUTPUT_STRINGS) {
    const value = raw[key]
    if (typeof value === 'string') output[key] = key === 'text' ? capText(value, maxChars) : value
  }
  if (raw.json !== undefined && raw.json !== null) output.json = raw.json
  if (raw.data !== undefined && raw.data !== null) output.data = raw.data as Record<string, unknown>
  if (raw.chart !== undefined && raw.chart !== null) output.chart = raw.chart as Record<string, unknown>
  const extra: Record<string, unknown> = {
    ...(typeof raw.extra === 'object' && raw.extra !== null ? (raw.extra as Record<string, unknown>) : {}),
  }
  for (const [key, value] of Object.entries(raw)) if (!RESULT_FIELDS.has(key)) extra[key] = value
  if (Object.keys(extra).length > 0) output.extra = extra
  return output
}
