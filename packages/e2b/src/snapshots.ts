// Snapshots over the SDK's static calls: createSnapshot, createFromSnapshot (E2B's create with the snapshot
// as the template, through the same create path as `create`), deleteSnapshot and listSnapshots.
import { Sandbox } from '@e2b/code-interpreter'
import {
  type CreateSnapshotOptions,
  type SandboxProvider,
  type SnapshotInfo,
  type SnapshotKeeps,
  snapshotBaseName,
  type TakenSnapshot,
  validateCreateSnapshotOptions,
  validateListSnapshotsOptions,
  validateSandboxId,
  validateSnapshotId,
} from '@sandkeep/core/provider'
import { ApiClient, ConnectionConfig } from 'e2b'
import { withE2BErrors } from './errors.js'
import { createSandbox } from './lifecycle.js'
import { type Connection, type OutputLimits, requestOptions } from './options.js'

type Snapshots = Pick<
  SandboxProvider<Sandbox>,
  'snapshotKeeps' | 'createSnapshot' | 'createFromSnapshot' | 'deleteSnapshot' | 'listSnapshots'
>

/**
 * `POST /sandboxes/{id}/snapshots` through the SDK's API client, as `Sandbox.createSnapshot` sends it (less
 * its 429 retry), reading the answer whole: a local-e2b host adds `sizeBytes` (what the snapshot added to its disk), which
 * `Sandbox.createSnapshot` drops. E2B's answer has no size: `bytes` is then absent (not known).
 */
async function postSnapshot(
  connection: Connection,
  sandboxId: string,
  options: CreateSnapshotOptions | undefined,
): Promise<TakenSnapshot> {
  // `retries: 0`: the SDK would retry a 429 on its Retry-After before we could read it, and a 429 that says
  // the snapshot quota is full clears only when a snapshot is deleted. A plain rate limit comes back as
  // retryable SANDBOX_UNAVAILABLE with its wait, which the session manager's retry honours.
  const config = new ConnectionConfig({ ...requestOptions(connection, options?.signal), retries: 0 })
  const answer = await new ApiClient(config).api.POST('/sandboxes/{sandboxID}/snapshots', {
    params: { path: { sandboxID: sandboxId } },
    body: options?.name !== undefined ? { name: options.name } : {},
    signal: config.getSignal(connection.requestTimeoutMs, options?.signal),
  })
  if (!answer.response.ok) {
    const status = answer.response.status
    const detail = (answer.error as { message?: unknown } | undefined)?.message
    // Shaped as the SDK's errors are read by fromE2BError: the status, the message, the headers (Retry-After).
    throw Object.assign(
      new Error(`${status}: ${typeof detail === 'string' ? detail : answer.response.statusText}`),
      {
        statusCode: status,
        headers: answer.response.headers,
      },
    )
  }
  const data = answer.data as { snapshotID: string; sizeBytes?: unknown }
  const bytes = data.sizeBytes
  return {
    snapshotId: data.snapshotID,
    ...(typeof bytes === 'number' && Number.isSafeInteger(bytes) && bytes >= 0 ? { bytes } : {}),
  }
}

export function snapshotCalls(connection: Connection, limits: OutputLimits, keeps: SnapshotKeeps): Snapshots {
  return {
    snapshotKeeps: keeps,
    createSnapshot: (sandboxId, options) =>
      withE2BErrors({ operation: 'createSnapshot', sandboxId }, async () => {
        validateSandboxId(sandboxId)
        validateCreateSnapshotOptions(options)
        return postSnapshot(connection, sandboxId, options)
      }),
    createFromSnapshot: async (snapshotId, options) => {
      validateSnapshotId(snapshotId)
      // The snapshot decides the template: `options.template` is not E2B's to combine with it.
      return createSandbox(connection, limits, snapshotId, options, {
        operation: 'createFromSnapshot',
        snapshotId,
      })
    },
    deleteSnapshot: (snapshotId, options) =>
      withE2BErrors({ operation: 'deleteSnapshot', snapshotId }, async () => {
        validateSnapshotId(snapshotId)
        return Sandbox.deleteSnapshot(snapshotId, requestOptions(connection, options?.signal))
      }),
    listSnapshots: (listOptions = {}) =>
      withE2BErrors({ operation: 'listSnapshots' }, async () => {
        validateListSnapshotsOptions(listOptions)
        const { namePrefix, signal } = listOptions
        const paginator = Sandbox.listSnapshots({
          ...connection,
          ...(listOptions.limit !== undefined ? { limit: listOptions.limit } : {}),
          ...(listOptions.cursor !== undefined ? { nextToken: listOptions.cursor } : {}),
        })
        const matches = (info: { names: string[] }) =>
          namePrefix === undefined || info.names.some((name) => snapshotBaseName(name).startsWith(namePrefix))
        // E2B filters by an exact name only: with a prefix, whole pages are read and filtered here, until
        // `limit` (E2B's page size, default 100) matched or the list ended. Never part of a page: the rest
        // of it would be lost, as the next cursor points past it.
        const wanted = listOptions.limit ?? 100
        const snapshots: SnapshotInfo[] = []
        do {
          const page = await paginator.nextItems(requestOptions(connection, signal))
          snapshots.push(
            ...page.filter(matches).map((info) => ({ snapshotId: info.snapshotId, names: [...info.names] })),
          )
        } while (namePrefix !== undefined && paginator.hasNext && snapshots.length < wanted)
        const cursor = paginator.hasNext ? paginator.nextToken : undefined
        return { snapshots, ...(cursor ? { cursor } : {}) }
      }),
  }
}
