// The manifest's materialization as sandkeep journal steps: each step runs once on the sandbox and is recorded,
// so a sandbox the manager has to recreate (its old one gone) gets the manifest back from the journal's replay.
import { cloneManifest, type Manifest } from '@openai/agents-core/sandbox'
import type { JournalStep } from '@sandkeep/core'
import { shellQuote } from '@sandkeep/core/provider'
import { invalid, unsupported } from './errors.js'

/** The Agents SDK's default root, which an E2B sandbox's unprivileged user cannot create. */
export const SDK_DEFAULT_ROOT = '/workspace'

/** The manifest with the SDK's default root replaced by the client's `defaultRoot`; others are kept. */
export function withClientRoot(manifest: Manifest, defaultRoot: string): Manifest {
  if (manifest.root !== SDK_DEFAULT_ROOT) return manifest
  return cloneManifest({ ...manifest, root: defaultRoot })
}

/**
 * The steps that make the manifest's tree: the root, then each `dir` and `file` entry, parents first.
 * Throws before any I/O for what the journal cannot carry: local files and directories (paths on the machine
 * of the run that made the state), git repositories, mounts, users and groups, binary file contents.
 */
export function manifestSteps(manifest: Manifest): JournalStep[] {
  if (manifest.users.length > 0 || manifest.groups.length > 0) {
    throw unsupported(
      'The sandkeep sandbox client runs everything as the sandbox user: leave out manifest users and groups.',
    )
  }
  const steps: JournalStep[] = [{ kind: 'command', command: `mkdir -p ${shellQuote(manifest.root)}` }]
  for (const { absolutePath, logicalPath, entry } of manifest.iterEntries()) {
    if (entry.type === 'dir') {
      steps.push({ kind: 'command', command: `mkdir -p ${shellQuote(absolutePath)}` })
    } else if (entry.type === 'file') {
      steps.push({ kind: 'file', path: absolutePath, content: textContent(logicalPath, entry.content) })
    } else {
      throw unsupported(
        `Manifest entry ${logicalPath} is a ${entry.type} entry; the sandkeep sandbox client materializes file and dir entries only (their contents are journaled so a recreated sandbox gets them back).`,
      )
    }
  }
  return steps
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

function textContent(path: string, content: string | Uint8Array): string {
  if (typeof content === 'string') return content
  try {
    return strictUtf8.decode(content)
  } catch {
    throw invalid(
      `Manifest file ${path} is not UTF-8 text; the journal keeps text files only. Write it from a tool instead.`,
    )
  }
}

/** Steps not yet in the journal, in order: what a create has to run (and record) on this sandbox. */
export function unrecordedSteps(steps: JournalStep[], journal: JournalStep[]): JournalStep[] {
  const recorded = new Set(journal.map((step) => JSON.stringify(step)))
  return steps.filter((step) => !recorded.has(JSON.stringify(step)))
}
