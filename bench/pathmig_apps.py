#!/usr/bin/env python3
"""Application run time with path migration (the paper's Fig. 9-12): the same MPI job
over plain TCP (no agent), under `testbed run --pathmig` without a fault, and with one
fault at a random moment (seeded: a random node's rail 0, down or silent drop, healed
--heal s later), interleaved run by run. The fault is applied a random time after the job
is wired up (the agents report its first ARMED connection), never by the clock before:
between 10% and 60% of the warm-up run's duration. The TCP runs use the same congestion
control as the --pathmig runs (cubic; see docs/pathmig.md), so only MPTCP and the agents
differ. Times: `wall_s` is the whole `testbed run` (job start, agents' start and stop);
`app_s` the wavefront's own "total" (rank 0, first to last iteration).

Apps: `wavefront` (distributed Livermore loop 23, one band per rank; every run's result
files must be bit-identical to the first run's, which `mpilab-wavefront verify` checks),
`collectives` (mpilab-bench: bcast, allreduce, scatter, gather at fixed repetitions).

    MPILAB_BIN=build/bin python3 bench/pathmig_apps.py --app wavefront --reps 16 --out F.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from mpilab.pathmig import agents  # noqa: E402
from mpilab.testbed import faults, net  # noqa: E402
from mpilab.tools import find_tool  # noqa: E402

SPEC = """\
[cluster]
sites = 2
nodes_per_site = 2
rails = 2

[lan]
rate = "1Gbit"

