"""Max and root timing against global timing on a simulated cluster whose links are slow
(8 hosts, 250 us per link): a max or root figure whose interval misses the global figure's
interval by more than the asked precision carries the flag global_differs and the global
figure beside it, and only then (docs/bench.md, "Which timing to trust")."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab.tools import REPO

SMPI_BENCH = REPO / "build-smpi" / "bin" / "mpilab-bench"
needs_smpi = pytest.mark.skipif(
    shutil.which("smpirun") is None or not SMPI_BENCH.is_file(),
    reason="no SMPI build (scripts/build --smpi) or no smpirun")


def _apart(a: dict[str, Any], b: dict[str, Any], eps: float) -> bool:
    """Intervals apart by more than the asked precision (eps x b's median)."""
    slack = eps * abs(b["median"])
    return a["med_hi"] + slack < b["med_lo"] or b["med_hi"] + slack < a["med_lo"]


@needs_smpi
def test_max_and_root_flagged_where_global_disagrees(run_cli: Callable[..., Any],
                                                     tmp_path: Path) -> None:
    p = run_cli("sim", "platform", "flat", "--nodes", "8", "--bw", "1Gbit", "--lat", "250us",
                "-o", "flat8.xml")
    assert p.returncode == 0, p.stderr
    p = run_cli("bench", "--sim", "flat8.xml", "--out", "t.json", "--", "--ops",
                "scatter,gather", "--sizes", "1K", "--timing", "max,root,global")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "t.json").read_text())
    ms = doc["measurements"]
    flagged = 0
    for m in ms:
        if m["timing"] not in ("max", "root"):
            continue
        (g,) = [x for x in ms if x["timing"] == "global" and x["op"] == m["op"]
                and x["impl"] == m["impl"] and x["bytes"] == m["bytes"]
                and x.get("isolation") == m.get("isolation")]
        apart = _apart(m["stats"], g["stats"], m["precision"]["eps"])
        assert ("global_differs" in m["flags"]) == apart, (m["op"], m["impl"], m["timing"])
        if apart:
            flagged += 1
            assert m["global_other"]["median"] == pytest.approx(g["stats"]["median"])
    # the slow links make max or root miss a latency somewhere (the undercount found)
    assert flagged >= 1
    table = p.stdout + p.stderr  # the runner's table, as smpirun forwards it
    assert "global_differs" in table and "Which timing to trust" in table
