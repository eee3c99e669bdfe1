"""Output files and input files, one rule for every mpilab command (the C library's
mpilab_write_atomic in src/common/common.c follows the same rule):

* `-` means standard output;
* an existing device, FIFO or socket is written directly (never replaced);
* a regular file, or a new name, is written to `PATH.tmp.<pid>` in the same folder and
  renamed onto PATH when complete, so readers see the old file or the new one, never a
  half-written one; a symbolic link is followed (the file it names is replaced, the link
  stays); a directory or a dangling link is refused;
* temporary files `PATH.tmp.<pid>` left by a killed run (the pid no longer exists) are
  removed by the next write of PATH, with a one-line note on stderr.

Inputs: `read_regular` opens only regular files (a FIFO would block, /dev/zero never ends)
and refuses files beyond a size limit.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from mpilab.errors import MpilabError

_TMP_RE = re.compile(r"\.tmp\.(\d+)\Z")


def pid_alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Remove `TARGET.tmp.<pid>` files whose process is gone; returns what was removed.
    Files of live processes (possibly another run writing the same output) are kept."""
    removed: list[Path] = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return removed
    stem = target.name + ".tmp."
    for name in names:
        if not name.startswith(stem):
            continue
        m = _TMP_RE.search(name)
        if not m or len(name) != len(stem) + len(m.group(1)):
            continue
        pid = int(m.group(1))
        if pid == os.getpid() or pid_alive(pid):
            continue
        p = target.parent / name
        try:
            if not stat.S_ISREG(os.lstat(p).st_mode):
                continue
            os.unlink(p)
        except OSError:
            continue
        sys.stderr.write(f"mpilab: removed {p}, a temporary file left by a killed run "
                         f"(pid {pid})\n")
        removed.append(p)
    return removed


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def resolve_output(path: str | os.PathLike[str]) -> tuple[Path, bool]:
    """(file to write, True if it must be written directly rather than replaced).
    Raises MpilabError for a directory or a dangling symbolic link."""
    name = os.fspath(path)
    p = Path(name)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if os.path.islink(p):
            raise MpilabError(f"{name}: a symbolic link to a missing file; "
                              "not writing through it") from None
        return p, False
    except OSError as e:
        raise MpilabError(f"{name}: cannot write: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise MpilabError(f"{name}: is a directory, expected a file name")
    if not stat.S_ISREG(st.st_mode):
        # a FIFO is opened without waiting (atomic_write_bytes); sockets and block devices
        # are refused; character devices (/dev/null, a terminal) are written directly
        if not (stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode)):
            kind = "a socket" if stat.S_ISSOCK(st.st_mode) else "a block device"
            raise MpilabError(f"{name}: is {kind}, not a regular file; use - to stream")
        return p, True
    if os.path.islink(p):
        return Path(os.path.realpath(p)), False
    return p, False


