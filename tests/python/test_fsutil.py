"""mpilab.fsutil: outputs replace only regular files; inputs are only regular files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text, load_state_json, read_regular


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_new_name_and_regular_file_replaced(tmp_path: Path) -> None:
    f = tmp_path / "sub" / "out.html"
    atomic_write_text(f, "one")
    assert f.read_text() == "one"
    ino = f.stat().st_ino
    atomic_write_text(f, "two")
    assert f.read_text() == "two"
    assert f.stat().st_ino != ino  # renamed into place, not rewritten
    assert sorted(p.name for p in f.parent.iterdir()) == ["out.html"]


def test_new_file_mode_follows_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "r.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o644


def test_symlink_followed_link_kept(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    atomic_write_text(tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink()
    assert (tmp_path / "real.json").read_text() == "new"


def test_device_written_not_replaced(tmp_path: Path) -> None:
    # /dev/stdout is a link to a device or pipe: same case, without touching /dev itself
    (tmp_path / "null").symlink_to("/dev/null")
    atomic_write_text(tmp_path / "null", "x")
    assert (tmp_path / "null").is_symlink()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_fifo_written_directly(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    # the reader opens first (without waiting for a writer): a FIFO with no reader is
    # refused; it reads once the writer is done (the bytes wait in the FIFO's buffer)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    atomic_write_text(fifo, "through the fifo")
    os.set_blocking(rfd, True)
    with os.fdopen(rfd, "rb") as f:
        got.append(f.read())
    assert got == [b"through the fifo"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dash_is_stdout(tmp_path: Path) -> None:
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from mpilab.fsutil import atomic_write_text; atomic_write_text('-', 'dash')")
    py = str(Path(__file__).resolve().parents[2] / "python")
    p = subprocess.run([sys.executable, "-c", code, py], cwd=tmp_path, capture_output=True,
                       text=True, check=True)
    assert p.stdout == "dash"
    assert not (tmp_path / "-").exists()


def test_directory_and_dangling_link_refused(tmp_path: Path) -> None:
    with pytest.raises(MpilabError, match="is a directory"):
        atomic_write_text(tmp_path, "x")
    (tmp_path / "dangling").symlink_to("missing")
    with pytest.raises(MpilabError, match="missing file"):
        atomic_write_text(tmp_path / "dangling", "x")
    assert not (tmp_path / "missing").exists()


def test_stale_temporaries_removed_live_ones_kept(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.html"
    stale = tmp_path / f"report.html.tmp.{_dead_pid()}"
    live = tmp_path / f"report.html.tmp.{os.getppid()}"
    other = tmp_path / "other.html.tmp.1"
    for p in (stale, live, other):
        p.write_text("half")
    atomic_write_text(out, "done")
    assert not stale.exists()
    assert live.exists() and other.exists()
    err = capsys.readouterr().err
    assert f"removed {stale}" in err and err.count("\n") == 1


def test_read_regular_refuses_what_could_hang_or_never_end(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(MpilabError, match="is a FIFO"):
        read_regular(fifo, "results file")
    with pytest.raises(MpilabError, match="is a device"):
        read_regular("/dev/zero", "results file")
    with pytest.raises(MpilabError, match="is a directory"):
        read_regular(tmp_path)
    with pytest.raises(MpilabError, match="no such file"):
        read_regular(tmp_path / "nope")
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2000)
    with pytest.raises(MpilabError, match="larger than"):
        read_regular(big, limit=1000)
    assert read_regular(big) == b"x" * 2000



def test_a_state_file_missing_is_none_and_a_broken_one_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mpilab.disk import dev
    from mpilab.testbed import net

    assert load_state_json(tmp_path / "state.json", "testbed state") is None
    (tmp_path / "state.json").write_text('{"prefix": "x"')
    with pytest.raises(MpilabError, match=r"state\.json: unreadable testbed state \("):
        load_state_json(tmp_path / "state.json", "testbed state")
    (tmp_path / "state.json").write_text('{"prefix": "x"}')
    assert load_state_json(tmp_path / "state.json", "disk state") == {"prefix": "x"}
    # both state readers refuse it in one line naming the file (both through
    # mpilab.documents, checked against their schemas)
    for mod, what, why in ((net, "testbed state", r"state\.json:1: not UTF-8 text"),
                           (dev, "disk state", r"state\.json:1: not UTF-8 text")):
        sd = tmp_path / what.replace(" ", "-")
        sd.mkdir()
        (sd / "state.json").write_bytes(b"\xff{")
        monkeypatch.setattr(mod, "state_dir", lambda prefix, sd=sd: sd)
        with pytest.raises(MpilabError, match=why):
            mod.load_state("zz")
