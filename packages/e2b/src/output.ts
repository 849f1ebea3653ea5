// Bounded output: what a command or a cell prints is kept up to a cap, its beginning and its end, with a
// marker where the middle was left out. Chunks are taken as they arrive, so the cost is linear in the
// output and the memory is bounded by the cap, however much is printed.

/** Default of `maxOutputChars`: per stream (stdout, stderr) and per result text, in UTF-16 units. */
export const DEFAULT_MAX_OUTPUT_CHARS = 16 * 1024 * 1024

/** Of a cut output, the share of the cap kept from its beginning; the rest is its end (where errors are). */
const HEAD_SHARE = 0.5

/** Collects one stream of text up to `maxChars`: `push` each chunk, then `text()`. */
export interface CappedText {
  push(chunk: string): void
  /** The output, or its beginning and end around a marker that says how much was left out. */
  text(): string
}

export function createCappedText(maxChars: number): CappedText {
  const headBudget = Math.ceil(maxChars * HEAD_SHARE)
  const tailBudget = maxChars - headBudget
  let head = ''
  // The end, as chunks; the oldest are dropped once the rest still covers the tail budget.
  const tail: string[] = []
  let first = 0
  let tailChars = 0
  let total = 0
  return {
    push(chunk) {
      if (chunk.length === 0) return
      total += chunk.length
      let rest = chunk
      if (head.length < headBudget) {
        let room = headBudget - head.length
        // Never end the beginning with the first half of a surrogate pair.
        const code = rest.charCodeAt(room - 1)
        if (room < rest.length && code >= 0xd800 && code <= 0xdbff) room -= 1
        head += rest.slice(0, room)
        rest = rest.slice(room)
        if (rest.length === 0) return
      }
      tail.push(rest)
      tailChars += rest.length
      while (first < tail.length - 1 && tailChars - tail[first]!.length >= tailBudget) {
        tailChars -= tail[first]!.length
        tail[first] = ''
        first += 1
      }
      // Keep the array itself short too: compact once half of it is dropped chunks.
      if (first > 1024 && first * 2 > tail.length) {
        tail.splice(0, first)
        first = 0
      }
    },
    text() {
      const end = tail.slice(first).join('')
      if (total <= maxChars) return head + end
      let kept = end.slice(end.length - tailBudget)
      // Never start the end with the second half of a surrogate pair.
      const code = kept.charCodeAt(0)
      if (code >= 0xdc00 && code <= 0xdfff) kept = kept.slice(1)
      return head + omittedMarker(total - head.length - kept.length, total, maxChars) + kept
    },
  }
}

/** `text` cut to `maxChars` as {@link createCappedText} would keep it. */
export function capText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text
  const capped = createCappedText(maxChars)
  capped.push(text)
  return capped.text()
}

function omittedMarker(omitted: number, total: number, maxChars: number): string {
  return (
    `\n[sandkeep: ${omitted} characters left out here; the output was ${total} characters, over the ` +
    `provider's maxOutputChars of ${maxChars}. Write large output to a file and read parts of it.]\n`
  )
}
