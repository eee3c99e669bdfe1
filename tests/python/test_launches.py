"""`mpilab bench --launches N`: the measurement over separate launches (mpilab.launches)."""

from __future__ import annotations

import json
import math
import random
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import real_runner
from mpilab import launches, quality, results
from mpilab.commands.bench import launch_file, without_out


def _one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# ----------------------------------------------------------------------- statistics


@pytest.mark.parametrize("df, cl, expected", [
    (1, 0.95, 12.706), (2, 0.95, 4.303), (4, 0.95, 2.776), (5, 0.95, 2.571),
    (10, 0.95, 2.228), (30, 0.95, 2.042), (4, 0.99, 4.604), (9, 0.90, 1.833)])
def test_t_quantile_table_values(df: int, cl: float, expected: float) -> None:
    assert launches.t_quantile(cl, df) == pytest.approx(expected, abs=1e-3)


def test_t_abs_cdf_limits() -> None:
    assert launches.t_abs_cdf(0.0, 3) == 0.0
    assert launches.t_abs_cdf(1e9, 7) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        launches.t_abs_cdf(1.0, 0)
    with pytest.raises(ValueError):
        launches.t_quantile(1.0, 3)


def test_os_interval_ranks() -> None:
    assert launches.os_interval([5.0, 1.0, 3.0, 2.0, 4.0], 0.95) is None  # n = 5: 93.75%
    assert launches.os_interval([float(x) for x in range(6)], 0.95) == (0.0, 5.0)
    v = [float(x) for x in range(20)]
    assert launches.os_interval(v, 0.95) == (5.0, 14.0)  # ranks 6 and 15 (bench_stats)


def test_interval_floor_is_the_launches_own_error() -> None:
    """Launches that agree exactly do not make the figure more precise than its samples."""
    m, lo, hi, parts = launches.launch_interval([2.0, 2.0, 2.0], [0.2, 0.2, 0.2], 0.95)
    assert m == 2.0 and parts["between_half_s"] == 0.0
    # relative half widths 0.1, as log half widths log(1.1)
    h = math.sqrt(math.pi / 2) * math.sqrt(3 * math.log1p(0.1) ** 2) / 3
    assert lo == pytest.approx(2.0 * math.exp(-h)) and hi == pytest.approx(2.0 * math.exp(h))
    assert parts["within_half_s"] == pytest.approx(2.0 * h)


def test_a_launch_with_a_huge_own_interval_keeps_the_merged_one_finite() -> None:
    """Seen in the README's tuning tour: launch 2 of a bcast had 16 repetitions and an
    upper end 1200x its median (an outlier as the order statistic); read as a log half width
    of 603 the merged interval was 1e-169 .. 2e159 s, which the loader then refused."""
    med = [1.491e-05, 1.4798e-05]
    halves = [(1.580554253e-05 - 1.4011e-05) / 2, (0.01786318137 - 1.1507e-05) / 2]
    m, lo, hi, parts = launches.launch_interval(med, halves, 0.95)
    assert lo < min(med) / 10 and hi > 10 * max(med)  # still wide: not a precise figure
    assert 1e-9 < lo and hi < 1e-2  # factors of about 50, not 10^160
    h = math.sqrt(math.pi / 2) * math.hypot(*(math.log1p(x / y) for x, y in zip(halves, med,
                                                                               strict=True))) / 2
    assert hi == pytest.approx(m * math.exp(h)) and parts["within_half_s"] == pytest.approx(m * h)


def test_interval_between_launches() -> None:
    med = [1.0, 1.2, 1.1, 1.3, 1.0]
    m, lo, hi, parts = launches.launch_interval(med, [0.001] * 5, 0.95)
    h = 2.776445 * math.sqrt(math.pi / 2) * statistics.stdev([math.log(x) for x in med]) \
        / math.sqrt(5)
    assert m == 1.1
    assert lo == pytest.approx(1.1 * math.exp(-h), rel=1e-5)
    assert hi == pytest.approx(1.1 * math.exp(h), rel=1e-5)
    assert parts["between_half_s"] == pytest.approx(1.1 * h, rel=1e-5)


