"""`mpilab history`: results over time (docs/history.md).

add RESULTS.json...   index results files (machine, MPI, launcher, options, measurements)
list                  the runs
show RUN              one run: its context and measurements
trend MEASUREMENT     one measurement over the runs, with its change points
report -o page.html   a trend plot per measurement, change points marked
check                 exit 1 when the newest run is significantly worse than the baseline
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from mpilab import argtypes
from mpilab.errors import MpilabError
from mpilab.history_option import ENV as ENV  # the option lives apart; named here too
from mpilab.history_option import add_option as add_option
from mpilab.history_option import history_target


def _db_path(args: Any) -> Path:
    from mpilab.history.db import default_path

    return Path(args.db) if args.db else default_path()


def _open(args: Any, create: bool = False) -> sqlite3.Connection:
    from mpilab.history.db import connect

    return connect(_db_path(args), create=create)


def _us(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e6:.4g}"


def _add(args: Any) -> int:
    from mpilab.history.db import add_file, prepare

    # every file checked before the history is opened: a refused one creates no history
    ready = [(f, prepare(f)) for f in args.files]
    c = _open(args, create=True)
    try:
        for f, prep in ready:
            run_id, added, n = add_file(c, f, prep)
            word = "added as" if added else "already in the history as"
            print(f"{f}: {word} run {run_id} ({n} measurements)")
    finally:
        c.close()
    return 0


def add_after(results_file: str, where: str | None) -> None:
    """Add a results file that `bench`, `survey` or `compare` just wrote (`--history`, or
    $MPILAB_HISTORY: '1' or '' the default history, else that path). A failure is one line on
    stderr; the command's own result stands."""
    from mpilab.history.db import add_file, connect, default_path, prepare

    path = default_path() if where in (None, "", "1") else Path(where)
    try:
        prep = prepare(results_file)  # before the history is opened (or created)
        c = connect(path)
        try:
            run_id, added, n = add_file(c, results_file, prep)
        finally:
            c.close()
        sys.stderr.write(f"mpilab: history {path}: run {run_id} ({n} measurements)"
                         f"{'' if added else ', already there'}\n")
    except MpilabError as e:
        sys.stderr.write(f"mpilab: history not updated: {e}\n")


def after_run(args: Any, files: list[str]) -> None:
    """--history / $MPILAB_HISTORY: add the results files a command just wrote, in order;
    nothing when neither asks."""
    where = history_target(getattr(args, "history", None))
    if where is None:
        return
    for f in files:
        if Path(f).is_file():
            add_after(f, where)


def _list(args: Any) -> int:
    from mpilab.history.db import runs

    c = _open(args)
    try:
        rs = runs(c, args.last)
    finally:
        c.close()
    print(f"{'run':>5}  {'date':20}  {'context':16}  {'mpi':18}  {'n':>5}  source")
    for r in rs:
        mpi = str(r.mpi.get("mpi") or "-")[:18]
        part = " (partial)" if r.partial else ""
        print(f"{r.id:>5}  {r.date:20}  {r.context:16}  {mpi:18}  {r.points:>5}  "
              f"{r.source}{part}")
    return 0


def _show(args: Any) -> int:
    from mpilab.history.db import run, run_points

    c = _open(args)
    try:
        r = run(c, args.run)
        pts = run_points(c, r.id)
    finally:
        c.close()
    print(f"run {r.id}: {r.date}  {r.source}")
    for what in ("machine", "mpi", "launcher", "options"):
        print(f"  {what}: {json.dumps(getattr(r, what), sort_keys=True)}")
    print(f"  context {r.context}, {r.launches} launch(es){', partial' if r.partial else ''}")
    print(f"{'series':>7}  {'measurement':40}  {'figure us':>10}  {'interval us':>22}  flags")
    for s, o in pts:
        iv = f"{_us(o.lo)} .. {_us(o.hi)}" if o.lo is not None else "-"
        print(f"#{s.id:>6}  {s.name:40}  {_us(o.figure):>10}  {iv:>22}  {','.join(o.flags)}")
    return 0


def _select(c: sqlite3.Connection, pattern: str, most: int = 20) -> list[Any]:
    from mpilab.history.db import series

    ss = series(c, pattern)
    if not ss:
        raise MpilabError(f"no measurement matches {pattern!r} (mpilab history show RUN "
                          "names them; a glob such as 'p2p:*/1024 *' or a series as '#N')")
    if len(ss) > most:
        raise MpilabError(f"{len(ss)} series match {pattern!r}: at most {most}; narrow it "
                          "(a series as '#N')")
    return ss


