// Small C helpers the runtime compiles once per machine (cached by the hash of their source, so a changed
// source gets a new binary): the launcher that enters a sandbox (enter-helper.ts) and the relay that reaches
// a sandbox's loopback (relay-program.ts). Without a working C compiler each caller keeps its fallback.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const compiled = new Map<string, string | null>()

/** Path of `source` compiled as `<name>-<hash>`, compiling it on first use; undefined when no compiler works. */
export function compiledHelper(name: string, source: string): string | undefined {
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16)
  const known = compiled.get(hash)
  if (known !== undefined) return known ?? undefined
  compiled.set(hash, null)
  const dir = join(tmpdir(), 'sandkeep-local-e2b-bin')
  const binary = join(dir, `${name}-${hash}`)
  if (existsSync(binary)) {
    compiled.set(hash, binary)
    return binary
  }
  const sourceFile = join(dir, `${name}-${hash}-${process.pid}.c`)
  try {
    mkdirSync(dir, { recursive: true, mode: 0o755 })
    const temp = `${binary}.${process.pid}.tmp`
    writeFileSync(sourceFile, source)
    execFileSync('cc', ['-O2', '-o', temp, sourceFile], { stdio: 'ignore', timeout: 30_000 })
    chmodSync(temp, 0o755)
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
