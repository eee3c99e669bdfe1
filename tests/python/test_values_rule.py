"""The reports' one rule for values a person reads (python/mpilab/report/units.py): a time,
rate or size below 0 is never shown as a value, and an interval wider than a decade, or
reaching 0 for a time or a rate, reads "undetermined" with the flag ci_undetermined. The
cases are the values an independent check found shown as numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mpilab.multilane import doc, report
from mpilab.report import tables, units
from mpilab.report.tables import Table

NUMBER_RANGE = re.compile(r"-?\d[\d.]*\s*\w*\s*\.\.\s*-?\d")


@pytest.mark.parametrize("lo, hi, unit", [
    (0.385e9, 404e9, "B/s"),          # "0.385 .. 404 GB/s"
    (1.71e-9, 311707e-9, "s"),        # "CI 1.71 .. 311707 ns"
    (0.000363e9, 308841e9, "B/s"),    # "0.000363 .. 308841 GB/s"
    (0.0, 7398936698.991e-6, "s"),    # "0.000..7398936698.991 us"
    (-1.31e-3, 8.13e-3, "s"),         # the multilane alpha interval
])
def test_intervals_that_determine_nothing_read_undetermined(lo: float, hi: float,
                                                            unit: str) -> None:
    assert units.undetermined(lo, hi, unit)
    assert units.fmt_ci(lo, hi, unit) == units.UNDETERMINED
    c = tables.interval(lo, hi, unit)
    assert c.text == units.UNDETERMINED and units.FLAG_UNDETERMINED in c.flags


@pytest.mark.parametrize("lo, hi, unit", [
    (3.41e-6, 3.62e-6, "s"), (1e-6, 10e-6, "s"), (900e6, 1.1e9, "B/s"),
    (-2.0, 3.0, "widgets"),  # a signed quantity: only the decade rule, which needs lo > 0
])
def test_intervals_that_determine_the_value_are_shown(lo: float, hi: float, unit: str) -> None:
    assert not units.undetermined(lo, hi, unit)
    assert units.fmt_ci(lo, hi, unit) != units.UNDETERMINED
    assert tables.interval(lo, hi, unit).flags == []


@pytest.mark.parametrize("v, unit", [(-3.2e-6, "s"), (-1e6, "B/s"), (-10.0, "B")])
def test_a_negative_time_rate_or_size_is_never_a_value(v: float, unit: str) -> None:
    assert units.fmt_value(v, unit) == units.IMPOSSIBLE
    c = tables.value(v, unit)
    assert c.text == units.IMPOSSIBLE and "negative" in c.flags
    assert str(abs(v))[:3] not in c.text and "-" not in c.text
    # the whole-column unit pass (Table) keeps the rule's text
    t = Table(["x"], [[tables.value(2e-6, unit)], [c], [tables.interval(1e-6, 1e-3, unit)]])
    t.unify_units()
    assert [r[0].text for r in t.rows][1:] == [units.IMPOSSIBLE, units.UNDETERMINED]


def test_negative_loggp_gap_per_size_is_not_a_number_in_the_report() -> None:
    """The survey report's "LogGP measurements per size" cells are tables.value(.., "s"): a
    negative g(m) reads impossible, flagged."""
    c = tables.value(-4.5e-7, "s")
    assert c.text == units.IMPOSSIBLE and c.flags == ["negative"]


def test_multilane_alpha_interval_reaching_below_zero_is_undetermined(tmp_path: Path) -> None:
    import test_multilane as tm  # the synthetic multilane document of its own tests

    data = tm.synthetic(tmp_path)
    data["model"]["alpha_calibration"] = {
        "bytes": 1024, "lanes": 4, "reps": 5,
        "scatter": {"alpha": 0.0034, "ci95": [-1.31e-3, 8.13e-3], "alpha_used": 0.0034},
        "gather": {"alpha": 0.002, "ci95": [0.0019, 0.0021], "alpha_used": 0.002}}
    d = doc.load(tm.write(tmp_path, data))
    t = report.model_table(d)
    assert t is not None
    sc = next(r for r in t.rows if r[0].text.startswith("alpha (scatter"))
    ga = next(r for r in t.rows if r[0].text.startswith("alpha (gather"))
    assert units.UNDETERMINED in sc[1].text and units.FLAG_UNDETERMINED in sc[1].flags
    assert "-1.31" not in sc[1].text and not NUMBER_RANGE.search(sc[1].text)
    assert "1.90 .. 2.10 ms" in ga[1].text and units.FLAG_UNDETERMINED not in ga[1].flags


def test_compare_who_wins_where_writes_one_unit_per_criterion(tmp_path: Path) -> None:
    """Two transports at 5 GB/s and 12 GB/s: both in GB/s (fmt_rate alone gives 5000 MB/s and
    12.0 GB/s), and latencies of 900 ns and 2 us both in one unit."""
    from mpilab.report.signif import Estimate
    from mpilab.suite import report as sreport

    shown = {"a": [(5e9, "B/s"), (4194304.0, "B")], "b": [(12e9, "B/s"), (4194304.0, "B")]}
    texts = sreport._texts(shown)
    assert {t.split(" at ")[0].split()[1] for t in texts.values()} == {"GB/s"}, texts
    lat = sreport._texts({"a": [(0.9e-6, "s"), (2.0, "B")], "b": [(2e-6, "s"), (2.0, "B")]})
    assert len({t.split(" at ")[0].split()[1] for t in lat.values()}) == 1, lat
    # message rates: 9.45 M msg/s beside 240 k msg/s is one scale too (0.240 M msg/s)
    rate = sreport._texts({"shm": [(9.45e6, "msg/s"), (1.0, "B")],
                           "tcp": [(2.4e5, "msg/s"), (1.0, "B")]})
    assert rate == {"shm": "9.45 M msg/s at 1 B", "tcp": "0.240 M msg/s at 1 B"}, rate

    class FakeRun:
        def __init__(self, name: str) -> None:
            self.name = name
    runs = [FakeRun("a"), FakeRun("b")]
    vals = {"a": (Estimate(5e9, 4.9e9, 5.1e9), shown["a"]),
            "b": (Estimate(12e9, 11.9e9, 12.1e9), shown["b"])}
    c = sreport._best(runs, lambda r: vals[r.name], False, "bandwidth")  # type: ignore[arg-type]
    assert c.winner == "b"
    units_in_all = {re.search(r"(\w+/s)", a).group(1) for a in c.all}  # type: ignore[union-attr]
    assert units_in_all == {"GB/s"}, c.all


def test_measurement_with_an_unbounded_interval_is_flagged_and_undetermined() -> None:
    """"730 ns, CI 1.71 .. 311707 ns" in a results file: the report's measurement table shows
    the interval as undetermined, and the measurement (its points in figures too) carries
    the flag."""
    from mpilab import results
    from mpilab.report import html, values

    doc_ = json.loads((Path(__file__).resolve().parents[1] / "data" /
                       "survey-quick-np3.json").read_text())
    m = next(x for x in doc_["measurements"] if x.get("op") == "bcast")
    st = m["stats"]
    st["med_lo"], st["median"], st["med_hi"] = 1.71e-9, 730e-9, 311707e-9
    st["min"] = min(st.get("min", 1e-9), 1e-9)
    st["max"] = max(st.get("max", 1.0), 311707e-9)
    m.pop("samples", None)
    m.pop("valid", None)
    r = results.parse(json.dumps(doc_), "x.json")
    meas = next(x for x in r.measurements
                if x.op == "bcast" and x.raw.get("stats", {}).get("med_hi") == 311707e-9)
    t = html.measurement_table(r, only=[meas])
    texts = [c.text for c in t.rows[0]]
    assert units.UNDETERMINED in texts, texts
    assert not any("311707" in x or "312" in x.split()[0] for x in texts if x), texts
    cell = next(c for c in t.rows[0] if c.text == units.UNDETERMINED)
    assert units.FLAG_UNDETERMINED in cell.flags
    assert units.FLAG_UNDETERMINED in values.flags(meas)


def test_the_legend_explains_both_flags() -> None:
    from mpilab.report import summary

    meanings = dict(summary.FLAG_MEANINGS)
    assert units.FLAG_UNDETERMINED in meanings and "negative" in meanings
    assert units.IMPOSSIBLE in meanings["negative"]


def test_cells_pass_through_the_rule_only() -> None:
    """No other formatter in the report package prints an interval: every "lo .. hi" comes
    from units.fmt_ci (or the column pass of tables.Table, which keeps its verdict)."""
    root = Path(__file__).resolve().parents[2] / "python" / "mpilab"
    offenders = []
    for p in list((root / "report").glob("*.py")) + [root / "multilane" / "report.py",
                                                    root / "suite" / "report.py"]:
        for k, line in enumerate(p.read_text().splitlines(), 1):
            if re.search(r"fmt_time\([^)]*\)\}?\s*\.\.", line):
                offenders.append(f"{p.name}:{k}: {line.strip()}")
    assert offenders == []

