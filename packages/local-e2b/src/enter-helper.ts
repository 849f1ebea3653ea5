// A tiny C launcher that does in one exec what the shell chain (sh → nsenter → setpriv → sh) does in four:
// join the sandbox's freezer cgroup, enter its namespaces, fork into its pid namespace, chdir, drop every
// capability, report the sandbox pid on fd 3, exec the command. Compiled once per machine when a C compiler
// is present (cached by content hash); without one the host keeps the shell chain.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** C source of the launcher. Usage: `sandkeep-enter <cgroup dir|-> <target pid|-> <cwd> <cmd> [args...]`. */
export const ENTER_SOURCE = String.raw`#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static void fail(const char *what) {
  fprintf(stderr, "sandkeep-enter: %s: %s\n", what, strerror(errno));
  exit(126);
}

/* Forks straight into the cgroup (clone3 CLONE_INTO_CGROUP): no migration, which on a busy machine costs
   an RCU grace period (10-20 ms) per process. Falls back to joining the cgroup, then fork. */
static pid_t fork_into(int cgroup) {
  if (cgroup >= 0) {
    struct {
      uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
          cgroup;
    } args;
    memset(&args, 0, sizeof args);
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = (uint64_t)cgroup;
    long child = syscall(SYS_clone3, &args, sizeof args);
    if (child >= 0) return (pid_t)child;
    int procs = openat(cgroup, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (procs < 0) fail("open cgroup.procs");
    char pid[32];
    int length = snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (write(procs, pid, length) != length) fail("join cgroup");
    close(procs);
  }
  return fork();
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: sandkeep-enter <cgroup dir|-> <pid|-> <cwd> <cmd> [args...]\n");
    return 126;
  }
  int cgroup = -1;
  if (strcmp(argv[1], "-") != 0) {
    cgroup = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cgroup < 0) fail("open cgroup");
  }
  if (strcmp(argv[2], "-") != 0) {
    /* The mount namespace last: the others are opened through the host's /proc. */
    const char *names[] = {"ipc", "uts", "net", "pid", "mnt"};
    int fds[5];
    for (int i = 0; i < 5; i++) {
      char path[128];
      snprintf(path, sizeof path, "/proc/%s/ns/%s", argv[2], names[i]);
      fds[i] = open(path, O_RDONLY | O_CLOEXEC);
      if (fds[i] < 0) fail(path);
    }
    for (int i = 0; i < 5; i++) {
      if (setns(fds[i], 0) < 0) fail(names[i]);
      close(fds[i]);
    }
  }
  pid_t child = fork_into(cgroup);
  if (child < 0) fail("fork");
  if (child == 0) {
    if (chdir(argv[3]) < 0) fail("cwd");
    for (int cap = 0; cap < 64; cap++) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    dprintf(3, "%d\n", (int)getpid());
    close(3);
    execvp(argv[4], argv + 4);
    fprintf(stderr, "sandkeep-enter: exec %s: %s\n", argv[4], strerror(errno));
    _exit(127);
  }
  close(3);
  if (cgroup >= 0) close(cgroup);
  int status;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) fail("wait");
  }
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    kill(getpid(), WTERMSIG(status));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 126;
}
`

let cached: string | null | undefined

/** Path of the compiled launcher, compiling it on first use; undefined when no C compiler works here. */
export function enterHelperPath(): string | undefined {
  if (cached !== undefined) return cached ?? undefined
  cached = null
  const hash = createHash('sha256').update(ENTER_SOURCE).digest('hex').slice(0, 16)
  const dir = join(tmpdir(), 'sandkeep-local-e2b-bin')
  const binary = join(dir, `sandkeep-enter-${hash}`)
  if (existsSync(binary)) {
    cached = binary
    return binary
  }
  try {
    mkdirSync(dir, { recursive: true, mode: 0o755 })
    const source = join(dir, `sandkeep-enter-${hash}-${process.pid}.c`)
    const temp = `${binary}.${process.pid}.tmp`
    writeFileSync(source, ENTER_SOURCE)
    execFileSync('cc', ['-O2', '-o', temp, source], { stdio: 'ignore', timeout: 30_000 })
    chmodSync(temp, 0o755)
    // Atomic: hosts starting at once each compile, the last rename wins, every one sees a whole file.
    renameSync(temp, binary)
    cached = binary
  } catch {
    cached = null
  } finally {
    rmSync(join(dir, `sandkeep-enter-${hash}-${process.pid}.c`), { force: true })
  }
  return cached ?? undefined
}
