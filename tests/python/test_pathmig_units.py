"""Path migration pieces that need no root: the seeded fault plan, the status table, the
congestion control's allowed-list moment, the benches' pure counts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mpilab.errors import MpilabError
from mpilab.pathmig import congestion
from mpilab.pathmig.agents import failed_actions
from mpilab.pathmig.cli import format_status
from mpilab.pathmig.inject import make_plan
from mpilab.testbed import faults


def test_plan_is_repeatable_and_never_overlaps() -> None:
    nodes = ["s0n0", "s0n1", "s1n0"]
    a = make_plan(42, nodes, [0, 1], 20, 100.0, duration=(0.5, 3.0))
    assert a == make_plan(42, nodes, [0, 1], 20, 100.0, duration=(0.5, 3.0))
    assert a != make_plan(43, nodes, [0, 1], 20, 100.0, duration=(0.5, 3.0))
    assert len(a) == 20
    for f, g in zip(a, a[1:], strict=False):
        assert f.at + f.duration <= g.at + 1e-3  # one fault at a time
    assert a[0].at >= 0 and a[-1].at + a[-1].duration <= 100.0 + 1e-3
    assert all(0.5 - 1e-3 <= f.duration <= 3.0 + 1e-3 for f in a)
    assert {f.target.split(":")[0] for f in a} <= set(nodes)
    drawn = {f.mode for f in a}
    assert drawn <= set(faults.kind_names()) and len(drawn) > 1  # kinds mixed over 20
    assert {f.target.split(":")[1] for f in a} == {"0", "1"}


@pytest.mark.parametrize("kw", [dict(count=0), dict(within=0.0), dict(count=50),
                                dict(duration=(2.0, 1.0)), dict(duration=(0.0, 1.0)),
                                dict(modes=())])
def test_plan_rejects_bad_arguments(kw: dict[str, object]) -> None:
    args: dict[str, object] = dict(seed=1, nodes=["a"], rails=[0, 1], count=3, within=60.0)
    args.update(kw)
    with pytest.raises(MpilabError):
        make_plan(**args)  # type: ignore[arg-type]


def test_status_table() -> None:
    st = [{"node": "s0n0", "paths": [{"peer": "s1n0", "rail": 0, "up": False},
                                     {"peer": "s1n0", "rail": 1, "up": True}],
           "connections": [{"token": "0a0b0c0d", "peer": "s1n0", "server_side": False,
                            "state": "MIGRATED", "subflows": [
                                {"rail": 1, "backup": False, "established": True}]}]}]
    text = format_status(st)
    assert "0a0b0c0d s1n0   client MIGRATED  r1 active" in text
    assert "dead paths: s0n0->s1n0:r0" in text


def test_congestion_route_rewrite() -> None:
    via = {"dst": "10.77.1.0/24", "gateway": "10.77.0.1", "dev": "r0", "protocol": "boot",
           "scope": "global", "metrics": [{"congestion": "bbr"}, {"mtu": 9000}]}
    link = {"dst": "10.77.0.0/24", "dev": "r0", "protocol": "kernel", "scope": "link",
            "prefsrc": "10.77.0.2"}
    assert congestion._cc(via) == "bbr" and congestion._cc(link) == ""
    assert congestion._route_line(via, "cubic") == (
        "route replace 10.77.1.0/24 via 10.77.0.1 dev r0 proto boot scope global "
        "mtu 9000 congctl cubic")
    assert congestion._route_line(via, None).endswith("scope global mtu 9000")
    assert congestion._route_line(link, "cubic") == (
        "route replace 10.77.0.0/24 dev r0 proto kernel scope link src 10.77.0.2 "
        "congctl cubic")


def test_failed_actions_leave_out_moot_ones() -> None:
    evs = [{"event": "action", "ok": True},
           {"event": "action", "ok": False, "error": "set flags error"},
           {"event": "action", "ok": False, "error": "invalid token", "moot": "connection gone"},
           {"event": "action", "ok": False, "error": "connect error: -107",
            "moot": "connection not ready"},
           {"event": "state", "ok": False}]
    assert failed_actions(evs) == (1, 2)
    assert failed_actions([]) == (0, 0)


def test_pause_windows_split_the_fault_from_the_noise() -> None:
    """bench/pathmig_load.py's windows: the fault's own round trips (by 0.5 s after it was
    in place), the 3 s after it, and the 3 s before its request without the job's first 50
    round trips."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from pathmig_load import pause_windows
    ends = [100.0 + 0.01 * k for k in range(1000)]  # round trips ending every 10 ms
    rtts = [0.002] * 1000
    rtts[10] = 0.5  # the job's wire-up: left out
    rtts[500] = 0.030  # before the fault
    rtts[705] = 0.040  # held by the fault
    rtts[900] = 0.060  # 2 s later: the machine
    w = pause_windows(ends, rtts, fault_t=107.0, done=107.02)
    assert w == {"pause_ms": 60.0, "pause_first_ms": 40.0, "noise_before_ms": 30.0}
    assert pause_windows(ends, rtts, 200.0, 200.0) == {
        "pause_ms": None, "pause_first_ms": None, "noise_before_ms": None}


