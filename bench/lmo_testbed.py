#!/usr/bin/env python3
"""The LMO model on an emulated heterogeneous testbed, against its configured values.

Brings up examples/testbed/lmo-hetero4.toml (or --spec) under its own prefix (default
"lmo"), measures independently what the model should find (ping round trips of every
pair; the CPU-limited node's slowdown on a fixed CPU loop), runs `mpilab bench --testbed
PREFIX --np N -- --ops p2p,scatter:linear,gather:linear,scatter:binomial,gather:binomial
--sizes ... --models lmo,hockney --lmo-bytes M`, brings the testbed down and prints:

* per link i-j: the fitted L_ij against the configured one-way latency (d_i + d_j) / 2
  (the testbed delays the packets node i sends by d_i, so a round trip carries d_i + d_j)
  and against half the pair's ping round trip (the same plus what the kernel, the bridges
  and the delay lines add); the path's time per byte path_inv_beta = t_i + t_j + 1/beta_ij
  (raw) against the configured rate of the slower access link, as TCP payload:
  8 / rate x 1514 / 1448 (an MTU-1500 frame of 1514 bytes on the shaper carries 1448 bytes
  of payload with TCP timestamps), and the link's own 1/beta_ij (on a star it has no
  configured value: the residual, docs/models-lmo.md "What the model identifies on a star");
* per node: C_i and t_i; t_i against the node's own access link (8 / rate_i, payload),
  which it equals only where that link is the bottleneck of the node's triplets; the
  CPU-limited node's C_i against the other nodes' median C times the measured slowdown of
  a fixed CPU loop inside its cpu group (an estimate, not a configured value: a quota has
  no per-message delay of its own);
* with a spec whose nodes have message costs (`[[node]] msg_cost`,
  examples/testbed/lmo-hetero4-cost.toml: libmpilab_msgcost.so spends that CPU time per
  message in those nodes' ranks): C_i against the configured cost plus the MPI's own C (the
  median C of the nodes with neither a cost nor a quota), for a node with a CPU quota as
  well against the range that CPU time takes under the quota (quota_stretch), and whether
  the node the fit names slowest at messaging (models.lmo.slowest.cpu) is the CPU-limited
  one;
* the slowest node, link and path as the fit names them, and Hockney's per-pair alpha and
  beta from the same run (one number per pair: it cannot say whether the node or the link
  is slow);
* the LMO and Hockney predictions of the collectives against measured at >= --min-bytes
  per rank.

* where the ranks ran (session, cpu cgroup, autogroup of every mpilab-bench process) and
  the limited node's throttling (cpu.stat); the LMO round trips against ping and every
  point-to-two experiment against the larger of its two round trips (medians and minima):
  scheduling delays inflate both, TCP would inflate only point-to-two.

--p2p-schedule sequential runs the experiments one group at a time; --lmo-wait sleep[:D]
makes the ranks sleep between tests of their requests instead of spinning (4 ranks on 2
CPUs: a spinning rank holds a CPU about 1 ms per turn while the rank a message is for
waits); --ops chooses the
operations (`--ops p2p --sizes 1K,64K` for the experiments alone); --set TABLE.KEY=VALUE
runs on a copy of the spec with a key added (cluster.shared_cpu_group=false: the ranks in
the root cpu group, each node's in an autogroup of its own, as before the shared group).
--eager B raises Open MPI's TCP eager limit to B (OMPI_MCA_btl_tcp_eager_limit, and
--lmo-rendezvous B for the predictions); default: Open MPI's own (64 KiB messages go by
rendezvous, docs/models-lmo.md "Predictions"). Needs root, the default build (mpilab-bench,
mpilab-delayline) and Open MPI. --lmo-eps passes mpilab-bench's precision of the LMO
experiments on (C_i is a difference of two medians); --isolation sync starts every rank of
a collective at one instant of the synchronised clocks, as the predictions assume;
--no-msg-cost runs a copy of the spec without its message costs (its C_i are the MPI's
own) and --baseline-c US adds such a value to every msg_cost for the configured C
(examples/testbed/lmo-hetero4-wall.toml, docs/models-lmo.md "On an emulated testbed"). Run it in a
bench slot:
    /work/shared/tools/mlock bench python3 bench/lmo_testbed.py [--eager 4194304]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import harness
from harness import REPO, loadavg, mpilab, testbed_down, testbed_up, write_json
from mpilab.testbed import net
from mpilab.testbed.spec import Spec

FRAME, PAYLOAD = 1514, 1448  # bytes on the shaper per full TCP segment, and its payload
OPS = "p2p,scatter:linear,gather:linear,scatter:binomial,gather:binomial"
CPU_LOOP = "import time\nt=time.perf_counter()\nx=0\nfor i in range(3000000): x+=i\n" \
           "print(time.perf_counter()-t)"



def _link_name(sl: dict[str, object]) -> str:
    """models.lmo.slowest's link: a pair, or on a star node k's access link (link_of)."""
    if sl.get("link_by") == "star":
        return f"node {sl.get('link_of')}'s access link"
    return str(sl.get("link"))

def ping_rtts(spec: Spec, a: str, b: str, count: int) -> list[float]:
    """Round trips a -> b (seconds) of `count` pings 20 ms apart, from a's namespace."""
    p = subprocess.run(["ip", "netns", "exec", spec.ns(a), "ping", "-n", "-c", str(count),
                        "-i", "0.02", "-W", "2", spec.addr(b, 0)],
                       capture_output=True, text=True, timeout=60, check=False)
    return [float(m) / 1e3 for m in re.findall(r"time=([0-9.]+) ms", p.stdout)]


