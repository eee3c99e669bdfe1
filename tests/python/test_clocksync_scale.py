"""bench/clocksync_scale.py at 64 simulated ranks: the hierarchical (tree) synchronisation
recovers every injected clock offset and drift within its stated uncertainty, on a symmetric
platform and on one whose every link is 8 us slower one way than the other (there every pair's
offset is half that off, the same way along every path of the tree: a composed bound that
did not add its path's pair bounds would not hold). Also bad input: one line."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "clocksync_scale.py"
needs_smpi = pytest.mark.skipif(
    shutil.which("smpicc") is None or shutil.which("smpirun") is None,
    reason="no smpicc/smpirun (libsimgrid-dev)")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=600)


@needs_smpi
@pytest.mark.parametrize("platform", ["flat", "asymmetric"])
def test_tree_bounds_hold_at_64_ranks(tmp_path: Path, platform: str) -> None:
    out = tmp_path / "cs.json"
    p = run("--ranks", "64", "--methods", "hierarchical,skampi", "--windows", "0,0.8",
            "--platform", platform, "--out", str(out))
    assert p.returncode == 0, p.stderr
    rows = json.loads(out.read_text())
    assert len(rows) == 4
    for r in rows:
        what = f"{r['method']} window {r['window_s']} on {platform}"
        assert r["ranks"] == 64 and r["checked"] == 63 and r["platform"] == platform
        # the injection is there (up to 10 ms between ranks) and every offset is recovered
        # within the rank's stated uncertainty, every drift within its drift uncertainty
        assert r["max_injected_offset_s"] > 5e-3, what
        assert r["within_uncertainty"] == 63, what
        assert r["max_error_to_uncertainty"] <= 1.0, what
        assert r["drift_within_uncertainty"] == 63, what
    tree = {r["window_s"]: r for r in rows if r["method"] == "hierarchical"}
    flat = {r["window_s"]: r for r in rows if r["method"] == "skampi"}
    if platform == "asymmetric":
        # the errors come close to the bounds (4 us per pair before SMPI's latency factor):
        # the check above is not passed by loose bounds alone
        assert tree[0.8]["max_error_to_uncertainty"] > 0.5
        assert tree[0.8]["max_abs_error_s"] > 1.5 * flat[0.8]["max_abs_error_s"]
    # 64 ranks are two levels of the radix-32 tree: cheaper than rank 0 probing every rank
    assert tree[0]["first_attempt_s"] < flat[0]["first_attempt_s"]


@needs_smpi
def test_node_aware_tree_keeps_the_flat_precision(tmp_path: Path) -> None:
    """8 ranks per node (64 ranks on 8 hosts, the asymmetric network between hosts, a
    symmetric 0.3 us loopback inside them): the tree's hops below each node's leader stay
    inside the node, so a rank's path crosses the network once, as the flat method's probe
    does. The real errors are then the flat method's (a tree blind to the nodes, radix 32 over
    the ranks, crossed the slow link twice on most paths: 16.1 against 8.06 us), the stated
    bounds with the drift window about the flat method's, and every offset within its bound."""
    out = tmp_path / "cs.json"
    p = run("--ranks", "64", "--ppn", "8", "--methods", "hierarchical,skampi", "--windows",
            "0,0.8", "--platform", "asymmetric", "--out", str(out))
    assert p.returncode == 0, p.stderr
    rows = json.loads(out.read_text())
    assert len(rows) == 4
    for r in rows:
        assert r["ppn"] == 8 and r["within_uncertainty"] == 63
        assert r["drift_within_uncertainty"] == 63
        assert r["max_error_to_uncertainty"] <= 1.0
    tree = {r["window_s"]: r for r in rows if r["method"] == "hierarchical"}
    flat = {r["window_s"]: r for r in rows if r["method"] == "skampi"}
    for w in (0, 0.8):
        # the network's asymmetry is there (about 8 us per crossing) and crossed once
        assert flat[w]["max_abs_error_s"] > 5e-6
        assert tree[w]["max_abs_error_s"] < flat[w]["max_abs_error_s"] + 0.5e-6, w
    # with the drift window (the default); without it the tree's pairs resolve their drift
    # over its short sweeps only, and its bounds carry that (docs/clocksync.md)
    assert tree[0.8]["mean_uncertainty_s"] < 1.25 * flat[0.8]["mean_uncertainty_s"]
    assert tree[0.8]["max_uncertainty_s"] < 1.25 * flat[0.8]["max_uncertainty_s"]


@needs_smpi
def test_auto_takes_leaders_and_keeps_the_flat_precision_beyond_the_tree(tmp_path: Path) -> None:
    """128 ranks, 2 per node: 64 nodes, more than the radix-32 leaders' tree holds at depth 1,
    on the asymmetric network. The hierarchical tree puts most leaders two network hops from
    rank 0 and is 16.1 us off where the flat method is 8.06 us off; leaders (rank 0 probes
    every node's leader) crosses the network once, as the flat method does. Auto (128 ranks:
    at the threshold) must choose leaders, count the 64 nodes, and keep every offset and drift
    within its bound with real errors and bounds no worse than the flat method's."""
    out = tmp_path / "cs.json"
    p = run("--ranks", "128", "--ppn", "2", "--methods", "auto,leaders,hierarchical,skampi",
            "--windows", "0.8", "--platform", "asymmetric", "--out", str(out))
    assert p.returncode == 0, p.stderr
    rows = {r["method"]: r for r in json.loads(out.read_text())}
    assert sorted(rows) == ["auto", "hierarchical", "leaders", "skampi"]
    for m, r in rows.items():
        assert r["within_uncertainty"] == 127 and r["drift_within_uncertainty"] == 127, m
        assert r["max_error_to_uncertainty"] <= 1.0, m
    auto, lead, tree, flat = (rows[m] for m in ("auto", "leaders", "hierarchical", "skampi"))
    assert auto["ran"] == "leaders" and auto["nodes"] == 64
    assert lead["nodes"] == 0 and flat["ran"] == "skampi"  # counted only when auto chose
    # the asymmetry is there; the tree crosses it twice on most paths, leaders once
    assert flat["max_abs_error_s"] > 5e-6
    assert tree["max_abs_error_s"] > 1.5 * flat["max_abs_error_s"]
    for r in (auto, lead):
        assert r["max_abs_error_s"] < flat["max_abs_error_s"] + 0.5e-6
        assert r["mean_uncertainty_s"] <= 1.02 * flat["mean_uncertainty_s"]
        assert r["max_uncertainty_s"] <= 1.02 * flat["max_uncertainty_s"]
    # rank 0 probes 63 leaders and its own node's rank, not 127 ranks
    assert lead["first_attempt_s"] < flat["first_attempt_s"]


def test_bad_input_one_line() -> None:
    for args, what in ((["--ranks", "1"], "--ranks"), (["--ranks", "x"], "--ranks"),
                       (["--methods", "ntp"], "--methods"), (["--platform", "torus"], "--platform"),
                       (["--platform", "asymmetric", "--ranks", "512"], "asymmetric"),
                       (["--ppn", "0"], "--ppn")):
        p = run(*args)
        assert p.returncode != 0, args
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and what in lines[0], (args, p.stderr)
