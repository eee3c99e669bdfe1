"""Floor estimators over launches (launches.floor_outliers, merge_floor_param, and
selftest.merge_link_launches): synthetic launches with a known floor, some of them late by
scheduler contention, as the testbed's two-hog runs showed (docs/models-robust.md)."""

from __future__ import annotations

import random

import pytest
from mpilab import launches
from mpilab.commands.selftest import merge_link_launches

TRUTH = 2004.7e-6  # the ICMP truth of L in a two-hog slot


def _launch(rel: float, half: float) -> tuple[float, float, float]:
    """(value, lo, hi) of a launch `rel` above the truth with own half width `half` (both
    relative to the truth)."""
    v = TRUTH * (1 + rel)
    return v, v - half * TRUTH, v + half * TRUTH


def _split(ls: list[tuple[float, float, float]]) -> tuple[list[float], list[float | None],
                                                          list[float | None]]:
    return [v for v, _, _ in ls], [lo for _, lo, _ in ls], [hi for _, _, hi in ls]


def test_a_launch_late_by_a_tick_is_set_aside() -> None:
    """Two hogs, a recorded run, L: launches +0.7%, +49.4%, +1.1% with own half widths
    0.5%. The plain launch-level interval holds the truth only by being -50 .. +105% wide;
    the floor merge sets launch 2 aside (its interval lies wholly above launch 1's), and its
    interval, from launches 1 and 3, holds the truth within 5%."""
    v, lo, hi = _split([_launch(0.007, 0.005), _launch(0.494, 0.005), _launch(0.011, 0.005)])
    plain = launches.merge_param(v, lo, hi)
    assert plain["lo"] < TRUTH < plain["hi"] and plain["hi"] > 1.5 * TRUTH
    assert launches.floor_outliers(v, lo, hi) == [1]
    r = launches.merge_floor_param(v, lo, hi)
    assert r["set_aside"] == [2] and "launch(es) 2 of 3" in r["set_aside_why"]
    assert r["launch_values"] == v  # the set-aside launch stays in the record
    assert r["lo"] <= TRUTH <= r["hi"]
    assert TRUTH * 0.95 < r["lo"] and r["hi"] < TRUTH * 1.05
    assert r["value"] == pytest.approx(TRUTH * 1.009)  # the median of the two kept


def test_launch_to_launch_variation_is_not_set_aside() -> None:
    """Launches up to 3.3% apart with disjoint narrow intervals (a quiet L: 2008
    and 2022 us; quiet 0-byte minima 2049 .. 2118 us) are the machine's
    launch-level variation, below FLOOR_GAP: kept, and the merged interval holds them all
    (what a repeat would see)."""
    v, lo, hi = _split([_launch(0.0, 0.002), _launch(0.033, 0.002), _launch(0.007, 0.002)])
    assert launches.floor_outliers(v, lo, hi) == []
    r = launches.merge_floor_param(v, lo, hi)
    assert r["set_aside"] == [] and "set_aside_why" not in r
    assert r["lo"] <= min(v) and r["hi"] >= max(v)
    plain = launches.merge_param(v, lo, hi)
    assert (r["value"], r["lo"], r["hi"]) == (plain["value"], plain["lo"], plain["hi"])


def test_a_late_launch_whose_own_interval_reaches_the_floor_is_kept() -> None:
    """A recorded Hockney alpha: a shifted launch (+46%) whose own interval (+-62%)
    reaches down to the others' is not excluded by its own interval: kept, and the merged
    interval stays wide and says so."""
    v, lo, hi = _split([_launch(0.010, 0.281), _launch(0.461, 0.625), _launch(-0.022, 0.08)])
    assert launches.floor_outliers(v, lo, hi) == []
    r = launches.merge_floor_param(v, lo, hi)
    assert r["wide"] and r["lo"] <= TRUTH <= r["hi"]


