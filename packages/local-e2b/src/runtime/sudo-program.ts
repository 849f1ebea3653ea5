// `sudo` inside a sandbox. E2B's `user` has passwordless sudo; here no program can become root by exec
// (setuid is void under no_new_privs, which every sandbox process has). Instead the host starts one broker per
// boot as the sandbox's root (uid 0 of its user namespace, with the capabilities root has there, the syscall
// filter on), listening on an abstract unix socket, which exists only in the sandbox's own network namespace.
// `sudo` (the same program under that name) checks that root serves the socket, hands the broker its stdin,
// stdout and stderr (SCM_RIGHTS), the command, the environment and the cwd, forwards the signals it gets, and
// exits with the command's status. The broker runs the command in the same sandbox, so it can do nothing the
// sandbox's root cannot; no host code ever reads what a sandbox sends. Compiled once per machine (compile.ts)
// and bound into every sandbox at SANDBOX_SUDO_PATH.
import { compiledHelper } from './compile.js'
import { SANDBOX_PATH } from './etc-files.js'

/** Where the program is inside a sandbox (on PATH); also bound over `/usr/bin/sudo` when the host has one. */
export const SANDBOX_SUDO_PATH = '/opt/sandkeep/bin/sudo'

/** The broker's first argument. */
export const SUDO_BROKER_ARGUMENT = '--sandkeep-broker'

