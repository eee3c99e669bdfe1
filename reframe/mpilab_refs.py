#!/usr/bin/env python3
"""Reference values for the ReFrame checks (reframe/mpilab_checks.py) as a JSON file
{variable: value}: from results files (the median over them of each variable they hold) or
from the history (`--history [DB]`: the median over the newest N runs holding the
measurement). Written by temporary name and rename.

    python3 reframe/mpilab_refs.py -o refs.json results/a.json results/b.json
    python3 reframe/mpilab_refs.py -o refs.json --history --last 10
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import mpilab_perf  # noqa: E402
from mpilab.errors import MpilabError, OneLineParser  # noqa: E402
from mpilab.fsutil import atomic_write_text, check_output, hold_fifo  # noqa: E402
from mpilab.results import load  # noqa: E402


def from_results(files: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    docs = [load(f).raw for f in files]
    for name in mpilab_perf.VARIABLES:
        vals = []
        for d in docs:
            try:
                vals.append(mpilab_perf.from_results(d, name))
            except KeyError:
                pass
        if vals:
            out[name] = statistics.median(vals)
    return out


def from_history(db_path: str | None, last: int) -> dict[str, float]:
    from mpilab.history import db

    c = db.connect(Path(db_path) if db_path else db.default_path(), create=False)
    out: dict[str, float] = {}
    try:
        for name, (op, impl, size, kind, _) in mpilab_perf.VARIABLES.items():
            by_run: dict[int, list[float]] = defaultdict(list)
            matching = db.series(c, f"{op}:{impl}/*/{size} *") + \
                db.series(c, f"{op}:{impl}/*/{size}")
            for s in matching:
                for o in db.observations(c, s.id, last):
                    by_run[o.run_id].append(o.figure)
            runs = sorted(by_run)[-last:]
            if runs:
                out[name] = statistics.median(mpilab_perf.value(kind, size, by_run[r])
                                              for r in runs)
    finally:
        c.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("files", nargs="*", metavar="RESULTS.json")
    ap.add_argument("--history", nargs="?", const="", metavar="DB",
                    help="read the history (default database, or DB)")
    ap.add_argument("--last", type=int, default=10, help="with --history: newest N runs")
    a = ap.parse_args(argv)
    if bool(a.files) == (a.history is not None):
        ap.error("give results files or --history, one of the two")
    if a.last < 1:
        ap.error("--last must be at least 1")
    if not a.out:
        ap.error("--out: empty file name")
    try:
        check_output(a.out)  # an output it could not write is refused before reading
        held = hold_fifo(a.out)  # a FIFO's write end is held until the refs are written
        try:
            refs = from_results(a.files) if a.files else from_history(a.history or None,
                                                                        a.last)
            if not refs:
                raise MpilabError("no measurement of the checks' variables found")
            atomic_write_text(a.out, json.dumps(refs, indent=1, sort_keys=True) + "\n")
        finally:
            if held is not None:
                os.close(held)
    except MpilabError as e:
        sys.stderr.write(f"mpilab_refs: {e}\n")
        return 2
    for k, v in sorted(refs.items()):
        print(f"{k} = {v:.6g} {mpilab_perf.unit(k)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