def test_interval_never_below_zero() -> None:
    """One launch of five at 3x the others: the interval is wide but stays positive."""
    m, lo, hi, _ = launches.launch_interval([0.75, 0.79, 0.72, 2.6, 0.83], [0.02] * 5, 0.95)
    assert m == 0.79 and 0 < lo < 0.72 and hi > 0.83


def test_interval_coverage_with_launch_effects() -> None:
    """Launch levels drawn around a true level, each launch's own interval tight: the
    interval over 5 launches holds the true level in about cl of the series (a single
    launch's would not)."""
    rng = random.Random(9)
    hits = single = 0
    trials = 2000
    for _ in range(trials):
        meds = [1.0 + rng.gauss(0, 0.1) for _ in range(5)]
        _, lo, hi, _ = launches.launch_interval(meds, [0.005] * 5, 0.95)
        hits += lo <= 1.0 <= hi
        single += abs(meds[0] - 1.0) <= 0.005
    assert hits / trials >= 0.94
    assert single / trials < 0.2


def test_prediction_interval_is_sqrt2_the_confidence_interval() -> None:
    """predict=True: the interval for a repeat's figure; both parts sqrt(2) times the
    confidence interval's, the confidence half width kept beside."""
    med, halves = [1.0, 1.2, 1.1], [0.01, 0.012, 0.011]
    m, lo, hi, ci = launches.launch_interval(med, halves, 0.95)
    m2, lo2, hi2, pi = launches.launch_interval(med, halves, 0.95, predict=True)
    assert m == m2 == 1.1 and ci["interval"] == "confidence" and pi["interval"] == "prediction"
    h = math.log(hi / m)
    assert math.log(hi2 / m) == pytest.approx(math.sqrt(2) * h)
    assert math.log(m / lo2) == pytest.approx(math.sqrt(2) * h)
    assert pi["ci_half_s"] == pytest.approx(m * h)
    assert pi["between_half_s"] == pytest.approx(math.sqrt(2) * ci["between_half_s"])


def _shifted_launch(rng: random.Random) -> float:
    """One launch's median: level 1, or 15% higher in one launch of five (the whole-launch
    level shifts of docs/bench-launches.md), with 3% launch-to-launch noise."""
    return (1.15 if rng.random() < 0.2 else 1.0) * math.exp(rng.gauss(0, 0.03))


def test_prediction_interval_holds_a_repeat_with_level_shifts() -> None:
    """Three launches with whole-launch level shifts: the merged (prediction) interval holds
    the figure of an independent repeat of the same design (median of 3 new launches) in
    about cl of the trials and the median of five repeats more often; the confidence
    interval of the level, which the merge used before, holds a repeat's figure less often
    (three launches that agree by chance give it no room for the repeat's own effects)."""
    rng = random.Random(25)
    trials = 2000
    pred = conf = five = 0
    for _ in range(trials):
        meds = [_shifted_launch(rng) for _ in range(3)]
        halves = [0.005 * x for x in meds]
        _, lo, hi, _ = launches.launch_interval(meds, halves, 0.95, predict=True)
        _, clo, chi, _ = launches.launch_interval(meds, halves, 0.95)
        repeats = [statistics.median([_shifted_launch(rng) for _ in range(3)])
                   for _ in range(5)]
        pred += lo <= repeats[0] <= hi
        conf += clo <= repeats[0] <= chi
        five += lo <= statistics.median(repeats) <= hi
    assert pred / trials >= 0.94
    assert five / trials >= 0.97
    assert conf < pred and conf / trials < 0.93


def test_merged_measurement_carries_the_prediction_interval() -> None:
    docs = [_doc([_meas(m, 0.005 * m)]) for m in (0.42, 0.44, 0.43)]
    m = launches.merge(docs, [f"l{k}.json" for k in range(3)])["measurements"][0]
    fig, lo, hi, _ = launches.launch_interval([0.42, 0.44, 0.43], [0.0021, 0.0022, 0.00215],
                                              0.95, predict=True)
    assert m["launches"]["interval"] == "prediction"
    assert m["stats"]["med_lo"] == pytest.approx(lo) and m["stats"]["med_hi"] == pytest.approx(hi)
    assert m["launches"]["ci_half_s"] < m["launches"]["between_half_s"]


# ----------------------------------------------------------------------- merging


