"""`mpilab selftest [--np N] [--syncs N] [--inject SPEC] [--trials N] [--json FILE]`

mpilab checks itself against known truth and prints recovered against true:

* clock: a real MPI run (mpilab-selftest clock under mpirun, all ranks on this node) whose
  ranks' clocks carry injected offsets and drifts (the library's timer, mpilab/wtime.h);
  both synchronisation methods, with and without injection. Target: every error within
  5 us and inside the reported uncertainty in >= 95% of the checks.
* fit: the robust Hockney and LogGP fits on synthetic samples of links with known latency
  and rate (a 2 ms / 100 Mbit/s shaped WAN and shared memory), on a busy-machine noise
  model, with and without 1000x outliers. Target: L and alpha within 5%, G and beta within
  3%, the interval containing the truth in >= 90% of the runs.
* --testbed (root): the same fits on a real emulated link (mpilab-selftest link on a
  2-site testbed with --delay and --rate), printed with the former estimators (least
  squares on means / medians) beside. The truth is measured independently of the delay
  line's own claims: for L and alpha, the base latency fitted on the same testbed with no
  delay plus what the delayed link adds to a lone packet's one-way time as ICMP echoes
  (ping, from outside the delay line) measure it against the undelayed link; for G and
  beta, the TCP payload rate of the configured shaping. The link is also compared with the
  configured delay: lone UDP datagrams, kernel-stamped at both interfaces
  (mpilab.testbed.oneway), across the delayed WAN minus across the undelayed one, each
  direction within 10 us or 1% of the delay (mpilab.testbed.lineinfo.delay_tolerance), or
  the self-test fails.

Exit status 0 when every target is met, 1 when one is missed (the table says which), 2 on
bad input.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpilab import argtypes, launch
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text, check_output
from mpilab.tools import find_tool, mpi_env

TOOL = "mpilab-selftest"
CLOCK_ERR_TARGET_S = 5e-6
CLOCK_INSIDE_TARGET = 0.95
FIT_TOL = {"alpha": 0.05, "L": 0.05, "beta": 0.03, "G": 0.03}
FIT_COVER_TARGET = 0.90


def _tool_run(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> None:
    try:
        p = subprocess.run(cmd, env=env or mpi_env(), capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise MpilabError(f"{TOOL} did not finish within {timeout:.0f} s") from e
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.startswith(TOOL + ":")]
        msg = lines[0] if lines else f"{TOOL} failed with exit status {p.returncode}"
        raise MpilabError(msg.removeprefix(TOOL + ": ") if lines else msg)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise MpilabError(f"{path}: unreadable self-test output ({e})") from e
    if not isinstance(data, dict):
        raise MpilabError(f"{path}: self-test output is not a JSON object")
    return data


def clock_rows(data: dict[str, Any], label: str) -> dict[str, Any]:
    """One summary row of a clock self-test output."""
    checks = data.get("checks") or []
    errs = [abs(float(c["error_s"])) for c in checks]
    inside = sum(1 for c in checks if abs(float(c["error_s"])) <= float(c["uncertainty_s"]))
    n = len(checks)
    row = {"method": data.get("method", "?"), "inject": label, "n": n,
           "inside": inside, "median_err_s": statistics.median(errs) if errs else float("nan"),
           "max_err_s": max(errs) if errs else float("nan"),
           "median_unc_s": (statistics.median(float(c["uncertainty_s"]) for c in checks)
                            if checks else float("nan"))}
    # syncs that stated <= 5 us (the library repeats preempted ones, up to 6 attempts, and
    # flags those that still could not get there): the 5 us target applies to them, the
    # others must say so honestly (their error inside their larger uncertainty)
    precise = [c for c in checks if c.get("precise", True)]
    perr = [abs(float(c["error_s"])) for c in precise]
    row["precise"] = len(precise)
    row["max_err_precise_s"] = max(perr) if perr else float("nan")
    row["retried"] = sum(1 for c in checks if int(c.get("attempts", 1)) > 1)
    row["imprecise_ends"] = imprecise_ends(checks)
    row["met"] = (bool(n) and row["max_err_s"] <= CLOCK_ERR_TARGET_S
                  and inside >= CLOCK_INSIDE_TARGET * n)
    row["met_flagged"] = (bool(precise) and row["max_err_precise_s"] <= CLOCK_ERR_TARGET_S
                          and inside >= CLOCK_INSIDE_TARGET * n)
    return row


def imprecise_ends(checks: list[dict[str, Any]]) -> dict[str, Any]:
    """Per synchronisation that ended imprecise (counted once, not per rank): how many, their
    attempts, and why each made no further attempt (the tool's `stopped`: budget, no_gain,
    attempts)."""
    syncs: dict[Any, dict[str, Any]] = {}
    for c in checks:
        if not c.get("precise", True):
            syncs.setdefault(c.get("sync"), c)
    stops: dict[str, int] = {}
    for c in syncs.values():
        why = str(c.get("stopped", "unknown"))
        stops[why] = stops.get(why, 0) + 1
    attempts = sorted(int(c.get("attempts", 1)) for c in syncs.values())
    return {"syncs": len(syncs), "attempts": attempts, "stopped": stops}


def imprecise_line(ends: dict[str, Any]) -> str | None:
    """One line under a clock row: the imprecise synchronisations, their attempts and why
    they ended; None when every synchronisation reached the target."""
    if not ends["syncs"]:
        return None
    a = ends["attempts"]
    why = ", ".join(f"{STOP_TEXT.get(k, k)} {n}" for k, n in sorted(ends["stopped"].items()))
    return (f"  {ends['syncs']} sync(s) ended above 5 us after {a[0]}-{a[-1]} attempts; "
            f"ended by: {why}")


#: why a synchronisation made no further attempt (mpilab_sync_stop_name)
STOP_TEXT = {"budget": "the 1 s budget of the repeats spent",
             "no_gain": "a repeat that improved no rank",
             "attempts": "6 attempts made", "unknown": "not recorded"}


def _verdict(row: dict[str, Any]) -> str:
    """met; 'met for precise' (the 5 us bound holds for every sync that stated <= 5 us and
    the others were flagged); or MISSED."""
    if row["met"]:
        return "met"
    return "met for precise" if row["met_flagged"] else "MISSED"


def fit_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per link, parameter and outlier setting: truth, recovered values, worst error, coverage."""
    rows = []
    for link in data.get("links", []):
        truth = link["truth"]
        for outl in (False, True):
            runs = [r for r in link["runs"] if bool(r["outliers"]) == outl]
            for name in ("alpha", "beta", "L", "G"):
                t = float(truth[name])
                vals = [float(r[name]["value"]) for r in runs]
                cover = sum(1 for r in runs if r[name]["lo"] <= t <= r[name]["hi"])
                worst = max(abs(v / t - 1) for v in vals) if vals and t else float("nan")
                old = [float(r["median_lsq"][name]) for r in runs
                       if name in r.get("median_lsq", {})]
                rows.append({"link": link["name"], "outliers": outl, "param": name, "truth": t,
                             "median": statistics.median(vals) if vals else float("nan"),
                             "worst_rel": worst, "cover": cover, "n": len(runs),
                             "old_worst_rel": (max(abs(v / t - 1) for v in old)
                                               if old and t else None),
                             "met": (worst <= FIT_TOL[name]
                                     and cover >= FIT_COVER_TARGET * len(runs))})
    return rows


