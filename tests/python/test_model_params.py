"""Impossible model parameters (issue 28 item 8, issue 29 item 3): a fitted LogGP g or o_r
below 0, a Hockney alpha or beta below 0, and a point estimate sitting at an end of its own
interval (the fitter stretches a bootstrap interval that missed its estimate until it holds
it) are never shown as plain values; intervals that cannot come from the fitter are refused
when the file is read.

Each file is the stored survey (tests/data/reports/survey-a.json) with one parameter changed
the way a real fit leaves it: per-range Theil-Sen values are not clamped by the fitter, the
headline ones are (value 0, quality flag clamped, negative raw)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from htmlq import parse as parse_html
from mpilab import quality, results, results_model
from mpilab.errors import MpilabError
from mpilab.report import render_report as render

DATA = Path(__file__).resolve().parent.parent / "data" / "reports" / "survey-a.json"
NEGATIVE = re.compile(r"^\s*[-\u2212]\s*\d")


def _doc() -> dict[str, Any]:
    return copy.deepcopy(json.loads(DATA.read_text()))


def _report(doc: dict[str, Any], tmp_path: Path) -> Any:
    f = tmp_path / "r.json"
    f.write_text(json.dumps(doc))
    return parse_html(render(results.load(f)))


def _cell(page: Any, tid: str, row: int, col: str) -> tuple[str, dict[str, str]]:
    t = page.table(tid)
    k = t.head.index(col)
    return t.rows[row][k], t.cell_attrs[row][k]


def _assert_clamped(text: str, attrs: dict[str, str], flag: str) -> None:
    assert not NEGATIVE.match(text), text
    assert re.match(r"^0(\.0+)?\s", text), f"not shown as its clamp 0: {text!r}"
    assert "flagged" in attrs.get("class", ""), attrs
    assert flag in attrs.get("title", ""), attrs


def _no_negative_parameter(page: Any) -> None:
    for tid in ("summary-hockney", "summary-loggp", "hockney", "loggp-params"):
        t = page.table(tid)
        for row in t.rows:
            for text in row:
                assert not NEGATIVE.match(text), (tid, row)


def test_loggp_per_range_g_and_or_below_zero_show_the_clamp(tmp_path: Path) -> None:
    doc = _doc()
    rng = doc["models"]["loggp"]["pairs"][0]["ranges"][0]
    rng["or"], rng["g"] = -4.71e-7, -7.13e-8  # the values the issue saw on a real run
    page = _report(doc, tmp_path)
    _no_negative_parameter(page)
    # row 0: the pair's summary row, row 1: its first range
    _assert_clamped(*_cell(page, "loggp-params", 1, "o_r"), "or_clamped")
    _assert_clamped(*_cell(page, "loggp-params", 1, "g"), "g_clamped")
    assert "or_clamped g_clamped" in _cell(page, "loggp-params", 1, "flags")[0]


def test_loggp_headline_below_zero_shows_the_clamp(tmp_path: Path) -> None:
    """The robust fit's headline below 0: the file holds the clamp, the raw value and the
    flag; the summary shows the clamp with the flag, never the raw value."""
    doc = _doc()
    p = doc["models"]["loggp"]["pairs"][1]
    p["or"] = 0.0
    p["quality"]["or"].update(raw=-2e-7, lo=0.0, hi=9e-8, flags=["clamped", "ci_wide"])
    page = _report(doc, tmp_path)
    _no_negative_parameter(page)
    _assert_clamped(*_cell(page, "summary-loggp", 1, "o_r"), "clamped")
    _assert_clamped(*_cell(page, "loggp-params", 2, "o_r"), "clamped")


def test_hockney_alpha_and_beta_below_zero_show_the_clamp(tmp_path: Path) -> None:
    doc = _doc()
    p = doc["models"]["hockney"]["pairs"][0]
    # a range's line may cross below 0 (the fitter writes it with negative_intercept); a
    # range's slope and the headline alpha and beta are clamped by the fitter
    p["ranges"][0].update(alpha=-3.1e-7, beta=0.0, flags=["negative_intercept",
                                                          "beta_clamped"])
    p["alpha"], p["beta"] = 0.0, 0.0
    p["quality"]["alpha"].update(raw=-3.1e-7, lo=0.0, hi=2e-7, flags=["clamped", "ci_wide"])
    p["quality"]["beta"].update(raw=-2e-12, lo=0.0, hi=1e-10, flags=["clamped", "ci_wide"])
    page = _report(doc, tmp_path)
    _no_negative_parameter(page)
    _assert_clamped(*_cell(page, "summary-hockney", 0, "Hockney alpha (latency)"), "clamped")
    rate, rattrs = _cell(page, "summary-hockney", 0, "1/beta (sustained rate)")
    assert "clamped" in rattrs.get("title", "") and not NEGATIVE.match(rate)
    _assert_clamped(*_cell(page, "hockney", 0, "alpha"), "clamped")
    _assert_clamped(*_cell(page, "hockney", 0, "beta (per byte)"), "clamped")
    _assert_clamped(*_cell(page, "hockney", 1, "alpha"), "clamped")   # the range's intercept
    rate, rattrs = _cell(page, "hockney", 1, "1/beta")
    assert "clamped" in rattrs.get("title", "") and not NEGATIVE.match(rate)


def test_hockney_beta_below_zero_in_the_distributions(tmp_path: Path) -> None:
    """Many pairs: percentiles over the pairs count a negative fit as its clamp 0."""
    from mpilab.report import summary

    r = results.load(DATA)
    pairs = [results_model.HockneyPair(i=0, j=k, alpha=-1e-7 if k < 3 else 1e-6 * k, beta=1e-10)
             for k in range(1, 40)]
    r2 = results_model.Results(path=r.path, provenance=r.provenance, measurements=r.measurements,
                         hockney=pairs, predictions=[], raw=r.raw, sources=r.sources)
    t = summary._model_distributions(r2)[0]
    row = next(x for x in t.rows if x[0].text.startswith("Hockney alpha"))
    assert row[0].flags and "2 of 39 pairs fitted below 0" in row[0].flags[0]
    assert all(c.value is None or c.value >= 0 for c in row[2:])
    assert row[2].text.startswith("0") and row[2].flags


def test_estimate_at_an_end_of_its_interval_is_flagged(tmp_path: Path) -> None:
    doc = _doc()
    p = doc["models"]["hockney"]["pairs"][1]
    q = p["quality"]["alpha"]
    q.update(lo=0.7 * p["alpha"], hi=p["alpha"], flags=[])  # "5.01 us, 3.66 .. 5.01 us"
    assert quality.value_flags(p["alpha"], p["quality"], "alpha") == [quality.CI_EDGE]
    page = _report(doc, tmp_path)
    text, attrs = _cell(page, "summary-hockney", 1, "Hockney alpha (latency)")
    assert "flagged" in attrs.get("class", "") and quality.CI_EDGE in attrs["title"], attrs
    assert f"alpha {quality.CI_EDGE}" in _cell(page, "hockney", 2, "flags")[0]
    # run health names it and the legend beside the summary explains and counts it
    assert any(x.endswith(f"alpha: {quality.CI_EDGE}") for x in quality.summary(doc)["params"])
    html = render(results.load(tmp_path / "r.json"))
    assert re.search(rf"<code>{quality.CI_EDGE}</code> <span class=\"count\">\d+</span>", html)


def test_a_value_strictly_inside_or_clamped_is_not_at_an_edge() -> None:
    q = {"a": {"lo": 1.0, "hi": 3.0, "flags": []}, "b": {"lo": 0.0, "hi": 2.0,
                                                         "flags": ["clamped"]}}
    assert quality.value_flags(2.0, q, "a") == []
    assert quality.value_flags(0.0, q, "b") == ["clamped"]     # the clamp says it already
    assert quality.value_flags(5.0, {"c": {"lo": 5.0, "hi": 5.0}}, "c") == []  # no width


@pytest.mark.parametrize("model,k,name,change,needle", [
    ("hockney", 0, "alpha", {"lo": 5e-6, "hi": 6e-6}, "outside its own interval"),
    ("hockney", 0, "beta", {"lo": -1e-10}, "below 0"),
    ("loggp", 0, "g", {"lo": 9e-8, "hi": 1e-8}, "upside down"),
    ("loggp", 2, "or", {"hi": -1e-9}, "below 0"),
])
def test_intervals_no_fit_writes_are_refused_at_load(tmp_path: Path, model: str, k: int,
                                                    name: str, change: dict[str, float],
                                                    needle: str) -> None:
    doc = _doc()
    doc["models"][model]["pairs"][k]["quality"][name].update(change)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc, indent=1))
    with pytest.raises(MpilabError) as e:
        results.load(f)
    msg = str(e.value)
    assert "\n" not in msg and needle in msg and f"{f}:" in msg, msg