def _meas(median: float, half: float, conv: bool = True, nbytes: int = 1024,
          samples: list[float] | None = None) -> dict[str, Any]:
    s = samples if samples is not None else [median] * 7
    return {"op": "p2p", "impl": "roundtrip", "timing": "p2p", "schedule": "parallel",
            "pair": [0, 1], "bytes": nbytes, "bytes_back": nbytes, "ranks": 2,
            "precision": {"cl": 0.95, "eps": 0.025, "min_reps": 5, "max_reps": 100},
            "stats": {"mean": median, "ci_half": half, "reps": len(s), "invalid": 0,
                      "median": median, "med_lo": median - half, "med_hi": median + half,
                      "converged": conv},
            "samples": s, "valid": [True] * len(s), "flags": [] if conv else ["not_converged"],
            "wall_s": 0.5}


def _doc(ms: list[dict[str, Any]], date: str = "2026-11-23T10:00:00Z") -> dict[str, Any]:
    return {"schema": "mpilab.results/1",
            "provenance": {"tool": "mpilab-bench", "ranks": 2, "date": date},
            "measurements": ms,
            "models": {"hockney": {"pairs": []}}}


def test_merge_levels_differ_flags_and_covers() -> None:
    docs = [_doc([_meas(m, 0.005 * m, nbytes=1024), _meas(100 * m, 0.2, nbytes=4096)])
            for m in (0.42, 0.53, 0.41, 0.46, 0.42)]
    out = launches.merge(docs, [f"l{k}.json" for k in range(5)])
    assert out["models"] == {"hockney": {"pairs": []}} and "launch 1" in out["launches"]["models"]
    assert out["launches"]["n"] == 5 and "partial" not in out
    m = out["measurements"][0]
    assert m["stats"]["median"] == 0.42
    assert m["stats"]["med_lo"] < 0.41 and m["stats"]["med_hi"] > 0.46
    assert m["launches"]["medians"] == [0.42, 0.53, 0.41, 0.46, 0.42]
    assert m["launches"]["outside"] == 3  # 0.53, 0.41, 0.46 do not hold 0.42
    assert quality.LAUNCHES_DISAGREE in m["flags"]
    assert m["stats"]["converged"] is False and m["flags"][0] == quality.NOT_CONVERGED
    assert len(m["samples"]) == len(m["valid"]) == 35 and m["stats"]["reps"] == 35
    assert m["wall_s"] == pytest.approx(2.5)
    assert m["launches"]["spread"] == pytest.approx((0.53 - 0.41) / 0.42)
    assert [x["bytes"] for x in out["measurements"]] == [1024, 4096]
    assert quality.summary(out)["flags"][quality.LAUNCHES_DISAGREE] == 2


def test_merge_agreeing_launches_converge() -> None:
    docs = [_doc([_meas(1e-6 * (1 + d), 0.01e-6)]) for d in (0.0, 0.002, -0.002)]
    out = launches.merge(docs, ["a", "b", "c"])
    m = out["measurements"][0]
    assert m["stats"]["converged"] is True and m["flags"] == []
    assert m["stats"]["med_rel_err"] <= 0.025


def test_merge_one_unconverged_launch_is_not_converged() -> None:
    docs = [_doc([_meas(1.0, 0.01, conv=c)]) for c in (True, False, True)]
    m = launches.merge(docs, ["a", "b", "c"])["measurements"][0]
    assert m["stats"]["converged"] is False and m["launches"]["converged"] == [True, False, True]


def test_merge_keeps_invalid_samples_out_of_statistics() -> None:
    a = _meas(1.0, 0.01, samples=[1.0, 1.0, -5.0])
    a["valid"] = [True, True, False]
    a["flags"] = ["negative_time"]
    b = _meas(1.0, 0.01, samples=[1.0, 1.0, 1.0])
    m = launches.merge([_doc([a]), _doc([b])], ["a", "b"])["measurements"][0]
    assert m["valid"] == [True, True, False, True, True, True]
    assert m["stats"]["min"] == 1.0 and m["stats"]["invalid"] == 1
    assert "negative_time" in m["flags"]
    assert quality.unflagged_problems(launches.merge([_doc([a]), _doc([b])], ["a", "b"])) == []


