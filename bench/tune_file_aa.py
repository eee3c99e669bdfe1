#!/usr/bin/env python3
"""Files that must change nothing, against no file, in an unmodified IMB-MPI1: does loading a
tuning file cost the cells it leaves at the library's default, and how often does the
confirmation (mpilab.tune.confirm) call a loss where nothing changed?

Sides, interleaved per round (order reversed every other round): `default` (no file) and one
side per file made here:
* `identity` (MPICH): the library's own MPIR-level selection tree, read from libmpich, as a
  file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE);
* `gaps`: a file exported by `mpilab tune export` from a choice that forces an algorithm
  only at 4 MiB for every measured collective; every measured size lies in a gap the export
  leaves at the default (MPICH: the library's own subtree; Open MPI: rule 0, the fixed
  decision after the dynamic look-up).
Per file side and cell: the per-round log ratio of IMB's t_avg against the default's, and the
confirmation's per-cell and family-wise verdicts (no cell is listed as a gain).

    /work/shared/tools/mlock bench python3 bench/tune_file_aa.py --mpi mpich --np 2 \\
        --imb /work/peers/imb-mpich/IMB-MPI1 --rounds 12 --dir D
    /work/shared/tools/mlock bench python3 bench/tune_file_aa.py --mpi openmpi --np 4 \\
        --imb /work/peers/imb/IMB-MPI1 --rounds 16 --dir D
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from harness import loadavg, write_json
from mpilab import launch as launch_mod
from mpilab.errors import MpilabError
from mpilab.tune import algorithms, confirm, export, peer, sweep, validate

FAR = 4 << 20


def _choice(ops: list[str], np: int, sizes: list[int]) -> dict[str, Any]:
    return {"schema": "mpilab.tune-choice/1", "source": "tune_file_aa", "min_effect": 0.05,
            "cells": [{"op": o, "np": np, "bytes": b, "winner": validate.DEFAULT}
                      for o in ops for b in sizes], "ranges": []}


def _gaps_choice(mpi: str, ops: list[str], np: int) -> dict[str, Any]:
    """Every collective forced only at FAR (an algorithm other than the default's)."""
    far = {"bcast": ("ompi_pipeline", "mpich_scatter_ring_allgather"),
           "allreduce": ("ompi_ring", "mpich_reduce_scatter_allgather"),
           "reduce": ("ompi_pipeline", "mpich_reduce_scatter_gather"),
           "allgather": ("ompi_ring", "mpich_ring")}
    doc = {"schema": "mpilab.tune-choice/1", "source": "tune_file_aa", "cells": [
        {"op": o, "np": np, "bytes": FAR, "winner": far[o][mpi == "mpich"]} for o in ops]}
    validate.regroup(doc)
    return doc


def make_files(mpi: str, ops: list[str], np: int, d: Path) -> dict[str, Path]:
    files: dict[str, Path] = {}
    if mpi == "mpich":
        lib = algorithms.mpich_library(os.environ.get("AA_IMB", ""))
        tree, names = algorithms.mpich_selection(str(lib))
        files["identity"] = d / "identity.json"
        files["identity"].write_text(json.dumps(tree))
        files["gaps"] = d / "gaps.json"
        files["gaps"].write_text(json.dumps(export.mpich_json(_gaps_choice(mpi, ops, np),
                                                               tree, names)))
    else:
        files["gaps"] = d / "gaps.conf"
        files["gaps"].write_text(export.ompi_rules(_gaps_choice(mpi, ops, np),
                                                   algorithms.ompi_algorithms()))
    return files


def run_side(mpi: str, np: int, imb: str, ops: list[str], sizes: list[int], file: Path | None,
             out: Path, seconds: float, timeout: float) -> peer.Figures:
    if out.is_file():
        return {(o, int(b)): float(t) for o, b, t in json.loads(out.read_text())}
    bench = peer.Peer("imb", imb)
    lr = launch_mod.choose(imb)
    cmd = peer.commands(bench, np, ops, sizes, validate.file_args(mpi, str(file) if file else
                                                                  None),
                        lambda n, fa, prog: lr.command(n) + fa + prog,
                        out.parent / "msglen.txt", seconds)[0]
    log = out.with_suffix(".log")
    log.unlink(missing_ok=True)
    rc = sweep.run_logged(cmd, lr.env(np), timeout, log)
    if rc != 0:
        raise MpilabError(f"IMB-MPI1 failed (exit {rc}; log {log})")
    got = peer.parse_imb(log.read_text(errors="replace"), np)
    out.write_text(json.dumps([[o, b, t] for (o, b), t in got.items()]))
    return got


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", choices=("openmpi", "mpich"), required=True)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--imb", required=True)
    ap.add_argument("--ops", default="bcast,allreduce,reduce,allgather")
    ap.add_argument("--sizes", default="8,64,1024,4096,16384,65536")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--imb-budget", type=float, default=6.0, help="IMB -time total per launch")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    d = Path(a.dir).resolve()
    d.mkdir(parents=True, exist_ok=True)
    ops, sizes = a.ops.split(","), [int(s) for s in a.sizes.split(",")]
    os.environ["AA_IMB"] = a.imb
    files = make_files(a.mpi, ops, a.np, d)
    print(f"{a.mpi} {a.np} ranks, IMB-MPI1 {a.imb}: load at start {loadavg()}", flush=True)
    sides: list[tuple[str, Path | None]] = [("default", None), *files.items()]
    seconds = max(0.05, a.imb_budget / (len(ops) * len(sizes)))
    figs: dict[str, list[peer.Figures]] = {s: [] for s, _ in sides}
    for k in range(1, a.rounds + 1):
        for name, f in (sides if k % 2 else sides[::-1]):
            figs[name].append(run_side(a.mpi, a.np, a.imb, ops, sizes, f,
                                       d / f"{name}.{k}.json", seconds, a.timeout))
        print(f"  round {k} done", flush=True)
    report: dict[str, Any] = {"mpi": a.mpi, "np": a.np, "rounds": a.rounds, "sides": {}}
    for name, _ in sides[1:]:
        per: confirm.Figures = {}
        for o in ops:
            for b in sizes:
                both = [(x[(o, b)], y[(o, b)]) for x, y in
                        zip(figs["default"], figs[name], strict=True)
                        if (o, b) in x and (o, b) in y]
                per[(o, b)] = ([x for x, _ in both], [y for _, y in both])
        v = confirm.verdicts(per, set())
        report["sides"][name] = v
        print(f"{name} against no file:")
        for r in v["rows"]:
            c = r["comparison"]
            iv = f"[{c['lo']:.3f}, {c['hi']:.3f}]" if c["lo"] is not None else "-"
            ra = f"x{c['ratio']:.3f}" if c["ratio"] is not None else "-"
            pv = f"p={c['p']:.4f}" if c["p"] is not None else "p=-"
            print(f"  {r['op']:<10} {r['bytes']:>6} {ra:>7} {iv:>16} {pv:>8} "
                  f"per-cell {r['per_cell']:<4} family-wise {r['verdict']}")
        print(f"{name}: {v['cells']} cells, {v['pairs']} pairs (need {v['pairs_needed']}), "
              f"{v['per_cell_losses']} per-cell losses, {v['losses']} family-wise losses: "
              f"{v['outcome']}", flush=True)
    write_json(str(d / "aa.json"), report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