def test_every_launch_late_sets_none_aside() -> None:
    """A recorded two-hog run: all three launches about 49% high. No launch reached a lower floor,
    so none is set aside: the figure is as late as the launches were (the rule cannot invent
    a floor nobody measured)."""
    v, lo, hi = _split([_launch(0.470, 0.115), _launch(0.498, 0.121), _launch(0.496, 0.125)])
    assert launches.floor_outliers(v, lo, hi) == []
    assert launches.merge_floor_param(v, lo, hi)["value"] == pytest.approx(TRUTH * 1.496)


def test_two_late_launches_of_three_leave_the_one_at_the_floor() -> None:
    """Two launches late, one at the floor: the plain median is late (the run missed); the
    floor merge keeps the one launch that reached the floor, with its own interval widened
    for being one launch, and names both set aside."""
    v, lo, hi = _split([_launch(0.488, 0.012), _launch(0.005, 0.005), _launch(0.497, 0.011)])
    plain = launches.merge_param(v, lo, hi)
    assert plain["value"] > 1.4 * TRUTH
    r = launches.merge_floor_param(v, lo, hi)
    assert r["set_aside"] == [1, 3]
    assert r["value"] == pytest.approx(TRUTH * 1.005)
    assert r["lo"] <= TRUTH <= r["hi"] and r["hi"] - r["lo"] > 2 * 0.005 * TRUTH


def test_no_interval_on_the_lowest_launch_sets_none_aside() -> None:
    v = [TRUTH, 1.5 * TRUTH, TRUTH * 1.01]
    assert launches.floor_outliers(v, [None, 1.49 * TRUTH, None], [None, 1.51 * TRUTH, None]) == []
    assert launches.floor_outliers([TRUTH], [TRUTH], [TRUTH]) == []


def test_floor_merge_coverage_on_synthetic_launches() -> None:
    """1000 synthetic runs of 3 launches: the floor at TRUTH, each launch's level moved by
    N(0, 0.3%) with an own half width of 0.5%, and each launch late by 45-50% with
    probability 1/3 (the recorded two-hog rate). Among runs with at least one launch
    at the floor, the floor merge's interval holds the truth and lies within 5% of it in
    >= 90%; the plain merge does so in far fewer (a late launch makes it -50 .. +100% wide,
    two move its median)."""
    rng = random.Random(25)
    floor_ok = plain_ok = n = 0
    for _ in range(1000):
        ls = [_launch(rng.gauss(0.0, 0.003) + (rng.uniform(0.45, 0.50) if rng.random() < 1 / 3
                                               else 0.0), 0.005) for _ in range(3)]
        v, lo, hi = _split(ls)
        if min(v) > 1.2 * TRUTH:
            continue  # no launch reached the floor: nothing can recover it
        n += 1
        for r, good in ((launches.merge_floor_param(v, lo, hi), "floor"),
                        (launches.merge_param(v, lo, hi), "plain")):
            ok = r["lo"] <= TRUTH <= r["hi"] and r["lo"] > 0.95 * TRUTH and r["hi"] < 1.05 * TRUTH
            if good == "floor":
                floor_ok += ok
            else:
                plain_ok += ok
    assert n > 900
    assert floor_ok >= 0.9 * n, (floor_ok, n)
    assert plain_ok < 0.5 * n, (plain_ok, n)


def _doc(alpha: tuple[float, float, float], big: tuple[float, float, float]) -> dict[str, object]:
    def p(t: tuple[float, float, float]) -> dict[str, object]:
        return {"value": t[0], "raw": t[0], "lo": t[1], "hi": t[2], "flags": ""}
    return {"hockney": {"alpha": p(alpha), "beta": p(big)}, "loggp": {"L": p(alpha), "G": p(big)}}


