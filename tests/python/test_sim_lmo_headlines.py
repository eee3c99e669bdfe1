"""The LMO fit's headlines (models.lmo.slowest) on a simulated 4-node star with one slow
access link (node 3: 25 Mbit/s against 100) and one slow CPU (node 1: 300 us per message
against 10 us): slowest.node is the slow CPU's node, not the slow link's (whose C + M t is
the largest because on a star t is its access link's), and the slowest link is node 3's
access link (the star view), not a per-pair residual; the report says the same."""

from __future__ import annotations

import html
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


def _star4() -> str:
    hosts, links, hl = [], [], []
    for i in range(4):
        c = "300e-6" if i == 1 else "10e-6"
        hosts.append(f'  <host id="st-{i}" speed="1000000000f" core="1">\n'
                     f'   <prop id="smpi/os" value="0:{c}:2e-9" />'
                     f'<prop id="smpi/ois" value="0:{c}:2e-9" />\n'
                     f'   <prop id="smpi/or" value="0:{c}:2e-9" />\n  </host>')
        bw = "25000000bps" if i == 3 else "100000000bps"
        links.append(f'  <link id="st-{i}-link" bandwidth="{bw}" latency="5e-05s" '
                     'sharing_policy="SPLITDUPLEX" />')
        hl.append(f'  <host_link id="st-{i}" up="st-{i}-link_UP" down="st-{i}-link_DOWN" />')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n <config>\n'
            '  <prop id="smpi/bw-factor" value="0:1" />\n'
            '  <prop id="smpi/lat-factor" value="0:1" />\n'
            '  <prop id="network/crosstraffic" value="0" />\n </config>\n'
            ' <zone id="st" routing="Cluster">\n' + "\n".join(hosts + links + hl)
            + "\n </zone>\n</platform>\n")


@needs_smpi
def test_headlines_name_the_slow_cpu_and_the_slow_access_link(
        run_cli: Callable[..., Any], tmp_path: Path) -> None:
    (tmp_path / "star4.xml").write_text(_star4())
    p = run_cli("bench", "--sim", "star4.xml", "--sim-cfg",
                "smpi/send-is-detached-thresh:1048576", "--sim-cfg",
                "smpi/async-small-thresh:1048576", "--out", "s.json", "--", "--ops", "p2p",
                "--sizes", "1K,64K", "--models", "lmo", "--lmo-rendezvous", "1M", "--quiet")
    assert p.returncode == 0, p.stderr
    lm = json.loads((tmp_path / "s.json").read_text())["models"]["lmo"]
    sl = lm["slowest"]
    assert sl["cpu"] == 1
    assert sl["node"] == 1 and sl["node_by"] == "C", sl
    assert sl["link_by"] == "star" and sl["link_of"] == 3 and sl["link"] is None, sl
    assert lm["star"]["slowest_link_of"] == 3
    p = run_cli("report", "s.json", "-o", "s.html")
    assert p.returncode == 0, p.stderr
    page = html.unescape((tmp_path / "s.html").read_text())
    assert "Slowest in the fit: node 1 (its fixed delay per message C" in page
    assert "link: node 3's access link" in page


def _star(bw: list[str], cost: list[str]) -> str:
    """A 4-host star (SimGrid Cluster zone: one access link per host) with the given link
    rates and per-message processing costs (smpi/os, ois, or)."""
    hosts, links, hl = [], [], []
    for i, (b, c) in enumerate(zip(bw, cost, strict=True)):
        props = "".join(f'<prop id="smpi/{k}" value="0:{c}:0" />' for k in ("os", "ois", "or"))
        hosts.append(f'  <host id="hs-{i}" speed="1000000000f" core="1">{props}</host>')
        links.append(f'  <link id="hs-{i}-link" bandwidth="{b}" latency="20us" '
                     'sharing_policy="SPLITDUPLEX" />')
        hl.append(f'  <host_link id="hs-{i}" up="hs-{i}-link_UP" down="hs-{i}-link_DOWN" />')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n <config>\n'
            '  <prop id="smpi/bw-factor" value="0:1" />\n'
            '  <prop id="smpi/lat-factor" value="0:1" />\n'
            '  <prop id="network/crosstraffic" value="0" />\n </config>\n'
            ' <zone id="hs" routing="Cluster">\n' + "\n".join(hosts + links + hl)
            + "\n </zone>\n</platform>\n")


@needs_smpi
@pytest.mark.parametrize("cpu", [None, 2, 0])
def test_a_slow_access_link_is_not_a_slow_node(
        run_cli: Callable[..., Any], tmp_path: Path, cpu: int | None) -> None:
    """Node 2's access link 10x slower than the others' (12.5 MB/s against 125), no other
    difference, or besides it one processor 200 us per message (on node 2 itself or on node 0):
    every node's C holds the MPI's header bytes at its access link's rate, node 2's 10x the
    others'; the headlines name node 2's access link and, as the slowest node, the slow
    processor's node or none."""
    bw = ["125MBps", "125MBps", "12.5MBps", "125MBps"]
    cost = ["200e-6" if i == cpu else "0" for i in range(4)]
    (tmp_path / "hs.xml").write_text(_star(bw, cost))
    p = run_cli("bench", "--sim", "hs.xml", "--out", "s.json", "--", "--ops", "p2p",
                "--sizes", "1K", "--models", "lmo", "--lmo-bytes", "64K", "--quiet",
                timeout=120)
    assert p.returncode == 0, p.stderr
    lm = json.loads((tmp_path / "s.json").read_text())["models"]["lmo"]
    sl = lm["slowest"]
    assert sl["link_by"] == "star" and sl["link_of"] == 2, sl
    assert sl.get("node") == cpu, sl
    assert sl.get("cpu") == cpu, sl
    if cpu is not None:
        assert sl["node_cost_s"] == pytest.approx(200e-6, rel=0.02), sl
    p = run_cli("report", "s.json", "-o", "s.html")
    assert p.returncode == 0, p.stderr
    page = html.unescape((tmp_path / "s.html").read_text())
    assert "link: node 2's access link" in page
    if cpu is None:
        assert "Slowest in the fit: no node" in page
        assert "Slowest at messaging" not in page
    else:
        assert f"Slowest in the fit: node {cpu} (" in page
