// apply_patch on the sandbox: the filesystem capability's editor, reading and writing through the turn's sandbox.
import { applyDiff, type Editor } from '@openai/agents-core'
import type { SandboxHandle } from '@sandkeep/core'
import { resolveWorkspacePath } from './paths.js'

/** An editor whose files live in the sandbox, relative paths under `root`. */
export function createSandboxEditor(sandbox: () => SandboxHandle, root: string): Editor {
  const at = (path: string) => resolveWorkspacePath(root, path)
  return {
    async createFile(operation) {
      await sandbox().writeFile(at(operation.path), applyDiff('', operation.diff, 'create'))
      return { status: 'completed', output: `Created ${operation.path}` }
    },
    async updateFile(operation) {
      const path = at(operation.path)
      const before = await sandbox().readFile(path)
      await sandbox().writeFile(path, applyDiff(before, operation.diff))
      return { status: 'completed', output: `Updated ${operation.path}` }
    },
    async deleteFile(operation) {
      await sandbox().remove(at(operation.path))
      return { status: 'completed', output: `Deleted ${operation.path}` }
    },
  }
}
