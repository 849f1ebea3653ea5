// A tiny C launcher that does in one exec what the shell chain (sh → nsenter → setpriv → sh) does in four:
// join the sandbox's freezer cgroup, enter its namespaces, fork into its pid namespace, chdir, drop every
// capability, report the sandbox pid on fd 3, exec the command. Compiled once per machine when a C compiler
// is present (cached by content hash); without one the host keeps the shell chain.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** C source of the launcher. Usage: `sandkeep-enter <cgroup.procs|-> <target pid|-> <cwd> <cmd> [args...]`. */
export const ENTER_SOURCE = String.raw`#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void fail(const char *what) {
  fprintf(stderr, "sandkeep-enter: %s: %s\n", what, strerror(errno));
  exit(126);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: sandkeep-enter <cgroup.procs|-> <pid|-> <cwd> <cmd> [args...]\n");
    return 126;
  }
  if (strcmp(argv[1], "-") != 0) {
    int fd = open(argv[1], O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail("open cgroup");
    char pid[32];
    int length = snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (write(fd, pid, length) != length) fail("join cgroup");
    close(fd);
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
  pid_t child = fork();
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
  }
  return cached ?? undefined
}
