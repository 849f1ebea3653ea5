// A tiny C launcher that does in one exec what the shell chain (sh → nsenter → setpriv → sh) does in four:
// join the sandbox's cgroups (freezer, and the limit hierarchies on a hybrid cgroup machine), enter its
// namespaces, fork into its pid namespace, drop every capability and switch to the sandbox's user, chdir,
// report the sandbox pid on fd 3, exec the command. Compiled once per machine when a C compiler
// is present (compile.ts); without one the host keeps the shell chain.
import { compiledHelper } from './compile.js'

/**
 * C source of the launcher. Usage: `sandkeep-enter <cgroup dirs|-> <target pid|-> <uid:gid|-> <cwd> <cmd> [args...]`;
 * the cgroup dirs are colon-separated, the first is forked into, the others are joined first.
 */
const ENTER_SOURCE = String.raw`#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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

static void join_cgroup(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/cgroup.procs", dir);
  int procs = open(path, O_WRONLY | O_CLOEXEC);
  if (procs < 0) fail(path);
  char pid[32];
  int length = snprintf(pid, sizeof pid, "%d", (int)getpid());
  if (write(procs, pid, length) != length) fail(path);
  close(procs);
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: sandkeep-enter <cgroup dirs|-> <pid|-> <uid:gid|-> <cwd> <cmd> [args...]\n");
    return 126;
  }
  int cgroup = -1;
  if (strcmp(argv[1], "-") != 0) {
    /* The limit hierarchies (cgroup v1 pids, memory, cpu) are joined by this process, so that the fork below
       already counts against the sandbox's pids.max; the first directory (the freezer) is forked into. */
    char *rest = strchr(argv[1], ':');
    if (rest) *rest++ = 0;
    while (rest && *rest) {
      char *next = strchr(rest, ':');
      if (next) *next++ = 0;
      join_cgroup(rest);
      rest = next;
    }
    cgroup = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cgroup < 0) fail("open cgroup");
  }
  long uid = -1, gid = -1;
  if (strcmp(argv[3], "-") != 0 && sscanf(argv[3], "%ld:%ld", &uid, &gid) != 2) {
    fprintf(stderr, "sandkeep-enter: bad uid:gid %s\n", argv[3]);
    return 126;
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
    for (int cap = 0; cap < 64; cap++) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (uid >= 0) {
      /* setuid from root to another uid clears the permitted and effective capabilities too. */
      if (setgroups(0, NULL) < 0) fail("setgroups");
      if (setgid((gid_t)gid) < 0) fail("setgid");
      if (setuid((uid_t)uid) < 0) fail("setuid");
    }
    if (chdir(argv[4]) < 0) fail("cwd");
    dprintf(3, "%d\n", (int)getpid());
    close(3);
    execvp(argv[5], argv + 5);
    fprintf(stderr, "sandkeep-enter: exec %s: %s\n", argv[5], strerror(errno));
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

/** Path of the compiled launcher, compiling it on first use; undefined when no C compiler works here. */
export function enterHelperPath(): string | undefined {
  return compiledHelper('sandkeep-enter', ENTER_SOURCE)
}
