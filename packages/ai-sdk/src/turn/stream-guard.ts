// Ends the turn however a stream result is given up: read to its end (a transform's flush), or cancelled
// by its consumer through any of the streams or Responses the result hands out.
import type { StreamTextTransform, ToolSet } from 'ai'

// Properties of a stream result that hand out a consumer stream, and methods that return one.
const streamGetters = new Set<PropertyKey>([
  'textStream',
  'fullStream',
  'partialOutputStream',
  'experimental_partialOutputStream',
  'elementStream',
])
const streamMethods = new Set<PropertyKey>(['toUIMessageStream'])
const responseMethods = new Set<PropertyKey>(['toUIMessageStreamResponse', 'toTextStreamResponse'])

/**
 * The caller's `experimental_transform` (none, one or a list) with, at the end of the pipeline, a transform
 * whose flush or cancel calls `end`; the stream closes when `end` resolves (the turn decides whether that
 * waits for the pause). `beforeFinish`, when it returns a promise, holds the stream's `finish` part until
 * that settles (the turn's end, so that what it reports can go out with the finish).
 */
export function withEndTransform(
  transform: unknown,
  end: () => Promise<unknown>,
  beforeFinish?: () => Promise<unknown> | undefined,
): unknown[] {
  const endTransform: StreamTextTransform<ToolSet> = () =>
    new TransformStream({
      async transform(chunk, controller) {
        if (chunk.type === 'finish') await beforeFinish?.()?.catch(() => {})
        controller.enqueue(chunk)
      },
      async flush() {
        await end().catch(() => {})
      },
      async cancel() {
        await end().catch(() => {})
      },
    })
  const list = transform === undefined ? [] : Array.isArray(transform) ? transform : [transform]
  return [...list, endTransform]
}

/** `result` with every consumer stream it hands out reporting its cancel to `onCancel`. */
export function guardStreamResult<R extends object>(result: R, onCancel: () => void): R {
  return new Proxy(result, {
    get(target, property, receiver) {
      // Getters run with the proxy as `this`, so internal stream use is guarded too.
      const value = Reflect.get(target, property, receiver)
      if (streamGetters.has(property) && value instanceof ReadableStream) return guardStream(value, onCancel)
      if (typeof value !== 'function') return value
      if (streamMethods.has(property)) {
        return (...args: unknown[]) => guardStream(value.apply(receiver, args) as ReadableStream, onCancel)
      }
      if (responseMethods.has(property)) {
        return (...args: unknown[]) => guardResponse(value.apply(receiver, args) as Response, onCancel)
      }
      return value.bind(receiver)
    },
  })
}

/** A pass-through stream that reports its consumer's cancel; keeps async iteration. */
function guardStream<T>(inner: ReadableStream<T>, onCancel: () => void): ReadableStream<T> {
  const reader = inner.getReader()
  return new ReadableStream<T>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read()
          if (done) controller.close()
          else controller.enqueue(value)
        } catch (error) {
          controller.error(error)
        }
      },
      async cancel(reason) {
        onCancel()
        await reader.cancel(reason).catch(() => {})
      },
    },
    { highWaterMark: 0 },
  )
}

function guardResponse(response: Response, onCancel: () => void): Response {
  if (response.body === null) return response
  return new Response(guardStream(response.body, onCancel), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
}