const SUDO_SOURCE = String.raw`#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define SOCKET_NAME "sandkeep-sudo"
#define BROKER_ARGUMENT "${SUDO_BROKER_ARGUMENT}"
#define SECURE_PATH "${SANDBOX_PATH}"
/* A request is at most 1 MiB and 65536 strings; the broker refuses anything else. */
#define MAX_REQUEST (1u << 20)
#define MAX_ITEMS 65536u
#define STATUS_SIGNALED 256

static void die(const char *what) {
  fprintf(stderr, "sudo: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* A socket, and the broker's address in *address: abstract (a leading NUL), so scoped to the network
   namespace, which is the sandbox's own. Returns the address's length. */
static socklen_t broker_socket(int *fd, struct sockaddr_un *address) {
  *fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*fd < 0) die("socket");
  memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  memcpy(address->sun_path + 1, SOCKET_NAME, strlen(SOCKET_NAME));
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(SOCKET_NAME));
}

/* The message that carries a request's length, and the caller's three stdio fds beside it. */
struct stdio_message {
  uint32_t length;
  struct iovec vector;
  char control[CMSG_SPACE(3 * sizeof(int))];
  struct msghdr header;
};

static void stdio_message_init(struct stdio_message *message) {
  memset(message, 0, sizeof *message);
  message->vector.iov_base = &message->length;
  message->vector.iov_len = sizeof message->length;
  message->header.msg_iov = &message->vector;
  message->header.msg_iovlen = 1;
  message->header.msg_control = message->control;
  message->header.msg_controllen = sizeof message->control;
}

static int write_all(int fd, const void *data, size_t length) {
  const char *bytes = data;
  while (length > 0) {
    ssize_t sent = send(fd, bytes, length, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return -1;
    bytes += sent;
    length -= (size_t)sent;
  }
  return 0;
}

static int read_all(int fd, void *data, size_t length) {
  char *bytes = data;
  while (length > 0) {
    ssize_t got = recv(fd, bytes, length, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    bytes += got;
    length -= (size_t)got;
  }
  return 0;
}

/* ---- the broker: root of the sandbox ---- */

struct request {
  uid_t uid;
  gid_t gid;
  char *cwd;
  char **argv;
  char **envp;
};

/* Splits the payload into its NUL-terminated strings: "v1", uid, gid, cwd, argc, argv..., envc, env... */
static int parse_request(char *payload, uint32_t length, struct request *out) {
  char *items[8];
  char *cursor = payload, *end = payload + length;
  if (length == 0 || payload[length - 1] != 0) return -1;
  for (int i = 0; i < 5; i++) {
    if (cursor >= end) return -1;
    items[i] = cursor;
    cursor += strlen(cursor) + 1;
  }
  if (strcmp(items[0], "v1") != 0) return -1;
  char *rest;
  unsigned long uid = strtoul(items[1], &rest, 10);
  if (*items[1] == 0 || *rest || uid > 65535) return -1;
  unsigned long gid = strtoul(items[2], &rest, 10);
  if (*items[2] == 0 || *rest || gid > 65535) return -1;
  if (items[3][0] != '/') return -1;
  unsigned long argc = strtoul(items[4], &rest, 10);
  if (*items[4] == 0 || *rest || argc == 0 || argc > MAX_ITEMS) return -1;
  char **argv = calloc(argc + 1, sizeof *argv);
  if (!argv) return -1;
  for (unsigned long i = 0; i < argc; i++) {
    if (cursor >= end) return -1;
    argv[i] = cursor;
    cursor += strlen(cursor) + 1;
  }
  if (cursor >= end) return -1;
  unsigned long envc = strtoul(cursor, &rest, 10);
  if (*cursor == 0 || *rest || envc > MAX_ITEMS) return -1;
  cursor += strlen(cursor) + 1;
  char **envp = calloc(envc + 1, sizeof *envp);
  if (!envp) return -1;
  for (unsigned long i = 0; i < envc; i++) {
    if (cursor >= end || !strchr(cursor, '=')) return -1;
    envp[i] = cursor;
    cursor += strlen(cursor) + 1;
  }
  if (cursor != end) return -1;
  out->uid = (uid_t)uid;
  out->gid = (gid_t)gid;
  out->cwd = items[3];
  out->argv = argv;
  out->envp = envp;
  return 0;
}

/* One connection: receive the request and the caller's stdio, run the command, relay signals, send the status. */
static void serve(int connection) {
  signal(SIGCHLD, SIG_DFL);
  /* A client that never sends its request must not hold this process for ever. */
  struct timeval patience = {10, 0};
  setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  int fds[3];
  struct stdio_message message;
  stdio_message_init(&message);
  ssize_t got = recvmsg(connection, &message.header, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  uint32_t length = message.length;
  struct cmsghdr *header = CMSG_FIRSTHDR(&message.header);
  int received = 0;
  if (header && header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
    received = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    if (received > 3) received = 3;
    memcpy(fds, CMSG_DATA(header), (size_t)received * sizeof(int));
  }
  if (got != (ssize_t)sizeof length || (message.header.msg_flags & MSG_CTRUNC) || received != 3 ||
      length > MAX_REQUEST)
    _exit(1);
  char *payload = malloc(length + 1);
  if (!payload || read_all(connection, payload, length) < 0) _exit(1);
  payload[length] = 0;
  struct request request;
  if (parse_request(payload, length, &request) < 0) _exit(1);
  struct ucred peer;
  socklen_t peer_length = sizeof peer;
  if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &peer_length) < 0) _exit(1);
  patience.tv_sec = 0;
  setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);

  sigset_t children;
  sigemptyset(&children);
  sigaddset(&children, SIGCHLD);
  sigprocmask(SIG_BLOCK, &children, NULL);
  int child_events = signalfd(-1, &children, SFD_CLOEXEC);
  if (child_events < 0) _exit(1);
  pid_t child = fork();
  if (child < 0) _exit(1);
  if (child == 0) {
    /* A process group of its own: the caller's signals and its departure reach the whole command. */
    setpgid(0, 0);
    /* The command starts with every signal at its default, whatever the broker inherited. */
    for (int signo = 1; signo < NSIG; signo++) signal(signo, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int i = 0; i < 3; i++)
      if (dup2(fds[i], i) < 0) _exit(1);
    gid_t groups[1] = {request.gid};
    if (setgroups(request.uid == 0 ? 0 : 1, groups) < 0 || setgid(request.gid) < 0) {
      fprintf(stderr, "sudo: cannot switch to group %u: %s\n", (unsigned)request.gid, strerror(errno));
      _exit(1);
    }
    /* To another user: the kernel clears every capability of root with the uid. */
    if (setuid(request.uid) < 0) {
      fprintf(stderr, "sudo: cannot switch to user %u: %s\n", (unsigned)request.uid, strerror(errno));
      _exit(1);
    }
    if (chdir(request.cwd) < 0) {
      fprintf(stderr, "sudo: unable to change directory to %s: %s\n", request.cwd, strerror(errno));
      _exit(1);
    }
    /* Who asked, as the kernel says, not as the caller says. */
    size_t count = 0;
    while (request.envp[count]) count++;
    char **environment = calloc(count + 4, sizeof *environment);
    if (!environment) _exit(1);
    size_t kept = 0;
    for (size_t i = 0; i < count; i++)
      if (strncmp(request.envp[i], "SUDO_UID=", 9) != 0 && strncmp(request.envp[i], "SUDO_GID=", 9) != 0 &&
          strncmp(request.envp[i], "SUDO_USER=", 10) != 0)
        environment[kept++] = request.envp[i];
    char uid_line[32], gid_line[32], user_line[300];
    snprintf(uid_line, sizeof uid_line, "SUDO_UID=%u", (unsigned)peer.uid);
    snprintf(gid_line, sizeof gid_line, "SUDO_GID=%u", (unsigned)peer.gid);
    environment[kept++] = uid_line;
    environment[kept++] = gid_line;
    struct passwd *caller = getpwuid(peer.uid);
    if (caller) {
      snprintf(user_line, sizeof user_line, "SUDO_USER=%s", caller->pw_name);
      environment[kept++] = user_line;
    }
    extern char **environ;
    environ = environment;
    execvp(request.argv[0], request.argv);
    fprintf(stderr, "sudo: %s: %s\n", request.argv[0], errno == ENOENT ? "command not found" : strerror(errno));
    _exit(errno == ENOENT ? 1 : 126);
  }
  for (int i = 0; i < 3; i++) close(fds[i]);
  struct pollfd waits[2] = {{child_events, POLLIN, 0}, {connection, POLLIN, 0}};
  int status = 0;
  for (;;) {
    if (poll(waits, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (waits[0].revents) {
      struct signalfd_siginfo info;
      if (read(child_events, &info, sizeof info) < 0 && errno != EAGAIN) break;
      pid_t done = waitpid(child, &status, WNOHANG);
      if (done == child) break;
    }
    if (waits[1].revents) {
      unsigned char signals[64];
      ssize_t count = recv(connection, signals, sizeof signals, 0);
      if (count <= 0) {
        /* The caller is gone (killed, timed out): so is its command. */
        kill(-child, SIGKILL);
        waits[1].fd = -1;
        continue;
      }
      for (ssize_t i = 0; i < count; i++)
        if (signals[i] >= 1 && signals[i] < 65 && signals[i] != SIGKILL && signals[i] != SIGSTOP)
          kill(-child, signals[i]);
    }
  }
  int32_t result = WIFSIGNALED(status) ? STATUS_SIGNALED + WTERMSIG(status) : WEXITSTATUS(status);
  write_all(connection, &result, sizeof result);
  _exit(0);
}

static int broker(void) {
  if (getuid() != 0) {
    fprintf(stderr, "sudo: the broker runs as the sandbox's root only\n");
    return 1;
  }
  int listener;
  struct sockaddr_un address;
  socklen_t size = broker_socket(&listener, &address);
  if (bind(listener, (struct sockaddr *)&address, size) < 0) die("bind");
  if (listen(listener, 64) < 0) die("listen");
  /* Each connection's process is reaped by the kernel. */
  signal(SIGCHLD, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  for (;;) {
    int connection = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (connection < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE || errno == ENOMEM) {
        if (errno != EINTR && errno != ECONNABORTED) sleep(1);
        continue;
      }
      die("accept");
    }
    pid_t handler = fork();
    if (handler == 0) {
      close(listener);
      serve(connection);
    }
    close(connection);
  }
}

/* ---- sudo: the caller ---- */

static int signal_pipe[2] = {-1, -1};

static void forward(int signo) {
  unsigned char byte = (unsigned char)signo;
  int saved = errno;
  if (write(signal_pipe[1], &byte, 1) < 0) {
  }
  errno = saved;
}

struct buffer {
  char *data;
  size_t length, capacity;
};

static void append(struct buffer *buffer, const char *text) {
  size_t size = strlen(text) + 1;
  if (buffer->length + size > buffer->capacity) {
    size_t capacity = buffer->capacity ? buffer->capacity * 2 : 4096;
    while (capacity < buffer->length + size) capacity *= 2;
    buffer->data = realloc(buffer->data, capacity);
    if (!buffer->data) die("memory");
    buffer->capacity = capacity;
  }
  memcpy(buffer->data + buffer->length, text, size);
  buffer->length += size;
}

static void usage(FILE *to) {
  fprintf(to,
          "usage: sudo [-u user] [-E | --preserve-env] [-H] [-n] [VAR=value...] command [args...]\n"
          "       sudo -i | -s [command...]\n"
          "       sudo -l | -v | -k | -K | -V | -h\n"
          "Runs the command as root (or -u user) of this sandbox, without a password, as E2B's user may.\n");
}

static int is_assignment(const char *text) {
  const char *equals = strchr(text, '=');
  if (!equals || equals == text) return 0;
  for (const char *c = text; c < equals; c++)
    if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (c > text && *c >= '0' && *c <= '9')))
      return 0;
  return 1;
}

/* Environment variables sudo keeps by default (env_reset), besides those it sets itself. */
static int kept_by_default(const char *entry) {
  static const char *names[] = {"TERM=", "COLORTERM=", "DISPLAY=", "LANG=", "LANGUAGE=", "LC_", "TZ=", "COLUMNS=", "LINES=", "LS_COLORS=", NULL};
  for (int i = 0; names[i]; i++)
    if (strncmp(entry, names[i], strlen(names[i])) == 0) return 1;
  return 0;
}

static int set_by_sudo(const char *entry) {
  static const char *names[] = {"HOME=", "USER=", "LOGNAME=", "SHELL=", "PATH=", "MAIL=", "SUDO_", NULL};
  for (int i = 0; names[i]; i++)
    if (strncmp(entry, names[i], strlen(names[i])) == 0) return 1;
  return 0;
}

static int client(int argc, char **argv) {
  const char *target = "root";
  int preserve = 0, login = 0, shell = 0, index = 1;
  for (; index < argc; index++) {
    const char *arg = argv[index];
    if (strcmp(arg, "--") == 0) {
      index++;
      break;
    }
    if (arg[0] != '-' || arg[1] == 0) break;
    if (strcmp(arg, "-u") == 0 || strcmp(arg, "--user") == 0) {
      if (++index >= argc) {
        usage(stderr);
        return 1;
      }
      target = argv[index];
    } else if (strncmp(arg, "--user=", 7) == 0) target = arg + 7;
    else if (strncmp(arg, "-u", 2) == 0) target = arg + 2;
    else if (strcmp(arg, "-E") == 0 || strcmp(arg, "--preserve-env") == 0 || strncmp(arg, "--preserve-env=", 15) == 0) preserve = 1;
    else if (strcmp(arg, "-i") == 0 || strcmp(arg, "--login") == 0) login = 1;
    else if (strcmp(arg, "-s") == 0 || strcmp(arg, "--shell") == 0) shell = 1;
    else if (strcmp(arg, "-H") == 0 || strcmp(arg, "--set-home") == 0 || strcmp(arg, "-n") == 0 ||
             strcmp(arg, "--non-interactive") == 0 || strcmp(arg, "-S") == 0 || strcmp(arg, "--stdin") == 0 ||
             strcmp(arg, "-P") == 0 || strcmp(arg, "--preserve-groups") == 0) {
    } else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--validate") == 0 || strcmp(arg, "-k") == 0 ||
               strcmp(arg, "--reset-timestamp") == 0 || strcmp(arg, "-K") == 0 || strcmp(arg, "--remove-timestamp") == 0) {
      if (index + 1 >= argc) return 0;
    } else if (strcmp(arg, "-l") == 0 || strcmp(arg, "--list") == 0) {
      printf("User may run the following commands on this sandbox:\n    (ALL : ALL) NOPASSWD: ALL\n");
      return 0;
    } else if (strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0) {
      printf("sudo of a sandkeep local-e2b sandbox (passwordless, root of this sandbox only)\n");
      return 0;
    } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "sudo: option %s is not supported here\n", arg);
      usage(stderr);
      return 1;
    }
  }
  struct passwd *account = NULL;
  if (target[0] == '#') {
    char *rest;
    unsigned long uid = strtoul(target + 1, &rest, 10);
    if (target[1] && !*rest) account = getpwuid((uid_t)uid);
  } else
    account = getpwnam(target);
  if (!account) {
    fprintf(stderr, "sudo: unknown user %s\n", target);
    return 1;
  }
  const char *user_shell = account->pw_shell && account->pw_shell[0] ? account->pw_shell : "/bin/sh";
  struct buffer assignments = {0};
  while (index < argc && is_assignment(argv[index])) append(&assignments, argv[index++]);
  if (index >= argc && !login && !shell) {
    usage(stderr);
    return 1;
  }

  /* The command: as given, or the target's shell (a login shell with -i), running the rest as one line. */
  struct buffer command = {0};
  size_t command_count = 0;
  if (login || shell) {
    const char *program = shell && !login && getenv("SHELL") ? getenv("SHELL") : user_shell;
    append(&command, program);
    command_count++;
    if (login) {
      append(&command, "-l");
      command_count++;
    }
    if (index < argc) {
      struct buffer line = {0};
      size_t total = 0;
      for (int i = index; i < argc; i++) total += strlen(argv[i]) + 1;
      line.data = calloc(1, total + 1);
      if (!line.data) die("memory");
      for (int i = index; i < argc; i++) {
        if (i > index) strcat(line.data, " ");
        strcat(line.data, argv[i]);
      }
      append(&command, "-c");
      append(&command, line.data);
      command_count += 2;
    }
  } else {
    for (int i = index; i < argc; i++) {
      append(&command, argv[i]);
      command_count++;
    }
  }

  /* The environment: reset as sudo's env_reset does, or the caller's with -E; then the target's identity. */
  extern char **environ;
  struct buffer environment = {0};
  size_t environment_count = 0;
  for (char **entry = environ; *entry; entry++) {
    if (set_by_sudo(*entry) && !(preserve && strncmp(*entry, "PATH=", 5) == 0)) continue;
    if (preserve || kept_by_default(*entry)) {
      append(&environment, *entry);
      environment_count++;
    }
  }
  char line[4096];
  const char *identity[] = {"HOME", account->pw_dir, "USER", account->pw_name, "LOGNAME", account->pw_name,
                            "SHELL", user_shell, NULL};
  for (int i = 0; identity[i]; i += 2) {
    snprintf(line, sizeof line, "%s=%s", identity[i], identity[i + 1]);
    append(&environment, line);
    environment_count++;
  }
  if (!preserve || !getenv("PATH")) {
    append(&environment, "PATH=" SECURE_PATH);
    environment_count++;
  }
  for (size_t offset = 0; offset < assignments.length; offset += strlen(assignments.data + offset) + 1) {
    append(&environment, assignments.data + offset);
    environment_count++;
  }
  char cwd[4096];
  if (login) snprintf(cwd, sizeof cwd, "%s", account->pw_dir);
  else if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "/");

  struct buffer payload = {0};
  append(&payload, "v1");
  snprintf(line, sizeof line, "%u", (unsigned)account->pw_uid);
  append(&payload, line);
  snprintf(line, sizeof line, "%u", (unsigned)account->pw_gid);
  append(&payload, line);
  append(&payload, cwd);
  snprintf(line, sizeof line, "%zu", command_count);
  append(&payload, line);
  for (size_t offset = 0; offset < command.length; offset += strlen(command.data + offset) + 1)
    append(&payload, command.data + offset);
  snprintf(line, sizeof line, "%zu", environment_count);
  append(&payload, line);
  for (size_t offset = 0; offset < environment.length; offset += strlen(environment.data + offset) + 1)
    append(&payload, environment.data + offset);
  if (payload.length > MAX_REQUEST) {
    fprintf(stderr, "sudo: the command and its environment are too long\n");
    return 1;
  }

  int connection;
  struct sockaddr_un address;
  socklen_t size = broker_socket(&connection, &address);
  if (connect(connection, (struct sockaddr *)&address, size) < 0) {
    fprintf(stderr, "sudo: the sandbox's root broker is not running (%s)\n", strerror(errno));
    return 1;
  }
  /* Only the sandbox's root may answer: never hand stdio and a command to anyone else. */
  struct ucred peer;
  socklen_t peer_length = sizeof peer;
  if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &peer_length) < 0 || peer.uid != 0) {
    fprintf(stderr, "sudo: the broker's socket is not root's; refusing\n");
    return 1;
  }
  for (int fd = 0; fd < 3; fd++) {
    if (fcntl(fd, F_GETFD) < 0) {
      int null = open("/dev/null", O_RDWR);
      if (null >= 0 && null != fd) {
        dup2(null, fd);
        close(null);
      }
    }
  }
  int fds[3] = {0, 1, 2};
  struct stdio_message message;
  stdio_message_init(&message);
  message.length = (uint32_t)payload.length;
  struct cmsghdr *header = CMSG_FIRSTHDR(&message.header);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(header), fds, sizeof fds);
  if (sendmsg(connection, &message.header, MSG_NOSIGNAL) != (ssize_t)sizeof message.length ||
      write_all(connection, payload.data, payload.length) < 0)
    die("send");

  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) < 0) die("pipe");
  const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGALRM, SIGCONT};
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = forward;
  action.sa_flags = SA_RESTART;
  for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) sigaction(forwarded[i], &action, NULL);
  signal(SIGPIPE, SIG_IGN);
  struct pollfd waits[2] = {{connection, POLLIN, 0}, {signal_pipe[0], POLLIN, 0}};
  for (;;) {
    if (poll(waits, 2, -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (waits[1].revents) {
      unsigned char signals[64];
      ssize_t count = read(signal_pipe[0], signals, sizeof signals);
      if (count > 0) write_all(connection, signals, (size_t)count);
    }
    if (waits[0].revents) {
      int32_t status;
      if (read_all(connection, &status, sizeof status) < 0) {
        fprintf(stderr, "sudo: the broker went away before the command ended\n");
        return 1;
      }
      if (status >= STATUS_SIGNALED) {
        int signo = status - STATUS_SIGNALED;
        signal(signo, SIG_DFL);
        sigset_t only;
        sigemptyset(&only);
        sigaddset(&only, signo);
        sigprocmask(SIG_UNBLOCK, &only, NULL);
        raise(signo);
        return 128 + signo;
      }
      return status;
    }
  }
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], BROKER_ARGUMENT) == 0) return broker();
  return client(argc, argv);
}
`

/** Path of the compiled program, compiling it on first use; undefined when no C compiler works here. */
export function sudoProgramPath(): string | undefined {
  return compiledHelper('sandkeep-sudo', SUDO_SOURCE)
}
