"""All pairs in parallel on simulated clusters whose shared links are oversubscribed: the
parallel schedule must not put the contention into a pair's figure. Checked pairs measured
again one at a time disagree, the measurement carries parallel_contention and holds the
sequential figures, so every pair's Hockney beta holds the true link rate; where nothing is
shared the schedule stays parallel and unflagged (docs/pairs.md, "Contention check")."""

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

GBIT_BETA = 8e-9  # seconds per byte at 1 Gbit/s


def _bench(run_cli: Callable[..., Any], tmp_path: Path, platform: str) -> dict[str, Any]:
    p = run_cli("bench", "--sim", platform, "--out", "t.json", "--", "--ops", "p2p",
                "--sizes", "1K,1M", "--models", "hockney")
    assert p.returncode == 0, p.stderr
    doc: dict[str, Any] = json.loads((tmp_path / "t.json").read_text())
    return doc


def _beta_holds(pair: dict[str, Any], beta: float) -> bool:
    q = pair["quality"]["beta"]
    return bool(q["lo"] * (1 - 1e-3) <= beta <= q["hi"] * (1 + 1e-3))


@needs_smpi
def test_oversubscribed_backbone_flagged_and_fitted_sequentially(
        run_cli: Callable[..., Any], tmp_path: Path) -> None:
    p = run_cli("sim", "platform", "flat", "--nodes", "8", "--bw", "1Gbit", "--lat", "10us",
                "--backbone-bw", "2Gbit", "-o", "flat8.xml")
    assert p.returncode == 0, p.stderr
    doc = _bench(run_cli, tmp_path, "flat8.xml")
    (big,) = [m for m in doc["measurements"] if m["bytes"] == 1 << 20]
    assert big["schedule"] == "sequential"
    assert "parallel_contention" in big["flags"]
    chk = big["schedule_check"]
    assert chk["asked"] == "parallel" and chk["fell_back"] is True
    assert 0 < chk["disagreed"] <= chk["pairs_checked"]
    pairs = doc["models"]["hockney"]["pairs"]
    assert len(pairs) == 28
    wrong = [(x["i"], x["j"], x["beta"]) for x in pairs if not _beta_holds(x, GBIT_BETA)]
    assert not wrong, wrong


@needs_smpi
def test_three_sites_behind_a_narrow_wan(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    # 9 nodes, 100 Mbit/s each into a WAN of 150 Mbit/s in all: pairs across sites share it
    (tmp_path / "s3.toml").write_text(
        'prefix = "cx"\n[cluster]\nsites = 3\nnodes_per_site = 3\nrails = 1\n'
        '[lan]\nrate = "1Gbit"\n[wan]\nnode_rate = "100Mbit"\ntotal_rate = "150Mbit"\n'
        'delay = "1ms"\n')
    p = run_cli("sim", "platform", "spec", "s3.toml", "-o", "s3.xml")
    assert p.returncode == 0, p.stderr
    doc = _bench(run_cli, tmp_path, "s3.xml")
    (big,) = [m for m in doc["measurements"] if m["bytes"] == 1 << 20]
    assert "parallel_contention" in big["flags"] and big["schedule"] == "sequential"
    groups = doc["provenance"]["options"]["pairs"]["rank_groups"]
    for x in doc["models"]["hockney"]["pairs"]:
        across = groups[x["i"]] != groups[x["j"]]
        assert _beta_holds(x, GBIT_BETA * 10 if across else GBIT_BETA), x


@needs_smpi
def test_nothing_shared_stays_parallel(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    p = run_cli("sim", "platform", "flat", "--nodes", "8", "--bw", "1Gbit", "--lat", "10us",
                "-o", "flat8.xml")
    assert p.returncode == 0, p.stderr
    doc = _bench(run_cli, tmp_path, "flat8.xml")
    for m in doc["measurements"]:
        assert m["schedule"] == "parallel"
        assert m["schedule_check"]["disagreed"] == 0 and not m["schedule_check"]["fell_back"]
        assert "parallel_contention" not in m.get("flags", [])
    assert all(_beta_holds(x, GBIT_BETA) for x in doc["models"]["hockney"]["pairs"])


def _loggp(run_cli: Callable[..., Any], tmp_path: Path, platform: str) -> dict[str, Any]:
    p = run_cli("bench", "--sim", platform, "--out", "lg.json", "--", "--ops", "p2p",
                "--sizes", "1K,1M", "--models", "loggp")
    assert p.returncode == 0, p.stderr
    doc: dict[str, Any] = json.loads((tmp_path / "lg.json").read_text())
    lg: dict[str, Any] = doc["models"]["loggp"]
    return lg


def _g_off(lg: dict[str, Any]) -> list[tuple[int, int, float]]:
    """Pairs whose G is more than 5% off the links' 8 ns/B."""
    return [(x["i"], x["j"], x["G"]) for x in lg["pairs"] if abs(x["G"] / GBIT_BETA - 1) > 0.05]


@needs_smpi
def test_loggp_oversubscribed_backbone_flagged_and_measured_alone(
        run_cli: Callable[..., Any], tmp_path: Path) -> None:
    p = run_cli("sim", "platform", "flat", "--nodes", "8", "--bw", "1Gbit", "--lat", "10us",
                "--backbone-bw", "2Gbit", "-o", "flat8.xml")
    assert p.returncode == 0, p.stderr
    lg = _loggp(run_cli, tmp_path, "flat8.xml")
    assert lg["flags"] == ["parallel_contention"]
    assert lg["schedule"] == "sequential"
    chk = lg["schedule_check"]
    assert chk["asked"] == "parallel" and chk["fell_back"] is True
    assert 0 < chk["disagreed"] <= chk["pairs_checked"] and chk["worst_ratio"] > 1
    assert len(lg["pairs"]) == 28
    assert not _g_off(lg), _g_off(lg)


@needs_smpi
def test_loggp_nothing_shared_stays_parallel(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    p = run_cli("sim", "platform", "flat", "--nodes", "8", "--bw", "1Gbit", "--lat", "10us",
                "-o", "flat8.xml")
    assert p.returncode == 0, p.stderr
    lg = _loggp(run_cli, tmp_path, "flat8.xml")
    assert lg["schedule"] == "parallel" and "flags" not in lg
    assert lg["schedule_check"]["disagreed"] == 0 and not lg["schedule_check"]["fell_back"]
    assert not _g_off(lg), _g_off(lg)