def test_merge_partial_when_launches_missing() -> None:
    d = _doc([_meas(1.0, 0.01)])
    d2 = _doc([_meas(1.0, 0.01)])
    d2["partial"] = True
    out = launches.merge([d, d2], ["a", "b"], asked=5)
    assert out["partial"] is True
    assert "2 of 5 launches completed" in out["partial_reason"]
    assert "partial launch file(s): 2" in out["partial_reason"]


def test_merged_file_loads_and_renders(tmp_path: Path) -> None:
    docs = [_doc([_meas(m, 0.01 * m)]) for m in (1e-6, 1.2e-6, 1.1e-6)]
    f = tmp_path / "m.json"
    f.write_text(json.dumps(launches.merge(docs, ["a", "b", "c"])))
    r = results.load(f)
    assert r.measurements[0].raw["launches"]["n"] == 3
    from mpilab.report.html import render_report

    html = render_report(r)
    assert "MERGED FROM 3 LAUNCHES" in html and "launches_disagree" in html


def test_launch_file_names() -> None:
    assert launch_file("res/run.json", 2) == "res/run.launch2.json"
    assert launch_file("run", 1) == "run.launch1.json"
    assert without_out(["--ops", "p2p", "--out", "x.json", "--out=y", "--quiet"]) == \
        ["--ops", "p2p", "--quiet"]


# ----------------------------------------------------------------------- the command


