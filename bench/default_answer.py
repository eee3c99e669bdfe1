#!/usr/bin/env python3
"""The default `mpilab bench` beside IMB-MPI1 and OSU, as a user runs them, in one run.

Per transport (shared memory: btl self,vader; TCP loopback: btl self,tcp; 2 ranks), with a
launch-variation store of this run's own (a fresh folder: the first run measures the
variation, its wall time is printed apart; then --warm untimed rounds, the store a user has
after using mpilab among other programs for a while):
  * rounds in rotating order of `mpilab bench -- --ops p2p --sizes 1:1M:x4` (the default: one
    launch), `IMB-MPI1 PingPong -msglog 0:20` and `osu_latency -m 1:1048576`, each timed from
    start to exit (what a user waits for; mpilab's Python included);
  * per mpilab run: how many of its 11 sizes converged (at the asked 2.5% or at the machine's
    stated limit, the verdict under its table);
  * the repeats' coverage: at 1 KiB and 1 MiB, how many of the rounds' intervals hold the
    median of the rounds' figures, and how many of those intervals are within +-5%;
  * the one-way figures side by side (median over rounds).
With --coll: 4 ranks, bcast, allreduce, scatter and gather at 1 KiB, 64 KiB and 1 MiB against
IMB-MPI1 (-msglen) and OSU's four programs (-m 1024:1048576).

IMB and OSU are public suites built outside this tree (never copied into it):
  IMB: https://github.com/intel/mpi-benchmarks, `make IMB-MPI1 CC=mpicc CXX=mpicxx`;
  OSU: osu-micro-benchmarks 7.x, `./configure CC=mpicc CXX=mpicxx && make`.

  ../shared/tools/mlock bench python3 bench/default_answer.py --imb IMB --osu OSU_DIR \\
      [--rounds 5] [--warm 10] [--transports shm,tcp] [--coll] [--json OUT]
(OSU_DIR: the build's c/mpi folder, holding pt2pt/standard/osu_latency and
collective/blocking/osu_bcast ...). Beside two CPU hogs: wrap it in ../shared/tools/hogs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import env as harness_env
from harness import loadavg, mpilab_cmd, write_json
from harness import mpirun as launcher

SIZES = [4 ** k for k in range(11)]
TRANSPORTS = {"shm": "self,vader", "tcp": "self,tcp"}
COLLS = {"bcast": ("Bcast", "osu_bcast"), "allreduce": ("Allreduce", "osu_allreduce"),
         "scatter": ("Scatter", "osu_scatter"), "gather": ("Gather", "osu_gather")}
COLL_SIZES = [1024, 65536, 1 << 20]


def timed(cmd: list[str], env: dict[str, str], timeout: float = 600) -> tuple[float, str]:
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                       check=False)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-1500:]}")
    return wall, p.stdout


def peer_mpirun(np: int) -> list[str]:
    """IMB and OSU as their users start them: pinned to a core each while the ranks fit."""
    fits = np <= (os.cpu_count() or 1)
    return launcher(np, ["--bind-to", "core" if fits else "none", "--mca",
                         "mpi_yield_when_idle", "0" if fits else "1"])


def default_run(env: dict[str, str], out: Path, np: int, ops: str,
               sizes: str) -> tuple[float, dict[str, Any]]:
    wall, _ = timed(mpilab_cmd("bench", "--np", str(np), "--out", str(out), "--", "--ops", ops,
                               "--sizes", sizes, "--quiet"), env)
    return wall, json.loads(out.read_text())


def verdict(doc: dict[str, Any]) -> tuple[int, int]:
    from mpilab import launch_table

    v = launch_table.verdict(doc)
    return v["at_eps"] + v["at_limit"], v["n"]


def not_converged(doc: dict[str, Any]) -> list[str]:
    """The rows not converged: operation, bytes and their flags (why)."""
    return [f"{m.get('op')}@{m.get('bytes')}:{'+'.join(m.get('flags') or [])}"
            for m in doc.get("measurements", []) if not (m.get("stats") or {}).get("converged")]


def imb_values(text: str) -> dict[int, float]:
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0].isdigit() and re.fullmatch(r"[0-9.]+", f[2]):
            out[int(f[0])] = float(f[-2] if len(f) == 4 else f[2])
    return out


def osu_values(text: str) -> dict[int, float]:
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0].isdigit():
            try:
                out[int(f[0])] = float(f[1])
            except ValueError:
                pass
    return out


def p2p_rounds(a: argparse.Namespace, t: str, work: Path) -> dict[str, Any]:
    env = harness_env(OMPI_MCA_btl=TRANSPORTS[t], MPILAB_DATA_DIR=str(work / f"data-{t}"))
    sizes = "1:1M:x4"
    first_wall, first = default_run(env, work / f"{t}-first.json", 2, "p2p", sizes)
    print(f"[{t}] first run (measures the launch variation): {first_wall:.2f} s, "
          f"{first['launches']['n']} launches, converged {verdict(first)[0]}/11", flush=True)
    walls: dict[str, list[float]] = {"mpilab": [], "imb": [], "osu": []}
    docs: list[dict[str, Any]] = []
    vals: dict[str, list[dict[int, float]]] = {"imb": [], "osu": []}
    tools = ["mpilab", "imb", "osu"]
    # the warm rounds (untimed) run like the timed ones, the peers between mpilab's runs: the
    # store a user has after using mpilab among other programs for a while
    for r in range(-a.warm, a.rounds):
        if r == 0:
            for v in (walls, vals):
                for x in v.values():
                    x.clear()
            docs.clear()
        for tool in tools[r % 3:] + tools[:r % 3]:
            if tool == "mpilab":
                w, d = default_run(env, work / f"{t}-{r}.json", 2, "p2p", sizes)
                docs.append(d)
            elif tool == "imb":
                w, text = timed(peer_mpirun(2) + [a.imb, "PingPong", "-msglog", "0:20"], env)
                vals["imb"].append(imb_values(text))
            else:
                w, text = timed(peer_mpirun(2) + [str(Path(a.osu) / "pt2pt" / "standard" /
                                                      "osu_latency"), "-m", "1:1048576"], env)
                vals["osu"].append(osu_values(text))
            walls[tool].append(w)
        if r < 0:
            continue
        c, n = verdict(docs[-1])
        print(f"[{t}] round {r + 1}: mpilab {walls['mpilab'][-1]:.2f} s ({c}/{n} converged), "
              f"IMB {walls['imb'][-1]:.2f} s, OSU {walls['osu'][-1]:.2f} s", flush=True)
    return {"first_wall_s": first_wall, "walls": walls, "docs": docs, "peer_values": vals}


def one_way(doc: dict[str, Any]) -> dict[int, tuple[float, float, float, float]]:
    out = {}
    for m in doc["measurements"]:
        st = m["stats"]
        if m.get("op") == "p2p" and st.get("med_lo") is not None:
            out[m["bytes"]] = (st["median"] / 2 * 1e6, st["med_lo"] / 2 * 1e6,
                               st["med_hi"] / 2 * 1e6, st.get("med_rel_err") or 0.0)
    return out


def summarize_p2p(t: str, r: dict[str, Any]) -> dict[str, Any]:
    w = {k: statistics.median(v) for k, v in r["walls"].items()}
    conv = [verdict(d) for d in r["docs"]]
    figs = [one_way(d) for d in r["docs"]]
    cover = {}
    for b in (1024, 1 << 20):
        meds = [f[b][0] for f in figs if b in f]
        med5 = statistics.median(meds)
        held = sum(1 for f in figs if b in f and f[b][1] <= med5 <= f[b][2])
        within5 = sum(1 for f in figs if b in f and f[b][3] <= 0.05)
        cover[b] = {"held": held, "of": len(meds), "within_5pct": within5, "median": med5,
                    "runs": [f[b][:3] for f in figs if b in f],
                    "half_widths_pct": [round(f[b][3] * 100, 1) for f in figs if b in f]}
    print(f"\n== {t}: wall (median of {len(r['docs'])} rounds) mpilab {w['mpilab']:.2f} s, "
          f"IMB {w['imb']:.2f} s, OSU {w['osu']:.2f} s: mpilab/IMB {w['mpilab'] / w['imb']:.2f}x, "
          f"mpilab/OSU {w['mpilab'] / w['osu']:.2f}x; first run {r['first_wall_s']:.2f} s")
    print(f"   converged per run: {', '.join(f'{c}/{n}' for c, n in conv)}")
    for b, c in cover.items():
        print(f"   {b:>8} B: interval holds the median of {c['of']} runs in {c['held']}/{c['of']}; "
              f"within +-5%: {c['within_5pct']}/{c['of']} (half widths {c['half_widths_pct']}%)")
    print(f"   {'bytes':>8} {'mpilab us':>10} {'IMB us':>9} {'OSU us':>9}")
    for b in SIZES:
        m = statistics.median(f[b][0] for f in figs if b in f)
        i = statistics.median(v[b] for v in r["peer_values"]["imb"] if b in v)
        o = statistics.median(v[b] for v in r["peer_values"]["osu"] if b in v)
        print(f"   {b:>8} {m:10.3f} {i:9.3f} {o:9.3f}")
    why = [not_converged(d) for d in r["docs"]]
    for k, rows in enumerate(why):
        if rows:
            print(f"   round {k + 1} not converged: {', '.join(rows)}")
    return {"wall_median_s": w, "converged": conv, "coverage": cover,
            "first_wall_s": r["first_wall_s"], "not_converged": why}


def coll_rounds(a: argparse.Namespace, work: Path) -> dict[str, Any]:
    env = harness_env(MPILAB_DATA_DIR=str(work / "data-coll"))
    sizes = ",".join(str(s) for s in COLL_SIZES)
    msglen = work / "msglen"
    msglen.write_text("\n".join(str(s) for s in COLL_SIZES) + "\n")
    ops = ",".join(f"{c}:native" if c in ("scatter", "gather") else c for c in COLLS)
    first_wall, first = default_run(env, work / "coll-first.json", 4, ops, sizes)
    print(f"[coll] first run: {first_wall:.2f} s, {first['launches']['n']} launches", flush=True)
    walls: dict[str, list[float]] = {"mpilab": [], "imb": [], "osu": []}
    conv = []
    for r in range(-a.warm, a.rounds):
        if r == 0:
            for x in walls.values():
                x.clear()
            conv.clear()
        w, d = default_run(env, work / f"coll-{r}.json", 4, ops, sizes)
        walls["mpilab"].append(w)
        conv.append(verdict(d))
        if r >= 0 and not_converged(d):
            print(f"[coll] round {r + 1} not converged: {', '.join(not_converged(d))}")
        w, _ = timed(peer_mpirun(4) + [a.imb, *[v[0] for v in COLLS.values()], "-msglen",
                                       str(msglen), "-npmin", "4"], env)
        walls["imb"].append(w)
        total = 0.0
        for _, exe in COLLS.values():
            w, _ = timed(peer_mpirun(4) + [str(Path(a.osu) / "collective" / "blocking" / exe),
                                           "-m", "1024:1048576"], env)
            total += w
        walls["osu"].append(total)
        if r < 0:
            continue
        print(f"[coll] round {r + 1}: mpilab {walls['mpilab'][-1]:.2f} s ({conv[-1][0]}/"
              f"{conv[-1][1]}), IMB {walls['imb'][-1]:.2f} s, OSU {total:.2f} s", flush=True)
    w = {k: statistics.median(v) for k, v in walls.items()}
    print(f"\n== collectives, 4 ranks: wall mpilab {w['mpilab']:.2f} s, IMB {w['imb']:.2f} s, "
          f"OSU {w['osu']:.2f} s: mpilab/IMB {w['mpilab'] / w['imb']:.2f}x; converged "
          f"{', '.join(f'{c}/{n}' for c, n in conv)}; first run {first_wall:.2f} s")
    return {"wall_median_s": w, "converged": conv, "first_wall_s": first_wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--imb", required=True, help="IMB-MPI1 built outside this tree")
    ap.add_argument("--osu", required=True, help="OSU 7.x build's c/mpi folder")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warm", type=int, default=10,
                    help="untimed rounds after the first run and before the timed ones (the "
                         "store a user has after some runs; default 10)")
    ap.add_argument("--transports", default="shm,tcp")
    ap.add_argument("--coll", action="store_true", help="also the collectives at 4 ranks")
    ap.add_argument("--json", help="write the numbers here")
    a = ap.parse_args()
    print(f"load at start: {loadavg()}", flush=True)
    out: dict[str, Any] = {"load_at_start": loadavg(), "rounds": a.rounds}
    with tempfile.TemporaryDirectory(prefix="default-answer-") as tmp:
        for t in a.transports.split(","):
            out[t] = summarize_p2p(t, p2p_rounds(a, t, Path(tmp)))
        if a.coll:
            out["coll"] = coll_rounds(a, Path(tmp))
    if a.json:
        write_json(a.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
