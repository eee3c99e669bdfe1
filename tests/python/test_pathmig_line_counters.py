"""bench/pathmig_load.py's per-run account of the emulated network: what the delay line's
own statistics say it did during a run (packets released late, descheduled spin turns),
and the attribution of long round trips to the ranks' and the line's wait for a CPU
(bench/harness.py's Watch)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _stats(hist: list[int], gaps: int, late: float, lag: float, gap: float) -> dict[str, object]:
    return {"late_hist": hist, "late_max_s": late, "read_lag": {"max_s": lag},
            "spin_last": {"spin_gaps": gaps, "spin_gap_max_s": gap}}


def test_a_runs_counts_are_the_difference_and_its_longest_figures_the_lines() -> None:
    sys.path.insert(0, str(BENCH))
    from pathmig_load import line_counters, line_delta
    a = line_counters(_stats([10, 5, 2, 1, 0], 3, 0.002, 0.001, 0.0003))
    b = line_counters(_stats([90, 9, 4, 4, 2], 7, 0.061, 0.055, 0.050))
    assert line_delta(a, b) == {"late_1_10ms": 3, "late_over_10ms": 2, "spin_gaps": 4,
                                "late_max_s": 0.061, "read_lag_max_s": 0.055,
                                "spin_gap_max_s": 0.050}
    # no statistics (no delay line, or unreadable) at either end: nothing claimed
    assert line_counters(None) is None and line_counters({}) is None
    assert line_delta(None, b) is None and line_delta(a, None) is None
    # an older line without the spin or read-lag records counts them as nothing
    assert line_counters({"late_hist": [1, 0, 0, 0, 0]}) == {
        "late_1_10ms": 0, "late_over_10ms": 0, "spin_gaps": 0, "late_max_s": 0.0,
        "read_lag_max_s": 0.0, "spin_gap_max_s": 0.0}


def test_a_long_round_trip_is_charged_the_cpu_wait_sampled_around_it() -> None:
    sys.path.insert(0, str(BENCH))
    from harness import Watch, long_summary
    w = Watch([], [30], prog="x", nranks=2)
    w.ranks = [10, 20]
    # (time, {pid: (ns on a CPU, ns waiting)}): rank 10 waits 40 ms, rank 20 and the line
    # 1 ms, during a 60 ms round trip ending at 1.10 s
    w.samples = [(1.00, {10: (0, 0), 20: (0, 0), 30: (0, 0)}),
                 (1.12, {10: (0, 40_000_000), 20: (0, 1_000_000), 30: (0, 1_000_000)})]
    long = w.attribution([1.10, 1.11], [0.060, 0.010], 0.050)
    assert long == [{"rtt_ms": 60.0, "ranks_wait_ms": [40.0, 1.0], "delayline_wait_ms": 1.0}]
    s = long_summary(long)
    assert s["count"] == 1 and s["ranks_wait_share"] == [0.683, 0.683, 0.683]
    assert s["delayline_wait_ms"] == [1.0, 1.0]
    # a rank not sampled on both sides of the round trip: its wait is unknown, not zero
    w.samples = w.samples[1:]
    assert w.attribution([1.10], [0.060], 0.050)[0]["ranks_wait_ms"] == [None, None]