def check_output(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work is done, an output that atomic_write_bytes could not write:
    a directory, a dangling link, a folder that cannot be created or written."""
    name = os.fspath(path)
    if name == "-":
        return
    target, direct = resolve_output(name)
    if direct:
        if not os.access(target, os.W_OK):
            raise MpilabError(f"{name}: not writable")
        return
    d = target.parent
    while not d.exists() and d != d.parent:
        d = d.parent
    if not d.is_dir():
        raise MpilabError(f"{name}: {d} is not a directory")
    if not os.access(d, os.W_OK | os.X_OK):
        raise MpilabError(f"{name}: cannot create files in {d}")


def hold_fifo(path: str | os.PathLike[str]) -> int | None:
    """For an output named before long work: a FIFO without a reader is refused now (one
    line) rather than when the work is done; with a reader, the returned descriptor keeps
    the FIFO open for writing (close it after the final write, so the reader does not see
    an early end of file). None for anything that is not a FIFO."""
    name = os.fspath(path)
    try:
        if name == "-" or not stat.S_ISFIFO(os.stat(name).st_mode):
            return None
    except OSError:
        return None
    try:
        return os.open(name, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise MpilabError(f"{name}: a FIFO with no reader; not waiting for one") from None
        raise MpilabError(f"{name}: cannot open for writing: {e.strerror}") from None


def _stdout_closed() -> None:
    """The reader of stdout went away (`| head`): what it wanted it has. Later writes
    (and the interpreter's last flush) go to /dev/null, and the command ends quietly with
    status 0, as `cat` in a pipeline does."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    raise SystemExit(0) from None


def _stdout_failed(e: OSError) -> MpilabError:
    """Standard output cannot take what was written (a full disk, /dev/full, an I/O error):
    the output is lost, so the command fails with one line. Later writes (and the
    interpreter's last flush) go to /dev/null, so nothing else is printed."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return MpilabError(f"standard output: write failed: {e.strerror or e}; the output is lost")


class GuardedStdout:
    """Standard output of every mpilab command (installed by mpilab.cli.main): writes go to
    the stream it wraps; a closed pipe (EPIPE: `| head`) ends the command quietly with
    status 0 (_stdout_closed), any other write error (ENOSPC: `> /dev/full`, EIO) is a
    one-line MpilabError (_stdout_failed)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            n: int = self._stream.write(text)
            return n
        except BrokenPipeError:
            _stdout_closed()
            raise
        except OSError as e:
            raise _stdout_failed(e) from None

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            _stdout_closed()
        except OSError as e:
            raise _stdout_failed(e) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def write_stdout(text: str) -> None:
    """Print `text` (a newline added when missing) and flush it; a closed pipe ends the
    command quietly (see _stdout_closed) instead of an internal error."""
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_closed()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write data to path following the module's rule (see the module docstring)."""
    name = os.fspath(path)
    if name == "-":
        try:
            sys.stdout.flush()
            _write_fd(sys.stdout.fileno(), data)
        except BrokenPipeError:
            _stdout_closed()
        except OSError as e:
            raise _stdout_failed(e) from None
        return
    target, direct = resolve_output(name)
    if direct:
        try:
            # O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of hanging
            fd = os.open(target, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno == errno.ENXIO:
                raise MpilabError(f"{name}: a FIFO with no reader; not waiting for one") from None
            raise MpilabError(f"{name}: cannot open for writing: {e.strerror}") from None
        os.set_blocking(fd, True)
        try:
            _write_fd(fd, data)
        except OSError as e:
            raise MpilabError(f"{name}: write failed: {e.strerror}") from None
        finally:
            os.close(fd)
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MpilabError(f"{name}: cannot create the folder {target.parent}: "
                          f"{e.strerror}") from None
    remove_stale_temporaries(target)
    tmp = target.parent / f"{target.name}.tmp.{os.getpid()}"
    try:
        os.unlink(tmp)  # our own leftover (a failed earlier write in this process)
    except FileNotFoundError:
        pass
    try:
        # 0o666 & ~umask, like any newly created output
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    except OSError as e:
        raise MpilabError(f"{name}: cannot create a file in {target.parent}: "
                          f"{e.strerror}") from None
    try:
        try:
            _write_fd(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError):  # a full disk, a quota, an I/O error: one line
            raise MpilabError(f"{name}: write failed: {e.strerror}; nothing written") from None
        raise


def partial_name(out: str | os.PathLike[str]) -> str:
    """Where a run's partial results go instead of OUT (the C library's
    mpilab_partial_path): r.json -> r.partial.json, r -> r.partial."""
    name = os.fspath(out)
    head, tail = os.path.split(name)
    stem, ext = os.path.splitext(tail)
    if not stem:
        stem, ext = tail, ""
    return os.path.join(head, f"{stem}.partial{ext}")


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


# Results files are a few MB; a report of millions of samples stays far below this.
DEFAULT_READ_LIMIT = 256 << 20


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def load_state_json(path: Path, what: str) -> Any:
    """The document of a state file this project wrote (a testbed's, an emulated disk's), or
    None when there is none; one that cannot be read or parsed is a one-line MpilabError
    naming `what` (e.g. "testbed state")."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise MpilabError(f"{path}: unreadable {what} ({e})") from None


def read_regular(path: str | os.PathLike[str], what: str = "file",
                 limit: int = DEFAULT_READ_LIMIT) -> bytes:
    """The bytes of a regular file (symbolic links followed). FIFOs, devices, sockets,
    directories and files larger than `limit` bytes are refused with a one-line
    MpilabError; nothing is opened that could block or never end."""
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise MpilabError(f"{name}: no such file") from None
    except OSError as e:
        raise MpilabError(f"{name}: cannot read: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise MpilabError(f"{name}: is a directory, expected a {what}")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else
                "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise MpilabError(f"{name}: is {kind}, expected a {what} (a regular file)")
    if st.st_size > limit:
        raise MpilabError(f"{name}: {st.st_size} bytes, larger than the {_size(limit)} "
                          f"limit of a {what}")
    try:
        # O_NONBLOCK: if the name was swapped for a FIFO after the stat, open does not block
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        raise MpilabError(f"{name}: cannot read: {e.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise MpilabError(f"{name}: changed while opening; expected a regular file")
        chunks = []
        total = 0
        while True:
            try:
                b = os.read(fd, 1 << 20)
            except OSError as e:
                if e.errno == errno.EAGAIN:
                    continue
                raise MpilabError(f"{name}: cannot read: {e.strerror}") from None
            if not b:
                break
            total += len(b)
            if total > limit:
                raise MpilabError(f"{name}: larger than the {_size(limit)} limit of a "
                                  f"{what}")
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def make_folders(folder: str | os.PathLike[str]) -> Path | None:
    """Make `folder` and any missing parents; the first (outermost) folder made, or None
    when it existed (hand it to remove_empty_folders if the work then writes nothing)."""
    parent = Path(folder).absolute()
    first = None
    for p in reversed([parent, *parent.parents]):
        if not p.exists():
            first = p
            break
    parent.mkdir(parents=True, exist_ok=True)
    return first


def remove_empty_folders(first: Path, folder: str | os.PathLike[str]) -> None:
    """A run that wrote nothing leaves no folder of its own behind: the folders made for it
    (make_folders), from `folder` up to `first`, removed while empty."""
    p = Path(folder).absolute()
    while True:
        try:
            p.rmdir()
        except OSError:
            return
        if p == first:
            return
        p = p.parent
