#!/usr/bin/env python3
"""Model sizes against a shaped WAN's truth: the default `mpilab bench -- --ops p2p --models
hockney,loggp` on a 2-site testbed whose WAN is delayed and shaped (default 2 ms one-way,
100 Mbit/s), N runs; per run the sizes the model-size extension added and why it stopped,
Hockney beta and LogGP G against the TCP payload rate of the shaped link (8/rate x
1514/1448 s per byte), whether each interval holds it (as reported, and G's as fitted before
`mpilab bench` widened its fast end for retransmissions), the wall time, and the share of TCP
segments the testbed's nodes sent again, counted here (`retrans`) and as `mpilab bench`
recorded it in provenance.tcp (`bench`): a stream that loses segments at the shaper's queue
runs below its rate. `--stream S` adds per run an
iperf3 stream of S seconds between the two nodes, and judges G against the time per byte
that stream was delivered at as well. `--fixed` adds, per
run, the same command with `--model-sizes fixed` (the default list alone, up to 64 KiB)
beside it. Needs root; brings the testbed up and down itself (`--keep` leaves it up,
`--prefix` of a running one with the same delay and rate is reused).

Example: MPILAB_BIN=build/bin python3 bench/model_sizes_wan.py --runs 3 --fixed
Target: beta and G within 5% of the rate, their intervals holding it in 9 of 10 runs.
A run stopped by SIGTERM (a bench slot's end) still prints the runs done so far.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import env, loadavg, mpilab_cmd, testbed_down, testbed_up
from mpilab.errors import MpilabError
from mpilab.testbed import net
from mpilab.units import parse_rate


def truth_s_per_byte(rate_bps: float) -> float:
    """The TCP payload time per byte of a link shaped to rate_bps (1448 payload bytes in a
    1514-byte frame)."""
    return 8.0 / rate_bps * 1514.0 / 1448.0


def judge(q: dict[str, Any], value: float, truth: float) -> dict[str, Any]:
    """The estimate's error against truth and whether its interval holds it: as reported
    (widened for retransmissions by mpilab bench) and as the fit measured it."""
    lo, hi = q.get("lo"), q.get("hi")
    lo_m = q.get("lo_measured", lo)
    nums = all(isinstance(x, float | int) for x in (lo, hi, lo_m))
    return {"err": value / truth - 1.0, "holds": bool(nums and lo <= truth <= hi),
            "holds_measured": bool(nums and lo_m <= truth <= hi),
            "flags": list(q.get("flags") or [])}


def tcp_counters(prefix: str) -> dict[str, int]:
    """TcpOutSegs and TcpRetransSegs summed over the testbed's node namespaces (nstat -az:
    absolute values, the history file untouched)."""
    tot = {"TcpOutSegs": 0, "TcpRetransSegs": 0}
    for ns in net.current_spec(prefix).namespaces():
        p = subprocess.run(["ip", "netns", "exec", ns, "nstat", "-az", "--json", *tot],
                           capture_output=True, text=True, check=False)
        if p.returncode != 0:
            continue
        for k, v in (json.loads(p.stdout).get("kernel") or {}).items():
            if k in tot:
                tot[k] += int(v)
    return tot


def stream_s_per_byte(prefix: str, seconds: float) -> dict[str, Any]:
    """iperf3 (the standard TCP stream test) from s0n0 to s1n0 for `seconds`: the time per
    byte the shaped path delivers to a stream (received bytes over the receiver's time) and
    the stream's retransmitted segments (its first second, slow start, left out)."""
    spec = net.current_spec(prefix)
    port = "5299"
    srv = subprocess.Popen(["ip", "netns", "exec", spec.ns("s1n0"), "iperf3", "-s", "-1", "-p",
                            port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        p = subprocess.run(["ip", "netns", "exec", spec.ns("s0n0"), "iperf3", "-c",
                            spec.addr("s1n0", 0), "-p", port, "-t", f"{seconds:g}", "-O", "1",
                            "-J"],
                           capture_output=True, text=True, timeout=seconds + 31, check=False)
    finally:
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]}
    end = json.loads(p.stdout)["end"]
    recv = end["sum_received"]
    return {"s_per_byte": recv["seconds"] / recv["bytes"],
            "retransmits": end["sum_sent"].get("retransmits")}


def one_run(prefix: str, mode: str, out: Path, timeout: float) -> dict[str, Any]:
    cmd = mpilab_cmd("bench", "--testbed", prefix, "--launches", "1", "--variation-store", "none",
                     "--out", str(out), "--", "--ops", "p2p", "--models", "hockney,loggp",
                     "--model-sizes", mode)
    c0 = tcp_counters(prefix)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=timeout, check=False)
    wall = time.monotonic() - t0
    c1 = tcp_counters(prefix)
    segs = c1["TcpOutSegs"] - c0["TcpOutSegs"]
    retrans = (c1["TcpRetransSegs"] - c0["TcpRetransSegs"]) / segs if segs > 0 else None
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        return {"mode": mode, "wall_s": wall, "error": last}
    doc = json.loads(out.read_text())
    opt = doc["provenance"]["options"]
    ext = (opt.get("model_sizes") or {}).get("entries") or [{}]
    h = doc["models"]["hockney"]["pairs"][0]
    g = doc["models"]["loggp"]["pairs"][0]
    return {"mode": mode, "wall_s": wall, "sizes": [m["bytes"] for m in doc["measurements"]],
            "state": ext[0].get("state", "-"), "beta": h["beta"], "beta_q": h["quality"]["beta"],
            "G": g["G"], "G_q": g["quality"]["G"],
            "loggp_wall_s": doc["models"]["loggp"].get("wall_s"), "retrans": retrans,
            "tcp": doc["provenance"].get("tcp")}


