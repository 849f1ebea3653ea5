// Snapshots over the SDK's static calls: createSnapshot, createFromSnapshot (E2B's create with the snapshot
// as the template, through the same create path as `create`), deleteSnapshot and listSnapshots.
import { Sandbox } from '@e2b/code-interpreter'
import {
  type SandboxProvider,
  type SnapshotInfo,
  type SnapshotKeeps,
  snapshotBaseName,
  validateCreateSnapshotOptions,
  validateListSnapshotsOptions,
  validateSandboxId,
  validateSnapshotId,
} from '@sandkeep/core/provider'
import { withE2BErrors } from './errors.js'
import { createSandbox } from './lifecycle.js'
import { type Connection, type OutputLimits, requestOptions } from './options.js'

type Snapshots = Pick<
  SandboxProvider<Sandbox>,
  'snapshotKeeps' | 'createSnapshot' | 'createFromSnapshot' | 'deleteSnapshot' | 'listSnapshots'
>

export function snapshotCalls(connection: Connection, limits: OutputLimits, keeps: SnapshotKeeps): Snapshots {
  return {
    snapshotKeeps: keeps,
    createSnapshot: (sandboxId, options) =>
      withE2BErrors({ operation: 'createSnapshot', sandboxId }, async () => {
        validateSandboxId(sandboxId)
        validateCreateSnapshotOptions(options)
        const taken = await Sandbox.createSnapshot(sandboxId, {
          ...requestOptions(connection, options?.signal),
          ...(options?.name !== undefined ? { name: options.name } : {}),
        })
        return { snapshotId: taken.snapshotId }
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