def test_loaded_target_is_judged_over_the_plain_tcp_baseline() -> None:
    """bench/pathmig_load.py --baseline: the loaded baseline of a size is the median of its
    plain-TCP runs' windows; a fault run meets the loaded target when its pause adds at most
    the target (50 ms down, 100 ms drop) to that baseline; other sizes and the baseline runs
    themselves never count as fault runs."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from pathmig_load import baseline_ms, judge
    runs = [{"bytes": 65536, "tcp": True, "fault": None, "pause_ms": p} for p in (40, 70, 90)]
    runs += [{"bytes": 65536, "tcp": False, "fault": "down", "pause_ms": p}
             for p in (45.0, 110.0, 130.0)]
    runs += [{"bytes": 65536, "tcp": False, "fault": "drop", "pause_ms": p} for p in (90, 171)]
    runs += [{"bytes": 1024, "tcp": False, "fault": "down", "pause_ms": 300.0},
             {"bytes": 65536, "tcp": False, "fault": "down", "pause_ms": None}]
    assert baseline_ms(runs, 65536) == 70
    assert baseline_ms(runs, 1024) is None
    assert judge(runs, 65536, "down", 70) == {"target_ms": 50.0, "runs": 3, "within": 1,
                                              "added_within": 2}
    assert judge(runs, 65536, "drop", 70) == {"target_ms": 100.0, "runs": 2, "within": 1,
                                              "added_within": 1}
    assert judge(runs, 1024, "down", None) == {"target_ms": 50.0, "runs": 1, "within": 0,
                                               "added_within": None}
    assert judge(runs, 65536, None, 70) is None


def test_osu_compare_verdicts_read_the_interval_of_the_median_pair() -> None:
    """bench/pathmig_osu.py --mode compare: "not slower by more than 3%" needs the interval's
    upper bound below +3%; "within +-3%" needs both bounds inside; a faster pathmig whose
    interval reaches below -3% is not slower but not within; no interval decides nothing."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from pathmig_osu import verdicts
    t = 0.03
    assert verdicts((-0.062, 0.001), t) == {"not_slower": True, "within": False}
    assert verdicts((-0.029, 0.029), t) == {"not_slower": True, "within": True}
    assert verdicts((-0.01, 0.031), t) == {"not_slower": False, "within": False}
    assert verdicts((0.0, 0.03), t) == {"not_slower": False, "within": False}
    assert verdicts((-0.03, 0.0), t) == {"not_slower": True, "within": False}
    assert verdicts(None, t) == {"not_slower": None, "within": None}


