// Per-sandbox resource limits and how they are set on the sandbox's cgroups: the freezer's own cgroup v2 on a
// pure v2 machine, or one v1 cgroup per controller on a hybrid machine.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { LimitController, RuntimeSupport } from './support.js'

/** Resource limits of one sandbox; the kernel answers a sandbox past one (EAGAIN, OOM kill, ENOSPC). */
export interface SandboxLimits {
  /** Most processes and threads at once (cgroup pids.max). */
  pids: number
  /** Memory in bytes (cgroup memory.max / memory.limit_in_bytes), swap excluded. */
  memoryBytes: number
  /** CPU weight, 1 to 10000, 100 = an equal share (cgroup cpu.weight; cpu.shares = weight * 1024 / 100 on v1). */
  cpuWeight: number
  /** Size in bytes of the disk holding /home/user and /tmp (a loop-mounted ext4 image). */
  diskBytes: number
  /** Size in bytes of each of the sandbox's private tmpfs /var/tmp and /dev/shm. */
  tmpfsBytes: number
}

/** Defaults: E2B's default sandbox size (1 GiB of memory) and a 2 GiB disk. */
export const DEFAULT_LIMITS: SandboxLimits = {
  pids: 512,
  memoryBytes: 1024 * 1024 * 1024,
  cpuWeight: 100,
  diskBytes: 2 * 1024 * 1024 * 1024,
  tmpfsBytes: 256 * 1024 * 1024,
}

/**
 * Writes the limits on the sandbox's cgroups (the freezer's `freezerDir`, or new cgroups under the limit
 * hierarchies, whose directories are returned: processes join them too). A machine without a controller
 * keeps going without that limit; `logger` says so.
 */
export function applyLimits(
  support: RuntimeSupport,
  sandboxId: string,
  freezerDir: string,
  limits: SandboxLimits,
  logger: ((line: string) => void) | undefined,
): string[] {
  const write = (dir: string, file: string, value: string) => {
    try {
      writeFileSync(join(dir, file), value)
    } catch (error) {
      logger?.(
        `[sandkeep-local-e2b] could not set ${file} of sandbox ${sandboxId}: ${(error as Error).message}`,
      )
    }
  }
  if (support.limitsInFreezerCgroup) {
    write(freezerDir, 'pids.max', String(limits.pids))
    write(freezerDir, 'memory.max', String(limits.memoryBytes))
    // Swap would let a sandbox past its memory limit slow the whole machine down instead of being killed.
    if (existsSync(join(freezerDir, 'memory.swap.max'))) write(freezerDir, 'memory.swap.max', '0')
    write(freezerDir, 'cpu.weight', String(limits.cpuWeight))
    return []
  }
  const dirs: string[] = []
  for (const [controller, parent] of Object.entries(support.limitParents) as Array<
    [LimitController, string]
  >) {
    const dir = join(parent, sandboxId)
    try {
      mkdirSync(dir, { recursive: true })
    } catch {
      continue
    }
    dirs.push(dir)
    if (controller === 'pids') write(dir, 'pids.max', String(limits.pids))
    else if (controller === 'memory') {
      write(dir, 'memory.limit_in_bytes', String(limits.memoryBytes))
      if (existsSync(join(dir, 'memory.memsw.limit_in_bytes')))
        write(dir, 'memory.memsw.limit_in_bytes', String(limits.memoryBytes))
    } else write(dir, 'cpu.shares', String(Math.max(2, Math.round((limits.cpuWeight * 1024) / 100))))
  }
  return dirs
}
