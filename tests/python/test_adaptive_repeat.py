"""`mpilab-bench --sizes auto:MIN:MAX` in a real run (2 ranks, no timing asserted): the default
budget is the count of MIN..MAX x4 (the default list's spacing: 9 for 1..64K), no entry
measures more sizes than that, every added size names a measured size that bent, and the
sizes repeated before an insertion are counted (a bend earns sizes only when it persists
across a repeat: tests/c/bench_adaptive.c), for an all-pairs entry (p2p: one point is a whole
pair matrix) as for a collective."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tunekit import REPO, _mpilab

BENCH = REPO / "build" / "bin" / "mpilab-bench"


@pytest.mark.skipif(not BENCH.is_file() or not shutil.which("mpirun"),
                    reason="needs build/ and Open MPI")
def test_auto_sizes_default_budget_and_repeats(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    p = _mpilab("bench", "--np", "2", "--launches", "1", "--variation-store", "none", "--",
                "--ops", "p2p,bcast,allreduce", "--sizes", "auto:1:64K", "--time-budget", "2s",
                "--max-reps", "200",
                "--no-fit", "--quiet", "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    auto = json.loads(out.read_text())["provenance"]["options"]["sizes_auto"]
    assert auto["budget"] == 9
    assert [e["op"] for e in auto["entries"]] == ["p2p", "bcast", "allreduce"]
    for e in auto["entries"]:
        assert len(e["sizes"]) <= 9 and e["sizes"] == sorted(set(e["sizes"]))
        assert isinstance(e["repeated"], int) and e["repeated"] >= 0
        for a in e["added"]:
            assert a["bent_at"] in e["sizes"] and a["bytes"] in e["sizes"]
            assert a["departure_s"] > a["allowed_s"]
            # ranked by the bend's persistent size relative to the curve (a fraction of it)
            assert 0 < a["bend_size"] < 100
        # an insertion needs a repeat of the bend and its neighbours first
        assert not e["added"] or e["repeated"] >= 3