def _fmt_t(s: float) -> str:
    if s != s:  # NaN
        return "-"
    if abs(s) >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    if abs(s) >= 1e-6:
        return f"{s * 1e6:.3f} us"
    return f"{s * 1e9:.3f} ns"


def _param_fmt(name: str, v: float) -> str:
    return f"{v * 1e9:.4f} ns/B" if name in ("beta", "G") else _fmt_t(v)


PAYLOAD = 1514.0 / 1448.0  # Ethernet + IP + TCP bytes on the wire per TCP payload byte


def _spec(prefix: str, delay: str, rate: str) -> str:
    return (f'prefix = "{prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 1\n[lan]\n'
            f'rate = "10Gbit"\n[wan]\nnode_rate = "{rate}"\ntotal_rate = "{rate}"\n'
            f'delay = "{delay}"\nqueue = "1M"\n')


def _cli(args: list[str], timeout: float) -> None:
    import sys

    p = subprocess.run([sys.executable, "-m", "mpilab.cli", *args], env=mpi_env(),
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        raise MpilabError(f"mpilab {args[0]} {args[1]}: "
                          + (lines[-1] if lines else f"exit status {p.returncode}"))


#: ICMP echoes for the link's truth: one every 2 ms, the pace of a ping-pong's packets over
#: a 2 ms link, so the delay line works in the regime the measurement sees (a lone packet,
#: one every 0.2 s, came out 25-50 us later on this VM: the line's wake-up,
#: docs/testbed-delayline.md)
TRUTH_PINGS, TRUTH_PING_INTERVAL_S = 200, 0.002


def icmp_oneway(prefix: str, count: int = TRUTH_PINGS,
                interval: float = TRUTH_PING_INTERVAL_S) -> float:
    """One-way time s0n0 -> s1n0 across the testbed's WAN from ICMP echoes (ping: the kernel
    answers, no MPI and no mpilab code on the path), one every `interval` seconds: the
    median round trip / 2."""
    import re

    from mpilab.testbed import net

    sp = net.current_spec(prefix)
    p = subprocess.run(["ip", "netns", "exec", sp.ns("s0n0"), "ping", "-n", "-c", str(count),
                        "-i", f"{interval:g}", "-W", "5", sp.addr("s1n0", 0)],
                       capture_output=True, text=True, timeout=count * (interval + 5) + 30,
                       check=False)
    rtts = [float(x) * 1e-3 for x in re.findall(r"time=([\d.]+) ms", p.stdout)]
    if not rtts:
        raise MpilabError(f"testbed {prefix}: no ICMP echo came back across the WAN "
                          f"({(p.stderr.strip().splitlines() or ['no message'])[-1]})")
    return statistics.median(rtts) / 2


TCP_PING_PORT, TCP_PINGS = 47311, 200


def tcp_oneway(prefix: str, count: int = TCP_PINGS) -> float:
    """One-way time s0n0 -> s1n0 from a TCP ping-pong with no MPI on the path
    (mpilab.testbed.tcpping: 64-byte messages back and forth over one connection, as a
    ping-pong benchmark sends them): the median round trip / 2."""
    from mpilab.testbed import net

    sp = net.current_spec(prefix)
    # each end in a session of its own, raised to nice -20 with its autogroup (--raise), as
    # mpilab-selftest link raises the MPI ranks: beside busy loops both get their CPU
    mod = [sys.executable, "-m", "mpilab.testbed.tcpping", "--raise"]
    srv = subprocess.Popen(["ip", "netns", "exec", sp.ns("s1n0"), *mod, "serve",
                            str(TCP_PING_PORT), str(count)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        p = subprocess.run(["ip", "netns", "exec", sp.ns("s0n0"), *mod, "ping",
                            sp.addr("s1n0", 0), str(TCP_PING_PORT), str(count)],
                           capture_output=True, text=True, timeout=120, check=False,
                           start_new_session=True)
    finally:
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    rtts = [float(x) for x in p.stdout.split()] if p.returncode == 0 else []
    if len(rtts) != count:
        raise MpilabError(f"testbed {prefix}: the TCP ping-pong across the WAN failed "
                          f"({(p.stderr.strip().splitlines() or ['no message'])[-1]})")
    return statistics.median(rtts) / 2


#: lone datagrams each way for the comparison with the configured delay (lone_oneway)
LONE_PACKETS = 15


def lone_oneway(prefix: str, delay: float,
                count: int = LONE_PACKETS) -> tuple[list[float], list[float]]:
    """One-way times (s) s0n0 -> s1n0 and back of lone UDP datagrams, one every
    oneway.lone_gap(delay), each echoed half a gap after it arrives (so the echo is a lone
    packet too), from kernel stamps at both interfaces (mpilab.testbed.oneway)."""
    from mpilab.testbed import net, oneway

    gap, warm = oneway.lone_gap(delay), oneway.CAL_WARM
    fwd, back = oneway.udp_oneway(net.current_spec(prefix), "s0n0", "s1n0", count + warm, gap,
                                  reply_after=gap / 2)
    return fwd[warm:], back[warm:]  # after the warm-up up's calibration also sets aside


def _delay_truth(prefix: str) -> dict[str, Any] | None:
    from mpilab.testbed import net

    return (net.load_state(prefix) or {}).get("delay_truth")


def lone_delay_row(res: dict[str, Any]) -> dict[str, Any] | None:
    """The link against its configured delay (lineinfo.lone_check) from testbed_link's
    lone datagrams across the undelayed and the delayed testbed; None without both."""
    from mpilab.testbed.lineinfo import lone_check

    lone = res.get("lone_oneway_s") or {}
    if "base" not in lone or "delayed" not in lone:
        return None
    return lone_check(float(res["delay_s"]), lone["base"], lone["delayed"])


def print_lone_row(row: dict[str, Any], at_up: dict[str, Any] | None) -> None:
    print(f"lone packets ({row['count']} each way, kernel-stamped): the link adds the "
          f"configured {row['delay_s'] * 1e6:g} us "
          f"{row['off_fwd_s'] * 1e6:+.1f} us forward, {row['off_back_s'] * 1e6:+.1f} us back "
          f"(tolerance {row['tolerance_s'] * 1e6:g} us)  "
          + ("met" if row["held"] else "MISSED (the link does not hold the configured delay)"))
    if at_up and at_up.get("held") is False:
        print(f"  testbed up flagged its delay line: {at_up.get('reason')} (delay_off)")


def _delayline_stats(prefix: str) -> dict[str, Any] | None:
    from mpilab.testbed import net

    return net.delayline_stats(prefix)


def _lateness(s0: dict[str, Any] | None, s1: dict[str, Any] | None) -> float | None:
    """Mean lateness of the delay line's releases between two of its statistics."""
    try:
        pk = float(s1["packets"]) - float(s0["packets"])  # type: ignore[index]
        late = (float(s1["late_mean_s"]) * float(s1["packets"])  # type: ignore[index]
                - float(s0["late_mean_s"]) * float(s0["packets"]))  # type: ignore[index]
        return late / pk if pk > 0 else None
    except (KeyError, TypeError, ValueError):
        return None


_MODELS = ("hockney", "loggp", "former_hockney", "former_loggp")


def merge_link_launches(datas: list[dict[str, Any]], cl: float = 0.95,
                        floor: bool = True) -> dict[str, Any]:
    """One testbed run measured in several launches of `mpilab-selftest link`: launch 1's
    document with every fitted parameter that has an interval replaced by the launch-level
    figure (mpilab.launches.merge_param: the median of the launches' values, an interval
    holding the launch-to-launch variation, each launch's own interval as the floor, the
    flag launches_disagree), as `mpilab bench` reports its models by default. With `floor`
    (default), L and alpha use launches.merge_floor_param: a launch whose own interval lies
    wholly above the lowest launch's (and beyond the precision) is set aside, flagged
    launches_set_aside, listed in `set_aside` with `set_aside_why`; its value stays in
    `launch_values`."""
    import copy

    from mpilab import launches, quality

    out = copy.deepcopy(datas[0])
    if len(datas) < 2:
        return out
    for model in ("hockney", "loggp"):
        for name, p in (out.get(model) or {}).items():
            ps = [(d.get(model) or {}).get(name) for d in datas]
            if not all(isinstance(q, dict) and isinstance(q.get("value"), int | float)
                       for q in ps):
                continue

            def bound(q: dict[str, Any], k: str) -> float | None:
                v = q.get(k)  # the tool writes -1 for an interval it could not give
                return None if not isinstance(v, int | float) or v == -1.0 else float(v)
            # L and alpha are floors (minima): a launch that never came near another's floor
            # is set aside (launches.merge_floor_param), said so in the flags and fields
            merge = launches.merge_floor_param if floor and name in launches.FLOOR_PARAMS \
                else launches.merge_param
            r = merge([float(q["value"]) for q in ps], [bound(q, "lo") for q in ps],
                      [bound(q, "hi") for q in ps], cl)
            flags: list[str] = []
            own = (launches.CI_WIDE, quality.LAUNCHES_DISAGREE, launches.LAUNCHES_SET_ASIDE)
            for q in ps:  # ci_wide is taken again on the merged interval
                flags += [f for f in str(q.get("flags") or "").split(",")
                          if f and f not in flags and f not in own]
            flags += [f for f, on in ((launches.CI_WIDE, r["wide"]),
                                      (quality.LAUNCHES_DISAGREE, r["disagree"]),
                                      (launches.LAUNCHES_SET_ASIDE, bool(r.get("set_aside"))))
                      if on]
            p.update({"value": r["value"], "lo": r["lo"], "hi": r["hi"], "flags": ",".join(flags),
                      "launch_values": r["launch_values"],
                      "launch_intervals": [[bound(q, "lo"), bound(q, "hi")] for q in ps]})
            if "set_aside" in r:
                p["set_aside"] = r["set_aside"]
            if r.get("set_aside_why"):
                p["set_aside_why"] = r["set_aside_why"]
    out["launches"] = len(datas)
    out["launch_per_size"] = [d.get("per_size") for d in datas]
    out["launch_priority"] = [d.get("priority") for d in datas]
    return out


def testbed_link(prefix: str, delay: str, rate: str, runs: int, sizes: str, tmp: Path,
                 hogs: int = 0, min_reps: int | None = None,
                 launches: int = 1, progress: bool = False,
                 on_run: Callable[[dict[str, Any]], None] | None = None,
                 tool_args: list[str] | None = None) -> dict[str, Any]:
    """Link fits on a 2-site testbed: one run with no delay (the base latency), then `runs`
    with `delay` (optionally with `hogs` busy loops); returns truth and every run's fits.
    `min_reps`: the least round trips per size (the tool's --min-reps, and --max-reps raised
    to it from the tool's default 20; the tool's defaults if None). `launches`: launches of
    the tool per delayed run, merged by merge_link_launches (the base run is one launch: its
    few microseconds of level shift are small beside the delay). `on_run`: called with the
    document so far (truth included, link_truth) after every delayed run. `tool_args`: more
    arguments for every launch of the tool (e.g. ["--nice", "keep"])."""
    from mpilab import units

    delay_s, rate_bps = units.parse_duration(delay), units.parse_rate(rate)
    tool = find_tool(TOOL)
    out: dict[str, Any] = {"delay_s": delay_s, "rate_bps": rate_bps, "runs": [], "hogs": hogs}
    for d, n in (("0ms", 1), (delay, runs)):
        spec = tmp / f"{prefix}-{d}.toml"
        spec.write_text(_spec(prefix, d, rate))
        _cli(["testbed", "up", str(spec)], 300)
        hog_procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(hogs)]
        try:
            # the link's truth from outside the delay line: lone ICMP echoes
            key = "base" if d != delay else "delayed"
            out.setdefault("icmp_oneway_s", {})[key] = icmp_oneway(prefix)
            # for the record: a lone packet (the delay line's wake-up included)
            out.setdefault("icmp_lone_oneway_s", {})[key] = icmp_oneway(prefix, 9, 0.2)
            # the link against the configured delay: lone UDP datagrams, kernel-stamped at
            # both interfaces (lone_check), and what `up` judged of its delay line
            out.setdefault("lone_oneway_s", {})[key] = lone_oneway(prefix, delay_s)
            if key == "delayed":
                out["delay_truth_at_up"] = _delay_truth(prefix)
            # and what a TCP message sees, no MPI on the path (printed beside; None if it
            # could not be measured: the ICMP truth stays the one counted)
            try:
                out.setdefault("tcp_oneway_s", {})[key] = tcp_oneway(prefix)
            except (MpilabError, OSError, subprocess.SubprocessError) as e:
                out.setdefault("tcp_oneway_s", {})[key] = None
                print(f"selftest: {e}", file=sys.stderr, flush=True)
            for k in range(n):
                s0 = _delayline_stats(prefix)
                datas = []
                for li in range(launches if d == delay else 1):
                    f = tmp / f"link-{d}-{k}-{li}.json"
                    _cli(["testbed", "run", "--prefix", prefix, "--np", "2", "--timeout", "1500",
                          "--", tool, "link", "--sizes", sizes, "--out", str(f),
                          *(["--min-reps", str(min_reps), "--max-reps", str(max(min_reps, 20))]
                            if min_reps else []), *(tool_args or [])], 1600)
                    datas.append(_load(f))
                    datas[-1].pop("provenance", None)
                    if progress:  # a bench slot that ends early keeps what was measured
                        h, lg = datas[-1].get("hockney") or {}, datas[-1].get("loggp") or {}
                        print(f"selftest: {d} run {k + 1} launch {li + 1}: alpha "
                              f"{(h.get('alpha') or {}).get('value')} L "
                              f"{(lg.get('L') or {}).get('value')} (s)", file=sys.stderr,
                              flush=True)
                data = merge_link_launches(datas)
                # how late the emulated link itself was: its delay line's mean lateness
                data["delayline_late_mean_s"] = _lateness(s0, _delayline_stats(prefix))
                (out["runs"] if d == delay else out.setdefault("base", [])).append(data)
                if on_run is not None and d == delay:
                    on_run(link_truth(out))
        finally:
            for h in hog_procs:
                h.kill()
                h.wait()
            _cli(["testbed", "down", "--prefix", prefix], 300)
    return link_truth(out)


def link_truth(out: dict[str, Any]) -> dict[str, Any]:
    """Adds the truth (and how it was measured) to testbed_link's document `out`: usable on
    a partial one (the base run and both ICMP measurements done, any number of runs)."""
    base = out["base"][0]
    per_byte = 8.0 / out["rate_bps"] * PAYLOAD
    icmp = out["icmp_oneway_s"]
    added = icmp["delayed"] - icmp["base"]  # what the delayed link adds, measured by ping
    out["truth_method"] = ("L, alpha: the base run's fitted value plus the one-way time "
                           f"ICMP echoes (one every {TRUTH_PING_INTERVAL_S * 1e3:g} ms, the "
                           "pace of a ping-pong's packets) measured across the delayed WAN "
                           "minus across the undelayed one (not the delay line's statistics); "
                           "G, beta: the TCP payload rate of the shaping")
    out["icmp_added_s"] = added
    lone = out["icmp_lone_oneway_s"]
    out["icmp_lone_added_s"] = lone["delayed"] - lone["base"]
    out["truth"] = {"L": added + float(base["loggp"]["L"]["value"]),
                    "alpha": added + float(base["hockney"]["alpha"]["value"]),
                    "G": per_byte, "beta": per_byte}
    tcp = out.get("tcp_oneway_s") or {}
    if isinstance(tcp.get("delayed"), float) and isinstance(tcp.get("base"), float):
        out["tcp_added_s"] = tcp["delayed"] - tcp["base"]
        out["truth_tcp"] = {"L": out["tcp_added_s"] + float(base["loggp"]["L"]["value"]),
                            "alpha": out["tcp_added_s"]
                            + float(base["hockney"]["alpha"]["value"])}
    return out


def run_truth(res: dict[str, Any], run: dict[str, Any], name: str) -> float:
    """The truth of parameter `name` for one run. Measured by ICMP (res["icmp_added_s"]):
    res["truth"] as it is (the ping already saw whatever the delay line added). Results of
    the earlier method: the configured delay plus the base latency,
    plus the delay line's own mean lateness during the run beyond the base run's."""
    t = float(res["truth"][name])
    if name not in ("L", "alpha") or "icmp_added_s" in res:
        return t
    late = run.get("delayline_late_mean_s")
    if not isinstance(late, int | float):
        return t
    base = (res.get("base") or [{}])[0].get("delayline_late_mean_s")
    return t + float(late) - (float(base) if isinstance(base, int | float) else 0.0)


def link_rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Per parameter: every run's truth (run_truth), value, error, flags, interval coverage,
    former value. A run whose parameter carries a flag (ci_wide, clamped, no_ci) is not a
    good fit, whatever its value: `met` needs every run unflagged, within the tolerance and
    the interval holding the truth in >= 90%; `honest` says that every unflagged run was
    within the tolerance and every flagged run's interval held the truth (the tool said
    when it could not be trusted)."""
    rows = []
    former = {"alpha": ("former_hockney", "alpha"), "beta": ("former_hockney", "beta"),
              "L": ("former_loggp", "L"), "G": ("former_loggp", "G")}
    for name, model in (("alpha", "hockney"), ("beta", "hockney"), ("L", "loggp"), ("G", "loggp")):
        vals, truths, errs, flags, covers, olds = [], [], [], [], 0, []
        flagged_cover = True
        for r in res["runs"]:
            p = (r.get(model) or {}).get(name)
            if not isinstance(p, dict):
                continue
            t = run_truth(res, r, name)
            v = float(p["value"])
            # launches_disagree says one launch alone would have misreported, and
            # launches_set_aside that a launch's floor was set aside: not flaws of the
            # launch-level figure (its interval is the kept launches')
            fl = [f for f in str(p.get("flags") or "").split(",")
                  if f and f not in ("launches_disagree", "launches_set_aside")]
            inside = p["lo"] <= t <= p["hi"]
            vals.append(v)
            truths.append(t)
            errs.append(v / t - 1)
            flags.append(fl)
            covers += inside
            if fl and not inside:
                flagged_cover = False
            fm = r.get(former[name][0]) or {}
            if former[name][1] in fm:
                olds.append(float(fm[former[name][1]]) / t - 1)
        n = len(vals)
        good = [e for e, f in zip(errs, flags, strict=True) if not f]
        nflag = sum(1 for f in flags if f)
        within = bool(vals) and max(abs(e) for e in errs) <= FIT_TOL[name]
        rows.append({"param": name, "truth": float(res["truth"][name]), "truths": truths,
                     "values": vals, "errors": errs, "flags": flags, "flagged": nflag,
                     "cover": covers, "n": n, "former_errors": olds,
                     "met": within and nflag == 0 and covers >= FIT_COVER_TARGET * n,
                     "honest": (bool(vals) and all(abs(e) <= FIT_TOL[name] for e in good)
                                and flagged_cover)})
    return rows


def print_link_rows(rows: list[dict[str, Any]]) -> None:
    print(f"{'param':<6} {'true (run 1)':>13} {'recovered (per run; * = flagged)':<48} "
          f"{'worst':>8} {'flagged':>7} {'CI covers':>9}  {'former worst':>12}  target")
    for r in rows:
        vals = " ".join(_param_fmt(r["param"], v) + ("*" if f else "")
                        for v, f in zip(r["values"], r["flags"], strict=True))
        worst = max(r["errors"], key=abs) if r["errors"] else float("nan")
        fw = max(r["former_errors"], key=abs) if r["former_errors"] else float("nan")
        t0 = r["truths"][0] if r["truths"] else r["truth"]
        verdict = ("met" if r["met"] else
                   "MISSED (flagged runs honest)" if r["honest"] and r["flagged"] else "MISSED")
        print(f"{r['param']:<6} {_param_fmt(r['param'], t0):>13} {vals:<48} "
              f"{worst * 100:+7.2f}% {r['flagged']:>3}/{r['n']:<3} {r['cover']:>4}/{r['n']:<4}  "
              f"{fw * 100:+11.2f}%  {verdict}")


def _run(args: argparse.Namespace) -> int:
    if args.syncs < 1 or args.syncs > 10000:
        raise MpilabError(f"--syncs {args.syncs}: expected 1..10000")
    if args.trials < 1 or args.trials > 1000:
        raise MpilabError(f"--trials {args.trials}: expected 1..1000")
    if args.testbed:
        import os

        from mpilab import units
        from mpilab.testbed.spec import PREFIX_RE

        if os.geteuid() != 0:
            raise MpilabError("--testbed needs root (network namespaces)")
        for opt, val, parse in (("--delay", args.delay, units.parse_duration),
                                ("--rate", args.rate, units.parse_rate)):
            try:
                parse(val)
            except (ValueError, MpilabError) as e:
                raise MpilabError(f"{opt} {val}: {e}") from None
        if args.runs < 1 or args.runs > 100:
            raise MpilabError(f"--runs {args.runs}: expected 1..100")
        if args.min_reps is not None and not 1 <= args.min_reps <= 100000:
            raise MpilabError(f"--min-reps {args.min_reps}: expected 1..100000")
        if not 1 <= args.launches <= 100:
            raise MpilabError(f"--launches {args.launches}: expected 1..100")
        try:
            units.parse_size_list(args.sizes)
        except (ValueError, MpilabError) as e:
            raise MpilabError(f"--sizes {args.sizes}: {e}") from None
        if args.prefix is None:
            args.prefix = os.environ.get("MPILAB_TESTBED_PREFIX") or "st"
        if not PREFIX_RE.match(args.prefix):
            raise MpilabError(f"--prefix {args.prefix!r}: must be 1-6 characters a-z0-9, "
                              "starting with a letter")
    if args.json:
        check_output(args.json)  # refused before the minutes of measuring, not after
    tool = find_tool(TOOL)
    # the launcher of the MPI the tool is built with (or --launcher), as every command uses
    lr = launch.choose(tool, args.launcher, args.launcher_arg)
    np = launch.resolve_np(lr, args.np, 4)
    if np < 2:
        raise MpilabError(f"--np {np}: the clock self-test needs at least 2 ranks")
    report: dict[str, Any] = {"clock": [], "fit": []}
    ok = True
    with tempfile.TemporaryDirectory(prefix="mpilab-selftest-") as tmp:
        out = Path(tmp) / "out.json"
        print(f"clock synchronisation, {np} ranks on this node, {args.syncs} syncs each "
              f"(target: |error| <= 5 us and inside the reported uncertainty in >= 95%)")
        print(f"{'method':<11} {'injected':<34} {'inside':>9} {'median|err|':>12} {'max|err|':>11} "
              f"{'median unc':>11} {'precise':>9} {'max|err| precise':>16}  target")
        for method in ("skampi", "regression"):
            for inject in (args.inject, "none"):
                cmd = [tool, "clock", "--inject", inject, "--syncs", str(args.syncs),
                       "--sync", method, "--out", str(out)]
                _tool_run(lr.command(np) + cmd, timeout=600, env=lr.env(np))
                data = _load(out)
                row = clock_rows(data, inject)
                report["clock"].append({**row, "checks": data.get("checks", [])})
                ok &= row["met"]
                print(f"{row['method']:<11} {inject:<34} {row['inside']:>4}/{row['n']:<4} "
                      f"{_fmt_t(row['median_err_s']):>12} {_fmt_t(row['max_err_s']):>11} "
                      f"{_fmt_t(row['median_unc_s']):>11} {row['precise']:>4}/{row['n']:<4} "
                      f"{_fmt_t(row['max_err_precise_s']):>16}  "
                      f"{_verdict(row)}")
                line = imprecise_line(row["imprecise_ends"])
                if line:
                    print(line)
        _tool_run(lr.command(1) + [tool, "fit", "--trials", str(args.trials), "--out", str(out)],
                  timeout=600, env=lr.env(1))
        fit = _load(out)
    rows = fit_rows(fit)
    report["fit"] = rows
    print(f"\nmodel fits on synthetic samples of known links ({args.trials} data sets each, "
          "half the samples delayed as on a busy machine)")
    print(f"{'link':<16} {'1000x':<6} {'param':<6} {'true':>13} {'recovered':>13} {'worst':>8} "
          f"{'CI covers':>9}  {'median-LSQ':>10}  target")
    for r in rows:
        ok &= r["met"]
        old = "-" if r["old_worst_rel"] is None else f"{r['old_worst_rel'] * 100:+.1f}%"
        print(f"{r['link']:<16} {'yes' if r['outliers'] else 'no':<6} {r['param']:<6} "
              f"{_param_fmt(r['param'], r['truth']):>13} {_param_fmt(r['param'], r['median']):>13} "
              f"{r['worst_rel'] * 100:7.2f}% {r['cover']:>4}/{r['n']:<4}  {old:>10}  "
              f"{'met' if r['met'] else 'MISSED'}")
    print("\n(median-LSQ: the worst error of the former estimator, least squares on per-size "
          "medians, on the same data)")
    if args.json:
        atomic_write_text(args.json, json.dumps(report, indent=1) + "\n")
    if args.testbed:
        with tempfile.TemporaryDirectory(prefix="mpilab-selftest-tb-") as tmp:
            res = testbed_link(args.prefix, args.delay, args.rate, args.runs, args.sizes,
                               Path(tmp), min_reps=args.min_reps, launches=args.launches)
        lrows = link_rows(res)
        report["testbed"] = {**res, "rows": lrows}
        print(f"\nmodel fits on the testbed: 2 sites, WAN {args.delay} one-way at {args.rate}, "
              f"{args.runs} run(s) of {args.launches} launch(es); truth measured, not assumed: "
              f"{res['truth_method']} "
              f"(ping: the delayed link adds {res['icmp_added_s'] * 1e6:.1f} us one way, "
              f"{res['icmp_lone_added_s'] * 1e6:.1f} us to a lone packet; configured "
              f"{res['delay_s'] * 1e6:.1f} us)")
        print_link_rows(lrows)
        ok &= all(r["met"] for r in lrows)
        lone = lone_delay_row(res)
        report["testbed"]["lone_delay"] = lone
        if lone is not None:
            print_lone_row(lone, res.get("delay_truth_at_up"))
            ok &= bool(lone["held"])
        if args.json:
            atomic_write_text(args.json, json.dumps(report, indent=1) + "\n")
    print("self-test: all targets met" if ok else "self-test: some targets MISSED (see above)")
    return 0 if ok else 1


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("selftest",
                       help="check clock synchronisation and model fits against known truth",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=argtypes.count, default=None,
                   help="ranks of the clock run (default 4; under srun the allocation's)")
    launch.add_options(p)
    p.add_argument("--syncs", type=argtypes.count, default=20,
                   help="synchronisations per method (default 20)")
    p.add_argument("--inject", default="offset=10ms,drift=100ppm,seed=1",
                   help="injected clock errors (default offset=10ms,drift=100ppm,seed=1)")
    p.add_argument("--trials", type=argtypes.count, default=10,
                   help="synthetic data sets per link (default 10)")
    p.add_argument("--json", help="also write everything measured to this JSON file")
    p.add_argument("--testbed", action="store_true",
                   help="also fit a real emulated link (needs root): see --delay, --rate")
    p.add_argument("--delay", default="2ms", help="testbed WAN one-way delay (default 2ms)")
    p.add_argument("--rate", default="100Mbit", help="testbed WAN rate (default 100Mbit)")
    p.add_argument("--runs", type=argtypes.count, default=1, help="testbed runs (default 1)")
    p.add_argument("--launches", type=argtypes.count, default=3,
                   help="launches per testbed run, merged into a launch-level figure and "
                        "interval as mpilab bench does (default 3)")
    p.add_argument("--sizes", default="0,1K,2K,4K,8K,16K,32K,64K,128K,256K,512K,1M,2M",
                   help="message sizes on the testbed")
    p.add_argument("--min-reps", type=argtypes.count, default=None,
                   help="least round trips per size on the testbed (default: the tool's)")
    p.add_argument("--prefix", default=None,
                   help="testbed name prefix (default $MPILAB_TESTBED_PREFIX or st)")
    p.set_defaults(func=_run)