def cpu_loop(spec: Spec, node: str, limited: bool) -> float:
    """Wall time of a fixed CPU loop in the node's namespace, inside its cpu group when
    `limited` (as the testbed's agent starts its ranks), else outside."""
    # join the group before entering the namespace (ip netns exec mounts a fresh /sys, which
    # hides the cgroup folders), as the testbed's agent does
    join = (f'echo $$ > {net.cpu_cgroup(spec.prefix, node) / "cgroup.procs"} && '
            if limited else "")
    p = subprocess.run(["sh", "-c", f'{join}exec ip netns exec "$1" python3 -c "$0"', CPU_LOOP,
                        spec.ns(node)], capture_output=True, text=True, timeout=120, check=True)
    return float(p.stdout.strip())


def independent(spec: Spec, pings: int) -> dict[str, Any]:
    nodes = spec.node_names()
    out: dict[str, Any] = {"ping": {}, "cpu": {}}
    for i in range(len(nodes)):
        for j in range(i + 1, len(nodes)):
            r = ping_rtts(spec, nodes[i], nodes[j], pings)
            out["ping"][f"{i}-{j}"] = statistics.median(r[1:]) if len(r) > 1 else None
    for lim in spec.node_limits:
        other = next(n for n in nodes if spec.cpu_limit(n) is None)
        inside = [cpu_loop(spec, lim.name, True) for _ in range(3)]
        outside = [cpu_loop(spec, other, False) for _ in range(3)]
        out["cpu"][lim.name] = {"inside": inside, "outside": outside,
                                "slowdown": statistics.median(inside)
                                / statistics.median(outside)}
    return out


def run_bench(prefix: str, np: int, a: argparse.Namespace, out: Path,
              places: list[dict[str, Any]]) -> dict[str, Any]:
    extra: list[str] = ["--p2p-schedule", a.p2p_schedule, "--lmo-wait", a.lmo_wait]
    if a.idle_poll:
        extra.append("--idle-poll")
    if a.lmo_eps is not None:
        extra += ["--lmo-eps", repr(a.lmo_eps)]
    if a.isolation:
        extra += ["--isolation", a.isolation]
    if a.eager is not None:
        os.environ["OMPI_MCA_btl_tcp_eager_limit"] = str(a.eager)
        extra += ["--lmo-rendezvous", str(a.eager)]
    lines = [int(x) for x in (net.load_state(prefix) or {}).get("delayline_pids") or []]
    cpu0, t0 = [_cpu_s(pid) for pid in lines], time.monotonic()
    with PlaceSampler() as ps:
        p = mpilab("bench", "--testbed", prefix, "--np", str(np), "--out", str(out), "--",
                   "--ops", a.ops, "--sizes", a.sizes, "--models", "lmo,hockney",
                   "--lmo-bytes", a.lmo_bytes, "--time-budget", a.time_budget, *extra,
                   "--quiet", capture=True, timeout=900, check=False)
    wall = time.monotonic() - t0
    places[:] = ps.places
    # the delay lines' share of a CPU during the job (they spin before each release)
    places.append({"delay_line_cpu_share": [round((_cpu_s(pid) - c) / wall, 3)
                                            for pid, c in zip(lines, cpu0, strict=True)]})
    if p.returncode != 0:  # say why (the runner's own lines), then use what was measured
        print(f"mpilab bench exited with status {p.returncode}:", file=sys.stderr)
        sys.stderr.write("".join((p.stdout + p.stderr).splitlines(keepends=True)[-40:]))
        if not out.exists():
            raise SystemExit("lmo_testbed: no results file")
    return json.loads(out.read_text())


# ---- diagnosis: where the ranks run, round trips against ping, point-to-two against
# round trips.
# Why: the first run on examples/testbed/lmo-hetero4.toml gave every node a fixed delay C of
# 1.7-4.7 ms; its round trips had medians of 9-12 ms against pings of 3-7 ms (their minima
# were the pings). Two causes were open: the machine (ranks that poll, waiting for a CPU) or
# TCP (two messages leaving one node at once). These tables tell them apart: TCP would make
# point-to-two slower than its round trips but leave the round trips at the ping; scheduling
# inflates both, and the floor (minimum) of every experiment stays at the configured delays.

def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of process pid so far (0 when it is gone)."""
    f = _read(f"/proc/{pid}/stat").rsplit(")", 1)[-1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK") if len(f) > 12 else 0.0


def _switches(pid: int) -> list[int]:
    """[voluntary, involuntary] context switches of process pid so far."""
    st = dict(ln.split(":", 1) for ln in _read(f"/proc/{pid}/status").splitlines() if ":" in ln)
    return [int(st.get(k, "0").strip() or 0) for k in ("voluntary_ctxt_switches",
                                                        "nonvoluntary_ctxt_switches")]


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def rank_places() -> list[dict[str, Any]]:
    """Every running mpilab-bench process: pid, session, cpu cgroup, autogroup."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or _read(f"/proc/{d}/comm").strip() != "mpilab-bench":
            continue
        stat = _read(f"/proc/{d}/stat")
        fields = stat.rsplit(")", 1)[-1].split()
        cpu = next((ln.split(":", 2)[2] for ln in _read(f"/proc/{d}/cgroup").splitlines()
                    if ln.split(":")[1:2] and "cpu" in ln.split(":")[1].split(",")), "?")
        out.append({"pid": int(d), "session": int(fields[3]) if len(fields) > 3 else None,
                    "cpu_cgroup": cpu, "autogroup": _read(f"/proc/{d}/autogroup").split()[0:1]})
    return out


