#!/usr/bin/env python3
"""What the kernel tells a reader of another process's socket, from outside (root): the
fd is duplicated with pidfd_getfd(2), then SIOCINQ (bytes a read would return) and a
zero-timeout poll() (the level state epoll would report) are printed; with `peek`, also a
MSG_PEEK recv (runs the MPTCP receive path without consuming) and the same two after it.
Used by bench/pathmig_mpich.py on hung jobs, to tell a lost wakeup (data readable but the
process was never told) from a process that stopped reading.

    python3 bench/pathmig_probe_fd.py PID FD [peek]
"""
from __future__ import annotations

import ctypes
import fcntl
import os
import select
import socket
import struct
import sys
import termios

import harness  # noqa: F401 (this checkout's package on the path)

SYS_PIDFD_GETFD = 438  # x86_64 and aarch64


def state(fd: int) -> str:
    inq = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
    p = select.poll()
    p.register(fd, select.POLLIN)
    return f"SIOCINQ {inq}, poll {p.poll(0)}"


def main() -> int:
    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or not sys.argv[2].isdigit():
        print("usage: pathmig_probe_fd.py PID FD [peek]", file=sys.stderr)
        return 2
    pid, fd = int(sys.argv[1]), int(sys.argv[2])
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        pfd = os.pidfd_open(pid)
    except OSError as e:
        print(f"pidfd_open {pid}: {e.strerror}", file=sys.stderr)
        return 1
    dup = libc.syscall(SYS_PIDFD_GETFD, pfd, fd, 0)
    os.close(pfd)
    if dup < 0:
        print(f"pidfd_getfd {pid} {fd}: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    print(f"pid {pid} fd {fd}: {state(dup)}")
    if len(sys.argv) > 3:
        s = socket.socket(fileno=dup)
        try:
            got = s.recv(65536, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            print(f"MSG_PEEK got {len(got)} bytes: {got[:64].hex()}")
        except BlockingIOError:
            print("MSG_PEEK: EAGAIN")
        print(f"after the peek: {state(dup)}")
        s.detach()
    os.close(dup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
