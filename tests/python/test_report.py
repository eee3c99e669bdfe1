"""The HTML report built from synthetic results files."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab import results
from mpilab.report import build_report, html, plots

IMG_RE = re.compile(r'<img class="plot" alt="([^"]*)" src="data:image/png;base64,([^"]+)">')


def _images(text: str) -> list[tuple[str, bytes]]:
    return [(alt, base64.b64decode(data)) for alt, data in IMG_RE.findall(text)]


def _report(doc: dict[str, Any], write_json: Callable[..., Path], tmp_path: Path) -> str:
    r = results.load(write_json(doc))
    out = tmp_path / "report.html"
    assert build_report(r, out) == str(out)
    return out.read_text()


def test_full_report_has_every_section(synthetic_results: Callable[..., dict[str, Any]],
                                       write_json: Callable[..., Path], tmp_path: Path) -> None:
    doc = synthetic_results(ranks=4, sizes=(0, 1024, 65536, 1 << 20))
    text = _report(doc, write_json, tmp_path)
    for anchor in ("provenance", "collectives", "timing", "p2p", "models", "summary"):
        assert f"id='{anchor}'" in text, anchor
    # provenance table
    for item in ("Open MPI v4.1.4", "2026-11-21T10:00:00Z", "mpilab-bench --ops p2p",
                 "0: node0 pu 0", "skampi, max residual 120 ns", "isolation"):
        assert item in text, item
    imgs = _images(text)
    alts = [a for a, _ in imgs]
    assert all(png.startswith(b"\x89PNG\r\n\x1a\n") for _, png in imgs)
    for op in ("scatter", "gather", "bcast", "allreduce"):
        assert f"{op} time and bandwidth vs size" in alts
        assert f"{op} timing methods" in alts
    # heat maps at the smallest and the largest size only
    assert [a for a in alts if a.startswith("latency matrix")] == \
        ["latency matrix 0", "latency matrix 1M"]
    assert "p2p time vs size" in alts and "Hockney fits" in alts
    assert "scatter predictions" in alts and "gather predictions" in alts
    # the summary lists every measurement once
    summary = text[text.index("id='summary'"):]
    assert summary.count("<tr") == len(doc["measurements"]) + 1
    # global timing's clock-sync residual is stated next to the timing comparison
    timing = text[text.index("id='timing'"):text.index("id='p2p'")]
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
    text = _report(doc, write_json, tmp_path)
    models = text[text.index("id='models'"):text.index("id='summary'")]
    # alpha in us, beta in ns/byte, 1/beta in MB/s
    assert re.search(r"<td>0-1</td><td>all sizes</td><td class=\"n\">3 us</td>"
                     r"<td class=\"n\">0.2</td><td class=\"n\">5000</td>", models), models[:2000]
    assert re.search(r"<td>1-2</td>.*?<td class=\"n\">1</td><td class=\"n\">1000</td>", models)
    # relative error of the prediction: (2e-5 - 1.6e-5) / 1.6e-5 = +25%
    assert re.search(r"<td>scatter</td><td>linear</td><td>opspec</td><td class=\"n\">4096</td>"
                     r".*?\+25.0%", models)
    assert re.search(r"<td>gather</td><td>binomial</td>.*?<td class=\"n\">-</td></tr>", models)


def test_sections_without_data_are_omitted(synthetic_results: Callable[..., dict[str, Any]],
                                           write_json: Callable[..., Path],
                                           tmp_path: Path) -> None:
    doc = synthetic_results(ranks=2, sizes=(8, 64))
    doc["measurements"] = [m for m in doc["measurements"]
                           if m["op"] == "bcast" and m["timing"] == "max"]
    del doc["models"]
    doc["provenance"]["clock_sync"] = None
    text = _report(doc, write_json, tmp_path)
    assert "id='collectives'" in text and "id='summary'" in text
    for anchor in ("timing", "p2p", "models"):
        assert f"id='{anchor}'" not in text, anchor
    assert "none (no measurement used global timing)" in text
    assert [a for a, _ in _images(text)] == ["bcast time and bandwidth vs size"]


def test_empty_and_p2p_only_results(synthetic_results: Callable[..., dict[str, Any]],
                                    write_json: Callable[..., Path], tmp_path: Path) -> None:
    doc = synthetic_results(ranks=2, sizes=(8,))
    doc["measurements"] = []
    doc["models"] = {}
    text = _report(doc, write_json, tmp_path)
    assert "id='provenance'" in text and "<img" not in text and "id='summary'" not in text

    doc = synthetic_results(ranks=3, sizes=(4096,))
    doc["measurements"] = [m for m in doc["measurements"] if m["op"] == "p2p"]
    doc["models"] = {"hockney": doc["models"]["hockney"]}
    text = _report(doc, write_json, tmp_path)
    alts = [a for a, _ in _images(text)]
    assert alts == ["latency matrix 4K", "p2p time vs size", "Hockney fits"]
    assert "id='collectives'" not in text and "Predicted versus measured" not in text


def test_odd_values_do_not_crash(synthetic_results: Callable[..., dict[str, Any]],
                                 write_json: Callable[..., Path], tmp_path: Path) -> None:
    doc = synthetic_results(ranks=2, sizes=(0, 8))
    for m in doc["measurements"][:4]:
        m["stats"]["ci_half"] = None
        m["stats"]["mean"] = 0.0
        m["stats"]["converged"] = False
    doc["measurements"][5]["bytes_back"] = 0  # asymmetric round trip
    doc["measurements"].append({"op": "myop", "impl": "custom", "timing": "mytiming",
                                "bytes": 3, "stats": {"mean": 1e-6, "ci_half": 0, "reps": 1}})
    text = _report(doc, write_json, tmp_path)
    assert "myop" in text and "mytiming" in text
    assert text.count('<tr class="bad">') >= 4


def test_plot_count_is_bounded(synthetic_results: Callable[..., dict[str, Any]],
                               write_json: Callable[..., Path], tmp_path: Path) -> None:
    doc = synthetic_results(ranks=12, sizes=(0, 8, 64, 512))
    doc["measurements"] = [m for m in doc["measurements"] if m["op"] == "p2p"]
    assert len(doc["measurements"]) == 66 * 4
    del doc["models"]["predictions"]
    text = _report(doc, write_json, tmp_path)
    assert len(_images(text)) == 4  # two heat maps, per-pair curves, Hockney fits


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
    assert html._bandwidth(doc_m, sc) == pytest.approx(3 * 1024 / 0.001)
    assert html._bandwidth(doc_m, a2a) == pytest.approx(2 * 1 * 1024 / 0.001)
    assert html._bandwidth(doc_m, bar) is None


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

    monkeypatch.setattr(plots, "to_img", boom)
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
    sec = text[text.index("id='loggp'"):text.index("id='summary'")]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", sec)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    # pair 1->2: L = 4 + 3 us, o_s 1 us, o_r 1.5 us, g 2 us, G 1 ns/byte = 1000 MB/s
    summary = next(c for c in cells if c and c[0] == "1-&gt;2" and c[1] == "summary")
    assert summary[2:9] == ["7 us", "1 us", "1.5 us", "2 us", "1", "1000", "-"]
    flagged = re.findall(r"<tr([^>]*)>((?:(?!</tr>).)*L_clamped)", sec)
    assert flagged and all('class="bad"' in attrs for attrs, _ in flagged)
    assert all('class="bad"' not in attrs for attrs, body in
               re.findall(r"<tr([^>]*)>(.*?)</tr>", sec) if body.startswith("<td>0-&gt;1"))
    # per-size medians: 3 pairs x 3 sizes
    per_size = sec[sec.index("LogGP measurements per size"):]
    ps_table = per_size[:per_size.index("</table>")]
    assert ps_table.count("<tr") == 3 * 3 + 1
    assert "LogGP overheads and gap" in [a for a, _ in _images(text)]
    assert "LogGP predictions versus measured" in sec and "-20.0%" in sec


def test_loggp_only_results_get_a_models_section(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path],
        tmp_path: Path) -> None:
    from test_results import loggp_section

    doc = synthetic_results(ranks=2, sizes=(8,))
    doc["models"] = {"loggp": loggp_section(2, (8, 64))}
    text = _report(doc, write_json, tmp_path)
    assert "id='models'" in text and "href='#models'" in text
    assert "LogGP parameters per pair" in text and "Hockney parameters" not in text
