"""Findings of an independent hostile-input campaign over every entry point: each is
refused in one line naming the argument, exit 2, before any environment is looked at
(testbed, MPI job, files), never with a traceback or an internal error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mpilab.cli import main


@pytest.fixture(autouse=True)
def _nothing_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no testbed is up: an argument error must be named before that is found out
    monkeypatch.setenv("MPILAB_TESTBED_STATE_ROOT", str(tmp_path / "state"))
    monkeypatch.setenv("MPILAB_SLURM_DIR", str(tmp_path / "slurm"))
    monkeypatch.chdir(tmp_path)


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line of a usage error (exit 2) of `mpilab ARGV`."""
    try:
        rc = main(list(argv))
    except SystemExit as e:
        rc = e.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("usage:", " "))]
    assert rc == 2 and len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


@pytest.mark.parametrize("make", ["devnull", "fifo", "file", "through-file", "empty"])
@pytest.mark.parametrize("argv", [
    ["tune", "sweep", "--np", "2", "--colls", "bcast", "--dir", "D"],
    ["tune", "validate", "c.json", "--np", "2", "--out", "r.conf", "--dir", "D"],
    ["compare", "--quick", "--out", "D"],
    ["survey", "--quick", "--out", "D"],
    ["diff", "a.json", "b.json", "--run", "--keep", "D"],
    ["slurm", "status", "--dir", "D"],
])
def test_a_directory_option_naming_a_non_directory_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], make: str) -> None:
    d = {"devnull": "/dev/null", "fifo": "fifo", "file": "file", "through-file": "file/sub",
         "empty": ""}[make]
    if make == "fifo":
        os.mkfifo(tmp_path / "fifo")
    elif make in ("file", "through-file"):
        (tmp_path / "file").write_text("x")
    before = sorted(p.name for p in tmp_path.iterdir())
    opt = argv[argv.index("D") - 1]
    line = refusal(capsys, *[d if a == "D" else a for a in argv])
    assert f"argument {opt}" in line and ("not a directory" in line or "expected a dir" in line)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing made


@pytest.mark.parametrize("argv,opt", [
    (["testbed", "check", "--tolerance", "-0.5"], "--tolerance"),
    (["testbed", "check", "--tolerance", "1e30"], "--tolerance"),
    (["testbed", "run", "--timeout", "1e30", "--", "true"], "--timeout"),
    (["testbed", "run", "--fault-grace", "99999999999999999999999", "--", "true"],
     "--fault-grace"),
    (["tune", "sweep", "--dir", "sw", "--np", "2", "--timeout", "1e30"], "--timeout"),
    (["diff", "a.json", "b.json", "--run", "--timeout", "1e30"], "--timeout"),
    (["bench", "--launcher-arg", "", "--", "--ops", "p2p"], "--launcher-arg"),
    (["tune", "sweep", "--dir", "sw", "--np", "2", "--budget", "-1"], "--budget"),
])
def test_argument_out_of_range_is_named_before_the_testbed(
        capsys: pytest.CaptureFixture[str], argv: list[str], opt: str) -> None:
    line = refusal(capsys, *argv)
    assert opt in line and "not up" not in line


@pytest.mark.parametrize("which", ["--initial", "--coef", "result"])
def test_wavefront_verify_on_a_fifo_is_refused_not_blocked(tmp_path: Path, which: str) -> None:
    import subprocess

    from mpilab.tools import REPO

    tool = REPO / "build" / "bin" / "mpilab-wavefront"
    if not tool.is_file():
        pytest.skip("mpilab-wavefront is not built")
    assert subprocess.run([str(tool), "create", "--rows", "4", "--cols", "4", "d", "c"],
                          cwd=tmp_path, capture_output=True, timeout=60).returncode == 0
    os.mkfifo(tmp_path / "fifo")
    args = {"--initial": "d", "--coef": "c", "result": "d"}
    args[which] = "fifo"
    p = subprocess.run([str(tool), "verify", "--initial", args["--initial"], "--coef",
                        args["--coef"], "--iterations", "0", args["result"]], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)  # blocked before the fix
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().endswith("fifo: not a regular file"), p.stderr


def test_a_choice_made_on_mpich_is_not_exported_as_open_mpi_rules(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    cell = {"op": "bcast", "np": 2, "bytes": 1024, "winner": "ompi_binomial", "ratio": 0.5,
            "lo": 0.4, "hi": 0.6, "candidates": {}}
    doc = {"schema": "mpilab.tune-choice/1", "source": "x", "mpi": "MPICH 4.0.2",
           "min_effect": 0.05, "test": "t", "cells": [cell],
           "ranges": [{"op": "bcast", "np": 2, "ranges": [
               {"winner": "ompi_binomial", "from": 1024, "to": 1024, "sizes": [1024]}]}]}
    (tmp_path / "c.json").write_text(json.dumps(doc))
    rc = main(["tune", "export", "c.json", "--openmpi", "rules.conf"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == ("mpilab: c.json: mpi: a choice made on MPICH 4.0.2 cannot be "
                               "exported as Open MPI rules (--openmpi)")
    assert not (tmp_path / "rules.conf").exists()
