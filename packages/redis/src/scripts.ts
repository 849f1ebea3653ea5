// Loads the Lua scripts in ./commands (`<name>-<numKeys>.lua`) and registers them on a client with
// ioredis `defineCommand`, which runs them with EVALSHA and falls back to EVAL once per server.
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { SandkeepError } from '@sandkeep/core/store'

/** The scripts the store runs, by file name (without `.lua`). */
export const SCRIPT_FILES = [
  'acquire-4',
  'renew-4',
  'claim-creation-2',
  'set-sandbox-4',
  'set-sandbox-5',
  'release-4',
  'release-5',
  'set-state-4',
  'read-record-1',
  'append-journal-4',
  'clear-journal-2',
  'index-touch-1',
  'index-prune-1',
  'drop-holder-1',
  'clock-1',
  'release-hold-1',
  'read-checkpoints-1',
  'rewind-4',
  'create-fork-4',
  'create-fork-5',
  'read-journal-3',
  'read-fork-source-4',
  'checkpoint-4',
] as const

export type ScriptFile = (typeof SCRIPT_FILES)[number]

/** A script ready for `defineCommand`. */
export interface Script {
  /** Name of the command on the client; includes a digest so two versions never share a name. */
  command: string
  /** KEYS count, from the file name. */
  numberOfKeys: number
  /** Source with includes inlined. */
  lua: string
}

const INCLUDE = /^--- @include "([a-z-]+)"$/gm

/**
 * Where the .lua files are: `src/commands` next to the source when running from src, and the same folder
 * (shipped in the package's `files`) when running from the bundled `dist/index.js`.
 */
function commandsDirectory(): string {
  const candidates = [new URL('./commands/', import.meta.url), new URL('../src/commands/', import.meta.url)]
  for (const candidate of candidates) {
    const directory = fileURLToPath(candidate)
    if (existsSync(`${directory}acquire-4.lua`)) return directory
  }
  throw new SandkeepError({
    code: 'STORE_UNAVAILABLE',
    message: `@sandkeep/redis cannot find its Lua scripts (looked in ${candidates.map((c) => fileURLToPath(c)).join(', ')}); reinstall the package.`,
  })
}

let loaded: Map<ScriptFile, Script> | undefined

/** Reads every script once per process (on first use of a store, never at import). */
export function loadScripts(): Map<ScriptFile, Script> {
  if (loaded) return loaded
  const directory = commandsDirectory()
  const scripts = new Map<ScriptFile, Script>()
  for (const file of SCRIPT_FILES) {
    const source = readFileSync(`${directory}${file}.lua`, 'utf8')
    const lua = source.replace(INCLUDE, (_, name: string) =>
      readFileSync(`${directory}includes/${name}.lua`, 'utf8'),
    )
    const numberOfKeys = Number(file.slice(file.lastIndexOf('-') + 1))
    const digest = createHash('sha1').update(lua).digest('hex').slice(0, 8)
    const command = `sandkeep_${file.slice(0, file.lastIndexOf('-')).replaceAll('-', '_')}_${digest}`
    scripts.set(file, { command, numberOfKeys, lua })
  }
  loaded = scripts
  return scripts
}