[wan]
node_rate = "1Gbit"
total_rate = "2Gbit"
delay = "1ms"
"""


def mpilab(*args: str, env: dict[str, str], **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "mpilab.cli", *args], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kw)  # type: ignore[call-overload]


def digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--app", choices=("wavefront", "collectives"), default="wavefront")
    ap.add_argument("--reps", type=int, default=16)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--prefix", default="pmapp")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size", type=int, default=4096, help="wavefront rows = cols")
    ap.add_argument("--iterations", type=int, default=10, help="wavefront iterations")
    ap.add_argument("--coll-reps", type=int, default=400, help="collectives repetitions")
    ap.add_argument("--heal", type=float, default=2.0, help="fault duration (s)")
    ap.add_argument("--tcp-congestion", default="cubic",
                    help="congestion control of the TCP runs (--pathmig runs: cubic)")
    ap.add_argument("--work", default="/tmp/pathmig-apps")
    ap.add_argument("--budget", type=float, default=0,
                    help="start no new round (one run of each configuration) after this many "
                         "seconds (0: no limit)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    state = Path(a.work) / "state"
    state.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MPILAB_TESTBED_STATE_ROOT=str(state), MPILAB_TESTBED_PREFIX=a.prefix)
    env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    os.environ["MPILAB_TESTBED_STATE_ROOT"] = str(state)
    (state / "spec.toml").write_text(SPEC)
    p = mpilab("testbed", "up", str(state / "spec.toml"), env=env)
    out, err = p.communicate()
    if p.returncode:
        sys.exit(err)
    sp = net.current_spec(a.prefix)
    rng = random.Random(a.seed)
    wf = find_tool("mpilab-wavefront")
    data = Path(a.work) / "wf"
    bands = [data / f"d.{i}" for i in range(a.np)]
    if a.app == "wavefront":
        data.mkdir(exist_ok=True)
        if not (data / "orig").exists():
            subprocess.run([wf, "create", "--rows", str(a.size), "--cols", str(a.size),
                            "--seed", "1", str(data / "d0"), str(data / "c0")], check=True)
            for kind, name in (("optimized", "d"), ("block", "c")):
                subprocess.run([wf, "convert", "--layout", kind, "--mb", "256", "--nb", "256",
                                "--bands", str(a.np), str(data / (name + "0")),
                                str(data / name)], check=True)
            (data / "orig").mkdir()
            for b in bands:
                shutil.copy(b, data / "orig" / b.name)
        program = [wf, "run", "--mpi", "--data", str(data / "d"), "--coef", str(data / "c"),
                   "--iterations", str(a.iterations)]
    else:
        program = [find_tool("mpilab-bench"), "--ops", "bcast,allreduce,scatter,gather",
                   "--sizes", "1K:256K:x4", "--min-reps", str(a.coll_reps), "--max-reps",
                   str(a.coll_reps), "--no-fit", "--quiet", "--out",
                   str(Path(a.work) / "coll.json")]
    runs: list[dict[str, object]] = []
    reference = None
    ref_s = 10.0
    configs = ("tcp", "agent", "agent+fault")
    t_start = time.monotonic()
    done = 0
    for rep in range(-1, a.reps):  # rep -1: one untimed warm-up run (page cache, ARP)
        if rep > 0 and a.budget and time.monotonic() - t_start > a.budget:
            print(f"budget of {a.budget:g} s spent after {rep} round(s)", flush=True)
            break
        done = rep + 1
        for cfg in configs if rep >= 0 else ("tcp",):
            if a.app == "wavefront":
                for b in bands:
                    shutil.copy(data / "orig" / b.name, b)
            args = ["testbed", "run", "--np", str(a.np), "--timeout", "900"]
            if cfg == "tcp":
                args += ["--congestion", a.tcp_congestion]
            else:
                args += ["--pathmig", "--pathmig-events", str(Path(a.work) / f"ev-{rep}-{cfg}")]
            agents.clear_logs(sp)  # the wire-up watch below must see this run's events only
            t0 = time.monotonic()
            proc = mpilab(*args, "--", *program, env=env)
            fault: dict[str, object] = {}
            if cfg == "agent+fault":
                delay = rng.uniform(0.1, 0.6) * ref_s
                node = rng.choice(sp.node_names())
                mode = rng.choice(faults.MODES)

                def inject(proc: subprocess.Popen[str] = proc, fault: dict[str, object] = fault,
                           delay: float = delay, node: str = node, mode: str = mode) -> None:
                    while proc.poll() is None:  # wired up: the agents armed a connection
                        if any(e["event"] == "state" and e["to"] == "ARMED"
                               for e in agents.events(sp)):
                            break
                        time.sleep(0.1)
                    end = time.monotonic() + delay
                    while proc.poll() is None and time.monotonic() < end:
                        time.sleep(0.05)
                    if proc.poll() is not None:
                        fault["missed"] = True
                        return
                    faults.fail(sp, f"{node}:0", mode)
                    fault.update({"target": f"{node}:0", "mode": mode,
                                  "after_wireup": delay, "time": time.time()})
                    time.sleep(a.heal)
                    faults.heal(sp, None)

                th = threading.Thread(target=inject)
                th.start()
            so, se = proc.communicate()
            wall = time.monotonic() - t0
            if cfg == "agent+fault":
                th.join()
            ok = proc.returncode == 0
            if a.app == "wavefront" and ok:
                d = digest(bands)
                if reference is None:
                    v = subprocess.run([wf, "verify", "--initial", str(data / "d0"), "--coef",
                                        str(data / "c0"), "--iterations", str(a.iterations),
                                        str(data / "d")], capture_output=True, text=True)
                    ok = v.returncode == 0
                    reference = d if ok else None
                else:
                    ok = d == reference
            m = re.search(r"total ([0-9.]+) s", so)
            app_s = float(m.group(1)) if m else None
            if rep < 0:
                ref_s = app_s or wall
            rec = {"rep": rep, "config": cfg, "wall_s": wall, "app_s": app_s,
                   "rc": proc.returncode,
                   "correct": ok, "fault": fault, "pathmig": se.strip().splitlines()[-1:]}
            if rep >= 0:
                runs.append(rec)
            print(json.dumps(rec), flush=True)
            faults.heal(sp, None)
    summary: dict[str, dict[str, float]] = {}
    for key in ("wall_s", "app_s"):
        for cfg in configs:
            w = [r[key] for r in runs if r["config"] == cfg and r["correct"] and r[key]]
            if w:
                summary[f"{cfg} {key}"] = {
                    "runs": len(w), "mean": statistics.mean(w),  # type: ignore[arg-type]
                    "stdev": statistics.stdev(w) if len(w) > 1 else 0.0,  # type: ignore
                    "min": min(w), "median": statistics.median(w)}  # type: ignore
        base = summary.get(f"tcp {key}", {}).get("median")
        for cfg in configs:
            s = summary.get(f"{cfg} {key}")
            if base and s:
                s["slowdown_median"] = s["median"] / base - 1
                s["slowdown_mean"] = s["mean"] / summary[f"tcp {key}"]["mean"] - 1
    doc = {"app": a.app, "np": a.np, "reps": done, "reps_asked": a.reps, "seed": a.seed,
           "runs": runs,
           "summary": summary,
           "incorrect_or_failed": sum(1 for r in runs if not r["correct"])}
    tmp = a.out + ".tmp"
    Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, a.out)
    print(json.dumps(summary, indent=1))
    p = mpilab("testbed", "down", env=env)
    p.communicate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
