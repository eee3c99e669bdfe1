"""Issue 14's report core: the unit formatter, the significance rule, the summary's values
from a stored results file, the comparison of runs, bad and partial input."""

from __future__ import annotations

import copy
import importlib.util
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import htmlq
import pytest
from mpilab import results
from mpilab.errors import MpilabError
from mpilab.report import html, signif, summary, units
from mpilab.report.signif import Estimate

DATA = Path(__file__).resolve().parents[1] / "data"
SURVEY = DATA / "survey-quick-np3.json"  # `mpilab survey --quick --np 3`, real mpilab-bench


# ---------------------------------------------------------------------------------------
# units


@pytest.mark.parametrize("v, text", [
    (3.52e-6, "3.52 us"), (1.2e-3, "1.20 ms"), (0.9996e-6, "1.00 us"), (999.6e-6, "1.00 ms"),
    (9.996e-6, "10.0 us"), (123.4e-9, "123 ns"), (2.5, "2.50 s"), (0.0, "0 s"),
    (-2e-6, units.IMPOSSIBLE), (None, "-"), (float("nan"), "-"), (float("inf"), "-")])
def test_fmt_time(v: float | None, text: str) -> None:
    assert units.fmt_time(v) == text


@pytest.mark.parametrize("v, text", [
    (1.234e9, "1234 MB/s"), (5.0e8, "500 MB/s"), (5e5, "500 kB/s"), (3.2e10, "32.0 GB/s"),
    (12.5e6, "12.5 MB/s"), (None, "-")])
def test_fmt_rate(v: float | None, text: str) -> None:
    assert units.fmt_rate(v) == text


@pytest.mark.parametrize("v, text", [
    (0, "0 B"), (1, "1 B"), (1000, "1000 B"), (4096, "4 KiB"), (12288, "12 KiB"),
    (1.5 * 2 ** 20, "1.50 MiB"), (2 ** 30, "1 GiB")])
def test_fmt_bytes(v: float, text: str) -> None:
    assert units.fmt_bytes(v) == text


def test_fmt_value_dispatch_and_intervals() -> None:
    assert units.fmt_value(0.423, "fraction") == "42.3 %"
    assert units.fmt_value(4.0, "ranks") == "4"
    assert units.fmt_value(2.5e6, "") == "2.50 M"
    assert units.fmt_value(3e-6, "s") == units.fmt_time(3e-6)
    assert units.fmt_value(7.0, "widgets") == "7.00 widgets"
    assert units.fmt_ci(3.41e-6, 3.62e-6, "s") == "3.41 .. 3.62 us"
    assert units.fmt_ci(900e-9, 1.2e-6, "s") == "900 ns .. 1.20 us"
    assert units.fmt_ci(None, 1.0, "s") == "-"
    assert units.axis_scale([1e-6, 3e-6, 5e-6], "s") == (1e-6, "us")
    assert units.axis_scale([2e8, 9e8], "B/s") == (1e6, "MB/s")
    assert units.axis_scale([0.2, 0.5], "fraction") == (0.01, "%")


# ---------------------------------------------------------------------------------------
# significance


def test_ci_overlap_rule() -> None:
    a = Estimate(10.0, 9.0, 11.0)
    assert not signif.compare(a, Estimate(11.5, 10.5, 12.5)).significant  # overlap
    v = signif.compare(a, Estimate(13.0, 12.0, 14.0))
    assert v.significant and v.method == "ci-overlap" and v.ratio == pytest.approx(1.3)
    # touching intervals overlap
    assert not signif.compare(a, Estimate(12.0, 11.0, 13.0)).significant
    # no interval: never significant, however far apart
    v = signif.compare(Estimate(1.0), Estimate(100.0, 99.0, 101.0))
    assert not v.significant and v.method == "no-ci" and v.text == "no interval"


def test_samples_test_takes_precedence() -> None:
    base = tuple(1.0 + 0.01 * k for k in range(20))
    shifted = tuple(x + 0.5 for x in base)
    # intervals overlap, but 20 repetitions each leave no doubt
    v = signif.compare(Estimate(1.1, 0.9, 1.7, base), Estimate(1.6, 1.0, 2.2, shifted))
    assert v.method == "mann-whitney" and v.significant and v.p is not None and v.p < 1e-6
    # same distribution: no difference
    v = signif.compare(Estimate(1.1, 1.0, 1.2, base), Estimate(1.1, 1.0, 1.2, base[::-1]))
    assert v.method == "mann-whitney" and not v.significant and v.p == pytest.approx(1.0)
    # too few repetitions on one side: back to the intervals
    v = signif.compare(Estimate(1.1, 1.0, 1.2, base[:5]), Estimate(1.6, 1.5, 1.7, shifted))
    assert v.method == "ci-overlap" and v.significant


