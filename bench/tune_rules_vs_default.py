#!/usr/bin/env python3
"""Target of issue 31: the exported rules against the library's default, side by side in one
run. Per pair k: one launch of `mpilab-bench --ops <coll>:native` with the exported file
loaded (Open MPI: --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename
FILE; MPICH: MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=FILE) and one without it (the library
as a user gets it), the order alternating (ABBA) so a drift of the machine does not favour
one side. Per (collective, size) of the choice, one figure per launch (its median): the
ratio rules/default with the Hodges-Lehmann interval over the pairs, the per-cell verdict
(signed-rank test at 5%) and the family-wise verdict of mpilab.tune.confirm (Holm over every
cell for a LOSS beyond the minimum effect, over the cells given an algorithm for a GAIN).

The same comparison is `mpilab tune validate`'s measurement (mpilab.tune.validate), which
also takes out what loses and measures the re-exported file again.

Resumable: every launch file is kept in --dir and a launch already there is not repeated,
so a run longer than one bench slot continues in the next with the same command.

    python3 bench/tune_rules_vs_default.py --choice sw/choice.json --file sw/rules.conf \
        --np 2 --dir sw/rvd [--pairs 4] [--budget 20s] [--out rvd.json] [--testbed PREFIX]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from harness import find_tool, write_json
from mpilab import launch
from mpilab.errors import MpilabError
from mpilab.tune import validate


def _stop(_sig: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--choice", required=True)
    ap.add_argument("--file", required=True, help="the exported rules file / selection JSON")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--budget", default="20s")
    ap.add_argument("--timeout", type=float, default=400.0)
    ap.add_argument("--out")
    ap.add_argument("--testbed", metavar="PREFIX", help="launch inside this running testbed")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, _stop)
    choice = json.loads(Path(a.choice).read_text(encoding="utf-8"))
    cells = [c for c in choice["cells"] if int(c["np"]) == a.np and c["winner"]]
    if not cells:
        sys.stderr.write(f"{a.choice}: no cell for {a.np} ranks\n")
        return 2
    if not Path(a.file).is_file():
        sys.stderr.write(f"{a.file}: no such file\n")
        return 2
    mpi = launch.program_mpi(find_tool("mpilab-bench")) or "openmpi"
    try:
        rows = validate.measure(choice, a.np, mpi, str(Path(a.file).resolve()), Path(a.dir),
                                a.pairs, a.budget, a.timeout,
                                lambda s: sys.stderr.write(s + "\n"), a.testbed)
    except MpilabError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    print(f"{mpi}, {a.np} ranks, {a.pairs} pairs of launches (rules file {a.file} vs none)")
    print(f"{'op':<10} {'bytes':>8} {'chosen':<30} {'sweep':>6} {'rules/default':>14} "
          f"{'interval':>17}  verdict  family-wise (Holm)")
    for r in rows:
        c = r["comparison"]
        iv = f"[{c['lo']:.3f}, {c['hi']:.3f}]" if c["lo"] is not None else "-"
        ra = f"{c['ratio']:.3f}" if c["ratio"] is not None else "-"
        sr = f"{r['sweep_ratio']:.3f}" if r["sweep_ratio"] is not None else "-"
        print(f"{r['op']:<10} {r['bytes']:>8} {r['winner']:<30} {sr:>6} {ra:>14} {iv:>17}  "
              f"{r['per_cell']:<7}  {r['verdict']}")
    gains = [r for r in rows if r["per_cell"] == "GAIN"]
    losses = [r for r in rows if r["per_cell"] == "LOSS"]
    print(f"{len(rows)} cells: {len(gains)} significant gains, {len(losses)} significant "
          f"losses, {len(rows) - len(gains) - len(losses)} same (each cell at 5%)")
    hg = [r for r in rows if r["verdict"] == "GAIN"]
    hl = [r for r in rows if r["verdict"] == "LOSS"]
    print(f"family-wise at 5% (Holm): {len(hg)} gains, {len(hl)} losses"
          + ("" if all(r["decidable"] for r in rows) else
             f" (undecided: too few pairs for {len(rows)} cells)"))
    for r in hg:
        c = r["comparison"]
        print(f"  gain: {r['op']} {r['bytes']} B {r['winner']}: x{c['ratio']:.3f} "
              f"[{c['lo']:.3f}, {c['hi']:.3f}] of the default")
    if a.out:
        write_json(a.out, {"mpi": mpi, "np": a.np, "pairs": a.pairs, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
