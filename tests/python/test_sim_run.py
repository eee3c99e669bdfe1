"""`mpilab bench --sim PLATFORM`: the SMPI build of the runner under smpirun on a SimGrid
platform, writing an ordinary results file whose provenance says it was simulated; a
simulated ping-pong recovers the platform's latency and bandwidth; bad input is one line."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env
from mpilab.pair_matrix import expand_all
from mpilab.tools import REPO

SMPI_BENCH = REPO / "build-smpi" / "bin" / "mpilab-bench"
needs_smpi = pytest.mark.skipif(
    shutil.which("smpirun") is None or not SMPI_BENCH.is_file(),
    reason="no SMPI build (scripts/build --smpi) or no smpirun")


def _platform(run_cli: Callable[..., Any], tmp_path: Path, nodes: int, bw: str,
              lat: str) -> Path:
    out = tmp_path / f"flat{nodes}.xml"
    p = run_cli("sim", "platform", "flat", "--nodes", str(nodes), "--bw", bw, "--lat", lat,
                "-o", str(out))
    assert p.returncode == 0, p.stderr
    return out


@needs_smpi
def test_simulated_pingpong_recovers_the_platform(run_cli: Callable[..., Any],
                                                  tmp_path: Path) -> None:
    """Two hosts behind one switch, 5 us and 10 Gbit/s per link: one way is 2 links, so
    Hockney's alpha is 10 us and beta 1/1.25e9 s per byte, each inside its interval (SMPI's
    16-byte envelope per message and 10 ns per clock reading accounted for, the interval at
    least a tick wide); the results say simulated, on which platform (its sha256)."""
    plat = _platform(run_cli, tmp_path, 2, "10Gbit", "5us")
    p = run_cli("bench", "--sim", str(plat), "--out", "sim.json", "--", "--ops", "p2p",
                "--sizes", "0,1K,64K,1M", "--models", "hockney", "--quiet")
    assert p.returncode == 0, p.stderr
    assert "simulated on" in p.stderr
    doc = json.loads((tmp_path / "sim.json").read_text())
    sim = doc["provenance"]["simulated"]
    assert sim["platform_sha256"] == hashlib.sha256(plat.read_bytes()).hexdigest()
    assert sim["hosts"] == 2 and sim["ranks"] == 2 and "SimGrid" in sim["engine"]
    assert "--cfg=smpi/simulate-computation:no" in sim["smpi_config"]
    (pair,) = doc["models"]["hockney"]["pairs"]
    assert pair["alpha"] == pytest.approx(10e-6, rel=1e-4)
    assert pair["beta"] == pytest.approx(8e-10, rel=1e-4)
    q = pair["quality"]
    assert q["alpha"]["lo"] <= 10e-6 <= q["alpha"]["hi"]
    assert q["beta"]["lo"] <= 8e-10 <= q["beta"]["hi"]
    assert q["alpha"]["hi"] - q["alpha"]["lo"] >= 5e-9  # one tick of 10 ns, halved
    wire = doc["models"]["hockney"]["simulated_wire"]
    assert wire["envelope_bytes"] == 16 and wire["clock_tick_s"] == pytest.approx(1e-8)
    assert "--cfg=smpi/async-small-thresh:65536" in sim["smpi_config"]
    # noiseless: the rule stops at its first chance (no minimum measuring time)
    assert all(m["stats"]["reps"] <= 8 for m in expand_all(doc["measurements"]))
    rep = run_cli("report", "sim.json")
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "sim.html").read_text()
    assert "SIMULATED" in html and sim["platform_sha256"][:12] in html


@needs_smpi
def test_simulated_loggp_recovers_the_platform(run_cli: Callable[..., Any],
                                               tmp_path: Path) -> None:
    """LogGP on the eager range (0..32 KiB) of two hosts, 25 us and 1 Gbit/s per link: L is
    the route's 50 us plus one byte's 8 ns (LogGP charges the first byte to L), G 8 ns/B,
    each inside its interval; o_s and o_r are SMPI's 0 (a send returns at once; a receive
    posted after the message arrived finds it there)."""
    plat = _platform(run_cli, tmp_path, 2, "1Gbit", "25us")
    p = run_cli("bench", "--sim", str(plat), "--out", "lg.json", "--", "--ops", "p2p",
                "--sizes", "0,1K,2K,4K,8K,16K,32K", "--models", "loggp", "--quiet")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "lg.json").read_text())
    (pair,) = doc["models"]["loggp"]["pairs"]
    q = pair["quality"]
    for name, truth in (("L", 50e-6 + 8e-9), ("G", 8e-9)):
        assert pair[name] == pytest.approx(truth, rel=1e-4), name
        assert q[name]["lo"] <= truth <= q[name]["hi"], (name, q[name])
    assert pair["os"] < 1e-8 and pair["or"] < 1e-8


@needs_smpi
@pytest.mark.parametrize("loggp_pairs", ["design", "auto"])
def test_simulated_loggp_over_the_sampled_design(run_cli: Callable[..., Any],
                                                 tmp_path: Path, loggp_pairs: str) -> None:
    """LogGP measures the run's pair design (--loggp-pairs design): with --pairs sampled at 10
    ranks it fits exactly the pairs the p2p matrix measured (fewer than all 45); by default
    (auto) a sampled design's LogGP is one random perfect matching of the ranks instead: 5
    disjoint pairs, every rank in one, all of them pairs of the design. Each pair the
    platform's L and G; no predictions (they need every pair); the results say which pairs
    and what the LogGP measurement and the clock synchronisations cost (models.loggp.wall_s,
    pairs_design, clock_sync.total_duration_s)."""
    plat = _platform(run_cli, tmp_path, 10, "1Gbit", "25us")
    p = run_cli("bench", "--sim", str(plat), "--out", "lgs.json", "--", "--ops",
                "p2p,scatter:linear", "--timing", "global", "--sizes", "0,1K,4K,16K",
                "--models", "loggp", "--pairs", "sampled", "--loggp-pairs", loggp_pairs,
                "--quiet")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "lgs.json").read_text())
    (pm,) = [m["pair_matrix"] for m in doc["measurements"]
             if "pair_matrix" in m and m["bytes"] == 0]
    assert pm["design"] == "sampled"
    design = set(zip(pm["i"], pm["j"], strict=True))
    lg = doc["models"]["loggp"]
    fitted = {(q["i"], q["j"]) for q in lg["pairs"]}
    assert len(design) < 45
    if loggp_pairs == "design":
        assert fitted == design and lg["pairs_design"] == "sampled"
    else:
        ranks = sorted(r for pair in fitted for r in pair)
        assert lg["pairs_design"] == "matching" and len(fitted) == 5
        assert ranks == list(range(10)) and fitted < design
    for q in lg["pairs"]:
        assert q["L"] == pytest.approx(50e-6 + 8e-9, rel=1e-3), q
        assert q["G"] == pytest.approx(8e-9, rel=1e-3), q
    assert lg["predictions"] == []
    assert lg["wall_s"] > 0
    cs = doc["provenance"]["clock_sync"]
    assert cs["performed"] >= 1 and cs["total_duration_s"] > 0


@needs_smpi
def test_auto_sync_at_128_ranks_probes_from_rank_0(run_cli: Callable[..., Any],
                                                   tmp_path: Path) -> None:
    """128 simulated ranks, one per host, injected clocks, no --sync: auto chooses leaders
    (from 128 ranks on), counts the 128 nodes, says why in the results, and states the flat
    method's bounds (every rank probed from rank 0: one rank per node leaves no cheaper way to
    them), where the O(log p) tree states more (two hops for most ranks)."""
    plat = _platform(run_cli, tmp_path, 128, "10Gbit", "1us")
    args = ["--ops", "bcast", "--timing", "global", "--sizes", "0", "--quiet",
            "--inject-clock", "offset=3ms,drift=40ppm,seed=5"]
    docs = {}
    for name, extra in (("auto", []), ("skampi", ["--sync", "skampi"]),
                        ("hierarchical", ["--sync", "hierarchical"])):
        p = run_cli("bench", "--sim", str(plat), "--out", f"{name}.json", "--", *args, *extra)
        assert p.returncode == 0, p.stderr
        docs[name] = json.loads((tmp_path / f"{name}.json").read_text())

    def mean_bound(doc: dict[str, Any]) -> float:
        u = [r["uncertainty_s"] for r in doc["provenance"]["clock_sync"]["ranks"]]
        assert len(u) == 127
        return sum(u) / len(u)

    cs = docs["auto"]["provenance"]["clock_sync"]
    assert docs["auto"]["provenance"]["options"]["sync"] == "auto"
    assert cs["method"] == "leaders" and cs["requested"] == "auto" and cs["nodes"] == 128
    assert "one per node" in cs["chosen_because"]
    assert mean_bound(docs["auto"]) <= 1.02 * mean_bound(docs["skampi"])
    assert mean_bound(docs["hierarchical"]) > 1.3 * mean_bound(docs["auto"])
    rep = run_cli("report", "auto.json")
    assert rep.returncode == 0, rep.stderr
    assert "leaders (auto: 128 ranks, one per node" in (tmp_path / "auto.html").read_text()


@needs_smpi
def test_simulated_clocks_are_one_clock_unless_injected(run_cli: Callable[..., Any],
                                                       tmp_path: Path) -> None:
    """Simulated, every rank's MPI_Wtime is SimGrid's one clock: global timing needs no
    probing, so the default synchronisation is exact (identity models, zero uncertainty, one
    for the run, recorded as such), and it gives the same global times as probing (skampi
    asked for by name); with --inject-clock the ranks have clocks of their own and the runner
    synchronises them (skampi, before every global measurement), recovering the same times
    within its stated uncertainty; exact with injected clocks is refused in one line."""
    plat = _platform(run_cli, tmp_path, 4, "10Gbit", "2us")
    args = ["--ops", "scatter:binomial", "--timing", "max,global", "--sizes", "0,1K,64K",
            "--quiet"]

    def run(name: str, *extra: str) -> dict[str, Any]:
        p = run_cli("bench", "--sim", str(plat), "--out", f"{name}.json", "--", *args, *extra)
        assert p.returncode == 0, p.stderr
        return json.loads((tmp_path / f"{name}.json").read_text())

    def glob(doc: dict[str, Any]) -> dict[int, dict[str, Any]]:
        return {m["bytes"]: m for m in doc["measurements"] if m["timing"] == "global"}

    exact, probed = run("exact"), run("probed", "--sync", "skampi")
    inj = run("inj", "--inject-clock", "offset=3ms,drift=40ppm,seed=5")
    cs = exact["provenance"]["clock_sync"]
    assert exact["provenance"]["options"]["sync"] == "exact"
    assert "once" in exact["provenance"]["options"]["resync"]
    assert cs["method"] == "exact" and cs["performed"] == 1 and cs["max_residual_s"] == 0
    assert cs["last_max_uncertainty_s"] == 0 and cs["last_precise"] is True
    assert len(cs["ranks"]) == 3
    assert all(r["offset_s"] == 0 and r["drift"] == 0 and r["uncertainty_s"] == 0
               for r in cs["ranks"])
    assert all(m["clock_sync_uncertainty_s"] == 0 for m in glob(exact).values())
    for doc in (probed, inj):
        pcs = doc["provenance"]["clock_sync"]
        assert pcs["method"] == "skampi" and pcs["performed"] == 3
        assert pcs["total_duration_s"] > 100 * cs["total_duration_s"]
    assert any(r["offset_s"] != 0 for r in inj["provenance"]["clock_sync"]["ranks"])
    # injected clocks and no --sync: auto, which below 128 ranks is the flat method, and says so
    ics = inj["provenance"]["clock_sync"]
    assert inj["provenance"]["options"]["sync"] == "auto"
    assert ics["requested"] == "auto" and ics["nodes"] is None
    assert "fewer than 128 ranks" in ics["chosen_because"]
    assert "requested" not in probed["provenance"]["clock_sync"]
    for size, m in glob(exact).items():
        assert glob(probed)[size]["stats"]["median"] == pytest.approx(m["stats"]["median"],
                                                                      rel=1e-9)
        im = glob(inj)[size]
        assert abs(im["stats"]["median"] - m["stats"]["median"]) <= \
            im["clock_sync_uncertainty_s"] + 1e-9
        # the global measurement no longer pays for probing: its cost is the repetitions'
        assert m["wall_s"] < glob(probed)[size]["wall_s"]
    bad = run_cli("bench", "--sim", str(plat), "--out", "bad.json", "--", *args,
                  "--sync", "exact", "--inject-clock", "offset=1ms")
    assert bad.returncode != 0 and "--sync exact" in bad.stderr
    assert not (tmp_path / "bad.json").exists()


@needs_smpi
def test_simulated_ranks_default_to_the_hosts(run_cli: Callable[..., Any],
                                              tmp_path: Path) -> None:
    plat = _platform(run_cli, tmp_path, 5, "1Gbit", "10us")
    p = run_cli("bench", "--sim", str(plat), "--out", "s5.json", "--", "--ops", "bcast",
                "--sizes", "1K", "--quiet")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "s5.json").read_text())
    assert doc["provenance"]["simulated"]["ranks"] == 5
    assert {m["ranks"] for m in doc["measurements"]} == {5}


@pytest.mark.parametrize("case", ["missing", "not-xml", "too-many-ranks", "launches",
                                  "testbed", "no-smpi-build", "no-smpirun", "stdout",
                                  "cfg-no-sim", "cfg-bad"])
def test_sim_bad_input_one_line(run_cli: Callable[..., Any], tmp_path: Path,
                                case: str) -> None:
    env = cli_env()
    own_tmp = tmp_path / "systmp"  # the run's temporary files, apart from other tests'
    own_tmp.mkdir()
    env["TMPDIR"] = str(own_tmp)
    plat = tmp_path / "p.xml"
    plat.write_text("<platform version='4.1'><zone id='z' routing='Full'>"
                    "<host id='a' speed='1Gf'/><host id='b' speed='1Gf'/></zone></platform>")
    args = ["bench", "--sim", str(plat), "--out", "o.json"]
    want = ""
    if case == "missing":
        args[2] = str(tmp_path / "nosuch.xml")
        want = "nosuch.xml"
    elif case == "not-xml":
        plat.write_text("hosts: a, b\n")
        want = "not XML"
    elif case == "too-many-ranks":
        args += ["--np", "3"]
        want = "2 hosts"
    elif case == "launches":
        args += ["--launches", "3"]
        want = "deterministic"
    elif case == "testbed":
        args += ["--testbed", "mlt"]
        want = "--testbed"
    elif case == "no-smpi-build":
        env["MPILAB_SMPI_BIN"] = str(tmp_path / "empty")
        want = "scripts/build --smpi"
    elif case == "no-smpirun":
        env["PATH"] = str(tmp_path / "nobin")
        want = "smpirun not found"
    elif case == "stdout":
        args[4] = "-"
        want = "--out FILE"
    elif case == "cfg-no-sim":
        args = ["bench", "--sim-cfg", "smpi/send-is-detached-thresh:1048576", "--out", "o.json"]
        want = "--sim-cfg applies to simulated runs only"
    elif case == "cfg-bad":
        args += ["--sim-cfg", "smpi/send-is-detached-thresh"]
        want = "expected NAME:VALUE"
    p = run_cli(*args, "--", "--ops", "p2p", "--sizes", "1K", env=env)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and want in lines[0], p.stderr
    assert not (tmp_path / "o.json").exists()
    assert not [f for f in os.listdir(own_tmp) if f.startswith("mpilab-sim-")]


@needs_smpi
def test_simulated_survey(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """`mpilab survey --sim`: one launch on the platform's hosts, the survey's results and
    report, both saying simulated; --launches above 1 refused before anything runs."""
    plat = _platform(run_cli, tmp_path, 4, "10Gbit", "2us")
    p = run_cli("survey", "--sim", str(plat), "--quick", "-q", "--out", "sv")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "sv" / "results.json").read_text())
    assert doc["provenance"]["simulated"]["ranks"] == 4 and "launches" not in doc
    assert doc["provenance"]["options"]["precision"]["min_time_s"] == 0
    assert "SIMULATED" in (tmp_path / "sv" / "report.html").read_text()
    # the runner's time collection by a binomial reduce, printed and recorded; the one
    # simulated clock synchronised exactly
    cfg = doc["provenance"]["simulated"]["smpi_config"]
    assert "--cfg=smpi/reduce:binomial" in cfg
    assert doc["provenance"]["clock_sync"]["method"] == "exact"
    bad = run_cli("survey", "--sim", str(plat), "--launches", "3", "--out", "sv2")
    assert bad.returncode == 2 and "deterministic" in bad.stderr
    assert not (tmp_path / "sv2").exists()
    # --sim-cfg comes after the survey's own options (so it overrides them); both printed
    p = run_cli("survey", "--sim", str(plat), "--quick", "--out", "sv3", "--sim-cfg",
                "smpi/reduce:default")
    assert p.returncode == 0, p.stderr
    said = " ".join(p.stderr.split())  # the console wraps long lines
    assert "--cfg=smpi/reduce:binomial --cfg=smpi/reduce:default" in said, said
    cfg = json.loads((tmp_path / "sv3" / "results.json").read_text())[
        "provenance"]["simulated"]["smpi_config"]
    assert cfg.index("--cfg=smpi/reduce:default") > cfg.index("--cfg=smpi/reduce:binomial")
    for args, why in ((["--sim-cfg", "smpi/reduce:binomial"], "simulated runs only"),
                      (["--sim", str(plat), "--sim-cfg", "reduce"], "expected NAME:VALUE")):
        bad = run_cli("survey", "--quick", "--out", "sv4", *args)
        assert bad.returncode == 2 and why in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert not (tmp_path / "sv4").exists()


SMPI_MULTILANE = REPO / "build-smpi" / "bin" / "mpilab-multilane"
SMPI_WAVEFRONT = REPO / "build-smpi" / "bin" / "mpilab-wavefront"
needs_smpi_tools = pytest.mark.skipif(
    shutil.which("smpirun") is None or not SMPI_MULTILANE.is_file()
    or not SMPI_WAVEFRONT.is_file(),
    reason="no SMPI build of mpilab-multilane/-wavefront (scripts/build --smpi) or no smpirun")


def _spec_platform(run_cli: Callable[..., Any], tmp_path: Path) -> Path:
    out = tmp_path / "spec.xml"
    p = run_cli("sim", "platform", "spec", "-o", str(out))
    assert p.returncode == 0, p.stderr
    return out


@needs_smpi_tools
def test_simulated_multilane(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """`mpilab multilane run --sim`: the default spec simulated (2 sites x 4 nodes, hosts
    named as the testbed's, so --sites testbed finds the sites); the document says
    simulated and on which platform, the model sees the spec's WAN (L = 5 ms, b_WAN 100
    Mbit/s), the multilane runs beat single-lane at 1 MiB in simulated time (deterministic),
    and the report says SIMULATED at the top."""
    plat = _spec_platform(run_cli, tmp_path)
    p = run_cli("multilane", "run", "--sim", str(plat), "--sizes", "64K,1M", "--reps", "2",
                "--model-reps", "2", "-o", "ml.json")
    assert p.returncode == 0, p.stderr
    assert "simulated on" in p.stdout
    doc = json.loads((tmp_path / "ml.json").read_text())
    sim = doc["provenance"]["simulated"]
    assert sim["platform_sha256"] == hashlib.sha256(plat.read_bytes()).hexdigest()
    assert sim["ranks"] == 8 and doc["grid"]["nsites"] == 2
    assert doc["model"]["L"] == pytest.approx(5e-3, rel=0.01)
    assert doc["model"]["b"][0] * 8 == pytest.approx(100e6, rel=0.01)
    for op in ("scatter", "gather"):
        single = [r for r in doc["runs"] if r["op"] == op and r["impl"] == "single"
                  and r["bytes"] == 1 << 20]
        multi = [r for r in doc["runs"] if r["op"] == op and r["impl"] == "multilane"
                 and r["bytes"] == 1 << 20]
        assert single and multi
        assert min(multi[0]["times"]) < min(single[0]["times"])
    rep = run_cli("multilane", "report", "ml.json", "-o", "ml.html")
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "ml.html").read_text()
    assert "SIMULATED" in html and sim["platform_sha256"][:12] in html


@needs_smpi_tools
def test_simulated_multilane_sim_cfg(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """`multilane run --sim-cfg NAME:VALUE` reaches smpirun as --cfg=NAME:VALUE: cross
    traffic turned back on is in the document's network provenance, taken from --cfg."""
    plat = _spec_platform(run_cli, tmp_path)
    p = run_cli("multilane", "run", "--sim", str(plat), "--sizes", "64K", "--reps", "1",
                "--model-reps", "1", "--impls", "single", "--ops", "scatter",
                "--sim-cfg", "network/crosstraffic:1", "-o", "ml.json")
    assert p.returncode == 0, p.stderr
    sim = json.loads((tmp_path / "ml.json").read_text())["provenance"]["simulated"]
    assert "--cfg=network/crosstraffic:1" in sim["smpi_config"]
    assert sim["network"]["source"]["network/crosstraffic"] == "--cfg"
    assert "crosstraffic" in sim["network"]["flags"]


