// Small C helpers the runtime compiles once per machine (cached by the hash of their source, so a changed
// source gets a new binary): the launcher that enters a sandbox (enter-helper.ts), the relay that reaches a
// sandbox's loopback (relay-program.ts) and the xattr helper of file metadata. The host runs them as root, so
// a cached binary is only ever taken from a directory this user made privately, and only when it is this
// user's own file: the cache's name is predictable, and another local user could plant a file there first.
// Without a working C compiler each caller keeps its fallback.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { hostUid, isOwnFile, isPrivateDirectory } from './private-dir.js'

const compiled = new Map<string, string | null>()
let directory: string | undefined

/**
 * The directory helpers are cached in: `$TMPDIR/sandkeep-local-e2b-<uid>`, made 0700 by this user. When that
 * name is taken by something this user did not make privately, a fresh private directory for this process
 * instead, removed at exit.
 */
function helperDirectory(): string {
  if (directory) return directory
  const shared = join(tmpdir(), `sandkeep-local-e2b-${hostUid()}`)
  try {
    mkdirSync(shared, { mode: 0o700 })
  } catch {}
  if (isPrivateDirectory(shared)) directory = shared
  else {
    const own = mkdtempSync(join(tmpdir(), 'sandkeep-local-e2b-launcher-'))
    process.once('exit', () => rmSync(own, { recursive: true, force: true }))
    directory = own
  }
  return directory
}

/** Path of `source` compiled as `<name>-<hash>`, compiling it on first use; undefined when no compiler works. */
export function compiledHelper(name: string, source: string): string | undefined {
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16)
  const known = compiled.get(hash)
  if (known !== undefined) return known ?? undefined
  compiled.set(hash, null)
  let dir: string
  try {
    dir = helperDirectory()
  } catch {
    return undefined
  }
  const binary = join(dir, `${name}-${hash}`)
  if (isOwnFile(binary)) {
    compiled.set(hash, binary)
    return binary
  }
  const sourceFile = join(dir, `${name}-${hash}-${process.pid}.c`)
  try {
    rmSync(binary, { force: true })
    const temp = `${binary}.${process.pid}.tmp`
    writeFileSync(sourceFile, source, { mode: 0o600 })
    execFileSync('cc', ['-O2', '-o', temp, sourceFile], { stdio: 'ignore', timeout: 30_000 })
    chmodSync(temp, 0o700)
    // Atomic: hosts starting at once each compile, the last rename wins, every one sees a whole file.
    renameSync(temp, binary)
    compiled.set(hash, binary)
  } catch {
    compiled.set(hash, null)
  } finally {
    rmSync(sourceFile, { force: true })
  }
  return compiled.get(hash) ?? undefined
}
