// persistWorkspace / hydrateWorkspace: the workspace root as a tar archive, made and unpacked inside the sandbox.
// The SDK's contract is bytes it stores itself (its snapshot specs); sandkeep's checkpoints are platform
// snapshots named by id and restored through `sessions.restore`, so they cannot stand in for these bytes.
import { randomUUID } from 'node:crypto'
import { type SandboxHandle, SandkeepError } from '@sandkeep/core'
import { shellQuote } from '@sandkeep/core/provider'

/** The workspace root's contents as a tar archive. */
export async function persistWorkspace(sandbox: SandboxHandle, root: string): Promise<Uint8Array> {
  const archive = `/tmp/sandkeep-workspace-${randomUUID()}.tar`
  await run(
    sandbox,
    `mkdir -p ${shellQuote(root)} && tar -cf ${shellQuote(archive)} -C ${shellQuote(root)} .`,
  )
  try {
    return await sandbox.readFile(archive, { format: 'bytes' })
  } finally {
    await sandbox.remove(archive).catch(() => {})
  }
}

/** Unpacks a tar archive (as `persistWorkspace` made it) into the workspace root. */
export async function hydrateWorkspace(
  sandbox: SandboxHandle,
  root: string,
  data: string | ArrayBuffer | Uint8Array,
): Promise<void> {
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(data)
  const archive = `/tmp/sandkeep-workspace-${randomUUID()}.tar`
  await sandbox.writeFile(archive, bytes)
  try {
    await run(
      sandbox,
      `mkdir -p ${shellQuote(root)} && tar -xf ${shellQuote(archive)} -C ${shellQuote(root)}`,
    )
  } finally {
    await sandbox.remove(archive).catch(() => {})
  }
}

async function run(sandbox: SandboxHandle, command: string): Promise<void> {
  const result = await sandbox.runCommand(command)
  if (result.exitCode !== 0) {
    throw new SandkeepError({
      code: 'PROVIDER_ERROR',
      message: `The workspace archive command failed (exit ${result.exitCode}): ${result.stderr.slice(0, 300)}`,
      sandboxId: sandbox.id,
    })
  }
}
