"""`mpilab tune validate --with`: an unmodified benchmark (here a stand-in printing IMB-MPI1's
tables, slower or faster where the exported file is loaded) confirms the rules; a rule that
loses there is dropped, one that wins stays; IMB's and OSU's tables are read; a benchmark
that cannot be used is refused in one line (no timing anywhere)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mpilab.errors import MpilabError
from mpilab.tune import peer, validate
from tunekit import REPO, _mpilab

FAKE = REPO / "tests" / "python" / "fake_imb.py"
WINNERS = {("allreduce", 8): "ompi_recursive_doubling", ("allreduce", 1024): "ompi_ring",
           ("allreduce", 65536): "native", ("bcast", 1024): "ompi_chain",
           ("bcast", 65536): "native"}


def _choice() -> dict[str, Any]:
    doc = {"schema": "mpilab.tune-choice/1", "source": "test", "mpi": "Open MPI v4.1.4",
           "min_effect": 0.05,
           "cells": [{"op": op, "np": 2, "bytes": b, "winner": w, "ratio": 0.8, "lo": 0.7,
                      "hi": 0.9, "candidates": {}} for (op, b), w in WINNERS.items()],
           "ranges": []}
    validate.regroup(doc)
    return doc


def _launch(np: int, fargs: list[str], prog: list[str]) -> list[str]:
    return [sys.executable, str(FAKE), *fargs, "--", *prog]


def test_validate_with_a_benchmark_drops_the_rule_that_loses_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # through the file, in the benchmark: recursive doubling gains 25%, ring loses 20%,
    # chain gains nothing (the sweep's gain does not come back)
    monkeypatch.setenv("FAKE_IMB_FACTORS", "Allreduce:8=0.75,Allreduce:1024=1.2")
    monkeypatch.setenv("FAKE_IMB_LOG", str(tmp_path / "order.log"))
    ch = _choice()
    rows = validate.measure_peer(ch, 2, "openmpi", str(tmp_path / "r.conf"), tmp_path / "m", 8,
                                 peer.Peer("imb", "IMB-MPI1"), 60.0, launch=_launch)
    by = {(r["op"], r["bytes"]): r for r in rows}
    assert by[("allreduce", 8)]["verdict"] == "GAIN"
    assert by[("allreduce", 1024)]["verdict"] == "LOSS"
    assert by[("bcast", 1024)]["verdict"] == "same"
    assert by[("allreduce", 65536)]["verdict"] == "same"
    assert (tmp_path / "order.log").read_text().split() == ["rules", "default",
                                                           "default", "rules"] * 4
    out, notes = validate.prune(ch, rows, 2)
    won = {(c["op"], c["bytes"]): c["winner"] for c in out["cells"]}
    assert won == {**WINNERS, ("allreduce", 1024): "native", ("bcast", 1024): "native"}
    assert notes
    # resumable: a second call measures nothing again and decides the same
    again = validate.measure_peer(ch, 2, "openmpi", str(tmp_path / "r.conf"), tmp_path / "m",
                                  8, peer.Peer("imb", "IMB-MPI1"), 60.0, launch=_launch)
    assert [r["verdict"] for r in again] == [r["verdict"] for r in rows]
    assert len((tmp_path / "order.log").read_text().split()) == 16


def test_imb_and_osu_tables_are_read() -> None:
    imb = """#----
# Benchmarking Allreduce
# #processes = 2
#----
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            8         1000         0.50         0.70         0.60
         1024         1000         1.00         1.40         1.20
#----
# Benchmarking Allreduce
# #processes = 4
#----
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            8         1000         9.00         9.00         9.00
# Benchmarking Barrier
# #processes = 2
 #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
         1000         0.80         0.90         0.85
"""
    got = peer.parse_imb(imb, 2)
    assert got == pytest.approx({("allreduce", 8): 0.6e-6, ("allreduce", 1024): 1.2e-6,
                                 ("barrier", 0): 0.85e-6})
    osu = """# OSU MPI Broadcast Latency Test v7.4
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)
1                       0.86
1024                    2.50
"""
    assert peer.parse_osu(osu, "bcast") == pytest.approx({("bcast", 1): 0.86e-6,
                                                          ("bcast", 1024): 2.5e-6})


def test_benchmark_that_cannot_be_used_is_one_line(tmp_path: Path) -> None:
    assert peer.find("mpilab") is None
    other = tmp_path / "bench.sh"
    other.write_text("#!/bin/sh\n")
    os.chmod(other, 0o755)
    for spec, why in ((str(tmp_path / "missing"), "not an executable"),
                      (str(tmp_path), "without osu_"), (str(other), "neither IMB-MPI1")):
        with pytest.raises(MpilabError, match=why):
            peer.find(spec)
    osu = tmp_path / "osu"
    osu.mkdir()
    (osu / "osu_bcast").write_text("")
    with pytest.raises(MpilabError, match="osu_allreduce does not exist"):
        peer.check_ops(peer.find(str(osu)), ["bcast", "allreduce"])  # type: ignore[arg-type]
    imb = tmp_path / "IMB-MPI1"
    imb.write_text("#!/bin/sh\n")
    os.chmod(imb, 0o755)
    assert peer.find(str(imb)) == peer.Peer("imb", str(imb))
    choice = tmp_path / "c.json"
    import json

    choice.write_text(json.dumps(_choice()))
    p = _mpilab("tune", "validate", str(choice), "--dir", str(tmp_path / "d"), "--out",
                str(tmp_path / "o.conf"), "--with", str(tmp_path / "missing"))
    assert p.returncode == 2 and "--with" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
