// Finding and reading transcripts: `--transcript` lookup, the shipped ones, file reading and validation.
// (At the top of src/ on purpose: `../transcripts/` must resolve from here and from the flat dist/ alike.)
import { constants, readdirSync, statSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { basename, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseDuration } from './args.js'
import { resolveBranches } from './transcript-branches.js'
import { describeIssue, jsonErrorPosition, TranscriptError } from './transcript-problems.js'
import { type Transcript, transcriptSchema } from './transcript-schema.js'

/** Directory of the transcripts shipped with the CLI (`packages/cli/transcripts`). */
export const transcriptsDir = fileURLToPath(new URL('../transcripts/', import.meta.url))

/** The transcript `sandkeep demo` replays when none is given. */
export const defaultTranscriptPath = resolve(transcriptsDir, 'data-analysis.json')

/**
 * Resolves `--transcript`. A path (with a `/`) is taken as it is. A bare name is looked for in `cwd` as
 * written, then with `.json`, then among the shipped transcripts (`data-analysis`), in that order.
 * @throws TranscriptError naming every place tried when a bare name is found nowhere.
 */
export function resolveTranscriptPath(value: string | undefined, cwd: string = process.cwd()): string {
  if (value === undefined) return defaultTranscriptPath
  if (value.includes('/') || value.includes('\\')) return resolve(cwd, value)
  const tried = [resolve(cwd, value)]
  if (!value.endsWith('.json')) tried.push(resolve(cwd, `${value}.json`))
  tried.push(resolve(transcriptsDir, value.endsWith('.json') ? value : `${value}.json`))
  const found = tried.find((path) => isFile(path))
  if (found) return found
  const shipped = shippedTranscripts()
  throw new TranscriptError(value, [
    `no transcript named ${JSON.stringify(value)}; tried ${tried.join(', ')}`,
    `shipped transcripts: ${shipped.length ? shipped.join(', ') : 'none'}`,
  ])
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** Names of the transcripts shipped with the CLI. */
function shippedTranscripts(): string[] {
  try {
    return readdirSync(transcriptsDir)
      .filter((name) => name.endsWith('.json'))
      .map((name) => name.slice(0, -'.json'.length))
      .sort()
  } catch {
    return []
  }
}

const maxTranscriptBytes = 2 * 1024 * 1024

/** Reads and validates a transcript file. @throws TranscriptError */
export async function loadTranscript(path: string): Promise<Transcript> {
  const label = displayPath(path)
  return parseTranscript(await readTranscriptText(path, label), label)
}

/**
 * The file's text, at most 2 MiB, from a regular file only. A FIFO, a terminal or a socket is refused
 * before a byte is read: reading one waits for a writer that may never come, in a thread no signal reaches.
 * O_NONBLOCK makes even the open of a FIFO return at once; fstat then says what was opened.
 */
async function readTranscriptText(path: string, label: string): Promise<string> {
  const refuse = (reason: string) =>
    new TranscriptError(label, [`${label}: cannot read the transcript (${reason})`])
  let file: Awaited<ReturnType<typeof open>>
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (error) {
    const code = (error as { code?: string }).code
    throw refuse(
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : String(code ?? error),
    )
  }
  try {
    const stats = await file.stat()
    if (stats.isDirectory()) throw refuse('is a directory')
    if (!stats.isFile()) throw refuse('not a regular file: give the path of a .json file')
    if (stats.size > maxTranscriptBytes) throw refuse('larger than 2 MiB')
    // Read one byte past the bound, so a file that grew since fstat is still caught.
    const buffer = Buffer.alloc(maxTranscriptBytes + 1)
    let length = 0
    while (length < buffer.length) {
      const { bytesRead } = await file.read(buffer, length, buffer.length - length, length)
      if (bytesRead === 0) break
      length += bytesRead
    }
    if (length > maxTranscriptBytes) throw refuse('larger than 2 MiB')
    return buffer.subarray(0, length).toString('utf8')
  } finally {
    await file.close()
  }
}

/** Validates transcript text; `label` names it in errors. @throws TranscriptError */
export function parseTranscript(text: string, label: string): Transcript {
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    throw new TranscriptError(label, [`${label}: not valid JSON (${jsonErrorPosition(text, error)})`])
  }
  const result = transcriptSchema.safeParse(data)
  if (!result.success) {
    const problems = result.error.issues.slice(0, 8).map((issue) => describeIssue(label, issue, data))
    if (result.error.issues.length > 8)
      problems.push(`${label}: … and ${result.error.issues.length - 8} more problems`)
    throw new TranscriptError(label, problems)
  }
  const names = new Set<string>()
  for (const [index, check] of (result.data.healthChecks ?? []).entries()) {
    if (names.has(check.name)) {
      throw new TranscriptError(label, [
        `${label}: healthChecks[${index}], field name: "${check.name}" is used by an earlier check; names must be unique`,
      ])
    }
    names.add(check.name)
  }
  const places = resolveBranches(label, result.data.turns)
  return {
    file: label,
    title: result.data.title,
    ...(result.data.description === undefined ? {} : { description: result.data.description }),
    healthChecks: result.data.healthChecks ?? [],
    turns: result.data.turns.map((turn, index) => ({
      index: index + 1,
      ...places[index]!,
      user: turn.user,
      idleBeforeMs:
        turn.idleBefore === undefined
          ? 0
          : typeof turn.idleBefore === 'number'
            ? turn.idleBefore
            : (parseDuration(turn.idleBefore) ?? 0),
      toolCalls: turn.toolCalls,
      text: turn.text,
    })),
    branches: places.some((place) => place.branch !== undefined),
  }
}

function displayPath(path: string): string {
  const relative = path.startsWith(`${process.cwd()}/`) ? path.slice(process.cwd().length + 1) : path
  return relative.startsWith(transcriptsDir) ? basename(relative) : relative
}
