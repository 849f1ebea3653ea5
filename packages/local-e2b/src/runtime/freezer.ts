// Pausing a sandbox's processes: the cgroup freezer (v2 `cgroup.freeze`, v1 `freezer.state`) or, without a
// writable one, SIGSTOP/SIGCONT of its process groups. Also the /proc reads that find and measure them.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FreezerKind } from './support.js'

/** Polls `condition` every ms until it holds; rejects after `timeoutMs`. */
export async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the freezer')
    await sleep(1)
  }
}

/**
 * Freezes the processes of `cgroup` (resolves once the kernel reports them frozen), or, without a cgroup
 * freezer, sends SIGSTOP through `signalAll`.
 */
export async function freezeProcesses(
  freezer: FreezerKind,
  cgroup: string | undefined,
  signalAll: (signal: NodeJS.Signals) => void,
): Promise<void> {
  if (freezer === 'cgroup-v1' && cgroup) {
    writeFileSync(join(cgroup, 'freezer.state'), 'FROZEN')
    await waitFor(() => readFileSync(join(cgroup, 'freezer.state'), 'utf8').trim() === 'FROZEN')
  } else if (freezer === 'cgroup-v2' && cgroup) {
    writeFileSync(join(cgroup, 'cgroup.freeze'), '1')
    await waitFor(() => /frozen 1/.test(readFileSync(join(cgroup, 'cgroup.events'), 'utf8')))
  } else {
    signalAll('SIGSTOP')
  }
}

/** Thaws what {@link freezeProcesses} froze. */
export function thawProcesses(
  freezer: FreezerKind,
  cgroup: string | undefined,
  signalAll: (signal: NodeJS.Signals) => void,
): void {
  if (freezer === 'cgroup-v1' && cgroup) writeFileSync(join(cgroup, 'freezer.state'), 'THAWED')
  else if (freezer === 'cgroup-v2' && cgroup) writeFileSync(join(cgroup, 'cgroup.freeze'), '0')
  else signalAll('SIGCONT')
}

/**
 * Empties a cgroup that an earlier host may have left behind (it was SIGKILLed with the sandbox paused):
 * thaws it, whichever freezer it carries, and kills every member. A frozen v1 cgroup's processes cannot even
 * die until thawed, and a process started into a cgroup still frozen would hang before its first instruction.
 */
export function resetCgroup(dir: string): void {
  for (const [file, value] of [
    ['cgroup.freeze', '0'],
    ['freezer.state', 'THAWED'],
  ] as const) {
    try {
      writeFileSync(join(dir, file), value)
    } catch {}
  }
  try {
    // cgroup v2: the kernel kills every member, frozen ones included, and those forking meanwhile.
    writeFileSync(join(dir, 'cgroup.kill'), '1')
  } catch {
    signalEach(cgroupMembers(dir), 'SIGKILL')
  }
}

/** Sends `signal` to each pid (negative: a process group); a process already gone is skipped. */
export function signalEach(pids: Iterable<number>, signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal)
    } catch {}
  }
}

/** Host pids of the members of a cgroup ([] when it is gone). */
export function cgroupMembers(cgroup: string): number[] {
  try {
    return readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** The fields of /proc/<pid>/stat after the command (state, ppid, pgrp, …, utime at 11, stime at 12). */
function statFields(pid: number | string): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}

/** Live processes whose process group is one of `groups` (scan of /proc; the fallback without a cgroup). */
export function processesInGroups(groups: Set<number>): number[] {
  if (groups.size === 0) return []
  const pids: number[] = []
  let names: string[]
  try {
    names = readdirSync('/proc')
  } catch {
    return [...groups]
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue
    try {
      const fields = statFields(name)
      if (fields[0] !== 'Z' && groups.has(Number(fields[2]))) pids.push(Number(name))
    } catch {}
  }
  return pids
}

/** utime + stime of one process in clock ticks (0 when it is gone). */
export function processCpuTicks(pid: number): number {
  try {
    const fields = statFields(pid)
    // After the command field: state is field 3, utime 14, stime 15 (1-based in proc(5)).
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0
  }
}
