// The relay that carries a connection from the host to a port on a sandbox's own loopback. One relay per
// sandbox namespace: it binds a unix socket in a host directory only root can enter, then joins the
// sandbox's network namespace (and nothing else: it stays in the host's pid namespace, so the sandbox cannot
// see or signal it, and outside the sandbox's cgroups, so a pause does not freeze it), drops to `nobody`
// without capabilities, and forks per connection. It ends when the sandbox's init ends (a pidfd), and with the
// host (parent-death signal).
//
// Protocol on each unix connection: the host writes `<port>\n`; the relay connects to 127.0.0.1:<port> (then
// [::1]:<port>) inside the namespace and answers one byte, 0 for connected or the errno of the failure, then
// copies bytes both ways, passing on each side's end of stream.
//
// The C program is compiled once per machine (compile.ts); without a compiler the same program in Python
// runs under `nsenter --net`.
import { existsSync } from 'node:fs'
import { compiledHelper } from './compile.js'

/** C source. Usage: `sandkeep-relay <init pid> <socket path>`; prints `ready` once it accepts. */
const RELAY_SOURCE = String.raw`#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static void fail(const char *what) {
  fprintf(stderr, "sandkeep-relay: %s: %s\n", what, strerror(errno));
  exit(1);
}

static int write_all(int fd, const char *data, ssize_t length) {
  while (length > 0) {
    ssize_t written = write(fd, data, length);
    if (written < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    data += written;
    length -= written;
  }
  return 0;
}

static int connect_loopback(int port) {
  int error = ECONNREFUSED;
  for (int family = 0; family < 2; family++) {
    int tcp = socket(family == 0 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (tcp < 0) {
      error = errno;
      continue;
    }
    int result;
    if (family == 0) {
      struct sockaddr_in address = {0};
      address.sin_family = AF_INET;
      address.sin_port = htons(port);
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      result = connect(tcp, (struct sockaddr *)&address, sizeof address);
    } else {
      struct sockaddr_in6 address = {0};
      address.sin6_family = AF_INET6;
      address.sin6_port = htons(port);
      address.sin6_addr = in6addr_loopback;
      result = connect(tcp, (struct sockaddr *)&address, sizeof address);
    }
    if (result == 0) {
      int one = 1;
      setsockopt(tcp, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return tcp;
    }
    error = errno;
    close(tcp);
    if (error != ECONNREFUSED && error != EADDRNOTAVAIL && error != ENETUNREACH) break;
  }
  errno = error;
  return -1;
}

/* One connection: read the port line, connect, answer the status byte, then copy both ways. */
static void serve(int client) {
  char line[16];
  int used = 0;
  while (used < (int)sizeof line - 1) {
    struct pollfd wait = {client, POLLIN, 0};
    if (poll(&wait, 1, 10000) <= 0) _exit(1);
    ssize_t got = read(client, line + used, 1);
    if (got <= 0) _exit(1);
    if (line[used] == '\n') break;
    used++;
  }
  line[used] = 0;
  char *end;
  long port = strtol(line, &end, 10);
  if (*end != 0 || port < 1 || port > 65535) _exit(1);
  int tcp = connect_loopback((int)port);
  unsigned char status = tcp < 0 ? (unsigned char)(errno > 0 && errno < 256 ? errno : 255) : 0;
  if (write_all(client, (char *)&status, 1) < 0 || tcp < 0) _exit(0);
  int fds[2] = {client, tcp};
  int open_for_reading[2] = {1, 1};
  char buffer[65536];
  while (open_for_reading[0] || open_for_reading[1]) {
    struct pollfd wait[2];
    int count = 0, which[2];
    for (int side = 0; side < 2; side++) {
      if (!open_for_reading[side]) continue;
      wait[count].fd = fds[side];
      wait[count].events = POLLIN;
      wait[count].revents = 0;
      which[count++] = side;
    }
    if (poll(wait, count, -1) < 0) {
      if (errno == EINTR) continue;
      _exit(1);
    }
    for (int index = 0; index < count; index++) {
      if (!(wait[index].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int side = which[index];
      ssize_t got = read(fds[side], buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        if (got < 0) _exit(0);
        open_for_reading[side] = 0;
        shutdown(fds[1 - side], SHUT_WR);
        continue;
      }
      if (write_all(fds[1 - side], buffer, got) < 0) _exit(0);
    }
  }
  _exit(0);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: sandkeep-relay <init pid> <socket path>\n");
    return 2;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 1;
  pid_t init = (pid_t)atoi(argv[1]);
  /* Without pidfds (Linux < 5.3) the init is polled once a second instead. */
  int pidfd = (int)syscall(SYS_pidfd_open, init, 0);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/net", (int)init);
  int netns = open(path, O_RDONLY | O_CLOEXEC);
  if (netns < 0) fail(path);
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) fail("socket");
  struct sockaddr_un address = {0};
  address.sun_family = AF_UNIX;
  if (strlen(argv[2]) >= sizeof address.sun_path) {
    fprintf(stderr, "sandkeep-relay: socket path too long\n");
    return 1;
  }
  strcpy(address.sun_path, argv[2]);
  unlink(argv[2]);
  mode_t old = umask(077);
  if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0) fail("bind");
  umask(old);
  if (listen(listener, 128) < 0) fail("listen");
  /* The only namespace joined: the sandbox's network. */
  if (setns(netns, CLONE_NEWNET) < 0) fail("setns");
  close(netns);
  for (int cap = 0; cap < 64; cap++) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0) fail("drop privileges");
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  signal(SIGCHLD, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  if (write_all(1, "ready\n", 6) < 0) fail("ready");
  for (;;) {
    struct pollfd wait[2] = {{listener, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int ready = poll(wait, 2, pidfd < 0 ? 1000 : -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      fail("poll");
    }
    if (wait[1].revents || (pidfd < 0 && kill(init, 0) < 0 && errno == ESRCH)) return 0;
    if (!(wait[0].revents & POLLIN)) continue;
    int client = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (client < 0) continue;
    pid_t child = fork();
    if (child == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(listener);
      if (pidfd >= 0) close(pidfd);
      serve(client);
    }
    close(client);
  }
}
`

