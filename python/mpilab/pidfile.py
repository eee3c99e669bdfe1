"""Pid files of the processes mpilab starts (Slurm's daemons, delay lines, path-migration
agents), and the one way mpilab signals a process whose pid it read from a file.

A pid file holds one line, `PID START COMMAND`: the process id, its start time (field 22
of /proc/PID/stat, in clock ticks since boot) and the name of its program (the last part of
its argv[0]). It is written by `record` once the process runs, after checking that the
process has the expected program name. `verified` reads it back and compares both the
start time and the program name with /proc before anything is signalled, so a pid file
never makes mpilab signal a process it did not start: a PID below 2 (0 is the caller's own
process group, -1 every process), a process of another program, a process started after
the one recorded (its pid reused) and a pid file without the start time are refused with
one line naming the file.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text, read_regular

_LINE_RE = re.compile(r"\A(-?\d{1,12}) (\d{1,20}) (\S{1,255})\n?\Z")


@dataclass(frozen=True)
class ProcIdent:
    """A process as /proc names it: pid, start time (clock ticks since boot), program."""

    pid: int
    start: int
    command: str

    def line(self) -> str:
        return f"{self.pid} {self.start} {self.command}\n"


def proc_ident(pid: int) -> ProcIdent | None:
    """The identity of the live process `pid` from /proc, or None when there is none (or
    it is a zombie)."""
    if pid < 1:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("utf-8", "replace")
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv0 = f.read().split(b"\0", 1)[0].decode("utf-8", "replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    # fields[0] is field 3 (state); field 22 (starttime) is fields[19]
    if len(fields) < 20 or fields[0] in ("Z", "X") or not fields[19].isdigit():
        return None
    command = os.path.basename(argv0) or stat.split("(", 1)[-1].rsplit(")", 1)[0]
    return ProcIdent(pid, int(fields[19]), command.replace(" ", "_") or "?")


def _refuse_pid(where: str, pid: int) -> None:
    if pid < 2:
        raise MpilabError(f"{where}: pid {pid} refused (below 2: 0 is the caller's process "
                          "group, -1 every process, 1 init); not signalling it")


def record(path: str | os.PathLike[str], pid: int, command: str) -> ProcIdent:
    """Write the pid file `path` for the process `pid` that this process started and that
    runs `command` (its argv[0]'s last part); refuses one that is gone or runs another
    program."""
    where = os.fspath(path)
    _refuse_pid(where, pid)
    ident = proc_ident(pid)
    if ident is None:
        raise MpilabError(f"{where}: process {pid} ({command}) is gone")
    if ident.command != command:
        raise MpilabError(f"{where}: process {pid} runs {ident.command}, not {command}; "
                          "not recording it")
    atomic_write_text(path, ident.line())
    return ident


def wait_recorded(path: Path, proc: subprocess.Popen[bytes], command: str,
                  timeout: float, what: str) -> ProcIdent | None:
    """Wait until the process `proc` (started here, running `command`) has written its own
    pid (a bare `PID` line) into `path`, then rewrite the file as a full record. None when
    it exits or `timeout` seconds pass first."""
    pid = proc.pid
    deadline = time.monotonic() + timeout
    while True:
        try:
            text = path.read_text()
        except OSError:
            text = ""
        first = text.split()[0] if text.split() else ""
        if first.lstrip("-").isdigit():
            if int(first) != pid:
                raise MpilabError(f"{path}: names pid {first}, not the {what} started here "
                                  f"(pid {pid})")
            return record(path, pid, command)
        if proc.poll() is not None or time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def parse(path: str | os.PathLike[str], text: str) -> ProcIdent:
    """The record in a pid file's text; one line naming the file when it is not one."""
    where = os.fspath(path)
    m = _LINE_RE.match(text)
    if not m:
        first = text.split()[0] if text.split() else ""
        if first.lstrip("-").isdigit():
            _refuse_pid(where, int(first))
            raise MpilabError(f"{where}: pid {first} without its start time and command; "
                              "not a pid file mpilab wrote, not signalling it")
        raise MpilabError(f"{where}: not a pid file (expected 'PID START COMMAND')")
    pid = int(m.group(1))
    _refuse_pid(where, pid)
    return ProcIdent(pid, int(m.group(2)), m.group(3))


def verified(path: str | os.PathLike[str], command: str) -> int | None:
    """The pid in the pid file `path` if that process is still the one recorded (same start
    time) and runs `command`; None when there is no pid file or its process has exited.
    Anything else (a PID below 2, another program, a later process with the same pid, a
    file that is not a record) is a one-line MpilabError naming the file."""
    where = os.fspath(path)
    if not os.path.lexists(where):
        return None
    try:
        text = read_regular(where, "pid file", limit=4096).decode("utf-8")
    except UnicodeDecodeError:
        raise MpilabError(f"{where}: not a pid file (not UTF-8 text)") from None
    except MpilabError:
        if not os.path.lexists(where):  # removed meanwhile by its process, on exit
            return None
        raise
    rec = parse(where, text)
    if rec.command != command:
        raise MpilabError(f"{where}: pid {rec.pid} is recorded as {rec.command}, not "
                          f"{command}; not signalling it")
    now = proc_ident(rec.pid)
    if now is None:
        return None
    if now.start != rec.start or now.command != rec.command:
        raise MpilabError(f"{where}: pid {rec.pid} is now {now.command} started at tick "
                          f"{now.start}, not the {command} recorded (started at tick "
                          f"{rec.start}); not signalling it")
    return rec.pid


@contextmanager
def handle(path: str | os.PathLike[str], command: str) -> Iterator[int | None]:
    """A process descriptor (pidfd) of the verified process of `path` (see `verified`),
    or None when it has exited: signals sent through it reach that process only, even if
    it exits and its pid is reused meanwhile."""
    pid = verified(path, command)
    fd = None
    if pid is not None:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            fd = None
        if fd is not None and verified(path, command) != pid:  # exited before the open
            os.close(fd)
            fd = None
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _exited(fd: int, timeout: float) -> bool:
    p = select.poll()
    p.register(fd, select.POLLIN)
    return bool(p.poll(max(0, int(timeout * 1000))))


def _signal(fd: int, sig: int) -> bool:
    try:
        signal.pidfd_send_signal(fd, sig)
    except ProcessLookupError:
        return False
    return True


def send(path: str | os.PathLike[str], command: str, sig: int) -> int | None:
    """Send `sig` to the verified process of the pid file `path`; its pid, or None when it
    had exited."""
    pid = verified(path, command)
    with handle(path, command) as fd:
        if fd is None or not _signal(fd, sig):
            return None
        return pid


def stop(paths: list[tuple[str | os.PathLike[str], str]], grace: float = 2.0,
         wait: float = 60.0) -> list[int]:
    """Stop the verified processes of the pid files `paths` ((path, command) pairs):
    SIGTERM, up to `grace` seconds to exit, then SIGKILL, then up to `wait` seconds until
    each has exited. All are verified before any is signalled. Returns the pids
    signalled."""
    fds: list[tuple[int, int]] = []
    try:
        for path, command in paths:
            pid = verified(path, command)
            if pid is None:
                continue
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            fds.append((pid, fd))
            if verified(path, command) != pid:
                fds.pop()
                os.close(fd)
        sent = [pid for pid, fd in fds if _signal(fd, signal.SIGTERM)]
        deadline = time.monotonic() + grace
        for _, fd in fds:
            if not _exited(fd, deadline - time.monotonic()):
                _signal(fd, signal.SIGKILL)
        deadline = time.monotonic() + wait
        for _, fd in fds:
            _exited(fd, deadline - time.monotonic())
        return sent
    finally:
        for _, fd in fds:
            os.close(fd)
