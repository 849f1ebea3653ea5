// The mock's snapshots, kept in memory like its sandboxes: createSnapshot copies a running sandbox's files
// (and its memory when configured), createFromSnapshot starts a sandbox from the copy. Like E2B, a second
// snapshot under a name replaces the first under the same id, and the list is newest first.
import { SandkeepError } from '@sandkeep/core'
import {
  type SandboxProvider,
  type SnapshotInfo,
  validateCreateSnapshotOptions,
  validateListSnapshotsOptions,
  validateSandboxId,
  validateSnapshotId,
} from '@sandkeep/core/provider'
import { type MockPlatform, nextSerial, pageOf } from './platform.js'
import { copyFiles, startSandbox } from './start.js'
import type { MockSandbox, MockSnapshot } from './types.js'

type SnapshotOps = Required<
  Pick<
    SandboxProvider<MockSandbox>,
    'snapshotKeeps' | 'createSnapshot' | 'createFromSnapshot' | 'deleteSnapshot' | 'listSnapshots'
  >
>

function snapshotNotFound(snapshotId: string): SandkeepError {
  return new SandkeepError({
    code: 'SNAPSHOT_NOT_FOUND',
    message: `Mock snapshot ${snapshotId} does not exist (deleted, or never made): take a new one.`,
  })
}

function infoOfSnapshot(snapshot: MockSnapshot): SnapshotInfo {
  return {
    snapshotId: snapshot.snapshotId,
    names: [...snapshot.names],
    sandboxId: snapshot.sandboxId,
    createdAt: snapshot.createdAt,
  }
}

export function snapshotOps(platform: MockPlatform, settings: { keepsMemory?: boolean }): SnapshotOps {
  const { snapshots } = platform
  const keepsMemory = settings.keepsMemory ?? false
  return {
    snapshotKeeps: { files: true, memory: keepsMemory },
    async createSnapshot(sandboxId, snapshotOptions) {
      validateSandboxId(sandboxId)
      validateCreateSnapshotOptions(snapshotOptions)
      const name = snapshotOptions?.name
      await platform.enter('createSnapshot', sandboxId, name)
      // A paused sandbox cannot be snapshotted (E2B answers 409): `running` says SANDBOX_UNAVAILABLE.
      const source = platform.running(sandboxId)
      const named =
        name === undefined ? undefined : [...snapshots.values()].find((s) => s.names.includes(name))
      const snapshot: MockSnapshot = {
        snapshotId: named?.snapshotId ?? `mock-snapshot-${process.pid}-${nextSerial()}`,
        names: name === undefined ? [] : [name],
        sandboxId,
        createdAt: new Date(),
        template: source.template,
        envs: { ...source.envs },
        files: copyFiles(source.files),
        ...(keepsMemory
          ? {
              memory: {
                globals: structuredClone(source.memory),
                processes: structuredClone(source.processes),
              },
            }
          : {}),
      }
      // Re-inserted, so a replaced snapshot lists as the newest.
      snapshots.delete(snapshot.snapshotId)
      snapshots.set(snapshot.snapshotId, snapshot)
      // Its size as a platform would report it: the bytes of the files it copied.
      const bytes = [...snapshot.files.values()].reduce((sum, data) => sum + data.byteLength, 0)
      return { snapshotId: snapshot.snapshotId, bytes }
    },
    async createFromSnapshot(snapshotId, createOptions) {
      validateSnapshotId(snapshotId)
      await platform.enter('createFromSnapshot', undefined, snapshotId)
      const snapshot = snapshots.get(snapshotId)
      if (!snapshot) throw snapshotNotFound(snapshotId)
      return startSandbox(platform, createOptions, snapshot)
    },
    async deleteSnapshot(snapshotId) {
      validateSnapshotId(snapshotId)
      await platform.enter('deleteSnapshot', undefined, snapshotId)
      return snapshots.delete(snapshotId)
    },
    async listSnapshots(listOptions) {
      validateListSnapshotsOptions(listOptions)
      await platform.enter('listSnapshots', undefined, listOptions?.namePrefix)
      const prefix = listOptions?.namePrefix
      const matches = [...snapshots.values()]
        .reverse()
        .filter((s) => prefix === undefined || s.names.some((name) => name.startsWith(prefix)))
      const { page, cursor } = pageOf(matches, listOptions)
      return { snapshots: page.map(infoOfSnapshot), ...(cursor ? { cursor } : {}) }
    },
  }
}
