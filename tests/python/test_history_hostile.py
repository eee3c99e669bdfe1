"""History databases given as input: a damaged file (cut, bytes flipped, not SQLite, a
negative schema version) or rows that are not what mpilab writes (a text figure, broken
JSON, NaN, 5000-deep nesting, a reversed interval) are one line naming the file, exit 2,
nothing written; --history and --db values are checked while the arguments are parsed."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env, make_results
from mpilab.history import db

COMMANDS = {"list": ["list"], "show": ["show", "2"], "trend": ["trend", "p2p*"],
            "report": ["report", "-o", "h.html"], "check": ["check"]}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mpilab.cli", *args], cwd=cwd, env=cli_env(),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A history of three runs."""
    d = tmp_path_factory.mktemp("hist")
    c = db.connect(d / "h.sqlite")
    for k in range(3):
        doc = make_results(ranks=2, sizes=(0, 1024), seed=k)
        doc["provenance"]["date"] = f"2026-11-0{k + 1}T02:00:00Z"
        p = d / f"r{k}.json"
        p.write_text(json.dumps(doc))
        db.add_file(c, str(p))
    c.close()
    return d / "h.sqlite"


def _refused(r: subprocess.CompletedProcess[str], where: Path) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert "internal error" not in r.stderr and "h.sqlite" in r.stderr, r.stderr
    assert not (where / "h.html").exists()


ROWS = {
    "figure-text": "UPDATE points SET figure = 'abc' WHERE run_id = 2",
    "figure-zero": "UPDATE points SET figure = 0 WHERE run_id = 3",
    "figure-blob": "UPDATE points SET figure = x'00ff' WHERE run_id = 3",
    "lo-above-hi": "UPDATE points SET lo = 5, hi = 1 WHERE run_id = 3",
    "lo-text": "UPDATE points SET lo = 'x' WHERE run_id = 2",
    "hi-negative": "UPDATE points SET lo = NULL, hi = -1.0 WHERE run_id = 3",
    "lo-zero": "UPDATE points SET lo = 0 WHERE run_id = 3",
    "medians-broken": "UPDATE points SET launch_medians = '[1,' WHERE run_id = 3",
    "medians-deep": "UPDATE points SET launch_medians = '" + "[" * 5000 + "]" * 5000
                    + "' WHERE run_id = 3",
    "medians-nan": "UPDATE points SET launch_medians = '[NaN]' WHERE run_id = 3",
    "flags-number": "UPDATE points SET flags = '3' WHERE run_id = 3",
    "options-broken": "UPDATE runs SET options = '{'",
    "date-bogus": "UPDATE runs SET date = 'yesterday'",
    "launches-negative": "UPDATE runs SET launches = -4",
}


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
@pytest.mark.parametrize("row", sorted(ROWS))
def test_damaged_rows_are_one_line(tmp_path: Path, good: Path, row: str, cmd: str) -> None:
    dbp = tmp_path / "h.sqlite"
    shutil.copy(good, dbp)
    c = sqlite3.connect(dbp)
    c.execute(ROWS[row])
    c.commit()
    c.close()
    r = _cli("history", "--db", str(dbp), *COMMANDS[cmd], cwd=tmp_path)
    if r.returncode == 0:  # the command did not read that row (list reads no points)
        assert not (cmd in ("trend", "report", "check") and row.startswith(
            ("figure", "lo", "medians", "flags"))), r.stdout
        return
    _refused(r, tmp_path)
    assert "damaged history" in r.stderr, r.stderr