class PlaceSampler:
    """Samples rank_places() once, a few seconds into the job (a thread)."""

    def __init__(self, after_s: float = 5.0) -> None:
        self.places: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, args=(after_s,), daemon=True)

    def _run(self, after_s: float) -> None:
        t_end = time.monotonic() + 60
        if self._stop.wait(after_s):
            return
        while not self.places and time.monotonic() < t_end and not self._stop.is_set():
            self.places = rank_places()
            self._stop.wait(0.5)
        # context switches per second over 2 s: sched_yield that hands the CPU over counts
        # as an involuntary switch; a few hundred per second is the 4 ms tick alone
        before = {p["pid"]: _switches(p["pid"]) for p in self.places}
        t0 = time.monotonic()
        if self._stop.wait(2.0):
            return
        dt = time.monotonic() - t0
        for p in self.places:
            b, e = before[p["pid"]], _switches(p["pid"])
            p["switches_per_s"] = [round((y - x) / dt) for x, y in zip(b, e, strict=True)]

    def __enter__(self) -> PlaceSampler:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join(timeout=2)


def _q(s: list[float], q: float) -> float:
    s = sorted(s)
    return s[min(len(s) - 1, int(q * len(s)))]


def _rt_index(ex: dict[str, Any]) -> dict[tuple[int, int], int]:
    return {(min(i, j), max(i, j)): k for k, (i, j) in enumerate(zip(ex["root"], ex["x"],
                                                                          strict=True))}


def schedule_tables(lm: dict[str, Any], ping: dict[str, float | None]) -> dict[str, Any]:
    """Round trips against ping, and point-to-two against its two round trips, at 0 bytes
    and M: medians and minima (us). Prints both tables; returns them with a summary."""
    ex = lm["experiments"]
    rows_rt, rows_p2t = [], []
    print(f"\n{'pair':>5} {'ping':>8} {'rt0 min':>8} {'rt0 p25':>8} {'rt0 med':>8} "
          f"{'med-ping':>9} {'rtM min':>8} {'rtM med':>8}   (us; rt: the LMO round trips)")
    for k, (i, j) in enumerate(zip(ex["rt_0"]["root"], ex["rt_0"]["x"], strict=True)):
        s0, sm = ex["rt_0"]["samples"][k], ex["rt_m"]["samples"][k]
        pg = ping.get(f"{min(i, j)}-{max(i, j)}")
        r = {"pair": [i, j], "ping": pg, "rt0_min": min(s0), "rt0_p25": _q(s0, 0.25),
             "rt0_med": statistics.median(s0), "rtM_min": min(sm),
             "rtM_med": statistics.median(sm)}
        rows_rt.append(r)
        ex_ping = "-" if pg is None else f"{(r['rt0_med'] - pg) * 1e6:9.0f}"
        print(f"{i:>2}-{j:<2} {(pg or 0) * 1e6:8.0f} {r['rt0_min'] * 1e6:8.0f} "
              f"{r['rt0_p25'] * 1e6:8.0f} {r['rt0_med'] * 1e6:8.0f} {ex_ping:>9} "
              f"{r['rtM_min'] * 1e6:8.0f} {r['rtM_med'] * 1e6:8.0f}")
    idx = _rt_index(ex["rt_0"])
    print(f"\n{'p2t':>8} {'p2t0 med':>9} {'maxrt0 med':>10} {'diff':>7} {'p2t0 min':>9} "
          f"{'maxrt0 min':>10} {'diff':>7} {'p2tM med':>9} {'maxrtM med':>10} {'diff':>7}"
          "   (us; point-to-two root -> x,y against the larger of its two round trips)")
    p0 = ex["p2t_0"]
    for e, (i, x, y) in enumerate(zip(p0["root"], p0["x"], p0["y"], strict=True)):
        kx, ky = idx[(min(i, x), max(i, x))], idx[(min(i, y), max(i, y))]
        r = {"root": i, "x": x, "y": y}
        for tag, p2t, rt in (("0", ex["p2t_0"], ex["rt_0"]), ("M", ex["p2t_m"], ex["rt_m"])):
            s = p2t["samples"][e]
            r[f"p2t{tag}_med"] = statistics.median(s)
            r[f"p2t{tag}_min"] = min(s)
            r[f"maxrt{tag}_med"] = max(statistics.median(rt["samples"][kx]),
                                      statistics.median(rt["samples"][ky]))
            r[f"maxrt{tag}_min"] = max(min(rt["samples"][kx]), min(rt["samples"][ky]))
        rows_p2t.append(r)
        print(f"{i}->{x},{y:<3} {r['p2t0_med'] * 1e6:9.0f} {r['maxrt0_med'] * 1e6:10.0f} "
              f"{(r['p2t0_med'] - r['maxrt0_med']) * 1e6:7.0f} {r['p2t0_min'] * 1e6:9.0f} "
              f"{r['maxrt0_min'] * 1e6:10.0f} {(r['p2t0_min'] - r['maxrt0_min']) * 1e6:7.0f} "
              f"{r['p2tM_med'] * 1e6:9.0f} {r['maxrtM_med'] * 1e6:10.0f} "
              f"{(r['p2tM_med'] - r['maxrtM_med']) * 1e6:7.0f}")
    summ = {
        "rt0_med_minus_ping_us": statistics.median(
            (r["rt0_med"] - r["ping"]) * 1e6 for r in rows_rt if r["ping"]),
        "rt0_min_minus_ping_us": statistics.median(
            (r["rt0_min"] - r["ping"]) * 1e6 for r in rows_rt if r["ping"]),
        "p2t0_med_minus_maxrt_us": statistics.median(
            (r["p2t0_med"] - r["maxrt0_med"]) * 1e6 for r in rows_p2t),
        "p2t0_min_minus_maxrt_min_us": statistics.median(
            (r["p2t0_min"] - r["maxrt0_min"]) * 1e6 for r in rows_p2t),
    }
    print("medians over pairs/experiments (us): rt0 median - ping "
          f"{summ['rt0_med_minus_ping_us']:.0f}, rt0 min - ping {summ['rt0_min_minus_ping_us']:.0f}"
          f"; p2t0 - max rt0: medians {summ['p2t0_med_minus_maxrt_us']:.0f}, minima "
          f"{summ['p2t0_min_minus_maxrt_min_us']:.0f}")
    return {"rt": rows_rt, "p2t": rows_p2t, "summary": summ}


