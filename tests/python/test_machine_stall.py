"""bench/harness.py's machine_silence and its use in bench/pathmig_load.py: a long round
trip is charged to the machine only for a span in which no CPU logged a single traced
event."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from harness import machine_silence, parse_stamps  # noqa: E402
from pathmig_load import longest_in, stalled  # noqa: E402

# lines as tracefs's `trace` prints them (two CPUs, trace_clock mono)
TRACE = b"""# tracer: nop
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
              sh-18143   [000] d.h2. 22543.050420: sched_waking: comm=mpilab-delaylin pid=17127
 mpilab-tb-pingp-18173   [001] d..2. 22543.052438: sched_switch: prev_comm=mpilab-tb-pingp
 mpilab-delaylin-17127   [000] d..2. 22543.052081: sched_switch: prev_comm=mpilab-delaylin
              sh-18143   [000] d.h2. 22543.081553: sched_waking: comm=mpilab-delaylin pid=17127
 mpilab-tb-pingp-18171   [001] dNh3. 22543.083906: local_timer_entry: vector=236
              sh-18143   [000] d.h2. 22543.090000: local_timer_entry: vector=236
""".splitlines()


def test_the_stamps_of_a_span_any_cpu_sorted_and_the_header_skipped() -> None:
    st = parse_stamps(TRACE, 22543.05, 22543.085)
    assert st == [22543.050420, 22543.052081, 22543.052438, 22543.081553, 22543.083906]
    assert parse_stamps(TRACE, 0.0, 1.0) == []


def test_silence_is_the_longest_time_no_cpu_logged_anything() -> None:
    lo, hi = 22543.040, 22543.095
    # both CPUs silent from .052438 to .081553: one CPU's events alone would not make it
    assert machine_silence(parse_stamps(TRACE, lo, hi), lo, hi) == pytest.approx(0.029115)
    # the span's own ends bound the silence: a span with nothing in it is silent throughout
    assert machine_silence([], 1.0, 1.5) == pytest.approx(0.5)
    assert machine_silence([1.2], 1.0, 1.5) == pytest.approx(0.3)
    assert machine_silence([5.0], 1.0, 1.5) == pytest.approx(0.5)
    assert machine_silence([1.2], 1.5, 1.0) == 0.0


def test_the_round_trip_charged_is_the_longest_in_the_window() -> None:
    ends = [10.0, 10.02, 10.10, 10.12, 14.0]
    rtts = [0.010, 0.015, 0.076, 0.020, 0.500]
    assert longest_in(ends, rtts, 10.0, 13.0) == (10.10, 0.076)  # 14.0 ends outside
    with pytest.raises(ValueError):
        longest_in(ends, rtts, 11.0, 12.0)


def test_only_traced_runs_over_the_target_are_listed() -> None:
    runs = [{"bytes": 65536, "fault": "down", "pause_ms": 76.5, "machine_silent_ms": 29.1},
            {"bytes": 65536, "fault": "down", "pause_ms": 21.0},
            {"bytes": 1024, "fault": "down", "pause_ms": 80.0, "machine_silent_ms": 40.0},
            {"bytes": 65536, "fault": "drop", "pause_ms": 120.0, "machine_silent_ms": 0.0}]
    assert stalled(runs, 65536, "down") == [(76.5, 29.1)]
    assert stalled(runs, 65536, "drop") == [(120.0, 0.0)]
    assert stalled(runs, 4096, "down") == []