def test_mann_whitney_against_a_known_value() -> None:
    # by hand: ranks of a = 1,2,3,4,5.5,7.5,9.5,11.5 (5..8 tied in pairs), R1 = 44,
    # U1 = 44 - 36 = 8, mean 32, var = 64/12 * (17 - 4*6/240) = 90.13, z = (24 - 0.5) / 9.494
    # = 2.4753, two-sided p = 0.01331 (what scipy's asymptotic method with continuity
    # correction gives as well)
    a = [1.0, 2, 3, 4, 5, 6, 7, 8]
    b = [5.0, 6, 7, 8, 9, 10, 11, 12]
    assert signif.mann_whitney_p(a, b) == pytest.approx(0.01331, abs=1e-4)
    assert signif.mann_whitney_p([1.0] * 8, [1.0] * 8) == 1.0


def test_mann_whitney_exact_for_small_samples_without_ties() -> None:
    """Two groups of 8 fully separated: the exact two-sided p is 2 / C(16, 8) = 1.554e-4;
    the normal approximation would say about 9e-4."""
    a = [1.0 + k for k in range(8)]
    b = [9.0 + k for k in range(8)]
    assert signif.mann_whitney_p(a, b) == pytest.approx(2 / 12870, rel=1e-6)


def test_winner_needs_significance() -> None:
    best, second, v = signif.winner([("a", Estimate(2.0, 1.9, 2.1)),
                                     ("b", Estimate(1.0, 0.9, 1.1)),
                                     ("c", Estimate(3.0, 2.9, 3.1))])
    assert (best, second) == ("b", "a") and v is not None and v.significant
    assert v.ratio == pytest.approx(2.0)  # runner-up / best
    best, second, v = signif.winner([("a", Estimate(1.05, 0.9, 1.2)),
                                     ("b", Estimate(1.0, 0.9, 1.1))])
    assert best == "b" and v is not None and not v.significant
    best, _, v = signif.winner([("a", Estimate(5.0, 4, 6)), ("b", Estimate(9.0, 8, 10))],
                               lowest=False)
    assert best == "b" and v is not None and v.significant
    assert signif.winner([("a", Estimate(None))]) == (None, None, None)


# ---------------------------------------------------------------------------------------
# the summary from a stored results file of the real tools


def test_summary_values_from_a_stored_survey(tmp_path: Path) -> None:
    r = results.load(SURVEY)
    page = htmlq.parse(html.render_report(r))
    assert page.sections[0] == "summary"
    doc = json.loads(SURVEY.read_text())
    p2p = [m for m in doc["measurements"] if m["op"] == "p2p"]
    small = min(m["bytes"] for m in p2p)
    large = max(m["bytes"] for m in p2p)
    lat = {f"{m['pair'][0]}-{m['pair'][1]}": m["stats"]["median"] / 2
           for m in p2p if m["bytes"] == small}
    bw = {f"{m['pair'][0]}-{m['pair'][1]}": m["bytes"] / (m["stats"]["median"] / 2)
          for m in p2p if m["bytes"] == large}
    for pair, v in lat.items():
        assert float(page.metrics[f"latency:{pair}"]) == pytest.approx(v)
        assert float(page.metrics[f"bandwidth:{pair}"]) == pytest.approx(bw[pair])
    assert float(page.metrics["latency"]) == pytest.approx(statistics.median(lat.values()))
    assert float(page.metrics["bandwidth"]) == pytest.approx(statistics.median(bw.values()))
    assert page.metric_text["latency"].count(units.fmt_time(statistics.median(lat.values())))
    conv = sum(m["stats"]["converged"] for m in doc["measurements"])
    assert page.metrics["converged"] == str(conv)
    assert float(page.metrics["clock_residual"]) == \
        pytest.approx(doc["provenance"]["clock_sync"]["max_residual_s"])
    # the measurements of this quick run have 2-3 repetitions and no median interval:
    # no winner is declared, and the values say so
    w = page.table("winners")
    assert set(w.col("collective")) == {"scatter", "gather"}
    assert all(x.startswith("unknown: no interval") for x in w.col("fastest implementation"))
    mt = page.table("measurements")
    flagged = [a for a in mt.row_attrs if a.get("class") == "flagged"]
    nc = sum("not_converged" in (m.get("flags") or []) for m in doc["measurements"])
    assert len(flagged) >= nc and all("title" in a for a in flagged)
    # provenance: the options as rows, no JSON blob anywhere in the summary
    prov = dict(page.table("provenance-table").rows)  # type: ignore[arg-type]
    assert prov["options.precision.eps"] == str(doc["provenance"]["options"]["precision"]["eps"])
    assert "--bind-to none" in prov["launcher.args"]
    assert not any(v.lstrip().startswith(("{", "[")) for v in prov.values())