def _rel(a: float | None, b: float | None) -> str:
    if a is None or not b:
        return "-"
    return f"{(a - b) / b * 100:+.2f}%"


def configured(spec: Spec) -> dict[str, Any]:
    nodes = spec.node_names()
    rate = [min(spec.link_rates(n, 0)) for n in nodes]
    delay = [spec.node_delay(n, 0) for n in nodes]
    return {"rate_bps": rate, "delay_s": delay,
            "own_inv_rate": [8.0 / r * FRAME / PAYLOAD for r in rate],
            "own_inv_rate_wire": [8.0 / r for r in rate],
            "cpu": {nodes.index(lim.name): lim.__dict__ for lim in spec.node_limits},
            "msg_cost": {nodes.index(n): c for n, c in spec.msg_costs.items()},
            "msg_cost_wall": sorted(nodes.index(n) for n in spec.msg_cost_wall)}


def quota_stretch(cost: float, quota: float, period: float) -> tuple[float, float]:
    """Wall time to spend `cost` s of CPU in a cpu group of `quota` CPUs per `period` s, as
    (least, most): starting with the period's whole runtime left, every further runtime's
    worth waits out the rest of a period; starting with none left, one whole wait more
    (a rank alone in its group, running whenever it is not throttled)."""
    run = quota * period
    waits = max(0, math.ceil(cost / run - 1e-9) - 1)
    least = cost + waits * (period - run)
    return least, least + (period - run)


def cost_table(lm: dict[str, Any], cf: dict[str, Any],
               baseline: float | None = None) -> dict[str, Any]:
    """The fitted C_i against the configured message costs: a node's configured C is its
    msg_cost (CPU time per message, libmpilab_msgcost.so) plus the MPI's own fixed cost:
    `baseline` (s; from a run of the same spec without costs) when given, else the median C
    of the nodes with neither a cost nor a CPU quota; a node with a
    quota as well spends that CPU time over the quota's periods (quota_stretch). And the
    node the fit names slowest at messaging (models.lmo.slowest.cpu) against the
    CPU-limited one."""
    costs, lims = cf.get("msg_cost") or {}, cf["cpu"]
    n = len(lm["nodes"])
    cs = [nd["C"]["value"] for nd in lm["nodes"]]
    plain = [cs[r] for r in range(n) if r not in costs and r not in lims]
    base = statistics.median(plain) if plain else 0.0
    if baseline is not None:
        base = baseline
    wall = set(cf.get("msg_cost_wall") or [])
    out: dict[str, Any] = {"baseline_C": base if plain or baseline is not None else None,
                           "rows": []}
    if costs and baseline is not None:
        print(f"\nConfigured C (msg_cost + the MPI's own C, {base * 1e6:.1f} us: --baseline-c, "
              "a run of this spec without its costs)")
    elif costs and plain:
        print(f"\nConfigured C (msg_cost + the MPI's own C, the median C of nodes "
              f"{[r for r in range(n) if r not in costs and r not in lims]}: "
              f"{base * 1e6:.1f} us)")
    elif costs:
        print("\nConfigured C (msg_cost alone: every node has a cost, so the MPI's own C, "
              "tens of us, is not added; a fit above by that much is right)")
    if costs:
        print(f"{'node':>4} {'msg_cost us':>11} {'clock':>5} {'quota':>6} {'C conf us':>16} "
              f"{'C fit us':>9} {'err':>8}  flags")
    for r in sorted(costs):
        c, lim = costs[r], lims.get(r)
        nd = lm["nodes"][r]
        if lim is None:
            lo = hi = c + base
            conf = f"{lo * 1e6:16.1f}"
            err = _rel(cs[r], lo)
        else:
            a, b = quota_stretch(c, lim["cpu_quota"], lim["cpu_period"])
            lo, hi = a + base, b + base
            conf = f"{lo * 1e6:7.0f}..{hi * 1e6:<7.0f}"
            err = "in" if lo <= cs[r] <= hi else _rel(cs[r], lo if cs[r] < lo else hi)
        clock = "wall" if r in wall else "cpu"
        out["rows"].append({"rank": r, "msg_cost": c, "quota": lim is not None, "clock": clock,
                            "C_conf_lo": lo, "C_conf_hi": hi, "C": cs[r],
                            "err": (None if lim else (cs[r] - lo) / lo),
                            "flags": nd["C"]["flags"]})
        q = f"{lim['cpu_quota']:g}" if lim else "-"
        print(f"{r:>4} {c * 1e6:11.1f} {clock:>5} {q:>6} {conf} {cs[r] * 1e6:9.1f} {err:>8}  "
              f"{' '.join(nd['C']['flags'])}")
    sl = lm.get("slowest") or {}
    named, limited = sl.get("cpu"), sorted(lims)
    out.update({"named_cpu": named, "cpu_vs_median": sl.get("cpu_vs_median"),
                "limited": limited, "largest_C": max(range(n), key=lambda k: cs[k])})
    if limited:
        ok = named in limited
        print(f"slowest at messaging (models.lmo.slowest.cpu): node {named} "
              f"({sl.get('cpu_vs_median')}x the median C); CPU-limited node(s) {limited}: "
              f"{'named' if ok else 'NOT named'}")
    elif costs:
        top = max(costs, key=lambda r: costs[r])
        out["largest_cost"] = top
        print(f"slowest at messaging (models.lmo.slowest.cpu): node {named} "
              f"({sl.get('cpu_vs_median')}x the median C); largest configured cost: node "
              f"{top}: {'named' if named == top else 'NOT named'}")
    return out