def test_baseline_round_trip_figures() -> None:
    """bench/pathmig_baseline.py's figures of a run: the wire-up left out, quantiles,
    counts over 50 and 100 ms, and the longest round trip of each whole 3 s window."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from pathmig_baseline import rtt_stats
    ends = [10.0 + 0.01 * k for k in range(1000)]  # every 10 ms, 10 s in all
    rtts = [0.004] * 1000
    rtts[3] = 0.9  # the wire-up: left out
    rtts[100] = 0.060  # in the first window (10.5 s .. 13.5 s)
    rtts[700] = 0.120  # in the third (16.5 s .. 19.5 s)
    s = rtt_stats(ends, rtts)
    assert s["round_trips"] == 950 and s["max_ms"] == 120.0 and s["median_ms"] == 4.0
    assert (s["over_50ms"], s["over_100ms"]) == (2, 1)
    assert s["window_max_ms"] == [60.0, 4.0, 120.0]
    assert rtt_stats(ends[:40], rtts[:40]) == {"round_trips": 0}


def test_false_counts_take_only_what_came_before_the_fault() -> None:
    """bench/pathmig_load.py's (and bench/pathmig_mpich.py's) false verdicts and
    migrations: path-dead records and ARMED -> MIGRATED transitions before the fault's
    request, every one of them in a run without a fault; other records never count."""
    from mpilab.pathmig.agents import false_counts

    evs = [{"event": "path", "up": True, "time": 1.0},
           {"event": "path", "up": False, "time": 2.0},
           {"event": "verdict", "time": 3.0},
           {"event": "state", "from": "ARMED", "to": "MIGRATED", "time": 4.0},
           {"event": "state", "from": "MIGRATED", "to": "REARM", "time": 4.5},
           {"event": "state", "from": "REARM", "to": "ARMED", "time": 4.6},
           {"event": "recovered", "time": 4.8},
           {"event": "verdict", "time": 6.0},
           {"event": "state", "from": "ARMED", "to": "MIGRATED", "time": 6.1}]
    assert false_counts(evs, None) == (3, 2)
    assert false_counts(evs, 5.0) == (2, 1)
    assert false_counts(evs, 1.5) == (0, 0)
    assert false_counts([], None) == (0, 0)


def _fake_sysctl(allowed: Path, calls: list[str], refuse_first: bool) -> Any:
    """A node's sysctl as the kernel answers it: a namespace's default may be an algorithm
    only while the host's allowed list names it (refuse_first: the first write is refused
    whatever the list, as when another job's moment ended just before)."""
    def run(spec: Any, node: str, key: str, value: str | None = None
            ) -> subprocess.CompletedProcess[str]:
        if value is None:
            return subprocess.CompletedProcess([], 0, "bbr\n", "")
        calls.append(value)
        ok = value in allowed.read_text().split() and not (refuse_first and len(calls) == 1)
        return subprocess.CompletedProcess([], 0 if ok else 255, "",
                                           "" if ok else "sysctl: Operation not permitted")
    return run


@pytest.mark.parametrize("listed", [False, True])
def test_namespace_default_outside_the_allowed_list(tmp_path: Path, listed: bool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """cubic as a namespace's default: added to the host's allowed list for the moment of
    the change and the list restored; when the list already names it (another job's
    moment), the refused change is retried, not reported as a failure; the list is left as
    found either way."""
    allowed = tmp_path / "allowed"
    before = "reno bbr cubic" if listed else "reno bbr"
    allowed.write_text(before)
    calls: list[str] = []
    monkeypatch.setattr(congestion, "ALLOWED", str(allowed))
    monkeypatch.setattr(congestion, "ALLOWED_LOCK", str(tmp_path / "lock"))
    monkeypatch.setattr(congestion, "_sysctl", _fake_sysctl(allowed, calls, refuse_first=True))
    congestion._set_ns_default(object(), "s0n0", "cubic")  # type: ignore[arg-type]
    assert calls == ["cubic", "cubic"]
    assert allowed.read_text() == before
