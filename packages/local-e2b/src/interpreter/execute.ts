// `POST /execute`: runs one cell in its context's kernel and streams E2B's NDJSON lines. A client that goes
// away (its timeoutMs, an abort) gets its cell interrupted, and a kernel that ignores the interrupt is
// replaced, so a context is never wedged behind an abandoned cell.
import type { ServerResponse } from 'node:http'
import { HttpError, parseJsonBody } from '../http.js'
import type { ContextState, ContextTable } from './contexts.js'
import { chooseLanguage, readEnvVars } from './input.js'
import type { CellSink, KernelProcess } from './kernel.js'
import { resultLine } from './output.js'

/**
 * After a client abandons a cell, how long the interrupt gets before the kernel is killed and replaced. Generous,
 * because a JavaScript interrupt is a process spawned inside the sandbox, slow on a loaded machine.
 */
const INTERRUPT_GRACE_MS = 5_000

export function sendText(response: ServerResponse, status: number, text: string): void {
  if (response.headersSent) {
    response.end()
    return
  }
  response.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  })
  response.end(text)
}

/** The cell a request asks for: its code, extra env, and the context (by id, or the language's default). */
function readCell(
  contexts: ContextTable,
  body: Buffer,
): { code: string; env: Record<string, string>; context: ContextState } {
  const input = parseJsonBody(body)
  if (typeof input.code !== 'string') throw new HttpError(400, 'code must be a string')
  const env = readEnvVars(input.env_vars)
  const contextId = input.context_id
  if (contextId !== undefined && contextId !== null && typeof contextId !== 'string') {
    throw new HttpError(400, 'context_id must be a string')
  }
  if (contextId && input.language)
    throw new HttpError(400, 'Only one of context_id or language can be provided')
  contexts.ensureDefaults()
  if (contextId) return { code: input.code, env, context: contexts.find(contextId) }
  const choice = chooseLanguage(input.language)
  return { code: input.code, env, context: contexts.defaultContext(choice) }
}

/** Serves `POST /execute`. */
export async function execute(contexts: ContextTable, response: ServerResponse, body: Buffer): Promise<void> {
  const { code, env, context } = readCell(contexts, body)
  let abandoned = false
  let onAbandon: (() => void) | undefined
  contexts.executing.add(response)
  response.on('close', () => {
    contexts.executing.delete(response)
    if (response.writableEnded) return
    abandoned = true
    // A killed sandbox's kernels are being stopped: nothing to interrupt.
    if (!contexts.closed) onAbandon?.()
  })
  await contexts.enqueue(context, async () => {
    if (abandoned || context.removed) {
      if (context.removed) sendText(response, 404, `Context ${context.id} not found`)
      return
    }
    let kernel: KernelProcess
    try {
      kernel = await contexts.ensureKernel(context)
    } catch (error) {
      const status = error instanceof HttpError ? error.status : 500
      sendText(response, status, error instanceof Error ? error.message : String(error))
      return
    }
    if (abandoned) return
    let graceTimer: NodeJS.Timeout | undefined
    onAbandon = () => {
      graceTimer = interruptAbandoned(contexts, context, kernel)
    }
    await runCell(contexts, context, kernel, response, code, env)
    onAbandon = undefined
    if (graceTimer) clearTimeout(graceTimer)
  })
}

/** Interrupts the cell of a client that went away; replaces the kernel if it is still busy after the grace. */
function interruptAbandoned(
  contexts: ContextTable,
  context: ContextState,
  kernel: KernelProcess,
): NodeJS.Timeout {
  contexts.emit('kernel-interrupt', {
    contextId: context.id,
    language: context.language,
    reason: 'client went away',
  })
  kernel.interrupt()
  const timer = setTimeout(() => {
    if (kernel.busy && context.kernel === kernel) {
      contexts.forgetKernel(context, 'abandoned cell ignored the interrupt')
    }
  }, INTERRUPT_GRACE_MS)
  timer.unref()
  return timer
}

/**
 * Longest `text` of one stdout/stderr line, in UTF-16 units. A client that reads NDJSON by searching its
 * whole buffer for a newline at every chunk (the E2B SDK does) pays the square of a line's length; output
 * sent in lines of this size costs it its length, and the text joins back as it was printed.
 */
const MAX_STREAM_LINE_CHARS = 64 * 1024

/** Writes printed text as `stdout`/`stderr` lines of at most {@link MAX_STREAM_LINE_CHARS}, never splitting a surrogate pair. */
function writeStream(
  write: (line: Record<string, unknown>) => void,
  type: 'stdout' | 'stderr',
  text: string,
): void {
  const timestamp = new Date().toISOString()
  let start = 0
  do {
    let end = Math.min(text.length, start + MAX_STREAM_LINE_CHARS)
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1
    write({ type, text: text.slice(start, end), timestamp })
    start = end
  } while (start < text.length)
}

/** Runs the cell, writing each output as an NDJSON line, then `end_of_execution`. */
async function runCell(
  contexts: ContextTable,
  context: ContextState,
  kernel: KernelProcess,
  response: ServerResponse,
  code: string,
  env: Record<string, string>,
): Promise<void> {
  response.writeHead(200, { 'content-type': 'application/x-ndjson' })
  const write = (line: Record<string, unknown>) => {
    if (!response.writableEnded && !response.destroyed) response.write(`${JSON.stringify(line)}\n`)
  }
  let failed = false
  const sink: CellSink = {
    start: (count) => write({ type: 'number_of_executions', execution_count: count }),
    stdout: (text) => writeStream(write, 'stdout', text),
    stderr: (text) => writeStream(write, 'stderr', text),
    result: (data, main) => write(resultLine(data, main)),
    error: (name, value, traceback) => {
      failed = true
      write({ type: 'error', name, value, traceback })
    },
  }
  const startedAt = performance.now()
  const outcome = await kernel.run(code, env, sink)
  contexts.emit('cell-run', {
    contextId: context.id,
    language: context.language,
    ms: Math.round((performance.now() - startedAt) * 10) / 10,
    error: failed,
    outcome,
  })
  write({ type: 'end_of_execution' })
  response.end()
}
