"""The run report names the slow node and the slow link that mpilab.pairs names: one
group-aware fit (mpilab.pairs.fit_pairs) for both, on a sampled design of 32 ranks in 4
sites with one slow node and one slow link between two sites (the report's earlier median
polish, blind to the sites, listed nodes of the slow link's sites as slow and no link)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpilab.pairs import sample_pairs

P, SITES = 32, 4
SLOW_NODE = 13                 # in site 1
SLOW_LINK = (1, 3)
GROUPS = [r // (P // SITES) for r in range(P)]


def _rtt(i: int, j: int, rng: random.Random) -> float:
    """Round trip: 2 x 4 us per node, +20 us on the slow node, 40 us between two sites,
    100 us between the sites of the slow link; +-1 % noise."""
    t = 8e-6 + (20e-6 if SLOW_NODE in (i, j) else 0.0)
    a, b = sorted((GROUPS[i], GROUPS[j]))
    if a != b:
        t += 100e-6 if (a, b) == SLOW_LINK else 40e-6
    return t * rng.uniform(0.99, 1.01)


def _doc() -> dict[str, Any]:
    rng = random.Random(7)
    pairs = sample_pairs(P, GROUPS, seed=0)
    keys = ("i", "j", "round", "mean", "ci_half", "rel_err", "median", "med_lo", "med_hi",
            "min", "max", "stdev", "reps", "invalid", "converged", "flags", "samples")
    pm: dict[str, Any] = {k: [] for k in keys}
    for n, (i, j) in enumerate(pairs):
        t = _rtt(i, j, rng)
        for k, v in (("i", i), ("j", j), ("round", n % 8), ("mean", t), ("ci_half", t / 200),
                     ("rel_err", 0.005), ("median", t), ("med_lo", t * 0.995),
                     ("med_hi", t * 1.005), ("min", t * 0.99), ("max", t * 1.01),
                     ("stdev", t / 100), ("reps", 3), ("invalid", 0), ("converged", True),
                     ("flags", []), ("samples", [t * 0.99, t, t * 1.01])):
            pm[k].append(v)
    pm.update(design="sampled", count=len(pairs), pairs_planned=len(pairs), rounds=8,
              samples_cap=1000)
    return {"schema": "mpilab.results/1",
            "provenance": {"tool": "mpilab-bench", "version": "0.1.0", "ranks": P,
                           "date": "2026-11-25T10:00:00Z",
                           "options": {"pairs": {"design": "sampled", "asked": "sampled",
                                                 "pairs": len(pairs), "groups": "site",
                                                 "ngroups": SITES, "rank_groups": GROUPS}}},
            "measurements": [{"op": "p2p", "impl": "roundtrip", "timing": "p2p",
                              "schedule": "parallel", "bytes": 8, "bytes_back": 8, "ranks": P,
                              "precision": {"cl": 0.95, "eps": 0.025, "min_reps": 2,
                                            "max_reps": 3},
                              "all_pairs_wall_s": 0.5, "pair_matrix": pm}]}


def test_report_names_the_slow_node_and_link_as_mpilab_pairs(
        run_cli: Callable[..., Any], tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_text(json.dumps(_doc()))
    fit = subprocess.run([sys.executable, "-m", "mpilab.pairs", str(f)], capture_output=True,
                         text=True, check=True).stdout
    assert f"slow nodes [{SLOW_NODE}], slow links [{SLOW_LINK}]" in fit
    p = run_cli("report", str(f), "-o", "r.html")
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "r.html").read_text()
    nodes = re.findall(r"slow node\(s\) at [^:]*: rank ([0-9, .]+) \(", page)
    links = re.findall(r"slow link\(s\) at [^:]*: ([^<]*?) \(Point-to-point", page)
    assert nodes == [str(SLOW_NODE)], nodes
    assert len(links) == 1 and links[0].startswith("sites 1-3 (") and "," not in \
        links[0].split(" (")[0], links
    # the tables under the section say the same
    assert 'id="slow-links-' in page and "sites 1-3" in page


def _pairs_sim() -> Any:
    # bench/pairs_sim.py builds the platform (it imports bench/harness.py)
    import importlib.util

    from mpilab.tools import REPO
    if str(REPO / "bench") not in sys.path:
        sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("pairs_sim", REPO / "bench" / "pairs_sim.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pairs_sim"] = mod
    spec.loader.exec_module(mod)
    return mod


def _needs_smpi() -> bool:
    import shutil

    from mpilab.tools import REPO
    return shutil.which("smpirun") is not None and (REPO / "build-smpi" / "bin" /
                                                     "mpilab-bench").is_file()


def test_report_on_a_simulated_cluster_names_exactly_the_slow_node_and_link(
        run_cli: Callable[..., Any], tmp_path: Path) -> None:
    import pytest
    if not _needs_smpi():
        pytest.skip("no SMPI build (scripts/build --smpi) or no smpirun")
    # 64 ranks in 4 sites, one node's LAN link slow, a slow direct link between sites 1 and 3
    xml, slow_rank, (sa, sb) = _pairs_sim().platform(tmp_path, 64)
    p = run_cli("bench", "--sim", str(xml), "--np", "64", "--out", "s.json", "--", "--ops",
                "p2p", "--sizes", "8", "--pairs", "sampled", "--min-reps", "5",
                "--max-reps", "20", "--min-time", "0", "--time-budget", "0", "--no-fit",
                timeout=600)
    assert p.returncode == 0, p.stderr
    p = run_cli("report", "s.json", "-o", "s.html")
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "s.html").read_text()
    nodes = re.findall(r"slow node\(s\) at [^:]*: rank ([0-9, .]+) \(", page)
    links = re.findall(r"slow link\(s\) at [^:]*: ([^<]*?) \(Point-to-point", page)
    assert nodes == [str(slow_rank)], nodes
    assert len(links) == 1 and links[0].startswith(f"sites {sa}-{sb} ("), links


def _racks(racks: int, per: int, slow_host: str, slow_link: tuple[int, int]) -> str:
    """A SimGrid platform of racks (hosts rkRnJ, one zone each, every host on its own 5 us
    link) joined by one 10 us link per pair of racks (zone routes): one host's link at 25 us
    (a slow node: +40 us per round trip) and one pair of racks' link at 40 us (a slow link:
    +60 us per round trip between those racks)."""
    out = ['<?xml version="1.0"?>', '<!DOCTYPE platform SYSTEM '
           '"https://simgrid.org/simgrid.dtd">', '<platform version="4.1">',
           ' <config><prop id="smpi/bw-factor" value="0:1"/><prop id="smpi/lat-factor" '
           'value="0:1"/><prop id="network/crosstraffic" value="0"/></config>',
           ' <zone id="top" routing="Full">']
    for r in range(racks):
        hosts = [f"rk{r}n{j}" for j in range(per)]
        out.append(f'  <zone id="rack{r}" routing="Full">')
        out += [f'   <host id="{h}" speed="1Gf"/>' for h in hosts]
        out.append(f'   <router id="gw{r}"/>')
        out += [f'   <link id="l-{h}" bandwidth="10Gbps" '
                f'latency="{"25us" if h == slow_host else "5us"}" sharing_policy="SPLITDUPLEX"/>'
                for h in hosts]
        for x, hx in enumerate(hosts):
            for hy in hosts[x + 1:]:
                out.append(f'   <route src="{hx}" dst="{hy}"><link_ctn id="l-{hx}" '
                           f'direction="UP"/><link_ctn id="l-{hy}" direction="DOWN"/></route>')
            out.append(f'   <route src="{hx}" dst="gw{r}"><link_ctn id="l-{hx}" '
                       'direction="UP"/></route>')
        out.append("  </zone>")
    rp = [(x, y) for x in range(racks) for y in range(x + 1, racks)]
    out += [f'  <link id="rl{x}-{y}" bandwidth="10Gbps" '
            f'latency="{"40us" if (x, y) == slow_link else "10us"}" sharing_policy="SPLITDUPLEX"/>'
            for x, y in rp]
    out += [f'  <zoneRoute src="rack{x}" dst="rack{y}" gw_src="gw{x}" gw_dst="gw{y}">'
            f'<link_ctn id="rl{x}-{y}" direction="UP"/></zoneRoute>' for x, y in rp]
    return "\n".join([*out, " </zone>", "</platform>", ""])


def test_report_on_racks_names_exactly_the_slow_node_and_link_at_every_size(
        run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """32 hosts in 4 racks of a platform written here (not the spec generator's sites), the
    runner's defaults but the sampled design: at 8 B and at 64 KiB (pairs of one round may
    share a rack-pair link) the report names rank 21 (rk2n5) and racks 1-3, nothing else."""
    import pytest
    if not _needs_smpi():
        pytest.skip("no SMPI build (scripts/build --smpi) or no smpirun")
    (tmp_path / "racks.xml").write_text(_racks(4, 8, "rk2n5", (1, 3)))
    p = run_cli("bench", "--sim", "racks.xml", "--out", "s.json", "--", "--ops", "p2p",
                "--sizes", "8,64K", "--pairs", "sampled", timeout=600)
    assert p.returncode == 0, p.stderr
    p = run_cli("report", "s.json", "-o", "s.html")
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "s.html").read_text()
    nodes = re.findall(r"slow node\(s\) at [^:]*: rank ([0-9, .]+) \(", page)
    links = re.findall(r"slow link\(s\) at [^:]*: ([^<]*?) \(Point-to-point", page)
    assert nodes == ["21", "21"], nodes
    assert len(links) == 2 and all(lk.startswith("sites 1-3 (") for lk in links), links
