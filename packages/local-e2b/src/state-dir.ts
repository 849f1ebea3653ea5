// The host's state directory: the registry (every sandbox's envd token and env vars), the API key, the disk
// images and the sandboxes' files. Only the host's own user may read any of it, so the directory is 0700 and
// the secret files 0600. A state dir handed in with looser modes (`mkdir -p` gives 0755) is fixed at start
// and the fix is logged; one that belongs to another user is refused, because whoever owns it could plant a
// registry whose records name host paths the host would then mount, chown and delete as root.
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, type Stats, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LocalE2BError, LocalE2BErrorCode } from './errors.js'

/** Mode of the state directory and every directory the host makes in it. */
export const PRIVATE_DIRECTORY_MODE = 0o700
/** Mode of the registry, the API key file and the disk images. */
export const PRIVATE_FILE_MODE = 0o600

const hostUid = (): number => (typeof process.geteuid === 'function' ? process.geteuid() : 0)

function refuse(message: string): LocalE2BError {
  return new LocalE2BError({ code: LocalE2BErrorCode.UNSUPPORTED, message })
}

/** Throws when `stats` (of `path`) belongs to another user than the host's. */
function checkOwner(path: string, stats: Stats): void {
  if (stats.uid !== hostUid()) {
    throw refuse(
      `state ${path} belongs to uid ${stats.uid}, not to the host's user (uid ${hostUid()}); another user could have planted or could read it. Use a directory of your own.`,
    )
  }
}

/** Makes `path` (owned by the host's user) private: group and others lose every permission bit. */
function makePrivate(path: string, stats: Stats, mode: number, logger: (line: string) => void): void {
  checkOwner(path, stats)
  if ((stats.mode & 0o077) === 0) return
  chmodSync(path, mode)
  logger(
    `[sandkeep-local-e2b] ${path} was readable by other users (mode ${(stats.mode & 0o777).toString(8)}); made it ${mode.toString(8)}`,
  )
}

/**
 * The state directory (made when given, a new temp dir otherwise, which the host then owns), checked and made
 * private, with its `sandboxes` directory. Throws LocalE2BError UNSUPPORTED for a directory of another user.
 */
export function prepareStateDir(
  given: string | undefined,
  logger: (line: string) => void,
): { stateDir: string; ownsStateDir: boolean } {
  if (given !== undefined) {
    mkdirSync(given, { recursive: true, mode: PRIVATE_DIRECTORY_MODE })
    // A symlink someone else planted at the path the operator named would redirect the whole state.
    const link = lstatSync(given)
    if (link.isSymbolicLink()) checkOwner(given, link)
  }
  const stateDir = realpathSync(given ?? mkdtempSync(join(tmpdir(), 'sandkeep-local-e2b-')))
  makePrivate(stateDir, statSync(stateDir), PRIVATE_DIRECTORY_MODE, logger)
  const sandboxes = join(stateDir, 'sandboxes')
  mkdirSync(sandboxes, { recursive: true, mode: PRIVATE_DIRECTORY_MODE })
  makePrivate(sandboxes, lstatSync(sandboxes), PRIVATE_DIRECTORY_MODE, logger)
  for (const name of ['registry.json', 'api-key']) {
    const path = join(stateDir, name)
    let stats: Stats
    try {
      stats = lstatSync(path)
    } catch {
      continue
    }
    if (!stats.isFile()) throw refuse(`state file ${path} is not a regular file`)
    makePrivate(path, stats, PRIVATE_FILE_MODE, logger)
  }
  return { stateDir, ownsStateDir: given === undefined }
}