def show(rows: list[dict[str, Any]], truth: float) -> None:
    print(f"{'run':>3} {'sizes':<10} {'largest':>8} {'stop':<9} {'beta err':>9} {'holds':>5} "
          f"{'G err':>8} {'holds':>5} {'as fit':>6} {'wall s':>7} {'retrans':>8} {'bench':>7}")
    counts: dict[str, list[int]] = {}
    measured: dict[str, int] = {}
    for r in rows:
        k = r["run"]
        if "error" in r:
            print(f"{k:>3} {r['mode']:<10} failed: {r['error']}")
            continue
        b, g = judge(r["beta_q"], r["beta"], truth), judge(r["G_q"], r["G"], truth)
        c = counts.setdefault(r["mode"], [0, 0, 0, 0, 0])
        c[0] += 1
        c[1] += abs(b["err"]) <= 0.05 and b["holds"]
        c[2] += abs(g["err"]) <= 0.05 and g["holds"]
        c[3] += abs(b["err"]) <= 0.05
        c[4] += abs(g["err"]) <= 0.05
        measured[r["mode"]] = measured.get(r["mode"], 0) + (abs(g["err"]) <= 0.05
                                                            and g["holds_measured"])
        fr = (r.get("tcp") or {}).get("retrans_fraction")
        print(f"{k:>3} {r['mode']:<10} {max(r['sizes']):>8} {r['state']:<9} "
              f"{b['err'] * 100:+8.2f}% "
              f"{'yes' if b['holds'] else 'no':>5} {g['err'] * 100:+7.2f}% "
              f"{'yes' if g['holds'] else 'no':>5} "
              f"{'yes' if g['holds_measured'] else 'no':>6} {r['wall_s']:7.1f} "
              + (f"{r['retrans'] * 100:7.3f}%" if r.get("retrans") is not None else "       -")
              + (f" {fr * 100:6.3f}%" if isinstance(fr, float | int) else "       -"))
    for mode, c in counts.items():
        print(f"{mode}: {c[0]} runs; beta within 5% in {c[3]}, and its interval holding the "
              f"truth as well in {c[1]}; G within 5% in {c[4]}, with the interval in {c[2]} "
              f"(the interval as fitted, before the widening for retransmissions: "
              f"{measured.get(mode, 0)})")
    streams = [r for r in rows if "error" not in r and "s_per_byte" in (r.get("stream") or {})]
    if streams:
        print("G beside the rate the path delivers to an iperf3 stream (same run):")
        held = 0
        for r in streams:
            st = r["stream"]
            g = judge(r["G_q"], r["G"], st["s_per_byte"])
            held += g["holds"]
            print(f"  run {r['run']}: stream {st['s_per_byte'] * 1e9:.2f} ns/B "
                  f"({(st['s_per_byte'] / truth - 1) * 100:+.2f}% of the rate's, "
                  f"{st.get('retransmits')} retransmits); G {g['err'] * 100:+.2f}% of it, "
                  f"interval {'holds' if g['holds'] else 'misses'} it")
        print(f"  G's interval holds the stream's rate in {held} of {len(streams)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay", default="2ms", help="WAN one-way delay (default 2ms)")
    ap.add_argument("--rate", default="100Mbit", help="WAN rate per node (default 100Mbit)")
    ap.add_argument("--prefix", default="msw", help="testbed name prefix (default msw)")
    ap.add_argument("--runs", type=int, default=3, help="runs of the default (default 3)")
    ap.add_argument("--fixed", action="store_true",
                    help="also the default list alone (--model-sizes fixed) in every run")
    ap.add_argument("--keep", action="store_true", help="leave the testbed up")
    ap.add_argument("--json", default=None, help="write the runs here")
    ap.add_argument("--stream", type=float, default=0.0, metavar="S",
                    help="also an iperf3 stream of S seconds per run: G beside the rate the "
                    "path delivers to a stream (default 0: none)")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    try:
        rate = parse_rate(a.rate)
    except ValueError as e:
        ap.error(f"--rate: {e}")
    truth = truth_s_per_byte(rate)
    print(f"load at start: {loadavg()}; WAN {a.delay} one-way, {a.rate}; truth "
          f"{truth * 1e9:.2f} ns/B", flush=True)
    rows: list[dict[str, Any]] = []

    def stop(_sig: int, _frm: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    work = Path(tempfile.mkdtemp(prefix="model-sizes-"))
    try:
        net.current_spec(a.prefix)
        up = False
    except MpilabError:
        up = True
    try:
        if up:
            spec = work / "wan.toml"
            spec.write_text(f'prefix = "{a.prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 1\n'
                            f'[wan]\nnode_rate = "{a.rate}"\ntotal_rate = "{a.rate}"\n'
                            f'delay = "{a.delay}"\n')
            testbed_up(a.prefix, spec)
        for k in range(a.runs):
            for mode in ("extend", "fixed") if a.fixed else ("extend",):
                r = one_run(a.prefix, mode, work / f"run{k}-{mode}.json", 1200)
                if a.stream > 0 and "error" not in r:
                    r["stream"] = stream_s_per_byte(a.prefix, a.stream)
                rows.append(r | {"run": k})
                print(f"run {k} {mode}: {rows[-1].get('wall_s', 0):.0f} s", flush=True)
    except KeyboardInterrupt:
        print("stopped: the runs done so far", flush=True)
    finally:
        if up and not a.keep:
            testbed_down(a.prefix)
    show(rows, truth)
    if a.json:
        Path(a.json).write_text(json.dumps({"truth_s_per_byte": truth, "runs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
