"""bench/history_git_import.py refuses an output it could not write before it reads the
repository's history (a directory, an empty name, a FIFO without a reader)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "history_git_import.py"


@pytest.mark.parametrize("name, make, why", [
    ("adir", lambda p: p.mkdir(), "is a directory"),
    ("", None, "--out: empty file name"),
    ("afifo", lambda p: os.mkfifo(p), "a FIFO with no reader"),
])
def test_unwritable_out_refused_first(tmp_path: Path, name: str, make: object,
                                      why: str) -> None:
    target = tmp_path / name if name else None
    if make is not None and target is not None:
        make(target)  # type: ignore[operator]
    r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(target) if target else ""],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       env=dict(os.environ, GIT_DIR=str(tmp_path / "no-git")))
    # GIT_DIR names no repository: had the script read the history first, git would fail
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert why in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("name, make, why", [
    ("adir", lambda p: p.mkdir(), "is a directory"),
    ("", None, "--out: empty file name"),
    ("afifo", lambda p: os.mkfifo(p), "a FIFO with no reader"),
])
def test_reframe_refs_out_refused_in_one_line(tmp_path: Path, name: str, make: object,
                                              why: str) -> None:
    """reframe/mpilab_refs.py: an output it cannot write is one line, exit 2, no traceback."""
    target = tmp_path / name if name else None
    if make is not None and target is not None:
        make(target)  # type: ignore[operator]
    script = SCRIPT.parents[1] / "reframe" / "mpilab_refs.py"
    r = subprocess.run([sys.executable, str(script), "-o", str(target) if target else "",
                        "nosuch.json"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert why in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr  # no usage text before it
