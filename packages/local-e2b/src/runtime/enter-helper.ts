// A tiny C launcher that does in one exec what the shell chain (sh → nsenter → setpriv → sh) does in four:
// join the sandbox's cgroups (freezer, and the limit hierarchies on a hybrid cgroup machine), enter its
// namespaces, fork into its pid namespace, switch to the sandbox's user (root keeps root's capabilities over
// what its user namespace owns, any other user none), chdir, report the sandbox pid on fd 3, exec the command.
// Compiled once per machine when a C compiler is present (compile.ts); without one the host keeps the shell
// chain.
import { compiledHelper } from './compile.js'

/**
 * C source of the launcher. Usage: `sandkeep-enter <cgroup dirs|-> <target pid|-> <uid:gid|-> <cwd> <cmd> [args...]`;
 * the cgroup dirs are colon-separated, the first is forked into, the others are joined first. With a target
 * pid, fd 4 is the sandbox's user namespace, joined by the forked process after the target's other namespaces.
 */
/** The capabilities uid 0 of a sandbox keeps (a bit per capability number), as `CapEff` shows them. */
export const ROOT_CAPABILITY_MASK = 0xfb

const ENTER_SOURCE = String.raw`#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
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

/* CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SETGID, CAP_SETUID: root's file and
   process powers, which the kernel applies only to files and processes whose ids the sandbox's user namespace
   maps. Never CAP_SYS_ADMIN (it would let root make namespaces of its own, owning a network stack's attack
   surface), CAP_NET_ADMIN, CAP_SYS_PTRACE or CAP_SYS_RESOURCE. */
#define SANDBOX_ROOT_CAPABILITIES ${ROOT_CAPABILITY_MASK}ULL

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

/* Syscalls no sandbox needs, refused with EPERM: the kernel's largest attack surfaces reachable without a
   capability (io_uring, perf events, BPF, userfaultfd, the kernel log) and what only an administrator does
   (modules, kexec, reboot, swap, accounting, quotas, mounts, chroot, file handles). */
static const long blocked_syscalls[] = {
#ifdef __NR_io_uring_setup
    __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
#endif
#ifdef __NR_perf_event_open
    __NR_perf_event_open,
#endif
#ifdef __NR_bpf
    __NR_bpf,
#endif
#ifdef __NR_userfaultfd
    __NR_userfaultfd,
#endif
#ifdef __NR_syslog
    __NR_syslog,
#endif
#ifdef __NR_kexec_load
    __NR_kexec_load,
#endif
#ifdef __NR_kexec_file_load
    __NR_kexec_file_load,
#endif
    __NR_init_module, __NR_finit_module, __NR_delete_module, __NR_reboot, __NR_swapon, __NR_swapoff,
    __NR_acct, __NR_quotactl, __NR_mount, __NR_umount2, __NR_pivot_root, __NR_chroot,
#ifdef __NR_fsopen
    __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick, __NR_move_mount, __NR_open_tree,
#endif
#ifdef __NR_mount_setattr
    __NR_mount_setattr,
#endif
    __NR_name_to_handle_at, __NR_open_by_handle_at,
};

#if defined(__x86_64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* A classic BPF program: another architecture's syscalls (i386, x32) and the blocked ones get EPERM. */
static void install_syscall_filter(void) {
#ifdef SANDBOX_AUDIT_ARCH
  enum { BLOCKED = sizeof blocked_syscalls / sizeof blocked_syscalls[0] };
  struct sock_filter program[8 + 2 * BLOCKED];
  size_t n = 0;
  const unsigned int refuse = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_AUDIT_ARCH, 1, 0);
  program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, refuse);
  program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#ifdef __x86_64__
  program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1);
  program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, refuse);
#endif
  for (size_t i = 0; i < BLOCKED; i++) {
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)blocked_syscalls[i], 0, 1);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, refuse);
  }
  program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog filter = {(unsigned short)n, program};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) < 0) fail("seccomp");
#endif
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

/* --user-namespace <host id> <count> <nested 0|1>: makes a sandbox's user namespace in one exec. A child drops
   to the host id (the kernel charges a user namespace's per-user counts to its creator), unshares, waits for
   this process (root) to write its id maps, then, still holding every capability of the new namespace (no
   exec in between), sets its max_user_namespaces to 0 unless nested ones are allowed. Its pid goes to stdout;
   it holds the namespace until stdin closes (the host has opened /proc/<pid>/ns/user by then). */
static int make_user_namespace(char **argv) {
  long base = atol(argv[2]), count = atol(argv[3]);
  int nested = strcmp(argv[4], "1") == 0;
  int to_child[2], to_parent[2];
  if (pipe(to_child) < 0 || pipe(to_parent) < 0) fail("pipe");
  pid_t child = fork();
  if (child < 0) fail("fork");
  char step = 0;
  if (child == 0) {
    close(to_child[1]);
    close(to_parent[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (setgroups(0, NULL) < 0 || setresgid(base, base, base) < 0 || setresuid(base, base, base) < 0) _exit(1);
    if (unshare(CLONE_NEWUSER) < 0) _exit(2);
    if (write(to_parent[1], "u", 1) != 1 || read(to_child[0], &step, 1) != 1) _exit(3);
    if (!nested) {
      int limit = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
      if (limit < 0 || write(limit, "0", 1) != 1) _exit(4);
      close(limit);
    }
    if (write(to_parent[1], "r", 1) != 1) _exit(5);
    for (;;) pause();
  }
  close(to_child[0]);
  close(to_parent[1]);
  if (read(to_parent[0], &step, 1) != 1) {
    fprintf(stderr, "sandkeep-enter: the user namespace's creator failed\n");
    return 126;
  }
  char map[64], path[64];
  int length = snprintf(map, sizeof map, "0 %ld %ld\n", base, count);
  const char *maps[] = {"uid_map", "gid_map"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "/proc/%d/%s", (int)child, maps[i]);
    int file = open(path, O_WRONLY | O_CLOEXEC);
    if (file < 0 || write(file, map, length) != length) fail(path);
    close(file);
  }
  if (write(to_child[1], "m", 1) != 1 || read(to_parent[0], &step, 1) != 1) {
    fprintf(stderr, "sandkeep-enter: could not forbid nested user namespaces\n");
    return 126;
  }
  printf("%d\n", (int)child);
  fflush(stdout);
  while (read(0, &step, 1) > 0) {
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "--user-namespace") == 0) return make_user_namespace(argv);
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
    if (strcmp(argv[2], "-") != 0) {
      /* The sandbox's own user namespace (fd 4) after the others, which belong to the host's root: joining
         it gives every capability there and none on the host's namespaces any more. Only the child joins:
         the launcher that waits for it stays the host's. */
      if (setns(4, CLONE_NEWUSER) < 0) fail("user namespace");
      close(4);
    }
    /* Root of the sandbox keeps root's powers over what its user namespace owns (its files, its processes), as
       a container's root does; everything else of the host belongs to the host's namespaces, where it has
       none. Any other user has no capability at all. */
    int root = strcmp(argv[2], "-") != 0 && uid == 0;
    for (int cap = 0; cap < 64; cap++)
      if (!(root && (SANDBOX_ROOT_CAPABILITIES >> cap & 1))) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (uid >= 0) {
      /* Ids of the sandbox's user namespace. Every capability of the namespace is still held here; the capset
         below leaves root its set and any other user none. */
      if (setgroups(0, NULL) < 0) fail("setgroups");
      if (setgid((gid_t)gid) < 0) fail("setgid");
      if (setuid((uid_t)uid) < 0) fail("setuid");
    }
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct kept[2];
    memset(kept, 0, sizeof kept);
    if (root) kept[0].effective = kept[0].permitted = (uint32_t)SANDBOX_ROOT_CAPABILITIES;
    if (syscall(SYS_capset, &header, kept) < 0) fail("capset");
    /* A session keyring of its own: the one inherited from the host would give possession of its keys. It
       links the user keyring, as a login session's does. */
    syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL);
    syscall(SYS_keyctl, KEYCTL_LINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING);
    if (strcmp(argv[2], "-") != 0) install_syscall_filter();
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