def _cut(b: bytes) -> bytes:
    return b[: len(b) // 2]


def _flip(b: bytes) -> bytes:
    x = bytearray(b)
    for k in range(4096 + 8, 4096 + 72):
        x[k] ^= 0x5A
    return bytes(x)


@pytest.mark.parametrize("cmd", sorted(COMMANDS) + ["add"])
@pytest.mark.parametrize("how", ["cut", "flip", "text", "one-byte", "negative-version"])
def test_damaged_files_are_one_line(tmp_path: Path, good: Path, how: str, cmd: str) -> None:
    dbp = tmp_path / "h.sqlite"
    if how == "cut":
        dbp.write_bytes(_cut(good.read_bytes()))
    elif how == "flip":
        dbp.write_bytes(_flip(good.read_bytes()))
    elif how == "text":
        dbp.write_text("hello\n")
    elif how == "one-byte":
        dbp.write_text("x")
    else:
        shutil.copy(good, dbp)
        c = sqlite3.connect(dbp)
        c.execute("PRAGMA user_version = -3")
        c.commit()
        c.close()
    before = dbp.read_bytes()
    args = ["add", str(good.parent / "r0.json")] if cmd == "add" else COMMANDS[cmd]
    r = _cli("history", "--db", str(dbp), *args, cwd=tmp_path)
    _refused(r, tmp_path)
    assert dbp.read_bytes() == before  # never written over


def test_empty_file_is_no_history_to_read(tmp_path: Path) -> None:
    (tmp_path / "h.sqlite").write_bytes(b"")
    _refused(_cli("history", "--db", str(tmp_path / "h.sqlite"), "list", cwd=tmp_path), tmp_path)


@pytest.mark.parametrize("args", [
    ["history", "--db", "", "list"],
    ["history", "--db", "h.sqlite", "trend", ""],
    ["history", "--db", "h.sqlite", "report", "-o", "h.html", "--measurement", ""],
    ["compare", "--history", "", "--transport", "shm", "--out", "cmp"],
    ["compare", "--history", ".", "--transport", "shm", "--out", "cmp"],
    ["compare", "--history", "/dev/null", "--transport", "shm", "--out", "cmp"],
    ["compare", "--history", "t.txt", "--transport", "shm", "--out", "cmp"],
])
def test_history_arguments_refused_at_parse_time(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "t.txt").write_text("x")
    r = _cli(*args, cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and "error: argument" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def test_report_measurement_matching_nothing_writes_nothing(tmp_path: Path, good: Path) -> None:
    r = _cli("history", "--db", str(good), "report", "-o", "h.html", "--measurement",
             "nosuch*", cwd=tmp_path)
    assert r.returncode == 2 and "no measurement matches" in r.stderr, r.stderr
    assert not (tmp_path / "h.html").exists()


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_text_that_is_not_utf8_is_one_line(tmp_path: Path, good: Path, cmd: str) -> None:
    """A fuzz finding: a row whose text is Latin-1 made SQLite's reader raise
    UnicodeDecodeError."""
    dbp = tmp_path / "h.sqlite"
    shutil.copy(good, dbp)
    c = sqlite3.connect(dbp)
    c.execute("UPDATE runs SET date = CAST(x'41e9' AS TEXT), source = CAST(x'e9' AS TEXT)")
    c.commit()
    c.close()
    _refused(_cli("history", "--db", str(dbp), *COMMANDS[cmd], cwd=tmp_path), tmp_path)


@pytest.mark.parametrize("bad", ["truncated", "not-json", "missing"])
def test_add_of_a_refused_file_creates_no_history(tmp_path: Path, bad: str) -> None:
    """`history add` checks every results file before the history is opened: a refused
    file leaves no new database (nor its -wal/-shm files) behind, and an existing one
    unchanged."""
    good_doc = json.dumps(make_results(ranks=2, sizes=(0, 1024), seed=5))
    (tmp_path / "good.json").write_text(good_doc)
    if bad == "truncated":
        (tmp_path / "bad.json").write_text(good_doc[: len(good_doc) // 2])
    elif bad == "not-json":
        (tmp_path / "bad.json").write_text("{")
    r = _cli("history", "--db", "new.sqlite", "add", "good.json", "bad.json", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "bad.json" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["good.json"] + (["bad.json"] if bad != "missing" else []))
