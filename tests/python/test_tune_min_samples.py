"""The sweep's and validation's sample floor (`--min-samples N`, the runner's `--budget-floor
N`): the time budget's share ends no measurement before N valid samples, so slow sizes get
the samples a side the choice's test needs (mpilab.tune.stats.MIN_SAMPLES); recorded in the
sweep's state (docs/tune.md)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tunekit import REPO, _mpilab, _write

BENCH = REPO / "build" / "bin" / "mpilab-bench"
needs_build = pytest.mark.skipif(not BENCH.is_file(), reason="needs build/")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def _one_line(p: subprocess.CompletedProcess[str], code: int = 2) -> None:
    assert p.returncode == code, (p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr


def _bench(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    # a 16 MiB allreduce takes milliseconds a call here, longer than the whole (clamped,
    # 2 ms) budget: without a floor its share ends the measurement at the first sample
    return subprocess.run(["mpirun", "-np", "2", "--oversubscribe", str(BENCH), "--ops",
                           "allreduce", "--sizes", "16M", "--time-budget", "1ms", "--no-fit",
                           "--quiet", "--out", str(tmp / "r.json"), *extra],
                          capture_output=True, text=True, env=ENV, timeout=240, check=False)


@pytest.mark.mpi
@needs_build
def test_the_floor_overrides_the_budget_share(tmp_path: Path) -> None:
    p = _bench(tmp_path)
    assert p.returncode == 0, p.stderr
    m = json.loads((tmp_path / "r.json").read_text())["measurements"][0]
    assert m["stats"]["reps"] < 6 and "budget_floor" not in m["precision"]
    p = _bench(tmp_path, "--budget-floor", "6")
    assert p.returncode == 0, p.stderr
    m = json.loads((tmp_path / "r.json").read_text())["measurements"][0]
    assert m["stats"]["reps"] - m["stats"]["invalid"] >= 6 and m["precision"]["budget_floor"] == 6


@pytest.mark.mpi
@needs_build
def test_bad_floor_is_one_line(tmp_path: Path) -> None:
    for bad in (["--budget-floor", "0"], ["--budget-floor", "9", "--max-reps", "8"],
                ["--budget-floor", "x"]):
        p = subprocess.run([str(BENCH), "--ops", "bcast", "--sizes", "4", *bad, "--out",
                            str(tmp_path / "r.json")], capture_output=True, text=True,
                           env=ENV, timeout=60, check=False)
        assert p.returncode != 0 and "--budget-floor" in p.stderr, (bad, p.stderr)
        assert "Traceback" not in p.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.mpi
@needs_build
def test_sweep_records_the_floor_and_every_measurement_has_it(tmp_path: Path) -> None:
    d = tmp_path / "sw"
    p = _mpilab("tune", "sweep", "--dir", str(d), "--np", "2", "--colls", "allreduce",
                "--sizes", "16M", "--launches", "1", "--budget", "0.001", "--rounds", "0",
                "--quiet", "--timeout", "200", "--min-samples", "6", "--max-reps", "20")
    assert p.returncode == 0, p.stderr
    st = json.loads((d / "state.json").read_text())
    assert st["config"]["min_samples"] == 6 and st["config"]["max_reps"] == 20
    ms = json.loads((d / "np2-r0.launch1.json").read_text())["measurements"]
    assert len(ms) >= 2  # the default and the library's forced algorithms
    for m in ms:
        assert m["precision"]["budget_floor"] == 6, m["impl"]
        assert 6 <= m["stats"]["reps"] - m["stats"]["invalid"] <= 20, (m["impl"], m["stats"])
    # resuming with another floor is another sweep: refused in one line
    _one_line(_mpilab("tune", "sweep", "--dir", str(d), "--np", "2", "--colls", "allreduce",
                      "--sizes", "16M", "--launches", "1", "--budget", "0.001", "--rounds",
                      "0", "--quiet", "--min-samples", "8", "--max-reps", "20"))


def test_floor_above_the_cap_is_refused_before_anything_runs(tmp_path: Path) -> None:
    d = tmp_path / "sw"
    p = _mpilab("tune", "sweep", "--dir", str(d), "--colls", "bcast", "--sizes", "64",
                "--min-samples", "10", "--max-reps", "5")
    _one_line(p)
    assert "--min-samples" in p.stderr and not d.exists()
    choice = _write(tmp_path, "c.json", {"schema": "mpilab.tune-choice/1", "cells": [
        {"op": "bcast", "np": 2, "bytes": 64, "winner": "native"}], "ranges": []})
    p = _mpilab("tune", "validate", choice, "--np", "2", "--dir", str(tmp_path / "v"),
                "--out", str(tmp_path / "r.conf"), "--min-samples", "10", "--max-reps", "5")
    _one_line(p)
    assert not (tmp_path / "r.conf").exists() and not (tmp_path / "v").exists()
    _one_line(_mpilab("tune", "sweep", "--dir", str(d), "--colls", "bcast", "--sizes", "64",
                      "--min-samples", "0"))


@pytest.mark.mpi
@needs_build
def test_validate_passes_the_floor_to_every_launch(tmp_path: Path) -> None:
    choice = _write(tmp_path, "choice.json", {
        "schema": "mpilab.tune-choice/1", "source": "test", "min_effect": 0.05,
        "cells": [{"op": "allreduce", "np": 2, "bytes": 16 << 20,
                   "winner": "ompi_basic_linear"}],
        "ranges": [{"op": "allreduce", "np": 2, "ranges": [
            {"winner": "ompi_basic_linear", "from": 16 << 20, "to": 16 << 20}]}]})
    v = tmp_path / "val"
    p = _mpilab("tune", "validate", choice, "--np", "2", "--dir", str(v), "--out",
                str(tmp_path / "rules.conf"), "--pairs", "2", "--budget", "1ms", "--rounds",
                "1", "--timeout", "200", "--min-samples", "6")
    assert p.returncode in (0, 1), p.stderr  # the verdict is a measurement's, not asserted
    assert json.loads((v / "validate.json").read_text())["min_samples"] == 6
    for label in ("rules", "default"):
        for k in (1, 2):
            m = json.loads((v / "round1" / f"sized.{label}.{k}.json").read_text()
                           )["measurements"][0]
            assert m["precision"]["budget_floor"] == 6
            assert m["stats"]["reps"] - m["stats"]["invalid"] >= 6, (label, k, m["stats"])


MPICH_BIN = REPO / "build-mpich" / "bin"


def test_in_place_only_algorithm_is_not_exported() -> None:
    from mpilab.tune import export

    names = frozenset({"MPIR_Alltoall_intra_pairwise_sendrecv_replace",
                       "MPIR_Alltoall_intra_pairwise", "MPIR_Alltoall_intra_brucks"})
    tree = {"collective=alltoall": {"comm_type=intra": {"avg_msg_size=any": {
        "algorithm=MPIR_Alltoall_intra_brucks": {}}}}}
    bad = {"ranges": [{"op": "alltoall", "np": 8, "ranges": [
        {"winner": "mpich_pairwise_sendrecv_replace", "from": 16384, "to": 16384}]}]}
    with pytest.raises(Exception, match="MPI_IN_PLACE calls only"):
        export.mpich_json(bad, tree, names)
    good = {"ranges": [{"op": "alltoall", "np": 8, "ranges": [
        {"winner": "mpich_pairwise", "from": 16384, "to": 16384}]}]}
    assert "collective=alltoall" in export.mpich_json(good, tree, names)


@pytest.mark.mpi
@pytest.mark.skipif(not (MPICH_BIN / "mpilab-bench").is_file(), reason="needs build-mpich/")
def test_sweep_leaves_in_place_only_algorithms_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from mpilab.tune import sweep

    monkeypatch.setenv("MPILAB_BIN", str(MPICH_BIN))
    impls = sweep.forced_impls("mpich", ["alltoall"])["alltoall"]
    # MPICH lists it (the CVAR's choices), the sweep does not force it
    assert "mpich_pairwise" in impls and "mpich_pairwise_sendrecv_replace" not in impls