def compare(doc: dict[str, Any], spec: Spec, ind: dict[str, Any],
            min_bytes: int, baseline: float | None = None) -> dict[str, Any]:
    lm = (doc.get("models") or {}).get("lmo")
    if not isinstance(lm, dict) or lm.get("error"):
        raise SystemExit(f"lmo_testbed: no LMO fit in the results ({(lm or {}).get('error')})")
    cf = configured(spec)
    u, d = cf["own_inv_rate"], cf["delay_s"]
    rep: dict[str, Any] = {"configured": cf, "independent": ind, "links": [], "nodes": [],
                           "hockney": [], "predictions": []}
    paths = lm["links"].get("path_inv_beta") or [None] * len(lm["links"]["pairs"])
    print(f"{'link':>5} {'L conf us':>10} {'ping/2 us':>10} {'L fit us':>9} {'vs conf':>8} "
          f"{'vs ping':>8} {'path conf ns/B':>14} {'path fit':>9} {'err':>8} "
          f"{'1/beta raw ns/B':>15}")
    for k, (i, j) in enumerate(lm["links"]["pairs"]):
        L_c = (d[i] + d[j]) / 2
        pg = ind["ping"].get(f"{min(i, j)}-{max(i, j)}")
        half = None if pg is None else pg / 2
        pc = max(u[i], u[j])
        L, ib = lm["links"]["L"][k], lm["links"]["inv_beta"][k]
        row = {"pair": [i, j], "L_conf": L_c, "L_ping": half, "L": L["value"],
               "L_raw": L["raw"], "path_conf": pc, "path_inv_beta": paths[k],
               "inv_beta_raw": ib["raw"], "flags": L["flags"] + ib["flags"]}
        rep["links"].append(row)
        pth = "-" if paths[k] is None else f"{paths[k] * 1e9:9.2f}"
        hs = "-" if half is None else f"{half * 1e6:10.1f}"
        print(f"{i:>2}-{j:<2} {L_c * 1e6:10.1f} {hs:>10} "
              f"{L['value'] * 1e6:9.1f} {_rel(L['value'], L_c):>8} {_rel(L['value'], half):>8} "
              f"{pc * 1e9:14.2f} {pth:>9} {_rel(paths[k], pc):>8} {ib['raw'] * 1e9:15.2f} "
              f"{' '.join(row['flags'])}")
    cs = [n["C"]["raw"] for n in lm["nodes"]]
    print(f"\n{'node':>4} {'C fit us':>9} {'C raw us':>9} {'t fit ns/B':>10} {'t raw':>8} "
          f"{'own link ns/B':>13} {'t vs own':>9}  (t = own link only where that link is the "
          "bottleneck of the node's triplets)")
    for n in lm["nodes"]:
        r = n["rank"]
        rep["nodes"].append({"rank": r, "C": n["C"]["value"], "C_raw": n["C"]["raw"],
                             "t": n["t"]["value"], "t_raw": n["t"]["raw"], "own_link": u[r],
                             "flags": n["C"]["flags"] + n["t"]["flags"]})
        print(f"{r:>4} {n['C']['value'] * 1e6:9.1f} {n['C']['raw'] * 1e6:9.1f} "
              f"{n['t']['value'] * 1e9:10.2f} {n['t']['raw'] * 1e9:8.2f} {u[r] * 1e9:13.2f} "
              f"{_rel(n['t']['value'], u[r]):>9}  {' '.join(rep['nodes'][-1]['flags'])}")
    for r, lim in cf["cpu"].items():
        sd = ind["cpu"][lim["name"]]["slowdown"]
        others = statistics.median(c for k, c in enumerate(cs) if k != r)
        est = others * sd
        rep["cpu_node"] = {"rank": r, "slowdown": sd, "C_others_median": others,
                           "C_expected": est, "C": cs[r],
                           "largest_C": max(range(len(cs)), key=lambda k: cs[k])}
        print(f"CPU-limited node {r} ({lim['cpu_quota']:g} CPU per {lim['cpu_period'] * 1e3:g}"
              f" ms): a CPU loop ran {sd:.2f}x slower in its cpu group; C_{r} = "
              f"{cs[r] * 1e6:.1f} us against the other nodes' median {others * 1e6:.1f} us "
              f"x {sd:.2f} = {est * 1e6:.1f} us ({_rel(cs[r], est)}); largest C: node "
              f"{rep['cpu_node']['largest_C']}")
    rep["cost"] = cost_table(lm, cf, baseline)
    sl = lm.get("slowest") or {}
    rep["slowest"] = sl
    print(f"\nLMO names: slowest node {sl.get('node')} ({sl.get('node_vs_median')}x the "
          f"median), slowest link {_link_name(sl)} ({sl.get('link_vs_median')}x), slowest path "
          f"{sl.get('path')} ({sl.get('path_vs_median')}x)")
    hp = (doc["models"].get("hockney") or {}).get("pairs") or []
    print(f"\nHockney, the same run: {'pair':>5} {'alpha us':>9} {'beta ns/B':>10} "
          f"{'T(M) us':>9}  (one line per pair: node and link not separated)")
    mb = lm.get("bytes") or 65536
    for h in hp:
        t_m = h["alpha"] + h["beta"] * mb
        rep["hockney"].append({"pair": [h["i"], h["j"]], "alpha": h["alpha"], "beta": h["beta"],
                               "T_M": t_m})
        print(f"{'':22} {h['i']:>2}-{h['j']:<2} {h['alpha'] * 1e6:9.1f} {h['beta'] * 1e9:10.2f} "
              f"{t_m * 1e6:9.1f}")
    per_node = []
    for r in range(len(lm["nodes"])):
        mine = [h for h in hp if r in (h["i"], h["j"])]
        if mine:
            a = statistics.mean(h["alpha"] for h in mine)
            b = statistics.mean(h["beta"] for h in mine)
            per_node.append(f"{r}: alpha {a * 1e6:.0f} us, beta {b * 1e9:.1f} ns/B")
    if per_node:
        print("Hockney per node (the mean over the node's pairs): " + ", ".join(per_node))
    rep["star"] = star_table(lm, cf, ind)
    rep["schedule"] = schedule_tables(lm, ind["ping"])
    rep["predictions"] = harness.predictions(doc, lm, min_bytes)
    rep["summary"] = summary(rep)
    return rep