def test_link_launches_set_aside_a_late_floor_and_say_so() -> None:
    """merge_link_launches: L and alpha of a late launch are set aside, flagged
    launches_set_aside, with the launch named; beta and G (slopes, not floors) are merged
    over every launch as before; floor=False gives the plain merge."""
    docs = [_doc(_launch(0.007, 0.005), _launch(0.0, 0.01)),
            _doc(_launch(0.494, 0.005), _launch(0.30, 0.01)),
            _doc(_launch(0.011, 0.005), _launch(0.0, 0.01))]
    out = merge_link_launches(docs)  # type: ignore[arg-type]
    for model, name in (("hockney", "alpha"), ("loggp", "L")):
        p = out[model][name]
        assert "launches_set_aside" in p["flags"].split(",")
        assert p["set_aside"] == [2] and "launch(es) 2 of 3" in p["set_aside_why"]
        assert len(p["launch_values"]) == 3 and len(p["launch_intervals"]) == 3
        assert p["lo"] <= TRUTH <= p["hi"] < 1.05 * TRUTH
    for model, name in (("hockney", "beta"), ("loggp", "G")):
        p = out[model][name]
        assert "set_aside" not in p and "launches_set_aside" not in p["flags"]
        assert p["hi"] > 1.29 * TRUTH  # the 30% launch is inside the slope's interval
    plain = merge_link_launches(docs, floor=False)  # type: ignore[arg-type]
    assert "set_aside" not in plain["loggp"]["L"] and plain["loggp"]["L"]["hi"] > 1.4 * TRUTH


def _bench_doc(alpha: float, beta: float) -> dict[str, object]:
    """A minimal `mpilab bench` results document with one Hockney pair (alpha +-5 us)."""
    m = {"op": "p2p", "impl": "roundtrip", "timing": "p2p", "schedule": "parallel",
         "pair": [0, 1], "bytes": 0, "bytes_back": 0, "ranks": 2,
         "precision": {"cl": 0.95, "eps": 0.025, "min_reps": 5, "max_reps": 100},
         "stats": {"mean": 2 * alpha, "ci_half": 1e-5, "reps": 7, "invalid": 0,
                   "median": 2 * alpha, "med_lo": 2 * alpha - 1e-5, "med_hi": 2 * alpha + 1e-5,
                   "converged": True},
         "samples": [2 * alpha] * 7, "valid": [True] * 7, "flags": [], "wall_s": 0.5}
    pair = {"i": 0, "j": 1, "alpha": alpha, "beta": beta,
            "quality": {"alpha": {"raw": alpha, "lo": alpha - 5e-6, "hi": alpha + 5e-6,
                                  "flags": []},
                        "beta": {"raw": beta, "lo": 0.99 * beta, "hi": 1.01 * beta, "flags": []}}}
    return {"schema": "mpilab.results/1",
            "provenance": {"tool": "mpilab-bench", "ranks": 2, "date": "2026-11-26T01:00:00Z"},
            "measurements": [m], "models": {"hockney": {"pairs": [pair]}}}


def test_bench_launch_merge_sets_a_late_alpha_aside_and_the_file_loads() -> None:
    """`mpilab bench --launches 3`: a launch whose alpha came out 1 ms late (its interval
    wholly above the others') is left out of the merged alpha, which is flagged
    launches_set_aside with the launch named; beta (a slope) is merged over all three; the
    merged file passes the results schema."""
    import json

    from mpilab import quality, results

    docs = [_bench_doc(2.05e-3, 8.4e-8), _bench_doc(3.05e-3, 8.5e-8), _bench_doc(2.06e-3, 8.4e-8)]
    out = launches.merge(docs, ["a", "b", "c"])  # type: ignore[arg-type]
    p = out["models"]["hockney"]["pairs"][0]
    q = p["quality"]["alpha"]
    assert p["alpha"] == pytest.approx(2.055e-3)
    assert quality.LAUNCHES_SET_ASIDE in q["flags"] and q["set_aside"] == [2]
    assert "launch(es) 2 of 3" in q["set_aside_why"]
    assert q["launch_values"] == [2.05e-3, 3.05e-3, 2.06e-3]
    assert q["hi"] < 2.2e-3
    assert "set_aside" not in p["quality"]["beta"]
    results.parse(json.dumps(out), "merged.json")
