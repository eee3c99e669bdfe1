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
