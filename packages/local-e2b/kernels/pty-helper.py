"""sandkeep local-e2b: a terminal for one envd pty process.

Started by the host inside the sandbox (through the same launcher as every process, so it is in the sandbox's
namespaces and cgroups) as `pty-helper.py <cols> <rows> <cmd> [args...]`. It opens a pseudo-terminal of that
size, then forks:
- this process becomes the command: a new session whose controlling terminal is the pty's slave (stdin,
  stdout and stderr), so the pid the host was told is the command's own pid, and the launcher that waits for
  it reports the command's exit status;
- the child relays: pty output goes raw to fd 1, and the host's frames on fd 0 are applied.

Frames (host -> relay, on fd 0): one type byte, a big-endian uint32 length, the payload.
- b"i": bytes to type into the terminal;
- b"r": new size, payload = cols and rows as big-endian uint16 (TIOCSWINSZ, the kernel then sends SIGWINCH);
- b"k": a signal for the command, payload = one byte, the signal number.
The relay ends when the terminal closes (every process holding its slave side is gone).
The host is packages/local-e2b/src/envd-pty.ts.
"""

import errno
import fcntl
import os
import select
import signal
import struct
import sys
import termios


def set_size(fd, cols, rows):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def become_command(slave, argv):
    """Runs in the process the host knows: make the slave the controlling terminal, then exec."""
    try:
        os.setsid()
    except PermissionError:
        # Already a session leader (an unisolated host spawns this process detached): keep that session.
        pass
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    if slave > 2:
        os.close(slave)
    # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec.
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        os.write(2, f"{argv[0]}: {error.strerror}\r\n".encode())
        os._exit(127)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def relay(master, command_pid):
    """Runs in the child: pty output to fd 1, frames from fd 0 applied, until the terminal closes."""
    os.set_blocking(master, False)
    control = b""
    typed = b""
    reading_control = True
    while True:
        readable = [master] + ([0] if reading_control else [])
        writable = [master] if typed else []
        ready_read, ready_write, _ = select.select(readable, writable, [])
        if master in ready_read:
            try:
                data = os.read(master, 65536)
            except BlockingIOError:
                data = None
            except OSError as error:
                # EIO: every holder of the slave side is gone.
                if error.errno == errno.EIO:
                    return
                raise
            if data == b"":
                return
            if data:
                write_all(1, data)
        if 0 in ready_read:
            chunk = os.read(0, 65536)
            if not chunk:
                # The host went away; the terminal lives on until its command ends.
                reading_control = False
            control += chunk
            while len(control) >= 5:
                kind = control[:1]
                (length,) = struct.unpack(">I", control[1:5])
                if len(control) < 5 + length:
                    break
                payload = control[5 : 5 + length]
                control = control[5 + length :]
                if kind == b"i":
                    typed += payload
                elif kind == b"r" and length == 4:
                    cols, rows = struct.unpack(">HH", payload)
                    set_size(master, cols, rows)
                elif kind == b"k" and length == 1:
                    try:
                        os.kill(command_pid, payload[0])
                    except ProcessLookupError:
                        pass
        if typed and master in ready_write:
            try:
                written = os.write(master, typed)
                typed = typed[written:]
            except BlockingIOError:
                pass


def main():
    if len(sys.argv) < 4:
        os.write(2, b"usage: pty-helper.py <cols> <rows> <cmd> [args...]\n")
        return 2
    cols, rows = int(sys.argv[1]), int(sys.argv[2])
    master, slave = os.openpty()
    set_size(master, cols, rows)
    os.set_inheritable(master, False)
    os.set_inheritable(slave, False)
    command_pid = os.getpid()
    if os.fork() == 0:
        os.close(slave)
        try:
            relay(master, command_pid)
        except BrokenPipeError:
            pass
        os._exit(0)
    os.close(master)
    become_command(slave, sys.argv[3:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