def test_bench_launches_with_fake_runner(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    env = fake_bench("ok")
    p = run_cli("bench", "--np", "1", "--launches", "3", "--out", "res/run.json", "--report",
                "--", "--ops", "scatter:linear", "--quiet", env=env)
    assert p.returncode == 0, p.stderr
    for k in (1, 2, 3):
        assert (tmp_path / "res" / f"run.launch{k}.json").is_file()
    assert json.loads(Path(env["FAKE_BENCH_ARGS"]).read_text())[-2:] == \
        ["--out", "res/run.launch3.json"]
    r = results.load(tmp_path / "res" / "run.json")
    assert r.raw["launches"]["n"] == 3
    assert all(m.raw["launches"]["n"] == 3 for m in r.measurements)
    assert (tmp_path / "res" / "run.html").is_file()
    assert "this run's 3 launch(es)" in p.stdout and "measurements converged" in p.stdout


def test_bench_launches_failed_launch_leaves_partial(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    env = fake_bench("exit3")
    p = run_cli("bench", "--np", "1", "--launches", "3", "--out", "run.json", "--", env=env)
    assert p.returncode == 3
    assert not (tmp_path / "run.json").exists()  # nothing completed: nothing merged


@pytest.mark.parametrize("argv, expected", [
    (["--launches", "0", "--out", "a.json", "--"], "--launches: '0': must be 1..1000"),
    (["--launches", "x", "--out", "a.json", "--"], "--launches: 'x'"),
    (["--launches", "3", "--", "--time-budget", "soon"], "--time-budget: 'soon'"),
])
def test_bench_launches_bad_usage(fake_bench: Callable[[str], dict[str, str]],
                                  run_cli: Callable[..., Any], argv: list[str],
                                  expected: str) -> None:
    env = fake_bench("ok")
    p = run_cli("bench", *argv, env=env)
    assert p.returncode == 2
    assert expected in _one_line(p.stderr)
    assert not Path(env["FAKE_BENCH_ARGS"]).exists()


def test_split_budget_divides_the_runners_budget() -> None:
    from mpilab.commands import bench

    assert bench.split_budget(["--ops", "p2p"], 3)[-2:] == ["--time-budget", "20s"]
    got = bench.split_budget(["--time-budget", "30s", "--ops", "p2p"], 3)
    assert got == ["--ops", "p2p", "--time-budget", "10s"]
    assert bench.split_budget(["--time-budget=60s"], 4) == ["--time-budget", "15s"]


def test_bench_default_without_out_and_store(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    """Without a launch-variation store (--variation-store none) the default is 3 launches in
    a temporary directory, each with a third of the budget: the merged table and the cost
    line are printed, no file is left; --out - gives the merged document alone."""
    env = fake_bench("ok")
    p = run_cli("bench", "--np", "1", "--variation-store", "none", "--", "--ops",
                "scatter:linear", "--quiet", env=env)
    assert p.returncode == 0, p.stderr
    assert "this command (3 launches)" in p.stdout
    assert "mpilab: 3 launches," in p.stderr
    assert json.loads(Path(env["FAKE_BENCH_ARGS"]).read_text())[-4:-2] == \
        ["--time-budget", "20s"]
    assert not [x for x in tmp_path.iterdir() if x.suffix == ".json" and "fake" not in x.name]
    q = run_cli("bench", "--np", "1", "--variation-store", "none", "--out", "-", "--", "--ops",
                "scatter:linear", env=env)
    assert q.returncode == 0, q.stderr
    doc = json.loads(q.stdout)
    assert doc["launches"]["n"] == 3 and doc["launches"]["cost"]["total_s"] > 0


def test_bench_single_launch_on_request(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    env = fake_bench("ok")
    p = run_cli("bench", "--np", "1", "--launches", "1", "--out", "one.json", "--",
                "--ops", "scatter:linear", env=env)
    assert p.returncode == 0, p.stderr
    assert "launches" not in json.loads((tmp_path / "one.json").read_text())


needs_runner = pytest.mark.skipif(real_runner() is None, reason="mpilab-bench not built")


@pytest.mark.mpi
@needs_runner
def test_bench_launches_real_runner(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    from conftest import cli_env

    env = cli_env()
    env["MPILAB_BIN"] = str(Path(real_runner() or "").parent)
    p = run_cli("bench", "--np", "2", "--launches", "2", "--out", "l.json", "--",
                "--ops", "p2p", "--sizes", "0,1K", "--min-reps", "6", "--max-reps", "8",
                "--quiet", env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    r = results.load(tmp_path / "l.json")
    assert sorted(m.bytes for m in r.p2p()) == [0, 1024]
    for m in r.p2p():
        la = m.raw["launches"]
        assert la["n"] == 2 and len(la["medians"]) == 2
        assert m.stats.median == pytest.approx(statistics.median(la["medians"]))
        lo, hi = m.raw["stats"]["med_lo"], m.raw["stats"]["med_hi"]
        if lo is None or hi is None:  # launches orders of magnitude apart (one stalled under
            # two CPU hogs): no interval bounds a time, so none is given, and that is flagged
            assert m.stats.converged is False and "not_converged" in m.raw["flags"]
        else:
            assert lo <= m.stats.median <= hi
        assert 12 <= len(m.samples) <= 16
    for k in (1, 2):
        one = results.load(tmp_path / f"l.launch{k}.json")
        assert one.raw.get("models") is not None  # the per-launch files keep their fits


def test_launch_interval_beyond_exp_range_is_huge_not_an_error() -> None:
    """A launch median next to zero with a wide interval of its own (seen under two CPU
    hogs: an OverflowError in math.exp) gives a wide interval, not a crash, and not an
    impossible time either (it was above 1e200 s, which the loader refuses)."""
    m, lo, hi, _ = launches.launch_interval([1e-6, 1e-6], [2e-3, 2e-3], 0.95)
    assert 0 < lo <= m <= hi and hi > 100 * m and lo < m / 100 and hi < 1.0
    m, lo, hi, _ = launches.launch_interval([1e-300, 1e-300], [1e300, 1e300], 0.95)
    assert 0 <= lo <= m <= hi and math.isfinite(hi)


def test_derived_values_follow_the_launch_level_figure() -> None:
    """A rate derived from the median (64 messages / median) is, after merging 3 launches,
    the rate of the merged figure, not launch 1's; non-numbers stay as launch 1 had them."""
    meds = [2e-6, 1e-6, 3e-6]
    ms = []
    for med in meds:
        ms.append({"op": "stream", "timing": "max", "bytes": 8, "samples": [med] * 5,
                   "stats": {"median": med, "med_lo": med * 0.99, "med_hi": med * 1.01,
                             "converged": True},
                   "precision": {"cl": 0.95, "eps": 0.05},
                   "derived": {"msg_rate": 64 / med, "note": f"launch {med}"}})
    out = launches.merge_measurement(ms)
    assert out["stats"]["median"] == 2e-6
    assert out["derived"]["msg_rate"] == pytest.approx(64 / out["stats"]["median"])
    assert out["derived"]["note"] == "launch 2e-06"


def _iso(iso: str, med: float, rel: float = 0.01) -> dict:  # type: ignore[type-arg]
    return {"op": "bcast", "impl": "native", "timing": "max", "bytes": 1024, "root": 0,
            "ranks": 4, "isolation": iso, "samples": [med] * 5, "flags": [],
            "stats": {"median": med, "med_lo": med * (1 - rel), "med_hi": med * (1 + rel),
                      "converged": True}, "precision": {"cl": 0.95, "eps": 0.05}}


def test_isolation_disagreement_judged_on_merged_figures() -> None:
    """Launch 1 alone has its isolated and back-to-back figures apart; over three launches
    the merged figures' intervals overlap: the merged file carries no isolation_differs
    flag; where the merged figures are apart, both carry it with the other's figure."""
    from mpilab import quality
    docs = []
    for barrier, none in ((1.3e-6, 1.0e-6), (1.0e-6, 1.05e-6), (1.05e-6, 1.3e-6)):
        ms = [_iso("barrier", barrier), _iso("none", none)]
        quality.mark_isolation(ms)
        docs.append({"schema": "mpilab.results/1", "provenance": {}, "measurements": ms})
    assert quality.ISOLATION_DIFFERS in docs[0]["measurements"][0]["flags"]
    merged = launches.merge(docs, ["a", "b", "c"])
    for m in merged["measurements"]:
        assert quality.ISOLATION_DIFFERS not in m["flags"] and "isolation_other" not in m
    far = [_iso("barrier", 3e-6), _iso("none", 1e-6)]
    assert quality.mark_isolation(far) == 1
    assert far[0]["isolation_other"] == {"isolation": "none", "median": 1e-6,
                                         "med_lo": 1e-6 * 0.99, "med_hi": 1e-6 * 1.01}
    assert quality.ISOLATION_DIFFERS in far[1]["flags"]


# ----------------------------------------------------------------------- model parameters


def _hpair(alpha: float, half: float, flags: list[str] | None = None) -> dict[str, Any]:
    return {"i": 0, "j": 1, "alpha": alpha, "beta": 1e-9,
            "quality": {"alpha": {"raw": alpha, "lo": alpha - half, "hi": alpha + half,
                                  "flags": flags or []},
                        "beta": {"raw": 1e-9, "lo": 0.99e-9, "hi": 1.01e-9, "flags": []}}}


def _ldoc(alpha: float, half: float, L: float, Lhalf: float) -> dict[str, Any]:
    d = _doc([_meas(alpha, 0.01 * alpha)])
    d["models"] = {"hockney": {"pairs": [_hpair(alpha, half)]},
                   "loggp": {"pairs": [{"i": 0, "j": 1, "L": L, "os": 1e-7, "or": 1e-7,
                                        "g": 1e-7, "G": 1e-9, "per_size": [],
                                        "quality": {"L": {"raw": L, "lo": max(0.0, L - Lhalf),
                                                          "hi": L + Lhalf, "flags": []}}}]}}
    return d


def test_merged_model_parameters_carry_the_launch_level_interval() -> None:
    """Launch levels 2.05, 2.11, 2.07 ms, each with a +-5 us interval of its own that holds
    none of the others: the merged alpha is their median with an interval that holds every
    launch's value, flagged launches_disagree; a clamped L of 0 in one launch takes the
    additive form and the interval still holds the values."""
    docs = [_ldoc(a, 5e-6, L, 2e-6) for a, L in ((2.05e-3, 0.0), (2.11e-3, 3e-6),
                                                  (2.07e-3, 1e-6))]
    out = launches.merge(docs, ["a", "b", "c"])
    p = out["models"]["hockney"]["pairs"][0]
    q = p["quality"]["alpha"]
    assert p["alpha"] == pytest.approx(2.07e-3)
    assert q["lo"] < 2.05e-3 and q["hi"] > 2.11e-3
    assert q["lo"] < p["alpha"] < q["hi"]
    assert quality.LAUNCHES_DISAGREE in q["flags"]
    assert q["launch_values"] == [2.05e-3, 2.11e-3, 2.07e-3]
    lq = out["models"]["loggp"]["pairs"][0]["quality"]["L"]
    assert out["models"]["loggp"]["pairs"][0]["L"] == pytest.approx(1e-6)
    assert lq["lo"] < 0.0 + 1e-12 and lq["hi"] > 3e-6
    assert "parameter(s)" in out["launches"]["models"]
    results.parse(json.dumps(out), "merged.json")


def test_agreeing_launches_keep_their_own_precision_and_no_flag() -> None:
    docs = [_ldoc(a, 20e-6, 1e-6, 1e-6) for a in (2.070e-3, 2.071e-3, 2.069e-3)]
    q = launches.merge(docs, ["a", "b", "c"])["models"]["hockney"]["pairs"][0]["quality"]
    assert quality.LAUNCHES_DISAGREE not in q["alpha"]["flags"]
    # the floor: launches that agree by chance are no more precise than their samples
    assert q["alpha"]["hi"] - q["alpha"]["lo"] > 20e-6


def test_a_pair_missing_from_a_launch_keeps_launch_one_s_fit() -> None:
    docs = [_ldoc(2.05e-3, 5e-6, 1e-6, 1e-6), _ldoc(2.11e-3, 5e-6, 1e-6, 1e-6)]
    docs[1]["models"]["hockney"]["pairs"][0]["j"] = 2
    out = launches.merge(docs, ["a", "b"])
    q = out["models"]["hockney"]["pairs"][0]["quality"]["alpha"]
    assert out["models"]["hockney"]["pairs"][0]["alpha"] == 2.05e-3 and "launch_values" not in q


def test_launches_apart_by_orders_of_magnitude_give_no_interval_not_an_impossible_one(
        tmp_path: Path) -> None:
    """Two launches whose medians differ 10^4-fold (a launch stalled under two CPU hogs):
    the prediction interval on the log scale reached 3e39 s, which the loader refuses as
    no possible time; the merged measurement has no interval instead, is not converged and
    flags the disagreement, and the file loads."""
    docs = [_doc([_meas(m, 0.01 * m)]) for m in (1e-6, 1e-2)]
    out = launches.merge(docs, ["a", "b"])
    m = out["measurements"][0]
    assert m["stats"]["med_lo"] is None and m["stats"]["med_hi"] is None
    assert m["stats"]["med_rel_err"] is None and m["stats"]["converged"] is False
    assert m["flags"][0] == quality.NOT_CONVERGED and quality.LAUNCHES_DISAGREE in m["flags"]
    f = tmp_path / "m.json"
    f.write_text(json.dumps(out))
    assert results.load(f).measurements[0].stats.median == pytest.approx(m["stats"]["median"])


@pytest.mark.parametrize("df", [1, 3, 29, 120, 5000])
def test_t_quantile_inverts_t_abs_cdf(df: int) -> None:
    for cl in (0.5, 0.9, 0.95, 0.99):
        assert launches.t_abs_cdf(launches.t_quantile(cl, df), df) == pytest.approx(cl)
    z = statistics.NormalDist().inv_cdf(0.975)
    assert launches.t_quantile(0.95, df) > z  # heavier tails than the normal at any df
    if df >= 5000:
        assert launches.t_quantile(0.95, df) == pytest.approx(z, abs=1e-3)


def test_os_interval_coverage_matches_the_binomial_sum() -> None:
    """The interval's ranks against the exact order-statistic coverage, summed by hand."""
    for n in range(1, 60):
        v = [float(x) for x in range(n)]
        best = 0
        for k in range(1, (n + 1) // 2 + 1):
            if 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2.0 ** n >= 0.95:
                best = k
        got = launches.os_interval(v, 0.95)
        assert got == ((v[best - 1], v[n - best]) if best else None), n


def test_shipped_t_table_is_scipys(tmp_path: Path) -> None:
    """The shipped quantile table is what scipy.stats.t gives now (regenerated and compared),
    and a (cl, df) outside it is scipy's too."""
    import scipy.stats

    fresh = tmp_path / "t.json"
    launches.write_t_table(fresh)
    assert json.loads(fresh.read_text()) == json.loads(launches.T_TABLE.read_text())
    for cl, df in ((0.95, 1), (0.95, 500), (0.99, 37), (0.95, 501), (0.97, 12)):
        assert launches.t_quantile(cl, df) == pytest.approx(
            float(scipy.stats.t.isf((1 - cl) / 2, df)), rel=1e-12)