@needs_smpi_tools
def test_simulated_wavefront(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """`mpilab wavefront run --np 3 --sim`: the distributed mode under smpirun computes
    the same result as the sequential reference (verify), and the results say simulated."""
    for args in (("wavefront", "create", "--rows", "60", "--cols", "70", "d0", "c0"),
                 ("wavefront", "convert", "--layout", "rowmajor", "--mb", "10", "--nb", "14",
                  "--bands", "3", "d0", "d"),
                 ("wavefront", "convert", "--layout", "rowmajor", "--mb", "10", "--nb", "14",
                  "--bands", "3", "c0", "c"),
                 ("sim", "platform", "flat", "--nodes", "4", "-o", "flat4.xml")):
        p = run_cli(*args)
        assert p.returncode == 0, p.stderr
    p = run_cli("wavefront", "run", "--np", "3", "--sim", "flat4.xml", "--data", "d", "--coef",
                "c", "--mb", "10", "--nb", "14", "--iterations", "3", "--json", "wf.json")
    assert p.returncode == 0, p.stderr
    assert "simulated on" in p.stderr
    doc = json.loads((tmp_path / "wf.json").read_text())
    assert doc["provenance"]["simulated"]["ranks"] == 3
    assert {m["ranks"] for m in doc["measurements"]} == {3}
    p = run_cli("wavefront", "convert", "--layout", "rowmajor", "d", "result")
    assert p.returncode == 0, p.stderr
    v = run_cli("wavefront", "verify", "--initial", "d0", "--coef", "c0", "--iterations", "3",
                "result")
    assert v.returncode == 0, v.stdout + v.stderr


@needs_smpi_tools
def test_simulated_wavefront_computation(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """--sim-cell-flops F: each updated cell executes F flops on the simulated 1 Gflop/s
    host. One rank: the simulated time is its computation (58 x 68 interior cells x
    3 iterations x 11 flop) within 1%; three ranks: at least the busiest rank's (20 x 68 x 3 x 11),
    and the result still equals the sequential reference."""
    for args in (("wavefront", "create", "--rows", "60", "--cols", "70", "d0", "c0"),
                 ("wavefront", "convert", "--layout", "rowmajor", "--mb", "10", "--nb", "14",
                  "--bands", "3", "d0", "d"),
                 ("wavefront", "convert", "--layout", "rowmajor", "--mb", "10", "--nb", "14",
                  "--bands", "3", "c0", "c"),
                 ("wavefront", "convert", "--layout", "rowmajor", "--mb", "10", "--nb", "14",
                  "d0", "one.0"),
                 ("wavefront", "convert", "--layout", "rowmajor", "--mb", "10", "--nb", "14",
                  "c0", "onec.0"),
                 ("sim", "platform", "flat", "--nodes", "4", "-o", "flat4.xml")):
        p = run_cli(*args)
        assert p.returncode == 0, p.stderr
    common = ("--mb", "10", "--nb", "14", "--iterations", "3", "--sim-cell-flops", "11")
    p = run_cli("wavefront", "run", "--np", "1", "--sim", "flat4.xml", "--data", "one",
                "--coef", "onec", *common, "--json", "one.json")
    assert p.returncode == 0, p.stderr
    one = json.loads((tmp_path / "one.json").read_text())
    assert one["provenance"]["options"]["sim_cell_flops"] == 11
    compute = 58 * 68 * 3 * 11 / 1e9  # and a few simulated ns of MPI calls (no peer)
    assert compute <= one["wavefront"]["total_s"] <= compute * 1.01
    p = run_cli("wavefront", "run", "--np", "3", "--sim", "flat4.xml", "--data", "d", "--coef",
                "c", *common, "--json", "three.json")
    assert p.returncode == 0, p.stderr
    three = json.loads((tmp_path / "three.json").read_text())
    assert three["wavefront"]["total_s"] >= 20 * 68 * 3 * 11 / 1e9
    p = run_cli("wavefront", "convert", "--layout", "rowmajor", "d", "result")
    assert p.returncode == 0, p.stderr
    v = run_cli("wavefront", "verify", "--initial", "d0", "--coef", "c0", "--iterations", "3",
                "result")
    assert v.returncode == 0, v.stdout + v.stderr


def test_sim_cell_flops_needs_the_simulation(run_cli: Callable[..., Any],
                                            tmp_path: Path) -> None:
    """--sim-cell-flops without --sim (mpilab) or in a build that is not SMPI's (the tool):
    one line, exit 2."""
    p = run_cli("wavefront", "run", "--data", "d", "--coef", "c", "--iterations", "1",
                "--sim-cell-flops", "11")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "only with --sim" in p.stderr
    tool = REPO / "build" / "bin" / "mpilab-wavefront"
    if not tool.is_file():
        pytest.skip("mpilab-wavefront not built")
    import subprocess

    q = subprocess.run([str(tool), "run", "--data", "d", "--coef", "c", "--iterations", "1",
                        "--mpi", "--sim-cell-flops", "11"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert q.returncode == 2 and q.stderr.count("\n") == 1, q.stderr
    assert "only in the SMPI build" in q.stderr


@pytest.mark.parametrize("case", ["ml-testbed", "ml-sample-wan", "ml-too-many", "ml-tool",
                                  "wf-no-np", "wf-launcher", "wf-missing", "ml-rejected",
                                  "ml-sim-cfg", "ml-sim-cfg-no-sim",
                                  "bench-rejected", "bench-tool"])
def test_sim_tools_bad_input_one_line(run_cli: Callable[..., Any], tmp_path: Path,
                                      case: str) -> None:
    """multilane run --sim and wavefront run --sim: what does not apply or cannot run is
    one line and exit 2, with no output file and no hostfile left behind."""
    plat = tmp_path / "p.xml"
    plat.write_text("<platform version='4.1'><zone id='z' routing='Full'>"
                    "<host id='a' speed='1Gf'/><host id='b' speed='1Gf'/></zone></platform>")
    ml = ["multilane", "run", "--sim", str(plat), "-o", "o.json"]
    wf = ["wavefront", "run", "--sim", str(plat), "--data", "d", "--coef", "c",
          "--iterations", "1", "--json", "o.json"]
    args, want = {
        "ml-testbed": ([*ml, "--testbed", "mlt"], "--testbed does not apply"),
        "ml-sample-wan": ([*ml, "--sample-wan"], "--sample-wan does not apply"),
        "ml-too-many": ([*ml, "--np", "3"], "2 hosts"),
        "ml-tool": ([*ml, "--ops", "nosuch"], "'nosuch': nosuch is not one of"),
        "ml-sim-cfg": ([*ml, "--sim-cfg", "network/model"], "expected NAME:VALUE"),
        "ml-sim-cfg-no-sim": (["multilane", "run", "--testbed", "mlt", "--sim-cfg",
                               "network/model:ns-3", "-o", "o.json"],
                              "--sim-cfg applies to simulated runs only"),
        "wf-no-np": (wf, "give --np N"),
        "wf-launcher": ([*wf, "--np", "2", "--launcher", "mpirun"], "--launcher does not apply"),
        "wf-missing": (["wavefront", "run", "--sim", str(tmp_path / "no.xml"), "--np", "2",
                        "--data", "d", "--coef", "c", "--iterations", "1"], "no.xml"),
        # the stub has hosts but no DOCTYPE: SimGrid refuses it (its own lines left out)
        "ml-rejected": (ml, "p.xml:1: Invalid XML"),
        "bench-rejected": (["bench", "--sim", str(plat), "--out", "o.json", "--", "--ops",
                            "p2p", "--sizes", "1K"], "SimGrid rejects the platform"),
        "bench-tool": (["bench", "--sim", str(plat), "--out", "o.json", "--", "--ops",
                        "nosuch"], "unknown operation 'nosuch'"),
    }[case]
    if case in ("ml-rejected", "bench-rejected", "bench-tool") and (
            shutil.which("smpirun") is None or not SMPI_BENCH.is_file()
            or not SMPI_MULTILANE.is_file()):
        pytest.skip("no SMPI build")
    if case == "bench-tool":
        plat = _platform(run_cli, tmp_path, 2, "1Gbit", "1us")
        args[2] = str(plat)
    own_tmp = tmp_path / "systmp"  # the run's temporary files, apart from other tests'
    own_tmp.mkdir()
    p = run_cli(*args, env={**cli_env(), "TMPDIR": str(own_tmp)})
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and want in lines[0], p.stderr
    assert "Execution failed" not in p.stdout
    assert not (tmp_path / "o.json").exists()
    assert not [f for f in os.listdir(own_tmp) if f.startswith("mpilab-sim-")]


_HEAD = ('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
         '<platform version="4.1"><zone id="z" routing="Full">')
_ABORTS = {
    "duplicate host": (_HEAD + '<host id="a" speed="1Gf"/><host id="a" speed="1Gf"/>'
                       '</zone></platform>', "second host named 'a'"),
    "undefined link": (_HEAD + '<host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>'
                       '<link id="l" bandwidth="1GBps" latency="1us"/><route src="a" dst="b">'
                       '<link_ctn id="nosuch"/></route></zone></platform>',
                       "Link not found: nosuch"),
    "missing route": (_HEAD + '<host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>'
                      '<link id="l" bandwidth="1GBps" latency="1us"/></zone></platform>',
                      "no connecting path"),
}


@needs_smpi
@pytest.mark.parametrize("case", [*_ABORTS, "unknown --sim-cfg"])
def test_simgrid_aborts_are_one_line(run_cli: Callable[..., Any], tmp_path: Path,
                                     case: str) -> None:
    """Where SimGrid itself aborts (a platform it cannot build or route, an option it does
    not know), the user reads one line naming the platform and SimGrid's reason, not its
    backtrace or its option list; exit 2, no results file."""
    if case in _ABORTS:
        text, want = _ABORTS[case]
        plat = tmp_path / "p.xml"
        plat.write_text(text)
        extra: list[str] = []
    else:
        plat, want = _platform(run_cli, tmp_path, 2, "1Gbit", "1us"), "Bad config key: bogus/x"
        extra = ["--sim-cfg", "bogus/x:1"]
    p = run_cli("bench", "--sim", str(plat), *extra, "--np", "2", "--out", "o.json", "--",
                "--ops", "p2p", "--sizes", "1K", "--max-reps", "10")
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(plat) in lines[0] and want in lines[0], p.stderr
    assert "SimGrid stopped" in lines[0] and "backtrace" not in p.stdout.lower()
    assert not (tmp_path / "o.json").exists()


def test_simulated_survey_needs_two_ranks(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """A simulated survey of one rank has no pair to measure: refused in one line before
    the platform is read or anything starts (a survey with a real runner is not)."""
    plat = tmp_path / "p.xml"
    plat.write_text("<platform/>")
    p = run_cli("survey", "--sim", str(plat), "--np", "1", "--out", "sv", "--quick")
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [
        "mpilab: --np 1: a simulated survey (--sim) needs at least 2 ranks"]
    assert not (tmp_path / "sv").exists()


@needs_smpi
def test_simulated_ranks_per_host_and_loopback(run_cli: Callable[..., Any], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ranks per host (block placement) on a flat platform with a loopback link: ranks
    0 and 1 share node-0 and talk over the loopback (0.2 us + 1040 B at 40 Gbit/s), ranks
    0 and 2 over two 5 us links; more ranks than hosts x ppn are refused in one line."""
    from mpilab.errors import MpilabError
    from mpilab.sim import run as simrun

    out = tmp_path / "lo.xml"
    p = run_cli("sim", "platform", "flat", "--nodes", "2", "--cores", "2", "--bw", "10Gbit",
                "--lat", "5us", "--loopback-bw", "40Gbit", "--loopback-lat", "0.2us",
                "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert 'loopback_bw="40000000000bps"' in out.read_text()
    monkeypatch.chdir(tmp_path)
    j = simrun.job("mpilab-bench", ["--ops", "p2p", "--sizes", "1K", "--min-time", "0",
                                    "--quiet", "--out", "pp.json"], None, str(out), ppn=2)
    assert j.np == 4
    assert Path(j.hostfile).read_text().split() == ["node-0", "node-0", "node-1", "node-1"]
    assert simrun.run(j) == 0
    simrun.annotate("pp.json", j.info)
    doc = json.loads((tmp_path / "pp.json").read_text())
    assert doc["provenance"]["simulated"]["ranks_per_host"] == 2
    rtt = {tuple(m["pair"]): m["stats"]["median"] for m in expand_all(doc["measurements"])}
    assert rtt[(0, 1)] / 2 == pytest.approx(0.2e-6 + 1040 / 5e9, rel=0.05)
    assert rtt[(0, 1)] < rtt[(0, 2)] / 10
    with pytest.raises(MpilabError, match="2 ranks per host"):
        simrun.job("mpilab-bench", [], 5, str(out), ppn=2)


@needs_smpi
def test_simulated_lmo_recovers_node_overheads(run_cli: Callable[..., Any],
                                               tmp_path: Path) -> None:
    """examples/platforms/lmocpu4.xml: per-host SMPI message overheads (C, t) and private pair
    links, an eager limit above every message through --sim-cfg: the LMO fit recovers every
    node's C and t and every link's rate (simulated, so exactly up to SMPI's envelope), names
    node 3 and link 2-3, and its linear scatter prediction is within 5% of measured while
    Hockney's sum of pair times is far above (the root's CPU serialises, the links overlap)."""
    plat = REPO / "examples" / "platforms" / "lmocpu4.xml"
    p = run_cli("bench", "--sim", str(plat), "--sim-cfg", "smpi/send-is-detached-thresh:1048576",
                "--sim-cfg", "smpi/async-small-thresh:1048576", "--out", "sim.json", "--",
                "--ops", "p2p,scatter:linear", "--sizes", "1K,64K", "--models", "lmo,hockney",
                "--lmo-rendezvous", "1M", "--quiet")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "sim.json").read_text())
    assert "--cfg=smpi/send-is-detached-thresh:1048576" in \
        doc["provenance"]["simulated"]["smpi_config"]
    assert doc["provenance"]["options"]["lmo_rendezvous"] == 1048576
    lm = doc["models"]["lmo"]
    assert lm["rendezvous_bytes"] == 1048576
    want_c, want_t = [10e-6, 10e-6, 20e-6, 60e-6], [2e-9, 2e-9, 4e-9, 40e-9]
    for n in lm["nodes"]:
        assert n["C"]["value"] == pytest.approx(want_c[n["rank"]], rel=1e-3), n
        assert n["t"]["value"] == pytest.approx(want_t[n["rank"]], rel=1e-3), n
    rates = {tuple(pr): 1 / ib["value"]
             for pr, ib in zip(lm["links"]["pairs"], lm["links"]["inv_beta"], strict=True)}
    assert rates[(2, 3)] == pytest.approx(25e6 / 8, rel=1e-3)
    assert rates[(0, 1)] == pytest.approx(100e6 / 8, rel=1e-3)
    assert lm["slowest"]["node"] == 3 and lm["slowest"]["link"] == [2, 3]
    (lp,) = [q for q in lm["predictions"] if q["bytes"] == 65536]
    (hp,) = [q for q in doc["models"]["predictions"]
             if q["op"] == "scatter" and q["bytes"] == 65536]
    assert abs(lp["predicted"] / lp["measured"] - 1) < 0.05, lp
    assert hp["predicted"] / lp["measured"] - 1 > 0.5, hp


@needs_smpi
def test_a_noiseless_platform_converges_within_the_budget(run_cli: Callable[..., Any],
                                                         tmp_path: Path) -> None:
    """16 simulated ranks, collectives of 256 KiB and 1 MiB, a time budget whose share is
    shorter than one call: simulated time is noiseless, so every measurement converges
    (identical samples, once their median has an interval: 6 at 95%); the budget ends none
    before that (at 256 ranks it had ended 42 of 425 after 1-3 repetitions)."""
    plat = _platform(run_cli, tmp_path, 16, "10Gbit", "1us")
    p = run_cli("bench", "--sim", str(plat), "--out", "big.json", "--", "--ops",
                "scatter:linear,allreduce,alltoall", "--sizes", "256K,1M", "--timing", "max",
                "--time-budget", "10ms", "--quiet")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "big.json").read_text())
    prec = doc["provenance"]["options"]["precision"]
    assert prec["budget_floor"] == 6 and prec["max_time_s"] < 0.01
    stats = [m["stats"] for m in doc["measurements"] if "stats" in m]
    assert len(stats) == 6
    for st in stats:
        assert st["converged"] is True and st["reps"] >= 6, st
        assert st["min"] == st["max"]  # noiseless: one value, so the interval is a point
