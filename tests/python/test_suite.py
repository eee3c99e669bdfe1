"""`mpilab compare`: the report from stored (synthetic) results, who wins where, the
efficiency of scaling runs, and one-line refusals of bad input."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import suite_built
from mpilab.errors import MpilabError
from mpilab.suite import report, transports

REPO = Path(__file__).resolve().parents[2]
SIZES = (1, 1024, 65536, 1 << 20)


def _m(op: str, impl: str, nbytes: int, mean: float, ranks: int,
       derived: dict[str, float]) -> dict[str, Any]:
    st = {"mean": mean, "ci_half": 0.01 * mean, "rel_err": 0.01, "median": mean, "min": mean,
          "max": mean, "stdev": 0.0, "reps": 3, "invalid": 0, "converged": True}
    return {"op": op, "impl": impl, "timing": "max", "isolation": "barrier", "bytes": nbytes,
            "root": 0, "ranks": ranks, "precision": {"cl": 0.95, "eps": 0.025, "min_reps": 3,
                                                     "max_reps": 3},
            "stats": st, "samples": [mean] * 3, "valid": [True] * 3, "data_ok": True,
            "derived": derived}


def synthetic(name: str, alpha: float, beta: float, cpu: float) -> dict[str, Any]:
    """Results of one transport whose one-way time is alpha + beta * m."""
    ms = []
    for b in SIZES:
        t = alpha + beta * b
        ms.append(_m("pingpong", "mpi", b, 2 * t, 2, {"latency_s": t, "bandwidth_Bps": b / t}))
        ms.append(_m("sendrecv", "mpi", b, t, 2, {"bandwidth_Bps": 2 * b / t}))
        ms.append(_m("exchange", "mpi", b, 2 * t, 4, {"bandwidth_Bps": 4 * b / (2 * t)}))
        w = 160
        ts = alpha + w * beta * b
        ms.append(_m("stream", "mpi", b, ts, 2, {"window": w, "msg_rate": w / ts,
                                                 "bandwidth_Bps": w * b / ts}))
        ms.append(_m("bcast", "native", b, 2 * t, 4, {}))
        ms.append(_m("overlap_isend", "mpi", b, 1.5 * t, 2, {"overlap_pct": 50.0}))
    for k, poll in enumerate((0, 1000, 100000)):
        bw = 1e8 / (1 + k)
        ms.append(_m("comb", f"poll{poll}", 102400, 102400 * 16 / bw, 2,
                     {"cpu_avail": cpu * k / 2, "bandwidth_Bps": bw, "poll_interval": poll}))
    return {"schema": "mpilab.results/1",
            "provenance": {"tool": "mpilab compare", "mpi": "Open MPI v4.1.4", "ranks": 2,
                           "date": "2026-11-21T10:00:00Z", "transport": name,
                           "mca": {"btl": "self,vader"}},
            "measurements": ms,
            "suite": {"window": 160, "transport": {"name": name, "mca": {"btl": "self,x"}}},
            "scaling": {"strong": [{"ranks": 1, "seconds": 4.0}, {"ranks": 2, "seconds": 2.5},
                                   {"ranks": 4, "seconds": 1.25}],
                        "weak": [{"ranks": 1, "seconds": 1.0}, {"ranks": 2, "seconds": 1.25}]}}


def mpilab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mpilab.cli", *args], capture_output=True,
                          text=True, env=env, cwd=REPO, check=False)


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    # "fast": low latency; "wide": high bandwidth and more CPU left
    (tmp_path / "fast.json").write_text(json.dumps(synthetic("fast", 1e-6, 1e-9, 0.4)))
    (tmp_path / "wide.json").write_text(json.dumps(synthetic("wide", 5e-6, 1e-10, 0.9)))
    return tmp_path


def test_report_from_stored_results(stored: Path) -> None:
    p = mpilab("compare", "--from", str(stored))
    assert p.returncode == 0, p.stderr
    html = (stored / "report.html").read_text()
    for t in ("fast", "wide", "Ping-pong latency", "Streaming bandwidth", "CPU availability",
              "Message rate", "bcast", "Exchange bandwidth", "scaling", "Who wins where"):
        assert t in html, t
    assert html.count('class="mpilab-fig') >= 10  # figures through report.figs (issue 14)
    # one template and one unit formatter: us and MB/s, COMB availability in percent
    assert "1.00 us at 1 B" in html and "%" in html and "bytes/s" not in html
    assert not list(stored.glob("*.tmp*"))


def test_who_wins_where(stored: Path) -> None:
    rows = {c.title.split(" (")[0]: c for c in report.summary(report.load_dir(stored))}
    assert rows["lowest small-message latency"].winner == "fast"
    assert rows["lowest small-message latency"].value.startswith("1.00 us")
    assert rows["highest large-message bandwidth"].winner == "wide"
    assert rows["highest message rate"].winner == "fast"   # alpha dominates at 1 byte
    # COMB availability carries no interval: the best is named, no winner declared
    cpu = rows["most CPU left during transfers"]
    assert cpu.best == "wide" and cpu.winner is None and cpu.verdict == "no interval"


def test_no_winner_without_a_significant_difference(stored: Path) -> None:
    """Two transports whose ping-pong intervals overlap: the lower one is not a winner."""
    doc = json.loads((stored / "wide.json").read_text())
    fast = json.loads((stored / "fast.json").read_text())
    for m, f in zip(doc["measurements"], fast["measurements"], strict=True):
        if m["op"] == "pingpong":
            # every time 0.5% above fast's (a median alone moved above max is refused)
            m["stats"] = {k: v * 1.005 if k in ("mean", "median", "min", "max", "ci_half")
                          else v for k, v in f["stats"].items()}
            m["samples"] = [v * 1.005 for v in f["samples"]]
            m["derived"] = {k: v * (1.005 if k == "latency_s" else 1 / 1.005)
                            for k, v in f["derived"].items()}
    (stored / "wide.json").write_text(json.dumps(doc))
    rows = {c.title.split(" (")[0]: c for c in report.summary(report.load_dir(stored))}
    lat = rows["lowest small-message latency"]
    assert lat.best == "fast" and lat.winner is None
    assert lat.verdict.startswith("not significant against wide (ci-overlap)")


def test_cpu_left_only_counts_points_that_move_data() -> None:
    # availability 0.9 at a bandwidth below half the peak does not count
    r = synthetic("x", 1e-6, 1e-9, 0.0)
    r["measurements"] = [m for m in r["measurements"] if m["op"] != "comb"]
    for k, (a, bw) in enumerate(((0.1, 1e8), (0.5, 0.6e8), (0.95, 0.1e8))):
        r["measurements"].append(_m("comb", f"poll{k}", 102400, 1.0, 2,
                                    {"cpu_avail": a, "bandwidth_Bps": bw}))
    from mpilab import results
    run = report.Run("x", results.parse(json.dumps(r), "x.json"))
    v = report.cpu_left(run)
    assert v is not None and v[0] == 0.5


def test_cpu_left_takes_the_lower_rank_of_the_pair() -> None:
    # rank 1 (cpu_avail_peer) had less CPU left than rank 0 at the fast point: the pair
    # counts with the lower value, so the slower point with 0.5 on both ranks wins
    r = synthetic("x", 1e-6, 1e-9, 0.0)
    r["measurements"] = [m for m in r["measurements"] if m["op"] != "comb"]
    for k, (a, peer, bw) in enumerate(((0.9, 0.2, 1e8), (0.5, 0.6, 0.8e8))):
        r["measurements"].append(_m("comb", f"poll{k}", 102400, 1.0, 2,
                                    {"cpu_avail": a, "cpu_avail_peer": peer,
                                     "bandwidth_Bps": bw}))
    from mpilab import results
    run = report.Run("x", results.parse(json.dumps(r), "x.json"))
    v = report.cpu_left(run)
    assert v is not None and v[0] == 0.5
    assert [report.pair_avail(m) for m in run.ms("comb")] == [0.2, 0.5]


def test_efficiency() -> None:
    s = [{"ranks": 1, "seconds": 4.0}, {"ranks": 2, "seconds": 2.5}, {"ranks": 4, "seconds": 1.25}]
    assert report._efficiency(s, weak=False) == [(1.0, 1.0), (2.0, 0.8), (4.0, 0.8)]
    w = [{"ranks": 1, "seconds": 1.0}, {"ranks": 2, "seconds": 1.25}]
    assert report._efficiency(w, weak=True) == [(1.0, 1.0), (2.0, 0.8)]
    assert report._efficiency([{"ranks": 2, "seconds": 1.0}], weak=True) == []


def test_transports_named_by_mpi_parameters() -> None:
    ts = transports.parse(None)
    assert [t.name for t in ts] == ["shm", "tcp-loopback"]
    assert ts[0].mca_args() == ["--mca", "btl", "self,vader"]
    assert ("btl", "self,tcp") in ts[1].mca
    for name in ("tcp-testbed", "tcp-testbed-shaped", "mptcp-testbed"):
        assert transports.TRANSPORTS[name].networked
    assert transports.TRANSPORTS["mptcp-testbed"].mptcp


@pytest.mark.parametrize("args,needle", [
    (["--transport", "infiniband"], "unknown transport 'infiniband'"),
    (["--window", "0"], "window must be >= 1"),
    (["--poll-sweep", "1,,2"], "--poll-sweep: malformed"),
    (["--poll-sweep", "1,x"], "--poll-sweep: malformed"),
    (["--poll-sweep", "5,5"], "twice"),
    (["--scaling", "1,a"], "--scaling"),
    (["--window", "many"], "--window"),
    (["--window", "\u0665"], "--window"),  # a Unicode digit is not a count
])
def test_bad_input_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    out = tmp_path / "o"
    p = mpilab("compare", "--out", str(out), *args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], p.stderr
    assert not (out / "report.html").exists()


def test_failed_compare_leaves_no_folder_of_its_own(fake_bench: Any, run_cli: Any,
                                                    tmp_path: Path) -> None:
    """A compare whose runner fails before anything is measured: non-zero, and the --out
    folders it made are gone; a folder that was there stays."""
    env = fake_bench("exit3")
    p = run_cli("compare", "--quick", "--no-scaling", "--transport", "shm", "--out",
                "new/deep", env=env)
    assert p.returncode != 0
    assert not (tmp_path / "new").exists()
    (tmp_path / "had").mkdir()
    p = run_cli("compare", "--quick", "--no-scaling", "--transport", "shm", "--out", "had",
                env=env)
    assert p.returncode != 0 and (tmp_path / "had").is_dir()


def test_from_refuses_bad_results(tmp_path: Path, stored: Path) -> None:
    p = mpilab("compare", "--from", str(tmp_path / "none"))
    assert p.returncode == 2 and "no such directory" in p.stderr
    (stored / "broken.json").write_text('{"schema": "mpilab.results/1",\n "provenance": 3}\n')
    p = mpilab("compare", "--from", str(stored))
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "broken.json" in p.stderr
    assert not (stored / "report.html").exists()



@pytest.mark.mpi
@pytest.mark.skipif(not suite_built(), reason="suite runner not built")
def test_compare_shm_end_to_end(tmp_path: Path) -> None:
    p = mpilab("compare", "--quick", "--no-scaling", "--transport", "shm", "--sizes", "1,4K",
               "--poll-sweep", "0,1000", "--np", "2", "--max-reps", "5", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    d = json.loads((tmp_path / "shm.json").read_text())
    assert d["provenance"]["transport"] == "shm"
    assert d["provenance"]["mca"]["btl"] == "self,vader"
    ops = {m["op"] for m in d["measurements"]}
    assert {"pingpong", "stream", "comb", "bcast", "allreduce", "alltoall"} <= ops
    assert all(m.get("data_ok", True) for m in d["measurements"])
    comb0 = [m for m in d["measurements"] if m["op"] == "comb" and m["impl"] == "poll0"]
    assert comb0 and comb0[0]["derived"]["cpu_avail"] == 0.0
    for m in d["measurements"]:
        if m["op"] == "stream":
            assert math.isclose(m["derived"]["msg_rate"], 64 / m["stats"]["median"], rel_tol=1e-6)
    assert (tmp_path / "report.html").exists()


@pytest.mark.mpi
@pytest.mark.skipif(not suite_built(), reason="suite runner not built")
def test_compare_launch_level(tmp_path: Path) -> None:
    """--launches 3: every benchmark part runs in 3 launches; each measurement is the merge
    of the 3 (its launch medians recorded, its figure their median), and a derived rate
    follows the merged figure."""
    p = mpilab("compare", "--quick", "--launches", "3", "--no-scaling", "--transport", "shm",
               "--sizes", "1K", "--poll-sweep", "0", "--np", "2", "--max-reps", "5",
               "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "3 launches" in p.stderr
    # progress: each part and launch announced as it starts (issue 28 item 7)
    for k in (1, 2, 3):
        assert f"[shm] part 1 of 4: latency (pipelined), 2 ranks, launch {k} of 3" in p.stderr
    assert "[shm] part 4 of 4: CPU availability (COMB), 2 ranks, launch 3 of 3" in p.stderr
    d = json.loads((tmp_path / "shm.json").read_text())
    assert d["launches"]["n"] == 3 and d["launches"]["cost"]["total_s"] > 0
    # the price of the launch-level figures is printed (issue 25 item 2): 4 parts x 3
    assert "[shm] mpilab: 12 launches took " in p.stderr
    assert "the launch-level interval cost " in p.stderr
    for m in d["measurements"]:
        la = m["launches"]
        assert la["n"] == 3 and len(la["medians"]) == 3
        assert m["stats"]["median"] == pytest.approx(sorted(la["medians"])[1])
        if m["op"] == "stream":
            assert math.isclose(m["derived"]["msg_rate"], 64 / m["stats"]["median"],
                                rel_tol=1e-6)
    assert (tmp_path / "report.html").exists()
    bad = mpilab("compare", "--launches", "0", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "--launches 0" in bad.stderr


def test_groups_come_from_the_entry_list() -> None:
    """The comparison's runs are chosen from what each entry declares in
    `mpilab-bench --list --json`: the real table gives the study's groups, and a new entry
    lands in the group its knowledge says, without naming it anywhere."""
    from mpilab.suite import runner
    if not (REPO / "build" / "bin" / "mpilab-bench").exists():
        pytest.skip("build/bin/mpilab-bench not built")
    entries = runner.entry_list(runner.Plan(poll_sweep="0,100"))
    g = runner.op_groups(entries)
    assert set(g["lat"].split(",")) == {"pingpong", "pingping", "sendrecv", "exchange"}
    assert set(g["pair"].split(",")) == {"stream", "overlap_isend"}
    assert set(g["nrank"].split(",")) == {"exchange", "sendrecv", "stream_multi",
                                          "overlap_iallreduce", "bcast", "allreduce", "alltoall"}
    assert g["comb"] == "comb"
    assert sum(e["name"] == "comb" for e in entries) == 2
    new = {"name": "pingpong_rma", "impl": "mpi", "family": "latency", "needs": ["pair"],
           "suite": True, "derived": ["latency_s"]}
    assert "pingpong_rma" in runner.op_groups([*entries, new])["lat"].split(",")


def test_user_entries_join_their_group_by_name_and_impl() -> None:
    """A plugin's entry (origin: its file) is run with the group its family and needs say,
    selected as name:impl so the built-in implementations of that name are not added."""
    from mpilab.suite import runner
    base = [{"name": "pingpong", "impl": "mpi", "family": "latency", "needs": ["pair"],
             "suite": True, "origin": "suite"}]
    user = [{"name": "pingpong", "impl": "swap", "family": "latency", "needs": ["pair"],
             "suite": False, "origin": "/x/swap.so"},
            {"name": "scatter", "impl": "flat", "family": "collective", "needs": ["root"],
             "suite": False, "origin": "/x/flat.so"},
            {"name": "scatter", "impl": "native", "family": "collective", "needs": ["root"],
             "suite": False, "origin": "builtin"}]
    g = runner.op_groups(base + user)
    assert g["lat"].split(",") == ["pingpong", "pingpong:swap"]
    assert "scatter:flat" in g["nrank"].split(",") and "scatter" not in g["nrank"].split(",")
    with pytest.raises(MpilabError, match="--entries /nonexistent.so: no such file"):
        runner.Plan(entries=["/nonexistent.so"]).check()


@pytest.mark.mpi
@pytest.mark.skipif(not suite_built() or shutil.which("mpicc") is None,
                    reason="suite runner or mpicc not there")
def test_compare_runs_the_recipes_plugins(tmp_path: Path) -> None:
    """docs/architecture.md: each recipe's one file, compiled as a plugin, reaches
    `mpilab compare --entries FILE.so`: measured with its group, data checked, in the report."""
    sos = []
    for name in ("pingpong", "scatter"):
        so = tmp_path / f"{name}.so"
        subprocess.run(["mpicc", "-shared", "-fPIC", f"-I{REPO / 'include'}",
                        f"-I{REPO / 'build' / 'include'}", str(REPO / "tests" / "mpi" /
                                                              f"recipe_{name}.c"),
                        "-o", str(so)], check=True)
        sos += ["--entries", str(so)]
    out = tmp_path / "cmp"
    p = mpilab("compare", "--quick", "--no-scaling", "--transport", "shm", "--sizes", "1K",
               "--poll-sweep", "0", "--np", "2", "--max-reps", "5", *sos, "--out", str(out))
    assert p.returncode == 0, p.stderr
    ms = json.loads((out / "shm.json").read_text())["measurements"]
    mine = {(m["op"], m["impl"]) for m in ms if m["impl"] in ("sendrecv_replace", "flat_isend")}
    assert mine == {("pingpong", "sendrecv_replace"), ("scatter", "flat_isend")}
    assert all(m["data_ok"] for m in ms if m["impl"] in ("sendrecv_replace", "flat_isend"))
    assert "pingpong:sendrecv_replace" in (out / "report.html").read_text()
    # and `mpilab bench` hands --entries to the runner
    res = tmp_path / "bench.json"
    p = mpilab("bench", "--np", "2", "--out", str(res), "--", "--entries", sos[1],
               "--ops", "pingpong:sendrecv_replace", "--sizes", "1K", "--max-reps", "5",
               "--quiet")
    assert p.returncode == 0, p.stderr
    ms = json.loads(res.read_text())["measurements"]
    assert [(m["impl"], m["data_ok"]) for m in ms] == [("sendrecv_replace", True)]
    assert set(ms[0]["derived"]) == {"latency_s", "bandwidth_Bps"}


def test_report_shows_entries_it_does_not_name(stored: Path) -> None:
    """An entry the study's figures do not cover (here a new latency entry) still gets its
    derived values plotted, one figure per value it carries."""
    for name in ("fast", "wide"):
        doc = json.loads((stored / f"{name}.json").read_text())
        # a user's entry: known to the loader through provenance.options.ops
        doc["provenance"].setdefault("options", {})["ops"] = ["pingpong_rma:mpi"]
        doc["measurements"] += [_m("pingpong_rma", "mpi", b, 3e-6 + 1e-9 * b, 2,
                                   {"latency_s": 3e-6 + 1e-9 * b,
                                    "bandwidth_Bps": b / (3e-6 + 1e-9 * b)}) for b in SIZES]
        (stored / f"{name}.json").write_text(json.dumps(doc))
    titles = [t for t, _ in report.figures(report.load_dir(stored))]
    assert "pingpong_rma: latency_s" in titles and "pingpong_rma: bandwidth_Bps" in titles
    assert not any(t.startswith("pingpong:") for t in titles)