def _winner_doc(make: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """scatter with 2 impls: binomial clearly faster at 0 and 1 KiB (intervals apart),
    linear and binomial the same within their intervals at 64 KiB and 1 MiB."""
    doc = make(ranks=4, sizes=(0, 1024, 65536, 1 << 20))
    ms = []
    for m in doc["measurements"]:
        if m["op"] == "scatter" and m["impl"] in ("linear", "binomial"):
            t = {0: 10e-6, 1024: 12e-6, 65536: 100e-6, 1 << 20: 1e-3}[m["bytes"]]
            if m["impl"] == "binomial" and m["bytes"] < 65536:
                t /= 2
            m["stats"].update(median=t, med_lo=0.97 * t, med_hi=1.03 * t, mean=t,
                              min=0.9 * t, max=1.1 * t)
            m.pop("samples", None)
            m.pop("valid", None)
            ms.append(m)
        elif m["op"] != "scatter":
            ms.append(m)
    doc["measurements"] = ms
    return doc


def test_fastest_implementation_per_size_range(synthetic_results: Callable[..., dict[str, Any]],
                                               write_json: Callable[..., Path]) -> None:
    r = results.load(write_json(_winner_doc(synthetic_results)))
    ws = [w for w in summary.winners(r) if w["op"] == "scatter"]
    assert [(w["lo"], w["hi"], w["winner"]) for w in ws] == \
        [(0, 1024, "binomial"), (65536, 1 << 20, None)]
    page = htmlq.parse(html.render_report(r))
    rows = [row for row in page.table("winners").rows if row[0] == "scatter"]
    assert rows[0][2:5] == ["0 B .. 1 KiB", "binomial", "2.00x .. 2.00x"]
    assert rows[1][3] == "no significant difference"


def test_negative_times_are_refused_at_load(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path]
) -> None:
    """A negative median is impossible (corrected times <= 0 are excluded before the
    statistics, flag negative_time): refused with its place, never shown (issue 29)."""
    doc = synthetic_results(ranks=2, sizes=(0, 8))
    m = next(m for m in doc["measurements"] if m["op"] == "bcast")
    m["stats"].update(median=-1e-6, mean=-1e-6)
    m["flags"] = ["negative_time"]
    p = write_json(doc)
    with pytest.raises(MpilabError) as e:
        results.load(p)
    k = doc["measurements"].index(m)
    assert f"measurements[{k}].stats.median: -1e-06: not a possible time" in str(e.value)


# ---------------------------------------------------------------------------------------
# comparison of runs


def _slower(doc: dict[str, Any], factor: float, which: Callable[[dict[str, Any]], bool]
            ) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    for m in d["measurements"]:
        if which(m):
            m["stats"] = {k: (v * factor if k in ("mean", "median", "min", "max", "ci_half",
                                                  "stdev") and isinstance(v, float) else v)
                          for k, v in m["stats"].items()}
            m["samples"] = [s * factor for s in m["samples"]]
    return d


def test_compare_two_runs(synthetic_results: Callable[..., dict[str, Any]],
                          write_json: Callable[..., Path], run_cli: Callable[..., Any],
                          tmp_path: Path) -> None:
    a = synthetic_results(ranks=3, sizes=(0, 4096))
    for m in a["measurements"]:  # 12 repetitions each, spread 1%
        t = m["stats"]["median"]
        m["samples"] = [t * (1 + 0.001 * k) for k in range(12)]
        m["valid"] = [True] * 12
        m["stats"]["reps"] = 12
    b = _slower(a, 2.0, lambda m: m["op"] == "bcast")
    b = _slower(b, 1.0001, lambda m: m["op"] == "gather")  # same within noise
    pa, pb = write_json(a, "a.json"), write_json(b, "b.json")
    out = tmp_path / "cmp.html"
    p = run_cli("report", str(pa), str(pb), "--label", "before", "--label", "after", "-o",
                str(out))
    assert p.returncode == 0, p.stderr
    page = htmlq.parse(out.read_text())
    assert page.sections[:2] == ["summary", "ratios"]
    t = page.table("ratios")
    assert t.in_details
    rows = [dict(zip(t.head, r, strict=True)) for r in t.rows]
    bc = [r for r in rows if r["op"] == "bcast"]
    assert bc and all(r["verdict"] == "after slower" and r["ratio (run / baseline)"] == "2.000"
                      for r in bc)
    assert all(r["verdict"] == "not significant" for r in rows if r["op"] == "gather")
    assert all(r["test"].startswith("mann-whitney") for r in rows)
    # overlaid figures: one curve per run, labelled
    assert any(f["data-figure"] == "bcast/native" for f in page.figures)
    text = out.read_text()
    assert "after (max)" in text and "before (max)" in text
    assert page.metrics["run:before:latency"] == page.metrics["run:after:latency"]
    # labelled by a provenance field, the default output name beside the first file
    p = run_cli("report", str(pa), str(pb), "--label-by", "mpi")
    assert p.returncode == 0, p.stderr
    cmp = tmp_path / "a-compare.html"
    assert cmp.exists() and "Open MPI v4.1.4 #2" in cmp.read_text()


