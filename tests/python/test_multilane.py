"""The multilane documents, analysis, report page, WAN sampler and CLI (no root, no MPI):
synthetic documents whose right answers are known."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mpilab.cli import main
from mpilab.errors import MpilabError
from mpilab.multilane import doc, report
from mpilab.report import figs

REPO = Path(__file__).resolve().parents[2]
MB = 1 << 20
CAP = 400e6  # B_WAN, bit/s


def synthetic(tmp_path: Path, gather_rate: float = 380e6) -> dict[str, Any]:
    """Two sites x 4: single-lane takes 4x the multilane time at P = 4; the P curve at 4 MiB
    is best at P = 3; the WAN counter runs at gather_rate during the multilane gather."""
    b = [6.25e6, 6.0e6, 5.5e6, 4.0e6]
    sizes = [{"bytes": s, "T": [s / 1e6 / P for P in range(1, 5)], "P_opt": 4,
              "single_lane": 4 * s / 1e6, "sim_scatter": [s / 1e6 / P * 1.1 for P in range(1, 5)],
              "P_opt_sim_scatter": 3, "sim_gather": [s / 1e6 / P for P in range(1, 5)],
              "P_opt_sim_gather": 4} for s in (MB, 4 * MB)]
    runs = []
    t0 = 1_000_000.0
    for op in ("scatter", "gather"):
        for size in (MB, 4 * MB):
            base = size / 1e6
            runs.append({"op": op, "impl": "single", "lanes": 1, "bytes": size,
                         "times": [4 * base, 4.1 * base, 3.9 * base], "wall_start": 0,
                         "wall_end": 0, "predicted_paper": 4 * base, "predicted_sim": 4 * base})
            for P, f in ((1, 4.0), (2, 2.0), (3, 0.9), (4, 1.0)):
                if size == MB and P != 4:
                    continue
                w0 = t0 if (op, size, P) == ("gather", 4 * MB, 4) else 0
                runs.append({"op": op, "impl": "multilane", "lanes": P, "bytes": size,
                             "times": [f * base] * 3, "wall_start": w0,
                             "wall_end": w0 + 1.0 if w0 else 0,
                             "predicted_paper": base / P, "predicted_sim": base / P})
    # counters: 5 ms samples; s0r0 (into the root's site) carries the gather at gather_rate
    # from 0.2 s to 0.8 s after the start
    ts = [t0 - 0.1 + 0.005 * k for k in range(260)]
    s0 = [int(max(0.0, min(t - t0, 0.8) - 0.2) * gather_rate / 8) for t in ts]
    return {"schema": doc.SCHEMA, "grid": {"site_of_rank": [0] * 4 + [1] * 4, "nranks": 8,
                                          "nsites": 2, "P_sup": 4},
            "root": 0,
            "model": {"n0": 4, "n1": 4, "L": 0.005, "l": 1e-4, "alpha": 0.0, "b_lan": 1.2e8,
                      "b": b, "sizes": sizes},
            "runs": runs,
            "testbed": {"sites": 2, "nodes_per_site": 4, "lan_rate": 1e9, "wan_node_rate": 50e6,
                        "wan_total_rate": CAP, "wan_delay": 0.005},
            "wan_samples": {"interval": 0.005, "t": ts, "tx_bytes": {"s0r0": s0,
                                                                     "s1r0": [0] * len(ts)}}}


def write(tmp_path: Path, data: Any, name: str = "ml.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return p


def test_load_and_analysis(tmp_path: Path) -> None:
    d = doc.load(write(tmp_path, synthetic(tmp_path)))
    assert len(d.runs) == 2 * (2 + 1 + 4)
    pc = doc.p_choice(d, "scatter", 4 * MB)
    assert pc is not None
    assert pc["best_P"] == 3 and pc["paper_P"] == 4 and pc["sim_P"] == 3
    assert pc["paper_excess"] == pytest.approx(1.0 / 0.9 - 1)
    assert pc["sim_excess"] == pytest.approx(0.0)
    assert doc.p_choice(d, "scatter", MB) is None  # one P only
    run = next(r for r in d.runs if r.op == "gather" and r.lanes == 4 and r.bytes == 4 * MB)
    rates = doc.wan_rates(d, "s0r0", run.wall_start, run.wall_end)
    mid = [r for t, r in rates if 0.3 < t < 0.7]
    assert mid and all(r == pytest.approx(380e6, rel=0.01) for r in mid)
    use = doc.wan_phase_use(rates, CAP)
    assert use is not None
    assert 0.9 < use["mean_fraction"] <= 0.96
    assert use["start"] == pytest.approx(0.2, abs=0.02) and use["end"] == pytest.approx(0.8,
                                                                                         abs=0.02)
    assert doc.wan_phase_use([], CAP) is None


def test_targets_met_and_not_met(tmp_path: Path) -> None:
    rows = report.targets([doc.load(write(tmp_path, synthetic(tmp_path)))])
    by = {r[1]: r for r in rows}
    sp = by["scatter multilane >= 2x single-lane at 4 MiB"]
    assert sp[2].startswith("4.44x (P=3)") and sp[3] == "met"
    pap = next(r for k, r in by.items() if k.startswith("scatter 4 MiB: time at the paper"))
    assert pap[3] == "NOT met" and pap[2] == "+11.1%"
    sim = next(r for k, r in by.items() if k.startswith("scatter 4 MiB: time at the sim"))
    assert sim[3] == "met"
    wan = next(r for k, r in by.items() if k.startswith("gather multilane P=4 4 MiB"))
    assert wan[3] == "met"
    slow = report.targets([doc.load(write(tmp_path, synthetic(tmp_path, 200e6), "slow.json"))])
    wan = next(r for r in slow if r[1].startswith("gather multilane P=4 4 MiB"))
    assert wan[3] == "NOT met" and "mean" in wan[2]
    # predictions: paper T(3) = base/3 against 0.9 base: -63% -> not met
    pred = next(r for r in rows if r[1] == "scatter paper model within 15% for M >= 1 MiB")
    assert pred[3] == "NOT met"


def test_phase_split_and_alpha(tmp_path: Path) -> None:
    data = synthetic(tmp_path)
    run = next(r for r in data["runs"] if r["impl"] == "multilane" and r["lanes"] == 4
               and r["op"] == "scatter" and r["bytes"] == 4 * MB)
    # measured: last lane starts at 0.1, last arrives at 0.9, ends at the mean (4.19)
    run["phases"] = [0.05, 0.1, 0.5, 0.9]
    run["phases_sim"] = [0.05, 0.2, 0.5, 0.8]
    run["predicted_sim"] = 1.0
    data["model"]["alpha_calibration"] = {
        "bytes": 1024, "lanes": 4, "reps": 5,
        "scatter": {"alpha": 0.002, "ci95": [0.001, 0.003], "alpha_used": 0.002},
        "gather": {"alpha": -0.001, "ci95": [-0.002, 0.0], "alpha_used": 0.0}}
    d = doc.load(write(tmp_path, data))
    r = next(x for x in d.runs if x.phases)
    sp = doc.phase_split(r)
    assert sp is not None
    assert sp["prepare"] == pytest.approx((0.1, 0.2))
    assert sp["wan"][0] == pytest.approx(0.8) and sp["wan"][1] == pytest.approx(0.6)
    assert sp["lan"][0] == pytest.approx(r.median - 0.9) and sp["lan"][1] == pytest.approx(0.2)
    # a single-lane gather has no observable lane arrival: no split of that part
    r.phases = [0.0, 0.01, None, None]
    sp = doc.phase_split(r)
    assert sp is not None and [sp[k][0] for k in ("prepare", "wan", "lan")] == [None] * 3
    assert [sp[k][1] for k in ("prepare", "wan", "lan")] == pytest.approx([0.2, 0.6, 0.2])
    rows = report.phase_rows(d)
    assert len(rows) == 1
    assert [c.text for c in rows[0][:4]] == ["scatter", "multilane", "4", "4 MiB"]
    page = report.render([d])
    assert "Phases" in page and "alpha (gather; calibrated at 1 KiB" in page
    assert "95% CI" in page


def test_report_page(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    p = write(tmp_path, synthetic(tmp_path))
    assert main(["multilane", "report", str(p), "-o", str(out)]) == 0
    text = out.read_text()
    # the reports' one stack: plotly figures (2 size plots, 2 P plots, 1 timeline), the
    # runtime in one shared file beside the page
    assert text.count('class="mpilab-fig"') >= 5
    assert (tmp_path / figs.runtime_file_name()).is_file()
    assert 'id="mpilab-plotlyjs"' not in text  # the runtime is not embedded
    for item in ("Targets", "b(4)", "WAN phase mean Mbit/s", "NOT met"):
        assert item in text, item


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: "{nope", ":1: malformed JSON"),
    (lambda d: {**d, "runs": [{**d["runs"][0], "wall_start": "noon"}]}, r"runs\[0\]\.wall_start"),
    (lambda d: {**d, "runs": [{**d["runs"][0], "lanes": True}]}, r"runs\[0\]\.lanes"),
    (lambda d: {**d, "runs": [{**d["runs"][0], "wall_end": float("nan")}]}, "RFC 8259"),
    (lambda d: {**d, "schema": "mpilab.results/1"}, "not a mpilab.multilane/1 document"),
    (lambda d: {**d, "runs": [{**d["runs"][0], "times": [0.1, -1]}]}, r"runs\[0\]\.times\[1\]"),
    (lambda d: {**d, "runs": [{**d["runs"][0], "lanes": 0}]}, r"runs\[0\]\.lanes"),
    (lambda d: {**d, "runs": [{**d["runs"][0], "op": "bcast"}]}, r"runs\[0\]\.op"),
    (lambda d: {**d, "model": {**d["model"], "b": [1.0, -2.0]}}, r"model\.b\[1\]"),
    (lambda d: {**d, "runs": [{**d["runs"][0], "phases": [0.1, 0.2]}]}, r"runs\[0\]\.phases"),
    (lambda d: {**d, "runs": [{**d["runs"][0], "phases_sim": [0, "x", 0, 0]}]},
     r"runs\[0\]\.phases_sim\[1\]"),
])
def test_bad_documents(tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate: Any,
                       needle: str) -> None:
    p = write(tmp_path, mutate(synthetic(tmp_path)))
    with pytest.raises(MpilabError, match=needle):
        doc.load(p)
    out = tmp_path / "x.html"
    assert main(["multilane", "report", str(p), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(needle, err), err
    assert not out.exists()


def test_run_needs_a_testbed(capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MPILAB_TESTBED_PREFIX", raising=False)
    assert main(["multilane", "run", "-o", "/tmp/never.json"]) == 2
    assert "--testbed PREFIX" in capsys.readouterr().err


def test_sampler_writes_counters(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.Popen([sys.executable, "-m", "mpilab.multilane.sampler", "--iface", "lo",
                             "--interval", "0.002", "--out", str(out)], env=env,
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"sampling\n"  # progress, not a wall-clock allowance
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    s = json.loads(out.read_text())
    assert s["interval"] == 0.002 and len(s["t"]) == len(s["tx_bytes"]["lo"]) >= 1
    assert s["t"] == sorted(s["t"])
    bad = subprocess.run([sys.executable, "-m", "mpilab.multilane.sampler", "--iface", "nosuch0",
                          "--out", str(tmp_path / "n.json")], env=env, capture_output=True,
                         text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_testbed_socket_buffer_key(tmp_path: Path) -> None:
    from mpilab.testbed import net
    from mpilab.testbed import spec as specmod
    text = "[cluster]\nsites = 2\n\n[wan]\nsocket_buffer = \"64K\"\n"
    sp = specmod.load_text(text, "s.toml")
    assert sp.socket_buffer == 65536
    assert net.socket_buffer_sysctls(sp) == ["net.ipv4.tcp_rmem=4096 65536 65536",
                                             "net.ipv4.tcp_wmem=4096 65536 65536"]
    assert specmod.Spec.from_dict(sp.to_dict()).socket_buffer == 65536
    assert net.socket_buffer_sysctls(specmod.load_text("", "e.toml")) == []
    for bad, why in (('"1K"', "between 4K and 256M"), ('"lots"', "not a size"),
                     ("-5", "(must not be negative|must be positive)")):
        with pytest.raises(MpilabError, match=rf"^b.toml:5: wan.socket_buffer: .*{why}"):
            specmod.load_text(text.replace('"64K"', bad), "b.toml")


def _results_with_multilane(synthetic_results: Any, alpha: float, flags: list[str]) -> Any:
    d = synthetic_results(ranks=4, sizes=(1024,))
    cal = {"alpha": -1.2e-4, "ci95": [-1.3e-4, -1.1e-4], "alpha_used": 0.0,
           "flags": ["clamped"]}
    d["models"]["multilane"] = {
        "n0": 2, "n1": 2, "nsites": 2, "lanes": 2, "L": 1e-6, "l": 1e-6, "alpha": alpha,
        "quality": {"alpha": {"raw": -6e-5, "lo": None, "hi": None, "flags": flags}},
        "alpha_calibration": {"bytes": 1024, "lanes": 2, "reps": 5,
                              "scatter": cal, "gather": {**cal, "alpha": 2e-5,
                                                         "ci95": [1e-5, 3e-5],
                                                         "alpha_used": 2e-5, "flags": []}},
        "b_lan": 1e9, "b": [1e8, 1e8], "sizes": [], "predictions": []}
    return d


def test_results_multilane_alpha_flags(synthetic_results: Any, write_json: Any) -> None:
    """models.multilane: a negative alpha estimate is stored as 0 with "clamped" and its raw
    value (accepted, and quality finds nothing unflagged); a negative alpha shown as the
    value, or an unknown flag, is refused in one line naming the path."""
    from mpilab import quality, results
    good = _results_with_multilane(synthetic_results, 0.0, ["clamped", "no_ci"])
    results.load(write_json(good))
    assert quality.unflagged_problems(good) == []
    with pytest.raises(MpilabError, match=r"models\.multilane\.alpha: -6e-05 is below 0"):
        results.load(write_json(_results_with_multilane(synthetic_results, -6e-5, [])))
    bad = _results_with_multilane(synthetic_results, 0.0, ["clamped"])
    bad["models"]["multilane"]["alpha_calibration"]["scatter"]["alpha_used"] = -1.2e-4
    with pytest.raises(MpilabError, match=r"alpha_calibration\.scatter\.alpha_used"):
        results.load(write_json(bad))
    bad = _results_with_multilane(synthetic_results, 0.0, ["clampd"])
    with pytest.raises(MpilabError, match=r"quality\.alpha\.flags\[0\]: unknown flag 'clampd'"):
        results.load(write_json(bad))