def _pair_shares(n: int, y: dict[tuple[int, int], float]) -> list[float]:
    """Least squares of y_ij = a_i + a_j over the pairs (n >= 3; the closed form of
    mpilab_lmo_star): a_i = (R_i - S) / (n - 2), R_i node i's sum, S = sum y / (n - 1)."""
    s = sum(y.values()) / (n - 1)
    return [(sum(v for k, v in y.items() if i in k) - s) / (n - 2) for i in range(n)]


def star_table(lm: dict[str, Any], cf: dict[str, Any], ind: dict[str, Any]) -> dict[str, Any]:
    """The fit's star view (models.lmo.star) against the testbed's access links: a_i against
    d_i / 2 (a round trip i <-> j carries d_i + d_j) and against the same decomposition of the
    pings; u_i against 8 / rate_i as payload; the slowest access link named against the one
    configured (largest d_i / 2 + M u_i)."""
    st = lm.get("star")
    if not isinstance(st, dict):
        print("\nno star view in the results (models.lmo.star: an older mpilab-bench)")
        return {}
    n, M = len(st["latency_s"]), float(lm.get("bytes") or 65536)
    d, u = cf["delay_s"], cf["own_inv_rate"]
    # a node's share of a round trip's fixed time holds its C: with a configured message
    # cost, d_i / 2 + the cost (a CPU-limited node's stretched cost has no single value:
    # left out of the largest error)
    cost, lims = cf.get("msg_cost") or {}, cf.get("cpu") or {}
    a_conf = [d[i] / 2 + cost.get(i, 0.0) for i in range(n)]
    loose = {i for i in cost if i in lims}
    pings = {(i, j): ind["ping"].get(f"{i}-{j}") for i in range(n) for j in range(i + 1, n)}
    ping_a = (_pair_shares(n, {k: v / 2 for k, v in pings.items()})
              if all(v for v in pings.values()) else [None] * n)
    rows = []
    print(f"\nAs a star (models.lmo.star: misfit of a_i + a_j {st['misfit_latency']:.2%}, of "
          f"max(u_i, u_j) {st['misfit_inv_rate']:.2%}; near 0 on a star)")
    if cost:
        print(f"(d/2: d_i / 2 + the node's msg_cost {sorted(cost)}; nodes {sorted(loose)} "
              "also CPU-limited: their cost is stretched, not compared)")
    print(f"{'node':>4} {'d/2 us':>8} {'ping a us':>9} {'a fit us':>9} {'vs d/2':>8} "
          f"{'vs ping':>8} {'own link ns/B':>13} {'u fit ns/B':>10} {'err':>8}")
    for i in range(n):
        a, ui = st["latency_s"][i], st["inv_rate"][i]
        r = {"rank": i, "a_conf": a_conf[i], "a_ping": ping_a[i], "a": a, "u_conf": u[i],
             "u": ui}
        rows.append(r)
        pa = "-" if ping_a[i] is None else f"{ping_a[i] * 1e6:9.1f}"
        print(f"{i:>4} {a_conf[i] * 1e6:8.1f} {pa:>9} {a * 1e6:9.1f} {_rel(a, a_conf[i]):>8} "
              f"{_rel(a, ping_a[i]):>8} {u[i] * 1e9:13.2f} {ui * 1e9:10.2f} {_rel(ui, u[i]):>8}")
    conf_cost = [d[i] / 2 + M * u[i] for i in range(n)]
    conf_slow = max(range(n), key=lambda i: conf_cost[i])
    named = st["slowest_link_of"]
    print(f"slowest access link: the fit names node {named}'s ({st['slowest_vs_median']:.2f}x the "
          f"median), configured: node {conf_slow}'s "
          f"({'correct' if named == conf_slow else 'WRONG'})")
    return {"rows": rows, "named": named, "configured": conf_slow,
            "misfit_latency": st["misfit_latency"], "misfit_inv_rate": st["misfit_inv_rate"],
            "a_max_err_conf": max(abs(r["a"] - r["a_conf"]) / r["a_conf"] for r in rows
                                  if r["rank"] not in loose),
            "a_max_err_ping": max((abs(r["a"] - r["a_ping"]) / r["a_ping"] for r in rows
                                   if r["a_ping"] and r["rank"] not in cost), default=None),
            "u_max_err": max(abs(r["u"] - r["u_conf"]) / r["u_conf"] for r in rows)}


