"""mpilab tune on the emulated testbed (`--testbed PREFIX`) and MPICH ranks that yield
(`--mpich-yield`, libmpilab_ucx_yield.so): the launches run inside the testbed's node
namespaces (the results' own provenance names the hosts), validation launches with and
without the file there, and the yield library sits in MPICH's progress path (its own count
of calls, not a timing). Bad input: one line, exit 2. No timing assertion anywhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import livetb
import pytest
from livetb import LETTER, have_netns
from tunekit import REPO, _mpilab, _write

OMPI_BENCH = REPO / "build" / "bin" / "mpilab-bench"
MPICH_BIN = REPO / "build-mpich" / "bin"
needs_mpich = pytest.mark.skipif(
    not (MPICH_BIN / "mpilab-bench").is_file() or not shutil.which("mpiexec.mpich")
    or not (MPICH_BIN / "libmpilab_ucx_yield.so").is_file(),
    reason="needs build-mpich/ with libmpilab_ucx_yield.so")
needs_testbed = [pytest.mark.root, pytest.mark.mpi,
                 pytest.mark.skipif(not have_netns() or not OMPI_BENCH.is_file(),
                                    reason="needs root, ip netns and build/")]

# two sites of one node: the smallest grid with a WAN between the ranks
SPEC = """[cluster]
sites = 2
nodes_per_site = 1
rails = 1

