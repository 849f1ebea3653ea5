// Results shaped for a model: outputs cut with a note, rich code outputs within the image limits, and a
// runCode result split into text and images for a framework's multi-part tool output.
import type { CodeOutput, CodeResult } from '@sandkeep/core'
import { splitLines, truncateOutput } from '../output.js'
import type {
  CodeToolOutput,
  CodeToolResult,
  CommandToolResult,
  ListFilesToolResult,
  ReadFileToolResult,
  ToolErrorResult,
  ToolProgressResult,
} from './types.js'

/** Shapes a command result for the model: exit code first, outputs cut past `maxChars`. */
export function shapeCommandResult(
  result: { exitCode: number; stdout: string; stderr: string },
  maxChars: number,
): CommandToolResult {
  return {
    exitCode: result.exitCode,
    stdout: truncateOutput(result.stdout, maxChars).text,
    stderr: truncateOutput(result.stderr, maxChars).text,
  }
}

/** Limits of the rich outputs {@link shapeCodeResult} keeps. */
export interface CodeOutputLimits {
  /** Largest image kept, bytes. */
  maxImageBytes: number
  /** Most images kept. */
  maxImages: number
}

// The text form of a rich output the model reads best, in order of preference.
const TEXT_FORMATS = ['text', 'markdown', 'json', 'html', 'latex', 'svg', 'javascript'] as const

/** Shapes a code cell's result for the model: text cut past `maxChars`, images within `limits`. */
export function shapeCodeResult(
  result: CodeResult,
  maxChars: number,
  limits: CodeOutputLimits = { maxImageBytes: 1024 * 1024, maxImages: 4 },
): CodeToolResult {
  const shaped: CodeToolResult = {
    result: result.text === null ? null : truncateOutput(result.text, maxChars).text,
    stdout: truncateOutput(result.stdout, maxChars).text,
    stderr: truncateOutput(result.stderr, maxChars).text,
  }
  let images = 0
  const outputs: CodeToolOutput[] = []
  for (const output of result.results ?? []) {
    const shown = shapeCodeOutput(output, maxChars, limits, images)
    if (shown === undefined) continue
    if (shown.image) images += 1
    outputs.push(shown)
  }
  if (outputs.length > 0) shaped.outputs = outputs
  if (result.error !== null) {
    const head = `${result.error.name}: ${result.error.value}`
    shaped.error = truncateOutput(
      result.error.traceback ? `${head}\n${stripAnsi(result.error.traceback)}` : head,
      maxChars,
    ).text
  }
  return shaped
}

/** One rich output for the model, or undefined when it adds nothing to `result` (a main value that is only text). */
function shapeCodeOutput(
  output: CodeOutput,
  maxChars: number,
  limits: CodeOutputLimits,
  imagesSoFar: number,
): CodeToolOutput | undefined {
  const notes: string[] = []
  let image: CodeToolOutput['image']
  const picture = output.png
    ? { mediaType: 'image/png' as const, base64: output.png }
    : output.jpeg
      ? { mediaType: 'image/jpeg' as const, base64: output.jpeg }
      : undefined
  if (picture) {
    const bytes = base64Bytes(picture.base64)
    if (bytes > limits.maxImageBytes) {
      notes.push(
        `An ${picture.mediaType} image of ${bytes} bytes was left out: over the ${limits.maxImageBytes}-byte ` +
          'limit; show a smaller one (lower dpi or size).',
      )
    } else if (imagesSoFar >= limits.maxImages) {
      notes.push(`An ${picture.mediaType} image was left out: at most ${limits.maxImages} images per call.`)
    } else {
      image = picture
    }
  }
  if (output.pdf) notes.push('A PDF was produced; it is not shown here: save it to a file to keep it.')
  // The main value's plain text is `result` already; repeat nothing the model has.
  const format = TEXT_FORMATS.find(
    (key) => output[key] !== undefined && !(key === 'text' && output.isMainResult),
  )
  if (output.isMainResult && !image && notes.length === 0 && (output.text !== undefined || !format))
    return undefined
  const shaped: CodeToolOutput = { main: output.isMainResult }
  // An image speaks for itself; its text form is usually a repr like "<Figure size 640x480 with 1 Axes>".
  if (format && !(image && format !== 'text')) {
    const value = output[format]
    const text = typeof value === 'string' ? value : JSON.stringify(value)
    shaped.text = truncateOutput(text, maxChars).text
    shaped.format = format
  }
  if (image) shaped.image = image
  if (notes.length > 0) shaped.note = notes.join(' ')
  return shaped
}

/** Decoded size of base64 text, bytes. */
function base64Bytes(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0
  return Math.max(0, Math.floor((base64.length * 3) / 4) - padding)
}

/** A `runCode` result as text and images, for a framework whose tool output can carry image parts. */
export interface CodeResultContent {
  /** The result as JSON, each image replaced by a pointer to its place among `images`. */
  text: string
  /** The images, in order: image `n` of the pointers is `images[n - 1]`. */
  images: Array<{ mediaType: 'image/png' | 'image/jpeg'; base64: string }>
}

/**
 * The model's view of a `runCode` result when the cell produced images: the JSON as text (each image replaced
 * by a pointer) and the images beside it, which vision models can see. `undefined` when there is no image
 * (the result goes to the model as JSON, as every other tool's).
 */
export function codeResultContent(
  output: CodeToolResult | ToolErrorResult | ToolProgressResult,
): CodeResultContent | undefined {
  const outputs = 'outputs' in output ? output.outputs : undefined
  if (!outputs?.some((entry) => entry.image)) return undefined
  const images: CodeResultContent['images'] = []
  const described = {
    ...output,
    outputs: outputs.map((entry) => {
      if (!entry.image) return entry
      images.push(entry.image)
      const { image, ...rest } = entry
      return { ...rest, image: `${image.mediaType}, attached after this JSON as image ${images.length}` }
    }),
  }
  return { text: JSON.stringify(described), images }
}

/** Shapes a file read: the selected lines, cut past `maxChars` with a note that says how to see more. */
export function shapeFileContent(
  path: string,
  text: string,
  startLine: number | undefined,
  endLine: number | undefined,
  maxChars: number,
): ReadFileToolResult {
  const lines = splitLines(text)
  const from = startLine ?? 1
  const selected = lines
    .slice(from - 1, endLine === undefined ? undefined : Math.max(endLine, from - 1))
    .join('')
  const cut = truncateOutput(selected, maxChars)
  const shaped: ReadFileToolResult = { path, content: cut.text, totalLines: lines.length }
  if (cut.omittedChars > 0) {
    shaped.notice = `The file is long: read it in parts with startLine/endLine (it has ${lines.length} lines).`
  }
  return shaped
}

/** Shapes a directory listing, keeping at most `maxEntries`. */
export function shapeListing(
  path: string,
  entries: ListFilesToolResult['entries'],
  maxEntries: number,
): ListFilesToolResult {
  const sorted = [...entries].sort((a, b) => a.path.localeCompare(b.path))
  const shaped: ListFilesToolResult = { path, entries: sorted.slice(0, maxEntries) }
  if (sorted.length > maxEntries) {
    shaped.notice = `Showing ${maxEntries} of ${sorted.length} entries; list a subdirectory to see the rest.`
  }
  return shaped
}

// Notebook tracebacks carry terminal colour codes, which are noise (and tokens) for a model.
const ansiPattern = /\u001b\[[0-9;]*[A-Za-z]/g

function stripAnsi(text: string): string {
  return text.replace(ansiPattern, '')
}
