// The SQLite saver needs better-sqlite3's native module, which installs only where it could be built (its
// install script is not run by this workspace's `pnpm install`: see the package README). Tests that use it
// skip elsewhere and say why.
import { createRequire } from 'node:module'

function loads(): string | undefined {
  try {
    const require = createRequire(import.meta.url)
    const resolved = require.resolve('better-sqlite3', {
      paths: [require.resolve('@langchain/langgraph-checkpoint-sqlite')],
    })
    const Database = require(resolved)
    new Database(':memory:').close()
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message.split('\n')[0] : String(error)
  }
}

/** Why the SQLite saver cannot run here; `undefined` when it can. */
export const sqliteUnavailable = loads()