def test_compare_refuses_bad_labels_and_input(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path],
        run_cli: Callable[..., Any], tmp_path: Path) -> None:
    pa = write_json(synthetic_results(ranks=2, sizes=(8,)), "a.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "mpilab.results/1",\n "measurements": [\n')
    out = tmp_path / "o.html"
    for args, msg in (((str(pa), str(pa), "--label", "x"), "--label given 1 time(s) for 2"),
                      ((str(pa), "--label", "x"), "name the runs of a comparison"),
                      ((str(pa), str(pa), "--label-by", "nosuch"), "no such field"),
                      ((str(pa), str(bad)), "bad.json:"),
                      ((str(pa), str(tmp_path / "missing.json")), "missing.json"),
                      ((str(pa), str(pa), "--matrix-sizes", "0"), "one results file")):
        p = run_cli("report", *args, "-o", str(out))
        assert p.returncode == 2, (args, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and msg in lines[0] and "Traceback" not in p.stderr, p.stderr
        assert not out.exists()


def test_partial_file_gets_a_banner(synthetic_results: Callable[..., dict[str, Any]],
                                    write_json: Callable[..., Path]) -> None:
    doc = synthetic_results(ranks=2, sizes=(8,))
    doc["partial"] = True
    doc["partial_reason"] = "stopped by signal 9"
    doc.pop("models")
    page = htmlq.parse(html.render_report(results.load(write_json(doc))))
    assert len(page.banners) == 1 and "PARTIAL RESULTS (stopped by signal 9)" in page.banners[0]
    doc["partial"] = False
    assert htmlq.parse(html.render_report(results.load(write_json(doc)))).banners == []


@pytest.mark.skipif(importlib.util.find_spec("kaleido") is None,
                    reason="kaleido (the static extra) not installed")
def test_static_report_embeds_svg(synthetic_results: Callable[..., dict[str, Any]],
                                  write_json: Callable[..., Path], run_cli: Callable[..., Any],
                                  tmp_path: Path) -> None:
    # p2p alone: its four figures (each exported by a Chromium of its own, seconds each);
    # the export is the same for every figure (iplot.figure_static)
    doc = synthetic_results(ranks=2, sizes=(8, 64))
    doc["measurements"] = [m for m in doc["measurements"] if m["op"] == "p2p"]
    out = tmp_path / "s.html"
    p = run_cli("report", str(write_json(doc)), "--static", "-o", str(out))
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    page = htmlq.parse(text)
    assert len(page.figures) > 1 and all("mpilab-static" in f["class"] for f in page.figures)
    assert text.count("<svg") == len(page.figures)
    assert page.scripts == 1  # only the tables' own script, no plotting runtime


def test_prediction_table_names_the_measured_statistic(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path]
) -> None:
    """Predictions are compared with the statistic the results file names (issue 25 item 6):
    the median by default, labelled; a file that says mean is labelled mean, never median."""
    for stat, said in ((None, "median"), ("median", "median"), ("mean", "mean")):
        doc = synthetic_results(sizes=(0, 1024, 65536))
        p = {"op": "scatter", "impl": "linear", "bytes": 8, "predicted": 3e-6,
             "measured": 2e-6, "timing": "max"}
        if stat:
            p["measured_statistic"] = stat
        doc["models"]["predictions"] = [p]
        r = results.load(write_json(doc))
        assert r.predictions[0].statistic == said
        t = htmlq.parse(html.render_report(r)).table("predictions")
        assert f"measured ({said})" in t.head
        assert ("median" in " ".join(t.head)) == (said == "median")