def summary(rep: dict[str, Any]) -> dict[str, Any]:
    links, pe = rep["links"], rep["predictions"]
    s = {"L_max_err_conf": max(abs(r["L"] - r["L_conf"]) / r["L_conf"] for r in links),
         "L_max_err_ping": max((abs(r["L"] - r["L_ping"]) / r["L_ping"] for r in links
                                if r["L_ping"]), default=None),
         "path_max_err": max((abs(r["path_inv_beta"] - r["path_conf"]) / r["path_conf"]
                              for r in links if r["path_inv_beta"] is not None), default=None),
         **harness.prediction_counts(pe)}
    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.2%}"

    words = [f"L within 5% of configured: {s['L_max_err_conf'] <= 0.05} "
             f"(max {pct(s['L_max_err_conf'])})", f"of ping/2: max {pct(s['L_max_err_ping'])}",
             f"path 1/beta max error {pct(s['path_max_err'])}", harness.prediction_words(s)]
    ct = rep.get("cost") or {}
    plain = [r for r in ct.get("rows", []) if r["err"] is not None]
    if plain:
        s["C_max_err_conf"] = max(abs(r["err"]) for r in plain)
        words.append(f"C of the nodes with a msg_cost and no quota within "
                     f"{pct(s['C_max_err_conf'])} of configured")
    if ct.get("limited"):
        s["cpu_named"], s["named_cpu"] = ct["named_cpu"] in ct["limited"], ct["named_cpu"]
        words.append(f"slowest at messaging node {ct['named_cpu']} (CPU-limited "
                     f"{ct['limited']}: {'named' if s['cpu_named'] else 'not named'})")
    elif ct.get("largest_cost") is not None:
        s["cost_named"] = ct["named_cpu"] == ct["largest_cost"]
        s["named_cpu"] = ct["named_cpu"]
        words.append(f"slowest at messaging node {ct['named_cpu']} (largest configured cost "
                     f"node {ct['largest_cost']}: "
                     f"{'named' if s['cost_named'] else 'not named'})")
    st = rep.get("star") or {}
    if st:
        s["star"] = {k: st[k] for k in ("a_max_err_conf", "a_max_err_ping", "u_max_err",
                                        "named", "configured")}
        words.append(f"star: a_i max error {pct(st['a_max_err_conf'])} of d_i/2, "
                     f"{pct(st['a_max_err_ping'])} of the pings' a_i; u_i max error "
                     f"{pct(st['u_max_err'])}; slowest access link node {st['named']}'s "
                     f"(configured node {st['configured']}'s)")
    print("\n" + "; ".join(words))
    return s


def strip_msg_costs(text: str) -> str:
    """The spec's text without its message costs: every `msg_cost` and `msg_cost_clock`
    line dropped, and a [[node]] table left without a `cpu_quota` with it (a run of the
    same testbed whose fitted C_i are the MPI's own, the baseline of the configured C)."""
    head, *blocks = re.split(r"(?m)^(?=\[\[node\]\])", text)
    keep = [head]
    for b in blocks:
        b = re.sub(r"(?m)^\s*msg_cost(_clock)?\s*=.*\n?", "", b)
        if re.search(r"(?m)^\s*cpu_quota\s*=", b):
            keep.append(b)
    return "".join(keep)


def spec_copy(path: str, sets: list[str], no_costs: bool = False) -> str:
    """`path`, or a temporary copy with each TABLE.KEY=VALUE set (the key must not be in
    the file; the table must be) and, with no_costs, without its message costs; the copy
    is parsed like the original."""
    if not sets and not no_costs:
        return path
    text = Path(path).read_text()
    if no_costs:
        text = strip_msg_costs(text)
    for item in sets:
        m = re.fullmatch(r"(cluster|lan|wan)\.(\w+)=(.+)", item)
        if not m:
            raise ValueError(f"--set {item!r}: expected TABLE.KEY=VALUE (cluster, lan, wan)")
        table, key, value = m.groups()
        if re.search(rf"^\s*{key}\s*=", text, re.M) or f"[{table}]" not in text:
            raise ValueError(f"--set {item}: needs a [{table}] table without {key}")
        text = text.replace(f"[{table}]", f"[{table}]\n{key} = {value}", 1)
    with tempfile.NamedTemporaryFile("w", suffix=".toml", prefix="lmo-spec-",
                                     delete=False) as f:
        f.write(text)
    return f.name


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default=str(REPO / "examples/testbed/lmo-hetero4.toml"))
    ap.add_argument("--prefix", default="lmo", help="testbed prefix (your own)")
    ap.add_argument("--sizes", default="1K,64K,256K")
    ap.add_argument("--lmo-bytes", default="64K")
    ap.add_argument("--min-bytes", type=int, default=65536)
    ap.add_argument("--eager", type=int, help="Open MPI TCP eager limit (bytes)")
    ap.add_argument("--time-budget", default="90s", help="mpilab-bench --time-budget")
    ap.add_argument("--pings", type=int, default=30)
    ap.add_argument("--p2p-schedule", choices=("parallel", "sequential"), default="parallel",
                    help="mpilab-bench --p2p-schedule (the LMO experiments and round trips)")
    ap.add_argument("--lmo-wait", default="spin", metavar="spin|sleep[:DURATION]",
                    help="mpilab-bench --lmo-wait: how the ranks wait in the LMO experiments "
                    "(sleep: test, sleep, test again; frees the 2 CPUs for the ranks a message "
                    "is for)")
    ap.add_argument("--idle-poll", action="store_true",
                    help="mpilab-bench --idle-poll: idle CPUs poll instead of halting while "
                    "it measures, so a sleeping rank is woken without the vCPU's resume "
                    "(provenance.cpu_idle)")
    ap.add_argument("--lmo-eps", type=float, help="mpilab-bench --lmo-eps: the relative "
                    "precision of the LMO experiments' medians (default: mpilab-bench's --eps)")
    ap.add_argument("--no-msg-cost", action="store_true",
                    help="run on a copy of the spec without its message costs: the fitted C_i "
                    "are then the MPI's own, the baseline a run with costs adds them to")
    ap.add_argument("--baseline-c", type=float, metavar="US",
                    help="the MPI's own C in microseconds (from a --no-msg-cost run of the same "
                    "spec, the median of its C_i): a node's configured C is its msg_cost plus "
                    "this (default: the median C of the nodes without a cost or quota)")
    ap.add_argument("--isolation", choices=("barrier", "sync"),
                    help="mpilab-bench --isolation of the collectives (sync: every rank starts "
                    "at one instant of the synchronised clocks, as the predictions assume; "
                    "barrier, mpilab-bench's default: ranks leave the barrier up to a one-way "
                    "delay apart, which a gather's root waits out)")
    ap.add_argument("--ops", default=OPS, help="mpilab-bench --ops (default: %(default)s)")
    ap.add_argument("--set", action="append", default=[], metavar="TABLE.KEY=VALUE",
                    help="run on a copy of the spec with this key set (a TOML value, e.g. "
                    "cluster.shared_cpu_group=false, wan.burst='\"2K\"'); repeatable")
    ap.add_argument("--results", help="compare this results file (with --independent) "
                    "instead of running")
    ap.add_argument("--independent", help="the independent measurements' JSON (with "
                    "--results)")
    ap.add_argument("--json", help="write the comparison here")
    return ap