/** The same relay in Python, for a machine without a C compiler; run under `nsenter --net=<netns>`. */
const RELAY_PYTHON = String.raw`
import ctypes, errno, os, select, socket, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: ends with the host
init, path = int(sys.argv[1]), sys.argv[2]
pidfd = os.pidfd_open(init)
try:
    os.unlink(path)
except FileNotFoundError:
    pass
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
old = os.umask(0o077)
listener.bind(path)
os.umask(old)
listener.listen(128)
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS

def connect(port):
    error = errno.ECONNREFUSED
    for family, address in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):
        tcp = socket.socket(family, socket.SOCK_STREAM)
        try:
            tcp.connect((address, port))
            tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return tcp, 0
        except OSError as failure:
            tcp.close()
            error = failure.errno or errno.EIO
            if error not in (errno.ECONNREFUSED, errno.EADDRNOTAVAIL, errno.ENETUNREACH):
                break
    return None, error

def pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        source.close()
        sink.close()

def serve(client):
    client.settimeout(10)
    line = b''
    try:
        while not line.endswith(b'\n') and len(line) < 16:
            data = client.recv(1)
            if not data:
                return client.close()
            line += data
        port = int(line.strip())
    except (OSError, ValueError):
        return client.close()
    client.settimeout(None)
    tcp, error = connect(port) if 1 <= port <= 65535 else (None, errno.EINVAL)
    client.sendall(bytes([min(error, 255)]))
    if tcp is None:
        return client.close()
    threading.Thread(target=pump, args=(tcp, client), daemon=True).start()
    pump(client, tcp)

def accept():
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve, args=(client,), daemon=True).start()

threading.Thread(target=accept, daemon=True).start()
sys.stdout.write('ready\n')
sys.stdout.flush()
select.select([pidfd], [], [])
`

/** How to start a relay for the sandbox whose init is `initPid`, listening on `socketPath`. */
export interface RelayCommand {
  file: string
  args: string[]
  /** `c` (compiled) or `python` (fallback). */
  kind: 'c' | 'python'
}

/** The relay's command line: the compiled program, or the Python one under nsenter when there is no compiler. */
export function relayCommand(
  initPid: number,
  socketPath: string,
  prefer: 'c' | 'python' = 'c',
): RelayCommand {
  const compiled = prefer === 'c' ? compiledHelper('sandkeep-relay', RELAY_SOURCE) : undefined
  if (compiled) return { file: compiled, args: [String(initPid), socketPath], kind: 'c' }
  const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'
  return {
    file: 'nsenter',
    args: [`--net=/proc/${initPid}/ns/net`, '--', python, '-c', RELAY_PYTHON, String(initPid), socketPath],
    kind: 'python',
  }
}
