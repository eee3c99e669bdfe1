"""The HTML run report built from synthetic results files (issue 14: Jinja2 template,
summary first, interactive figures through report.figs, flagged cells, collapsed tables)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import htmlq
import pytest
from mpilab import results
from mpilab.report import build_report, figs, values


def _report(doc: dict[str, Any], write_json: Callable[..., Path], tmp_path: Path) -> str:
    r = results.load(write_json(doc))
    out = tmp_path / "report.html"
    assert build_report(r, out) == str(out)
    return out.read_text()


def _fig_titles(page: htmlq.Page) -> list[str]:
    return [f.get("data-figure", "") for f in page.figures]


def test_full_report_has_every_section(synthetic_results: Callable[..., dict[str, Any]],
                                       write_json: Callable[..., Path], tmp_path: Path) -> None:
    doc = synthetic_results(ranks=4, sizes=(0, 1024, 65536, 1 << 20))
    text = _report(doc, write_json, tmp_path)
    page = htmlq.parse(text)
    assert page.sections == ["summary", "collectives", "timing", "p2p", "models",
                             "measurements", "provenance"]
    # provenance: a readable table, folded after the figures and tables (issue 28), no
    # JSON blob
    prov = page.table("provenance-table")
    assert prov.section == "provenance" and prov.in_details
    items = dict(prov.rows)  # type: ignore[arg-type]
    assert items["mpi"] == "Open MPI v4.1.4" and items["date"] == "2026-11-21T10:00:00Z"
    assert items["command"].startswith("mpilab-bench --ops p2p")
    assert items["options.isolation"] == "barrier"
    assert items["options.timing"] == "max, root, global, opspec"
    assert "0: node0 pu 0" in items["mapping (rank: host, PU, allowed CPUs)"]
    assert items["clock sync"] == "skampi, max residual 120 ns"
    assert not any("{" in v for v in items.values())
    titles = _fig_titles(page)
    for op in ("scatter", "gather", "bcast", "allreduce"):
        assert f"{op}: time vs size" in titles and f"{op}: bandwidth vs size" in titles
    for op in ("scatter", "gather"):
        for impl in ("native", "linear", "binomial"):
            assert f"{op}/{impl}: timing methods" in titles
    # latency matrices at the smallest and the largest size only, as tables
    mats = [t for t in page.in_section("p2p")]
    assert [t.head for t in mats] == [["rank", "0", "1", "2", "3"]] * 2
    assert "point-to-point one-way time (parallel schedule)" in titles
    assert "Hockney fits: one-way time" in titles
    assert "scatter: predicted vs measured" in titles
    # figure ids are unique on the page
    ids = [f["id"] for f in page.figures]
    assert len(ids) == len(set(ids))
    # every measurement once in the collapsed, sortable table
    mt = page.table("measurements")
    assert mt.in_details and len(mt.rows) == len(doc["measurements"])
    assert mt.attrs["data-rows"] == str(len(doc["measurements"]))
    # global timing's clock-sync residual is stated next to the timing comparison
    timing = text[text.index('<section id="timing"'):text.index('<section id="p2p"')]
    assert "maximum residual 120 ns" in timing


def test_model_tables_carry_the_fitted_values(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path],
        tmp_path: Path) -> None:
    doc = synthetic_results(ranks=3, sizes=(0, 4096))
    doc["models"]["hockney"]["pairs"] = [
        {"i": 0, "j": 1, "alpha": 3e-6, "beta": 2e-10},
        {"i": 0, "j": 2, "alpha": 4e-6, "beta": 5e-10},
        {"i": 1, "j": 2, "alpha": 5e-6, "beta": 1e-9}]
    doc["models"]["predictions"] = [
        {"op": "scatter", "impl": "linear", "timing": "opspec", "bytes": 4096,
         "predicted": 2e-5, "measured": 1.6e-5},
        {"op": "gather", "impl": "binomial", "bytes": 0, "predicted": 1e-5, "measured": None}]
    page = htmlq.parse(_report(doc, write_json, tmp_path))
    h = page.table("hockney")
    # alpha in us, beta in ns/byte, 1/beta in MB/s
    assert h.row("0-1")[:5] == ["0-1", "all sizes", "3.00 us", "0.2 ns/B", "5000 MB/s"]
    assert h.row("1-2")[2:5] == ["5.00 us", "1 ns/B", "1000 MB/s"]
    s = page.table("summary-hockney")
    assert s.row("0-2")[1] == "4.00 us" and s.row("0-2")[3] == "2000 MB/s"
    # relative error of the prediction: (2e-5 - 1.6e-5) / 1.6e-5 = +25%
    p = page.table("predictions")
    assert p.row("scatter") == ["scatter", "linear", "opspec", "4 KiB", "20.0 us", "16.0 us",
                                "+25.0 %"]
    assert p.row("gather")[-2:] == ["-", "-"]


def test_sections_without_data_are_omitted(synthetic_results: Callable[..., dict[str, Any]],
                                           write_json: Callable[..., Path],
                                           tmp_path: Path) -> None:
    doc = synthetic_results(ranks=2, sizes=(8, 64))
    doc["measurements"] = [m for m in doc["measurements"]
                           if m["op"] == "bcast" and m["timing"] == "max"]
    del doc["models"]
    doc["provenance"]["clock_sync"] = None
    text = _report(doc, write_json, tmp_path)
    page = htmlq.parse(text)
    assert page.sections == ["summary", "collectives", "measurements", "provenance"]
    assert "no clock synchronisation (no measurement used global timing)" in text
    assert _fig_titles(page) == ["bcast: time vs size", "bcast: bandwidth vs size"]


def test_empty_and_p2p_only_results(synthetic_results: Callable[..., dict[str, Any]],
                                    write_json: Callable[..., Path], tmp_path: Path) -> None:
    doc = synthetic_results(ranks=2, sizes=(8,))
    doc["measurements"] = []
    doc["models"] = {}
    page = htmlq.parse(_report(doc, write_json, tmp_path))
    assert page.sections == ["summary", "provenance"] and not page.figures

    doc = synthetic_results(ranks=3, sizes=(4096,))
    doc["measurements"] = [m for m in doc["measurements"] if m["op"] == "p2p"]
    doc["models"] = {"hockney": doc["models"]["hockney"]}
    text = _report(doc, write_json, tmp_path)
    page = htmlq.parse(text)
    assert _fig_titles(page) == ["point-to-point one-way time (parallel schedule)",
                                 "Hockney fits: one-way time"]
    assert "collectives" not in page.sections and "Predicted versus measured" not in text


def test_odd_values_do_not_crash(synthetic_results: Callable[..., dict[str, Any]],
                                 write_json: Callable[..., Path], tmp_path: Path) -> None:
    doc = synthetic_results(ranks=2, sizes=(0, 8))
    for m in doc["measurements"][:4]:
        m["stats"]["ci_half"] = None
        m["stats"].update(mean=0.0, min=0.0, median=0.0, med_lo=0.0)
        m["stats"]["converged"] = False
    doc["measurements"][5]["bytes_back"] = 0  # asymmetric round trip
    # a user's entry (--entries FILE.so): known through provenance.options.ops
    doc["provenance"].setdefault("options", {})["ops"] = ["myop:custom"]
    doc["measurements"].append({"op": "myop", "impl": "custom", "timing": "opspec",
                                "bytes": 3, "stats": {"mean": 1e-6, "ci_half": 0, "reps": 1}})
    page = htmlq.parse(_report(doc, write_json, tmp_path))
    mt = page.table("measurements")
    assert "myop" in mt.col("op") and "opspec" in mt.col("timing")
    flagged = [a for a in mt.row_attrs if a.get("class") == "flagged"]
    assert len(flagged) >= 4 and all("not_converged" in a["title"] for a in flagged[:4])


def test_plot_count_is_bounded(synthetic_results: Callable[..., dict[str, Any]],
                               write_json: Callable[..., Path], tmp_path: Path) -> None:
    doc = synthetic_results(ranks=12, sizes=(0, 8, 64, 512))
    doc["measurements"] = [m for m in doc["measurements"] if m["op"] == "p2p"]
    assert len(doc["measurements"]) == 66 * 4
    del doc["models"]["predictions"]
    text = _report(doc, write_json, tmp_path)
    page = htmlq.parse(text)
    assert len(page.figures) == 2  # per-pair curves (at most 16 of 66), Hockney fits
    assert "50 more curves are not drawn" in text


def test_bandwidth_volume() -> None:
    doc_m = results.parse(
        '{"schema": "mpilab.results/1", "provenance": {"ranks": 4}, "measurements": ['
        '{"op": "scatter", "timing": "max", "bytes": 1024, "stats": {"mean": 0.001, '
        '"ci_half": 0, "reps": 1}},'
        '{"op": "alltoall", "timing": "max", "bytes": 1024, "ranks": 2, "stats": {"mean": 0.001, '
        '"ci_half": 0, "reps": 1}},'
        '{"op": "barrier", "timing": "max", "bytes": 0, "stats": {"mean": 0.001, '
        '"ci_half": 0, "reps": 1}}]}', "x")
    sc, a2a, bar = doc_m.measurements
    assert values.bandwidth(doc_m, sc).value == pytest.approx(3 * 1024 / 0.001)
    assert values.bandwidth(doc_m, a2a).value == pytest.approx(2 * 1 * 1024 / 0.001)
    assert values.bandwidth(doc_m, bar).value is None


def test_failed_render_writes_nothing(synthetic_results: Callable[..., dict[str, Any]],
                                      write_json: Callable[..., Path], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    r = results.load(write_json(synthetic_results(ranks=2, sizes=(8,))))
    outdir = tmp_path / "out"
    outdir.mkdir()
    old = outdir / "report.html"
    old.write_text("previous report")

    def boom(*_a: Any, **_k: Any) -> str:
        raise RuntimeError("plot failed")

    monkeypatch.setattr(figs, "figure_html", boom)
    with pytest.raises(RuntimeError):
        build_report(r, old)
    with pytest.raises(RuntimeError):
        build_report(r, outdir / "new.html")
    assert sorted(p.name for p in outdir.iterdir()) == ["report.html"]
    assert old.read_text() == "previous report"


def test_loggp_tables_carry_the_fitted_values(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path],
        tmp_path: Path) -> None:
    from test_results import loggp_section

    doc = synthetic_results(ranks=3, sizes=(0, 1024, 65536))
    lg = loggp_section(3, (0, 1024, 65536), L=4e-6, os_=1e-6, or_=1.5e-6, g=2e-6, G=1e-9)
    lg["pairs"][1]["flags"] = ["L_clamped"]
    doc["models"]["loggp"] = lg
    text = _report(doc, write_json, tmp_path)
    page = htmlq.parse(text)
    t = page.table("loggp-params")
    # pair 1->2: L = 4 + 3 us, o_s 1 us, o_r 1.5 us, g 2 us, G 1 ns/byte = 1000 MB/s
    summary = next(r for r in t.rows if r[0] == "1->2" and r[1] == "summary")
    assert summary[2:9] == ["7.00 us", "1.00 us", "1.50 us", "2.00 us", "1 ns/B", "1000 MB/s",
                            "-"]
    flagged = [(a, r) for a, r in zip(t.row_attrs, t.rows, strict=True) if "L_clamped" in r[-1]]
    assert flagged and all(a.get("class") == "flagged" for a, _ in flagged)
    assert all(a.get("class") != "flagged" for a, r in zip(t.row_attrs, t.rows, strict=True)
               if r[0] == "0->1")
    # the summary's LogGP table flags the clamped L in its cell
    s = page.table("summary-loggp")
    k = next(i for i, r in enumerate(s.rows) if "L_clamped" in r[-1])
    assert "flagged" in s.cell_attrs[k][1]["class"]
    # per-size medians: 3 pairs x 3 sizes
    assert len(page.table("loggp-sizes").rows) == 3 * 3
    assert "LogGP overheads and gap per size" in _fig_titles(page)
    assert "-20.0 %" in page.table("loggp-pred").col("relative error")


def test_loggp_only_results_get_a_models_section(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path],
        tmp_path: Path) -> None:
    from test_results import loggp_section

    doc = synthetic_results(ranks=2, sizes=(8,))
    doc["models"] = {"loggp": loggp_section(2, (8, 64))}
    text = _report(doc, write_json, tmp_path)
    assert '<section id="models"' in text and 'href="#models"' in text
    assert "LogGP parameters per pair" in text and "Hockney parameters" not in text


def test_report_sets_isolated_beside_back_to_back(tmp_path: Path) -> None:
    """A file with the same collective measured isolated and back to back: the report has
    the side-by-side table, with the pair whose intervals are apart flagged."""
    from mpilab import quality
    from mpilab.report import render_report

    def m(iso: str, b: int, med: float) -> dict:  # type: ignore[type-arg]
        return {"op": "bcast", "impl": "native", "timing": "max", "isolation": iso, "bytes": b,
                "root": 0, "ranks": 4, "samples": [med] * 6, "flags": [],
                "stats": {"reps": 6, "invalid": 0, "mean": med, "ci_half": med * 0.01,
                          "median": med, "med_lo": med * 0.99, "med_hi": med * 1.01,
                          "converged": True}}
    ms = [m("barrier", 1024, 2e-5), m("none", 1024, 2.01e-5), m("barrier", 1 << 20, 1.1e-3),
          m("none", 1 << 20, 3.5e-4)]
    quality.mark_isolation(ms)
    doc = {"schema": "mpilab.results/1", "provenance": {"tool": "mpilab-bench"},
           "measurements": ms}
    f = tmp_path / "iso.json"
    f.write_text(json.dumps(doc))
    from mpilab import results
    html = render_report(results.load(f))
    i = html.index('id="isolation"')
    table = html[i:html.index("</table>", i)]
    assert table.count("intervals apart") == 1 and table.count("agree") == 1
    assert "x0.32" in table