def main() -> int:
    ap = parser()
    a = ap.parse_args()
    if a.eager is not None and not 1 <= a.eager <= 2**31 - 1:
        print("lmo_testbed: --eager must be a size in 1..2^31-1 bytes", file=sys.stderr)
        return 2
    if a.baseline_c is not None and not 0 <= a.baseline_c <= 1e6:
        print("lmo_testbed: --baseline-c must be a number of microseconds in 0..1e6",
              file=sys.stderr)
        return 2
    if a.lmo_eps is not None and not 0 < a.lmo_eps < 1:
        print("lmo_testbed: --lmo-eps must be in (0,1)", file=sys.stderr)
        return 2
    if a.results and not a.independent:
        print("lmo_testbed: --results needs --independent", file=sys.stderr)
        return 2
    from mpilab.errors import MpilabError
    from mpilab.testbed import spec as specmod

    try:
        spec_path = spec_copy(a.spec, a.set, a.no_msg_cost)
    except ValueError as e:
        print(f"lmo_testbed: {a.spec}: {e}", file=sys.stderr)
        return 2
    try:
        spec = specmod.load(spec_path, a.prefix)
    except MpilabError as e:
        print(f"lmo_testbed: {e}", file=sys.stderr)
        return 2
    finally:
        spec_text = Path(spec_path).read_text()
        if spec_path != a.spec:
            os.unlink(spec_path)
    np = len(spec.node_names())
    if np < 3:
        print(f"lmo_testbed: {a.spec}: {np} nodes, need >= 3 (a triplet)", file=sys.stderr)
        return 2
    # the bench slot's timeout sends SIGTERM: end through the finally below (testbed down)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"load at start: {loadavg()}  ({time.strftime('%H:%M:%S', time.gmtime())} UTC)")
    if a.results:
        doc = json.loads(Path(a.results).read_text())
        ind = json.loads(Path(a.independent).read_text())
    else:
        with tempfile.TemporaryDirectory(prefix="lmo-tb-") as tmp:
            try:
                t0 = time.monotonic()
                spec_file = Path(tmp) / "spec.toml"
                spec_file.write_text(spec_text)
                testbed_up(a.prefix, spec_file)
                ind = independent(spec, a.pings)
                ind["up_s"] = time.monotonic() - t0
                t0 = time.monotonic()
                places: list[dict[str, Any]] = []
                ind["cpu_stat_before"] = {lim.name: _read(str(net.cpu_cgroup(a.prefix, lim.name)
                                                              / "cpu.stat")).split()
                                          for lim in spec.node_limits}
                doc = run_bench(a.prefix, np, a, Path(tmp) / "tb.json", places)
                ind["bench_s"] = time.monotonic() - t0
                ind["rank_places"] = places
                # how often the limited nodes' groups were throttled during the run
                ind["cpu_stat"] = {lim.name: _read(str(net.cpu_cgroup(a.prefix, lim.name)
                                                       / "cpu.stat")).split()
                                   for lim in spec.node_limits}
                ind["options"] = {"p2p_schedule": a.p2p_schedule, "lmo_wait": a.lmo_wait,
                                  "ops": a.ops,
                                  "shared_cpu_group": spec.cpu_group_shared(),
                                  "set": a.set, "lmo_bytes": a.lmo_bytes,
                                  "time_budget": a.time_budget, "sizes": a.sizes,
                                  "lmo_eps": a.lmo_eps, "isolation": a.isolation}
            finally:
                testbed_down(a.prefix)
            if a.json:
                write_json(Path(a.json).with_suffix(".results.json"), doc)
                write_json(Path(a.json).with_suffix(".independent.json"), ind)
    print(f"bench run: {ind.get('bench_s', 0):.0f} s; eager limit "
          f"{a.eager if a.eager is not None else 'Open MPI default'}; options "
          f"{ind.get('options')}")
    for name, st in (ind.get("cpu_stat") or {}).items():
        print(f"  cpu group of {name}: {' '.join(st)}")
    for pl in ind.get("rank_places") or []:
        if "pid" not in pl:
            print(f"  {pl}")
            continue
        print(f"  rank process {pl['pid']}: session {pl['session']}, cpu cgroup "
              f"{pl['cpu_cgroup']}, autogroup {' '.join(pl['autogroup'])}, context "
              f"switches/s (voluntary, involuntary) {pl.get('switches_per_s')}")
    rep = compare(doc, spec, ind, a.min_bytes,
                  None if a.baseline_c is None else a.baseline_c * 1e-6)
    if a.json:
        write_json(a.json, {"spec": a.spec, "set": a.set, "eager": a.eager, **rep})
    return 0


if __name__ == "__main__":
    sys.exit(main())
