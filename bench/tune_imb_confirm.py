#!/usr/bin/env python3
"""Exported rules confirmed by an unmodified IMB-MPI1: per case (MPI library, ranks) the whole
path a user takes, then a confirmation with fresh launches.

1. `mpilab tune sweep` (--colls, --sizes, --launches, --budget), `mpilab tune choose`;
2. `mpilab tune validate CHOICE --with IMB --pairs P --rounds R`: the exported file against
   the default in pairs of IMB-MPI1 launches (ABBA), every rule that does not win there
   dropped, the pruned file measured again; the file written is the last one measured;
3. confirmation: --confirm-pairs new pairs of IMB-MPI1 launches (ABBA, one figure per launch
   and cell: mpilab.tune.validate.peer_figures) of that file against the default, judged by
   mpilab.tune.confirm: per cell Wilcoxon's signed-rank test on the per-pair log ratios,
   losses family-wise (Holm over every cell) and beyond the minimum effect, the listed gains
   family-wise (Holm over the cells the file gives an algorithm).

A case passes when the confirmation finds no family-wise loss and every cell the file gives
an algorithm other than the default is a family-wise gain there; too few pairs for the
family to reach significance at all is UNDECIDED. With no file written (nothing beat the
default through the file) there is nothing to confirm: the library's default is the answer.

Every step keeps its output in --dir/CASE and is not repeated when there (sweep and
validate are resumable themselves), so a case longer than one bench slot continues in the
next with the same command. Prints one line per confirmed cell and a line per case.

    /work/shared/tools/mlock bench python3 bench/tune_imb_confirm.py --case openmpi:2 \
        --imb /work/peers/imb/IMB-MPI1 --dir D
    /work/shared/tools/mlock bench python3 bench/tune_imb_confirm.py --case mpich:4 \
        --imb /work/peers/imb-mpich/IMB-MPI1 --mpich-yield --dir D
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from pathlib import Path

from harness import env, loadavg, mpilab_cmd, write_json
from mpilab.errors import MpilabError
from mpilab.tune import confirm, peer, validate


def _stop(_sig: int, _frame: object) -> None:
    raise KeyboardInterrupt


def step(what: str, cmd: list[str], timeout: float) -> None:
    print(f"  {what}: {' '.join(cmd[2:])}", flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=timeout)
    if p.returncode not in (0,):
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-2000:])
        raise SystemExit(f"{what}: exit {p.returncode}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True, help="MPI:RANKS, e.g. openmpi:2 or mpich:4")
    ap.add_argument("--imb", required=True, help="IMB-MPI1 built with that MPI")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--colls", default="bcast,allreduce,reduce,allgather")
    ap.add_argument("--sizes", default="8,1K,16K,64K")
    ap.add_argument("--launches", default="3")
    ap.add_argument("--sweep-budget", default="20")
    ap.add_argument("--sweep-rounds", default="1", help="sweep --rounds (extra sizes)")
    ap.add_argument("--pairs", default="12", help="validate's pairs of launches per round")
    ap.add_argument("--rounds", default="3")
    ap.add_argument("--imb-budget", default="4s", help="validate --budget (IMB -time total)")
    ap.add_argument("--confirm-pairs", type=int, default=16)
    ap.add_argument("--mpich-yield", action="store_true",
                    help="the sweep's launches yield (MPICH, more ranks than cores); IMB-MPI1 "
                         "runs as its users run it")
    ap.add_argument("--max-reps", default=None, help="the sweep's --max-reps")
    ap.add_argument("--timeout", type=float, default=280.0)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, _stop)
    mpi, np = a.case.split(":")
    d = Path(a.dir).resolve() / f"{mpi}-{np}"
    d.mkdir(parents=True, exist_ok=True)
    print(f"{a.case}: load at start {loadavg()}", flush=True)
    g = ["--mpi", mpi] if mpi == "mpich" else []
    extra = (["--mpich-yield"] if a.mpich_yield else []) + \
        (["--max-reps", a.max_reps] if a.max_reps else [])
    choice = d / "choice.json"
    if not choice.is_file():
        step("sweep", mpilab_cmd(*g, "tune", "sweep", "--dir", str(d / "sweep"), "--np", np,
                                 "--colls", a.colls, "--sizes", a.sizes, "--launches",
                                 a.launches, "--budget", a.sweep_budget, "--rounds",
                                 a.sweep_rounds, "--quiet",
                                 "--timeout", str(a.timeout), *extra), 3600)
        step("choose", mpilab_cmd(*g, "tune", "choose", "--dir", str(d / "sweep"), "--out",
                                  str(choice)), 300)
    out = d / f"validated.{'conf' if mpi == 'openmpi' else 'json'}"
    out_choice = d / "validated-choice.json"
    done = d / "validate.done"
    if not done.is_file():
        step("validate", mpilab_cmd(*g, "tune", "validate", str(choice), "--np", np, "--dir",
                                    str(d / "val"), "--out", str(out), "--out-choice",
                                    str(out_choice), "--with", a.imb, "--pairs", a.pairs,
                                    "--budget", a.imb_budget, "--rounds", a.rounds,
                                    "--timeout", str(a.timeout)), 3600)
        done.write_text("")
    report = json.loads((d / "val" / "validate.json").read_text())
    for r in report["rounds"]:
        s = r["summary"]
        print(f"  validate round {r['round']}: {s['cells']} cells, gains {s['gains']}, "
              f"losses {s['losses']}; dropped: {len(r['notes'])}")
    if not out.is_file():
        print(f"{a.case}: no file written (nothing beat the default through the file): "
              "nothing to confirm")
        return 0
    final = json.loads(out_choice.read_text())
    listed = [c for c in final["cells"] if int(c["np"]) == int(np)
              and c["winner"] not in (validate.DEFAULT, "")]
    try:
        per = validate.peer_figures(final, int(np), mpi, str(out), d / "confirm",
                                    a.confirm_pairs, peer.Peer("imb", a.imb), a.timeout,
                                    float(a.imb_budget.rstrip("s")),
                                    lambda s: print("   ", s, flush=True))
    except MpilabError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    wins = {(c["op"], int(c["bytes"])): c["winner"] for c in final["cells"]
            if int(c["np"]) == int(np) and c["winner"]}
    v = confirm.verdicts(per, {(c["op"], int(c["bytes"])) for c in listed},
                         float(final.get("min_effect") or 0.05))
    for r in v["rows"]:
        c = r["comparison"]
        iv = f"[{c['lo']:.3f}, {c['hi']:.3f}]" if c["lo"] is not None else "-"
        ra = f"{c['ratio']:.3f}" if c["ratio"] is not None else "-"
        pv = f"{c['p']:.4f}" if c["p"] is not None else "-"
        print(f"  {r['op']:<10} {r['bytes']:>8} {wins[(r['op'], r['bytes'])]:<34} {ra:>6} "
              f"{iv:>17} p={pv:<7} per-cell {r['per_cell']:<4} family-wise {r['verdict']}")
    print(f"{a.case}: file {out.name}: {v['listed']} cells given an algorithm, "
          f"{v['listed'] - v['missing_gains']} reproduced as family-wise gains in "
          f"{v['pairs']} fresh IMB pairs; {v['losses']} family-wise losses beyond "
          f"{v['min_effect']:.0%} of {v['cells']} cells ({v['per_cell_losses']} per-cell): "
          f"{v['outcome']}")
    ok = v["outcome"] == "PASS"
    rows = v["rows"]
    write_json(str(d / "confirm.json"), {"case": a.case, "rows": rows, "pass": ok,
                                         "verdicts": {k: x for k, x in v.items()
                                                      if k != "rows"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