def _trend(args: Any) -> int:
    from mpilab.history import detect
    from mpilab.history.db import observations

    c = _open(args)
    try:
        for s in _select(c, args.measurement):
            obs = observations(c, s.id, args.last)
            cps = detect.segments([o.figure for o in obs], [o.lo for o in obs],
                                  [o.hi for o in obs])
            at = {cp.at: cp for cp in cps}
            print(f"#{s.id} {s.name} (context {s.context}): {len(obs)} run(s), "
                  f"{len(cps)} change point(s)")
            print(f"{'run':>6}  {'date':20}  {'figure us':>10}  {'interval us':>22}  change")
            for i, o in enumerate(obs):
                iv = f"{_us(o.lo)} .. {_us(o.hi)}" if o.lo is not None else "-"
                mark = ""
                if i in at:
                    mark = (f"<- {(at[i].ratio - 1) * 100:+.1f}% from here "
                            f"(p = {at[i].p:.2g})")
                print(f"{o.run_id:>6}  {o.date:20}  {_us(o.figure):>10}  {iv:>22}  {mark}")
    finally:
        c.close()
    return 0


def _report(args: Any) -> int:
    from mpilab.history.report import write_report

    c = _open(args)
    try:
        n = write_report(c, args.out, args.measurement, args.last)
    finally:
        c.close()
    print(f"{args.out}: {n} trend plot(s)")
    return 0


def _check(args: Any) -> int:
    from mpilab.history import detect
    from mpilab.history.db import latest_runs, observations, run_points

    c = _open(args)
    alarms: list[str] = []
    checked = 0
    try:
        for rid in latest_runs(c):
            for s, _ in run_points(c, rid):
                obs = observations(c, s.id, args.window)
                v = detect.check_latest([o.figure for o in obs], [o.lo for o in obs],
                                        [o.hi for o in obs], args.window, args.alpha,
                                        args.min_effect)
                checked += 1
                if v.worse and v.began is not None:
                    alarms.append(f"{s.name} (#{s.id}): worse since run {obs[v.began].run_id} "
                                  f"({obs[v.began].date}): {v.why}")
    finally:
        c.close()
    for a in alarms:
        print(a)
    print(f"mpilab history check: {len(alarms)} of {checked} measurement(s) of the newest "
          f"run(s) significantly worse than their baseline")
    return 1 if alarms else 0


def _guarded(fn: Any) -> Any:
    """A subcommand whose database errors are one line naming the file: SQLite's own
    (a corrupt page met while reading) and rows that are not what mpilab writes."""
    def run(args: Any) -> int:
        from mpilab.history.db import errors_named

        with errors_named(_db_path(args)):
            return int(fn(args))
    return run


def _nonempty(text: str) -> str:
    if not text:
        raise ValueError("an empty value")
    return text


def register(sub: Any) -> None:
    p = sub.add_parser("history", help="results over time: add, list, trend, report, check")
    p.add_argument("--db", metavar="PATH", type=argtypes.wrap(_nonempty, "path"),
                   help="the history database (default $MPILAB_DATA_DIR/history.sqlite, else "
                        "$XDG_DATA_HOME/mpilab/..., else ~/.local/share/mpilab/...)")
    hs = p.add_subparsers(dest="history_cmd", metavar="SUBCOMMAND", required=True,
                          parser_class=type(p))
    a = hs.add_parser("add", help="add results files (mpilab.results/1)")
    a.add_argument("files", nargs="+", metavar="RESULTS.json")
    a.set_defaults(func=_guarded(_add))
    ls = hs.add_parser("list", help="the runs, oldest first")
    ls.add_argument("--last", type=argtypes.positive, help="only the N newest")
    ls.set_defaults(func=_guarded(_list))
    sh = hs.add_parser("show", help="one run: context and measurements")
    sh.add_argument("run", type=argtypes.positive, metavar="RUN")
    sh.set_defaults(func=_guarded(_show))
    tr = hs.add_parser("trend", help="one measurement over the runs")
    tr.add_argument("measurement", metavar="MEASUREMENT", type=argtypes.wrap(_nonempty, "glob"),
                    help="a glob on the measurement's name (op:impl/timing/bytes ranks=N ...) "
                         "or a series as '#N'")
    tr.add_argument("--last", type=argtypes.positive, help="only the N newest runs")
    tr.set_defaults(func=_guarded(_trend))
    rp = hs.add_parser("report", help="an HTML page: one trend plot per measurement")
    rp.add_argument("-o", "--out", required=True, metavar="PAGE.html")
    rp.add_argument("--measurement", metavar="GLOB", type=argtypes.wrap(_nonempty, "glob"),
                    help="only these measurements")
    rp.add_argument("--last", type=argtypes.positive, help="only the N newest runs")
    rp.set_defaults(func=_guarded(_report))
    ck = hs.add_parser("check", help="exit 1 when the newest run is significantly worse")
    ck.add_argument("--window", type=argtypes.positive, default=30,
                    help="runs considered, newest included (default 30)")
    ck.add_argument("--alpha", type=argtypes.fraction, default=0.05,
                    help="significance level of a change point (default 0.05)")
    ck.add_argument("--min-effect", type=argtypes.fraction, default=0.05,
                    help="smallest change that counts, as a fraction (default 0.05)")
    ck.set_defaults(func=_guarded(_check))