[wan]
node_rate = "100Mbit"
total_rate = "100Mbit"
delay = "1ms"
"""


def _one_line(p: subprocess.CompletedProcess[str]) -> None:
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr


def test_bad_testbed_and_yield_options_are_one_line(tmp_path: Path) -> None:
    d = tmp_path / "sw"
    _one_line(_mpilab("tune", "sweep", "--dir", str(d), "--testbed", "nosuch", "--colls",
                      "bcast", "--sizes", "64"))
    if OMPI_BENCH.is_file():  # the default build is Open MPI's: no MPICH ranks to yield
        p = _mpilab("tune", "sweep", "--dir", str(d), "--mpich-yield", "--colls", "bcast",
                    "--sizes", "64")
        _one_line(p)
        assert "--mpich-yield" in p.stderr
    assert not d.exists()
    choice = _write(tmp_path, "c.json", {"schema": "mpilab.tune-choice/1", "cells": [
        {"op": "bcast", "np": 2, "bytes": 64, "winner": "native"}], "ranges": []})
    _one_line(_mpilab("tune", "validate", choice, "--np", "2", "--dir", str(tmp_path / "v"),
                      "--out", str(tmp_path / "r.conf"), "--testbed", "nosuch"))
    assert not (tmp_path / "r.conf").exists()


def _yield_counts(log: Path) -> list[tuple[int, int]]:
    out = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("mpilab-ucx-yield: pid "):
            words = line.split()
            out.append((int(words[3]), int(words[6])))
    return out


def _mpich_env() -> dict[str, str]:
    return dict(os.environ, MPILAB_UCX_YIELD_DEBUG="1",
                PYTHONPATH=str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))


@needs_mpich
def test_mpich_yield_library_sits_in_the_progress_path(tmp_path: Path) -> None:
    d = tmp_path / "sw"
    args = [sys.executable, "-m", "mpilab.cli", "--mpi", "mpich", "tune", "sweep", "--dir",
            str(d), "--np", "2", "--colls", "bcast", "--sizes", "64", "--launches", "1",
            "--budget", "0.5", "--rounds", "0", "--quiet", "--timeout", "120"]
    p = subprocess.run([*args, "--mpich-yield", "--max-reps", "30"], capture_output=True,
                       text=True, cwd=REPO, env=_mpich_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    counts = _yield_counts(d / "np2-r0.log")
    # every rank reported: its progress calls went through the library, idle ones yielded
    assert len(counts) == 2 and all(c > 0 and 0 < y <= c for c, y in counts), counts
    config = json.loads((d / "state.json").read_text())["config"]
    assert config["mpich_yield"] is True and config["max_reps"] == 30
    # the cap reached the runner: no measurement has more repetitions
    ms = _launch_doc(d / "np2-r0.launch1.json")["measurements"]
    assert ms and all(m["precision"]["max_reps"] == 30 and m["stats"]["reps"] <= 30 for m in ms)
    # without the option the library is not there: no rank reports
    d2 = tmp_path / "sw2"
    args[args.index(str(d))] = str(d2)
    p = subprocess.run(args, capture_output=True, text=True, cwd=REPO, env=_mpich_env(),
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert _yield_counts(d2 / "np2-r0.log") == []


# ------------------------------------------------------------ on a live testbed (root)

@pytest.fixture(scope="module")
def tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    if not have_netns() or not OMPI_BENCH.is_file():
        pytest.skip("needs root, ip netns and build/")
    prefix = f"{LETTER}u{os.getpid() % 10000}"
    for env in livetb.live_testbed(tmp_path_factory.mktemp("tbstate"), prefix,
                                  livetb.fixed_trim(SPEC), 120):
        yield prefix, env


def _launch_doc(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.root
@pytest.mark.mpi
def test_sweep_and_validate_run_inside_the_testbed(tb: tuple[str, dict[str, str]],
                                                   tmp_path: Path) -> None:
    prefix, env = tb
    hosts = [f"{prefix}-s0n0", f"{prefix}-s1n0"]
    d = tmp_path / "sw"
    p = livetb.mpilab("tune", "sweep", "--testbed", prefix, "--dir", str(d), "--np", "2",
                      "--colls", "bcast", "--sizes", "64", "--launches", "1", "--budget",
                      "0.5", "--rounds", "0", "--quiet", "--timeout", "120", env=env)
    assert p.returncode == 0, p.stderr
    doc = _launch_doc(d / "np2-r0.launch1.json")
    prov = doc["provenance"]
    assert prov["hosts"] == hosts
    # kept as the testbed's mpirun launched it: yield when idle on, not turned off
    assert prov["placement"]["mode"] == "keep" and prov["mca"]["mpi_yield_when_idle"] == "1"
    impls = {m["impl"] for m in doc["measurements"]}
    assert "native" in impls and any(i.startswith("ompi_") for i in impls)
    assert json.loads((d / "state.json").read_text())["config"]["testbed"] == prefix

    choice = _write(tmp_path, "choice.json", {
        "schema": "mpilab.tune-choice/1", "source": "test", "min_effect": 0.05,
        "cells": [{"op": "bcast", "np": 2, "bytes": 64, "winner": "ompi_basic_linear"}],
        "ranges": [{"op": "bcast", "np": 2, "ranges": [
            {"winner": "ompi_basic_linear", "from": 64, "to": 64}]}]})
    v = tmp_path / "val"
    p = livetb.mpilab("tune", "validate", choice, "--testbed", prefix, "--np", "2", "--dir",
                      str(v), "--out", str(tmp_path / "rules.conf"), "--pairs", "2",
                      "--budget", "0.3s", "--rounds", "1", "--timeout", "120", env=env)
    assert p.returncode in (0, 1), p.stderr  # the verdict is a measurement's, not asserted
    for label in ("rules", "default"):
        for k in (1, 2):
            prov = _launch_doc(v / "round1" / f"sized.{label}.{k}.json")["provenance"]
            assert prov["hosts"] == hosts
            named = prov["mca"].get("coll_tuned_dynamic_rules_filename", "")
            assert named.endswith("round1.conf") if label == "rules" else not named


@pytest.mark.root
@pytest.mark.mpi
@needs_mpich
def test_mpich_sweep_runs_inside_the_testbed_with_yielding_ranks(
        tb: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    prefix, env = tb
    d = tmp_path / "sw"
    p = livetb.mpilab("--mpi", "mpich", "tune", "sweep", "--testbed", prefix, "--mpich-yield",
                      "--dir", str(d), "--np", "2", "--colls", "bcast", "--sizes", "64",
                      "--launches", "1", "--budget", "0.5", "--rounds", "0", "--quiet",
                      "--timeout", "120", env=dict(env, MPILAB_UCX_YIELD_DEBUG="1"))
    assert p.returncode == 0, p.stderr
    prov = _launch_doc(d / "np2-r0.launch1.json")["provenance"]
    assert prov["hosts"] == [f"{prefix}-s0n0", f"{prefix}-s1n0"]
    assert "MPICH" in prov["mpi"]
    counts = _yield_counts(d / "np2-r0.log")
    assert len(counts) == 2 and all(c > 0 for c, _ in counts), counts
