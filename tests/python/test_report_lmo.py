"""The report's LMO section: on a synthetic results file with one slow node and one slow link
the page names exactly those (per-node table, per-link heat map and table), leaves a
difference inside the intervals unnamed, and shows the LMO scatter/gather predictions beside
the measured values and Hockney's."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from pathlib import Path
from typing import Any

from mpilab import results
from mpilab.report import html

M = 65536


def _p(v: float, rel: float = 0.05, flags: list[str] | None = None) -> dict[str, Any]:
    return {"value": v, "raw": v, "lo": v * (1 - rel), "hi": v * (1 + rel), "flags": flags or []}


def _series(n: int, p2t: bool, b: int) -> dict[str, Any]:
    s: dict[str, Any] = {"bytes": b, "root": [0] * n, "x": [1] * n, "round": [0] * n,
                         "median": [1e-5] * n, "reps": [3] * n, "converged": [True] * n,
                         "samples": [[1e-5, 1.1e-5, 0.9e-5]] * n}
    if p2t:
        s["y"] = [2] * n
    return s


def lmo_doc(synthetic_results: Callable[..., dict[str, Any]], slow_node: int | None,
            slow_link: tuple[int, int] | None, node_factor: float = 4.0,
            rel: float = 0.05) -> dict[str, Any]:
    ranks = 4
    doc = synthetic_results(ranks=ranks, sizes=(1024, M))
    nodes = [{"rank": r, "C": _p(2e-6 * (node_factor if r == slow_node else 1.0), rel),
              "t": _p(1e-10 * (node_factor if r == slow_node else 1.0), rel),
              "C_spread": 0.0, "t_spread": 0.0, "triplets": 3} for r in range(ranks)]
    nodes[1]["t"] = _p(0.0, 0.0, ["clamped"])
    nodes[1]["t"]["raw"] = -3e-11
    pairs = [[i, j] for i in range(ranks) for j in range(i + 1, ranks)]
    slow = list(slow_link) if slow_link else None
    ib = [8e-9 * (4.0 if pr == slow else 1.0) for pr in pairs]
    preds = [{"op": op, "impl": "linear", "timing": "max", "bytes": b,
              "predicted": 3 * (5e-6 + 1e-9 * b) * 1.02, "measured": 3 * (5e-6 + 1e-9 * b) * 1.1,
              "measured_statistic": "median"} for op in ("scatter", "gather") for b in (1024, M)]
    doc["models"]["lmo"] = {
        "bytes": M, "mode": "parallel", "triplets": 4, "rounds": 4, "wall_s": 0.5,
        "experiments": {"rt_0": _series(6, False, 0), "rt_m": _series(6, False, M),
                        "p2t_0": _series(12, True, 0), "p2t_m": _series(12, True, M)},
        "nodes": nodes,
        "links": {"pairs": pairs, "L": [_p(3e-6, rel) for _ in pairs],
                  "inv_beta": [_p(v, rel) for v in ib], "rate_Bps": [1 / v for v in ib]},
        "slowest": None, "predictions": preds}
    return doc


def _page(doc: dict[str, Any], write_json: Callable[..., Path]) -> str:
    return html.render_report(results.load(write_json(doc)))


def _lmo_section(page: str) -> str:
    m = re.search(r'<section id="lmo">(.*?)</section>', page, re.S)
    assert m, "no LMO section"
    return m.group(1)


def test_page_names_the_slow_node_and_link(synthetic_results: Callable[..., dict[str, Any]],
                                           write_json: Callable[..., Path]) -> None:
    sec = _lmo_section(_page(lmo_doc(synthetic_results, 2, (0, 3)), write_json))
    warn = re.search(r'class="warn"[^>]*>(.*?)</', sec, re.S)
    assert warn, sec[:2000]
    text = warn.group(1)
    assert "node 2 " in text and "link 0-3 " in text, text
    for other in ("node 0 ", "node 1 ", "node 3 ", "link 0-1 ", "link 1-2 ", "link 2-3 "):
        assert other not in text, text
    # the tables mark the same rows, and only those
    assert len(re.findall(r"slow: [0-9.]+x the median node", sec)) == 1
    assert len(re.findall(r"slow: [0-9.]+x the median link", sec)) == 1
    assert "lmo-links" in sec  # the per-link heat map
    assert "clamped" in sec  # node 1's t is flagged
    assert "clamped: the fit fell below 0 (impossible), shown as 0" in sec
    assert "-0.03 ns/B" not in sec  # a negative per-byte delay is never shown as a value


def test_within_the_intervals_nothing_is_named(synthetic_results: Callable[..., dict[str, Any]],
                                               write_json: Callable[..., Path]) -> None:
    # node 2 is 1.4x slower but every interval is +-40%: the difference is not shown as a finding
    sec = _lmo_section(_page(lmo_doc(synthetic_results, 2, None, node_factor=1.4, rel=0.4),
                             write_json))
    assert "slow:" not in sec
    assert "No node and no link is slow" in sec


def test_predictions_beside_measured_and_hockney(synthetic_results: Callable[..., dict[str, Any]],
                                                 write_json: Callable[..., Path]) -> None:
    sec = _lmo_section(_page(lmo_doc(synthetic_results, None, None), write_json))
    assert "LMO predictions versus measured" in sec
    tab = re.search(r'<table[^>]*id="lmo-pred".*?</table>', sec, re.S)
    assert tab, sec[-3000:]
    t = tab.group(0)
    assert "Hockney predicted" in t
    # (1.02 - 1.1) / 1.1 = -7.3 % for every LMO row; the synthetic Hockney's is -9.1 %
    assert t.count("-7.3 %") == 4 and t.count("-9.1 %") == 4, t


def test_failed_fit_is_said(synthetic_results: Callable[..., dict[str, Any]],
                            write_json: Callable[..., Path]) -> None:
    doc = lmo_doc(synthetic_results, None, None)
    lm = doc["models"]["lmo"]
    for k in ("nodes", "links", "slowest", "predictions"):
        lm.pop(k)
    lm["error"] = "lmo: rt experiment 3 has no sample"
    sec = _lmo_section(_page(doc, write_json))
    assert "The LMO fit failed: lmo: rt experiment 3 has no sample" in sec


def test_nonpositive_prediction_is_flagged_not_drawn(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path]) -> None:
    # noisy point-to-two experiments can give raw parameters that sum to a time <= 0: the
    # fitter flags it, the page says so and shows the other predictions only
    doc = lmo_doc(synthetic_results, None, None)
    p = doc["models"]["lmo"]["predictions"][0]
    p["predicted"], p["flags"] = -2e-6, ["nonpositive"]
    sec = _lmo_section(_page(doc, write_json))
    assert "1 LMO prediction(s) not shown" in sec
    tab = re.search(r'<table[^>]*id="lmo-pred".*?</table>', sec, re.S)
    assert tab and tab.group(0).count("-7.3 %") == 3, sec[-3000:]


def test_fit_slowest_node_link_and_path_are_told(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path]) -> None:
    # the fit's own naming (models.lmo.slowest): node 2, link 0-3 and a different path 1-3, so
    # each of the three is shown from its own field, in words, in the tables and heat maps
    doc = lmo_doc(synthetic_results, 2, (0, 3))
    lm = doc["models"]["lmo"]
    lm["links"]["path_inv_beta"] = [3e-8 if pr == [1, 3] else 1e-8 for pr in lm["links"]["pairs"]]
    lm["slowest"] = {"node": 2, "node_cost_s": 3.5e-5, "node_vs_median": 4.0, "link": [0, 3],
                     "link_cost_s": 2.1e-3, "link_vs_median": 3.7, "path": [1, 3],
                     "path_cost_s": 2.0e-3, "path_vs_median": 2.5}
    sec = unescape(_lmo_section(_page(doc, write_json)))
    words = re.search(r"Slowest in the fit: (.*?)</", sec, re.S)
    assert words, sec[:3000]
    w = words.group(1)
    assert "node 2 (" in w and "4.00x the median node" in w, w
    assert "link 0-3 (" in w and "3.70x the median link" in w, w
    assert "path 1-3 (" in w and "2.50x the median path" in w, w
    # each marked once in the tables
    assert len(re.findall(r"the fit's slowest node", sec)) == 1, sec
    assert len(re.findall(r"the fit's slowest link", sec)) == 1
    assert len(re.findall(r"the fit's slowest path", sec)) == 1
    # the path cost heat map exists and both heat maps point at their cells
    assert "lmo-paths" in sec
    assert "slowest link 0-3" in sec and "slowest path 1-3" in sec
    # the path column: C_1 + C_3 + L_13 + M path = 2 + 2 + 3 us + 65536 * 30 ns = 1973 us
    assert re.search(r'data-sort="0\.0019730[0-9]*">1973 us<', sec), sec


def test_slowest_computed_when_the_file_has_none(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path]) -> None:
    # an older file without models.lmo.slowest: the same rule on its parameters names node 2
    # and link 0-3; the path (no path_inv_beta: t_i + t_j + 1/beta) is 0-3 as well
    sec = _lmo_section(_page(lmo_doc(synthetic_results, 2, (0, 3)), write_json))
    w = re.search(r"Slowest in the fit: (.*?)</", sec, re.S)
    assert w, sec[:3000]
    assert "node 2 (" in w.group(1) and "link 0-3 (" in w.group(1) \
        and "path 0-3 (" in w.group(1), w.group(1)


def test_star_view_names_the_slow_access_link(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path]) -> None:
    doc = lmo_doc(synthetic_results, None, None)
    lm = doc["models"]["lmo"]
    lm["wait"] = "sleep"
    lm["star"] = {"latency_s": [5e-4, 1e-3, 1.5e-3, 2e-3],
                  "inv_rate": [8.4e-8, 8.4e-8, 1.67e-7, 3.33e-7], "misfit_latency": 0.007,
                  "misfit_inv_rate": 0.002, "slowest_link_of": 3, "slowest_cost_s": 0.0893,
                  "slowest_vs_median": 2.6}
    lm["slowest"] = {**(lm.get("slowest") or {}), "cpu": 1, "cpu_C_s": 4.5e-3,
                     "cpu_vs_median": 5.56}
    sec = unescape(_lmo_section(_page(doc, write_json)))
    assert "the slowest access link is node 3's (2.60x the median node's)" in sec, sec[:3000]
    assert "Slowest at messaging: node 1 (its fixed delay per message C = 4.5" in sec
    assert "5.56x the median node's)" in sec
    assert "0.7% of the pairs' fixed times, 0.2% of their times per byte" in sec
    assert "this, not the per-pair slowest link, is the slow link" in sec
    assert "ranks waiting by sleeping" in sec
    # links of their own (pairlinks4's misfit): the star view is said not to hold
    lm["star"]["misfit_inv_rate"] = 0.5
    sec = unescape(_lmo_section(_page(doc, write_json)))
    assert "too much for a star" in sec and "the slow link." not in sec
    # an older file without the star view: nothing said about it
    del lm["star"], lm["wait"], lm["slowest"]["cpu"]
    sec = unescape(_lmo_section(_page(doc, write_json)))
    assert "As a star" not in sec and "ranks waiting by spinning" in sec
    assert "Slowest at messaging" not in sec
