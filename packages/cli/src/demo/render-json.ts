import type { DemoEvent, DemoRenderer } from './events.js'

/** `--json`: one JSON object per line, each with a `type`; no spinner, no colour, no text deltas. */
export function createJsonRenderer(stream: NodeJS.WritableStream): DemoRenderer {
  return {
    emit(event: DemoEvent) {
      stream.write(`${JSON.stringify(event, replacer)}\n`)
    },
    progress() {},
    close() {},
  }
}

// Errors and Dates inside tool outputs or reports must survive JSON.stringify as readable values.
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message }
  if (typeof value === 'bigint') return value.toString()
  return value
}
