"""Kernel-stamped one-way times and the delay line's trim (mpilab.testbed.oneway): the
pairing of both ends' stamps and the trim computed from them, on synthetic stamps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mpilab.testbed import oneway


def test_pair_times_matches_sequence_numbers_and_drops_missing_stamps() -> None:
    client = "0 1000 5000\n1 11000 15500\n2 21000 -1\nnoise line\n3 31000 36000\n"
    server = "1 12000 13000\n0 2000 3000\n2 22000 23000\n"  # 3 never reached it
    fwd, back = oneway.pair_times(client, server)
    assert fwd == pytest.approx([1e-6, 1e-6])       # 0 and 1; 2 lost its echo's stamp
    assert back == pytest.approx([2e-6, 2.5e-6])


def test_trim_is_the_mean_excess_clamped_to_the_delay() -> None:
    d = 1e-3
    base = ([30e-6] * 5, [40e-6] * 5)
    delayed = ([d + 30e-6 + 10e-6] * 5, [d + 40e-6 + 14e-6] * 5)
    t = oneway.trim_from(d, base, delayed)
    # D midway between the directions: each 2 us from it once trimmed
    assert t["trim_s"] == pytest.approx(12e-6) and t["excess_s"] == pytest.approx(12e-6)
    assert t["steady"] and t["spread_s"] == pytest.approx(0.0)
    assert t["excess_fwd_s"] == pytest.approx(10e-6)
    assert t["excess_back_s"] == pytest.approx(14e-6)
    assert t["base_fwd_s"] == pytest.approx(30e-6) and not t["path_exceeds_delay"]
    # a path that alone is longer than the delay: hold 0, and said so
    d = 10e-6
    t = oneway.trim_from(d, base, ([d + 30e-6 + 35e-6] * 5, [d + 40e-6 + 45e-6] * 5))
    assert t["trim_s"] == pytest.approx(d) and t["path_exceeds_delay"]
    assert t["excess_s"] == pytest.approx(40e-6)
    # a delayed path faster than the undelayed one plus D (its warmed crossing beats the
    # undelayed route's cold one): a negative trim lengthens the hold; bounded by the cap
    t = oneway.trim_from(1e-3, base, ([1e-3 + 22e-6] * 5, [1e-3 + 36e-6] * 5))
    assert t["trim_s"] == pytest.approx(-6e-6) and t["excess_s"] == pytest.approx(-6e-6)
    assert t["excess_fwd_s"] == pytest.approx(-8e-6)
    assert t["excess_back_s"] == pytest.approx(-4e-6) and t["steady"]
    t = oneway.trim_from(1e-3, base, ([1e-3 + 22e-6] * 5, [1e-3 + 36e-6] * 5), cap=2e-6)
    assert t["trim_s"] == pytest.approx(-2e-6)
    # the median: one late datagram does not move it
    t = oneway.trim_from(1e-3, base, ([1e-3 + 40e-6] * 4 + [1.0], [1e-3 + 54e-6] * 5))
    assert t["trim_s"] == pytest.approx(12e-6) and t["steady"]
    # an unsteady measurement (the undelayed forward datagrams spread over 300 us): no trim
    noisy = ([30e-6, 200e-6, 500e-6, 350e-6, 40e-6], [40e-6] * 5)
    t = oneway.trim_from(1e-3, noisy, delayed)
    assert not t["steady"] and t["trim_s"] == 0.0 and t["spread_s"] > oneway.STEADY_IQR_S
    assert not t["path_exceeds_delay"]


def test_the_echo_waits_reply_after_and_its_one_way_time_leaves_the_wait_out() -> None:
    """The server and client scripts themselves, on loopback (no namespaces): with
    reply_after, every round trip includes the wait, and neither one-way time does."""
    import socket
    import subprocess
    import sys

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    srv = subprocess.Popen([sys.executable, "-c", oneway.SERVER, "127.0.0.1", str(port), "3",
                            "0.05"], stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None
        assert srv.stdout.readline().strip() == "ready"
        cl = subprocess.run([sys.executable, "-c", oneway.CLIENT, "127.0.0.1", str(port), "3",
                             "0.01"], capture_output=True, text=True, timeout=60, check=True)
        out, _ = srv.communicate(timeout=60)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    fwd, back = oneway.pair_times(cl.stdout, out)
    assert len(fwd) == 3 and len(back) == 3
    rtts = [(int(f[2]) - int(f[1])) * 1e-9 for f in (ln.split() for ln in cl.stdout.splitlines())]
    for r, f, b in zip(rtts, fwd, back, strict=True):
        assert r >= 0.05                      # the echo waited
        assert f >= 0 and b >= 0
        assert f + b <= r - 0.05 + 1e-6        # and neither direction counts the wait


def test_trim_text_says_which_way_the_hold_moves() -> None:
    """`up` and `status` name the hold: shortened by a positive trim, lengthened by a
    negative one (measured: the path crossed faster than the undelayed route)."""
    from mpilab.testbed.lineinfo import trim_text

    d = 1e-3
    base = ([30e-6] * 5, [40e-6] * 5)
    fast = oneway.trim_from(d, base, ([d + 24e-6] * 5, [d + 32e-6] * 5))
    fast["measured"] = True
    text = trim_text(fast, d)
    assert "hold = delay + 7.0 us" in text and "cross 7.0 us faster than" in text
    slow = oneway.trim_from(d, base, ([d + 42e-6] * 5, [d + 54e-6] * 5))
    slow["measured"] = True
    assert "hold = delay - 13.0 us" in trim_text(slow, d)
    assert trim_text({"trim_s": 5e-6, "measured": False}, d) == \
        "; hold = delay - 5.0 us (wan.delay_trim)"
    # the trim's standard error is given, and one above the precision is flagged
    fast.update(se_s=0.7e-6, blocks=2)
    assert "standard error 0.7 us after 2 turns)" in trim_text(fast, d)
    assert "imprecise" not in trim_text(fast, d)
    fast.update(se_s=2.4e-6, blocks=6)
    assert "standard error 2.4 us after 6 turns); imprecise trim" in trim_text(fast, d)


def test_calibration_measures_again_until_steady(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """An unsteady calibration is measured again (each time with the line out, then in),
    up to `attempts` in all; the trim handed to the line is the steady attempt's, and the
    echoes wait half the gap on both routes (lone packets)."""
    from contextlib import contextmanager

    from mpilab.testbed import spec as specmod

    sp = specmod.load_text('[wan]\ndelay = "1ms"\n', "c.toml")
    d, steady, noisy = 1e-3, [30e-6] * 7, [30e-6, 300e-6, 30e-6, 500e-6, 30e-6, 400e-6, 30e-6]
    runs = iter([(noisy, steady), ([d + 20e-6] * 9, [d + 20e-6] * 9),
                 (steady, steady), ([d + 24e-6] * 9, [d + 20e-6] * 9)])
    calls: list[tuple[str, float]] = []
    written: list[float] = []
    outs = [0]

    def fake_udp(_sp: object, _c: str, _s: str, count: int, interval: float,
                 reply_after: float = 0.0) -> tuple[list[float], list[float]]:
        calls.append(("udp", reply_after / interval))
        return next(runs)

    @contextmanager
    def out() -> Iterator[None]:
        outs[0] += 1
        yield

    monkeypatch.setattr(oneway, "udp_oneway", fake_udp)
    monkeypatch.setattr(oneway, "write_trim", lambda _p, t, _pid: written.append(t))
    res = oneway.calibrate_trim(sp, out, tmp_path / "t", lambda: 1, blocks=1)
    assert res["attempts"] == 2 and res["steady"] and outs[0] == 2
    assert res["trim_s"] == pytest.approx(-8e-6)  # (-6 + -10) / 2
    assert written == [0.0, pytest.approx(-8e-6)]
    assert [r for _, r in calls] == [0.5] * 4
    # never steady: three attempts, no trim
    runs = iter([(noisy, steady), (steady, steady)] * 3)
    res = oneway.calibrate_trim(sp, out, tmp_path / "t", lambda: 1, blocks=1)
    assert res["attempts"] == 3 and not res["steady"] and res["trim_s"] == 0.0
    # the routes take turns (line out, line in, out, in) and their samples are pooled:
    # a level shift of 10 us between the blocks moves both routes alike
    outs[0] = 0
    calls.clear()
    runs = iter([(steady, steady), ([d + 22e-6] * 9, [d + 22e-6] * 9),
                 ([40e-6] * 7, [40e-6] * 7), ([d + 32e-6] * 9, [d + 32e-6] * 9)])
    res = oneway.calibrate_trim(sp, out, tmp_path / "t", lambda: 1, max_blocks=2)
    assert res["attempts"] == 1 and outs[0] == 2 and len(calls) == 4 and res["count"] == 14
    assert res["trim_s"] == pytest.approx(-8e-6) and res["blocks"] == 2


def test_calibration_takes_more_turns_until_the_trim_is_precise(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Steady but noisy samples (a standard error of the trim above the precision) make
    the two routes take another turn, pooled, until the error is small enough or
    max_blocks is reached; quiet samples stop at `blocks`."""
    from contextlib import contextmanager

    from mpilab.testbed import spec as specmod

    sp = specmod.load_text('[wan]\ndelay = "1ms"\n', "c.toml")
    d = 1e-3
    # a 9 us spread in every direction: about 1.9 us of error after 2 turns of 7 each
    wide = [30e-6, 39e-6, 33e-6, 36e-6, 30e-6, 39e-6, 34e-6]

    def pair(extra: float) -> tuple[list[float], list[float]]:
        return [x + extra for x in wide], [x + extra for x in wide]

    @contextmanager
    def out() -> Iterator[None]:
        yield

    turns: list[int] = []

    def fake_udp(_sp: object, _c: str, _s: str, count: int, interval: float,
                 reply_after: float = 0.0) -> tuple[list[float], list[float]]:
        turns.append(count)
        if count == 7:  # undelayed
            return pair(0.0)
        f, b = pair(d - 5e-6)
        return [0.0, 0.0, *f], [0.0, 0.0, *b]  # two warm-up datagrams first

    monkeypatch.setattr(oneway, "udp_oneway", fake_udp)
    monkeypatch.setattr(oneway, "write_trim", lambda _p, t, _pid: None)
    base = ([x for _ in range(2) for x in wide],) * 2
    assert oneway.trim_se(base, base) > 1.5e-6  # two turns are not enough here
    res = oneway.calibrate_trim(sp, out, tmp_path / "t", lambda: 1)
    assert res["steady"] and 2 < res["blocks"] <= 6 and res["se_s"] <= 1.5e-6, res
    assert res["count"] == 7 * res["blocks"] and len(turns) == 2 * res["blocks"]
    assert res["trim_s"] == pytest.approx(-5e-6)
    # capped: a precision no sample count reaches stops at max_blocks
    turns.clear()
    res = oneway.calibrate_trim(sp, out, tmp_path / "t", lambda: 1, max_blocks=4,
                                precision=1e-9)
    assert res["blocks"] == 4 and len(turns) == 8 and res["se_s"] > 1e-9
    # quiet samples: the two turns asked for, no more
    assert oneway.trim_se(([30e-6] * 14,) * 2, ([d] * 14,) * 2) == 0.0
