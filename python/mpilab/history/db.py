"""The history database: one SQLite file (stdlib sqlite3), versioned with PRAGMA user_version.

Why SQLite and not DuckDB: the history is one file with nothing to start, and several
processes add to it at once (nightly jobs, `bench --history` beside a cron `check`). SQLite
in write-ahead-log mode lets readers go on while one writer commits, and a writer that finds
the database locked waits (busy timeout) instead of failing; DuckDB allows one process to
open a database for writing at a time.

Tables (version 2):
* runs: one results file: its date, path, SHA-256 of its bytes (a file added twice is one
  run), and its context: machine, MPI library and version, launcher, options (each a JSON
  text) and `context`, a hash of the four;
* series: one measurement identity in one context (operation, implementation, timing,
  isolation, schedule, bytes, bytes back, root, ranks, pair: mpilab.launchvar's key);
* points: one measurement of one run: the launch-level figure (median of the launch
  medians, seconds), its interval, the launch medians, flags.

Version 1 kept the measurements of a run in one table with their identity inline and no
launch medians; opening such a file migrates it in one transaction after copying it to
`NAME.v1.bak` (the copy stays: a migration never loses the history).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mpilab.errors import MpilabError
from mpilab.launchvar import data_dir, measurement_key
from mpilab.results import load
from mpilab.results_model import Results

DB_FILE = "history.sqlite"
VERSION = 2
BUSY_TIMEOUT_MS = 60_000
#: options that do not change what a measurement is (sizes and operations are in the
#: measurement's identity; precision and budget change how long it runs)
_FREE_OPTIONS = frozenset({"ops", "sizes", "timing", "timing_skipped", "precision", "models",
                           "fit", "resync", "time_budget", "out"})

V1_SCHEMA = """
CREATE TABLE runs(id INTEGER PRIMARY KEY, date TEXT NOT NULL, added TEXT NOT NULL,
  source TEXT NOT NULL, digest TEXT NOT NULL UNIQUE, machine TEXT NOT NULL, mpi TEXT NOT NULL,
  launcher TEXT NOT NULL, options TEXT NOT NULL, context TEXT NOT NULL);
CREATE TABLE measurements(run_id INTEGER NOT NULL REFERENCES runs(id), mkey TEXT NOT NULL,
  name TEXT NOT NULL, figure REAL NOT NULL, lo REAL, hi REAL);
"""

V2_SCHEMA = """
CREATE TABLE runs(id INTEGER PRIMARY KEY, date TEXT NOT NULL, added TEXT NOT NULL,
  source TEXT NOT NULL, digest TEXT NOT NULL UNIQUE, machine TEXT NOT NULL, mpi TEXT NOT NULL,
  launcher TEXT NOT NULL, options TEXT NOT NULL, context TEXT NOT NULL,
  launches INTEGER, partial INTEGER NOT NULL DEFAULT 0);
CREATE TABLE series(id INTEGER PRIMARY KEY, context TEXT NOT NULL, mkey TEXT NOT NULL,
  name TEXT NOT NULL, op TEXT, UNIQUE(context, mkey));
CREATE TABLE points(series_id INTEGER NOT NULL REFERENCES series(id),
  run_id INTEGER NOT NULL REFERENCES runs(id), figure REAL NOT NULL, lo REAL, hi REAL,
  launch_medians TEXT, flags TEXT, PRIMARY KEY(series_id, run_id)) WITHOUT ROWID;
CREATE INDEX points_run ON points(run_id);
CREATE INDEX runs_context_date ON runs(context, date, id);
"""


def default_path() -> Path:
    """$MPILAB_DATA_DIR/history.sqlite (the data-directory rule of mpilab.launchvar)."""
    return data_dir() / DB_FILE


def _migrate_1_to_2(c: sqlite3.Connection) -> None:
    c.execute("ALTER TABLE runs ADD COLUMN launches INTEGER")
    c.execute("ALTER TABLE runs ADD COLUMN partial INTEGER NOT NULL DEFAULT 0")
    c.execute("CREATE TABLE series(id INTEGER PRIMARY KEY, context TEXT NOT NULL, "
              "mkey TEXT NOT NULL, name TEXT NOT NULL, op TEXT, UNIQUE(context, mkey))")
    c.execute("INSERT INTO series(context, mkey, name, op) SELECT r.context, m.mkey, "
              "min(m.name), json_extract(m.mkey, '$[0]') FROM measurements m "
              "JOIN runs r ON r.id = m.run_id GROUP BY r.context, m.mkey")
    c.execute("CREATE TABLE points(series_id INTEGER NOT NULL REFERENCES series(id), "
              "run_id INTEGER NOT NULL REFERENCES runs(id), figure REAL NOT NULL, lo REAL, "
              "hi REAL, launch_medians TEXT, flags TEXT, PRIMARY KEY(series_id, run_id)) "
              "WITHOUT ROWID")
    c.execute("INSERT OR IGNORE INTO points(series_id, run_id, figure, lo, hi) "
              "SELECT s.id, m.run_id, m.figure, m.lo, m.hi FROM measurements m "
              "JOIN runs r ON r.id = m.run_id JOIN series s ON s.context = r.context "
              "AND s.mkey = m.mkey")
    c.execute("DROP TABLE measurements")
    c.execute("CREATE INDEX points_run ON points(run_id)")
    c.execute("CREATE INDEX runs_context_date ON runs(context, date, id)")


#: from version k to k + 1
MIGRATIONS = {1: _migrate_1_to_2}


def _refuse(path: Path, why: str) -> MpilabError:
    return MpilabError(f"{path}: {why}")


@contextmanager
def write(c: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, taken at once (BEGIN IMMEDIATE: a second writer waits for the
    busy timeout rather than failing half-way); rolled back on any error."""
    c.execute("BEGIN IMMEDIATE")
    try:
        yield c
    except BaseException:
        c.execute("ROLLBACK")
        raise
    c.execute("COMMIT")


def connect(path: Path, create: bool = True) -> sqlite3.Connection:
    """The history at path, at the current schema version (created when missing and
    `create`; migrated from an older version). Refused in one line: not a regular file, not
    an SQLite database, another program's database, a newer version."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, "the history is not a regular file")
        if st.st_size == 0 and not create:  # SQLite would take it as an empty history
            raise _refuse(path, "an empty file, no history (mpilab history add creates one)")
        if st.st_size > 0:  # SQLite takes a short file as empty, and would write over it
            with open(path, "rb") as f:
                if f.read(16) != b"SQLite format 3\x00":
                    raise _refuse(path, "not an SQLite database (not an mpilab history); "
                                        "move it aside or use --db")
    except FileNotFoundError:
        if not create:
            raise _refuse(path, "no history here (mpilab history add creates one)") from None
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _refuse(path, f"cannot read the history ({e.strerror})") from None
    try:
        c = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        c.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        c.execute("PRAGMA journal_mode = WAL")
        c.execute("PRAGMA foreign_keys = ON")
        # SQLite's own consistency check (pages, cells, NOT NULL; 20 ms for 17 MiB): a
        # damaged file is refused before it is read, migrated or added to
        ok = c.execute("PRAGMA quick_check(1)").fetchone()
        if ok is None or ok[0] != "ok":
            why = " ".join(str(ok[0] if ok else "no answer").split())[:160]
            c.close()
            raise _refuse(path, f"a damaged SQLite database ({why}); move it aside or "
                                "use --db")
        _upgrade(c, path)
    except sqlite3.DatabaseError as e:
        why = " ".join(str(e).split())[:160]  # SQLite quotes schema text, line breaks too
        raise _refuse(path, f"not an mpilab history ({why}); move it aside or use --db") from None
    except UnicodeDecodeError:
        raise _refuse(path, "not an mpilab history (text that is not UTF-8); move it aside "
                            "or use --db") from None
    except OSError as e:
        raise _refuse(path, f"cannot open the history ({e.strerror})") from None
    return c


def _tables(c: sqlite3.Connection) -> set[str]:
    return {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _upgrade(c: sqlite3.Connection, path: Path) -> None:
    v = c.execute("PRAGMA user_version").fetchone()[0]
    if v == VERSION:
        return
    if v > VERSION:
        raise _refuse(path, f"history schema version {v} is newer than this mpilab's "
                            f"({VERSION}); use a newer mpilab")
    if v < 0:
        raise _refuse(path, f"history schema version {v}: not an mpilab history; move it "
                            "aside or use --db")
    if v > 0:  # the copy is taken outside the write transaction (a backup from inside it
        _backup(c, path, v)  # waits for the lock that transaction holds)
    with write(c):
        v = c.execute("PRAGMA user_version").fetchone()[0]  # another process may have
        if v == VERSION:                                     # migrated it meanwhile
            return
        tables = _tables(c)
        if v == 0:
            if tables:
                raise _refuse(path, "an SQLite database of another program (no mpilab "
                                    "history schema version); move it aside or use --db")
            for stmt in V2_SCHEMA.split(";"):
                if stmt.strip():
                    c.execute(stmt)
        else:
            while v < VERSION:
                MIGRATIONS[v](c)
                v += 1
        c.execute(f"PRAGMA user_version = {VERSION}")


def _backup(c: sqlite3.Connection, path: Path, v: int) -> None:
    """A copy of the database as it is, before a migration: NAME.vV.bak."""
    dest = path.with_name(f"{path.name}.v{v}.bak")
    if dest.exists():
        return
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
    b = sqlite3.connect(tmp)
    try:
        c.backup(b)
    finally:
        b.close()
    os.replace(tmp, dest)


# ---------------------------------------------------------------- adding

def _j(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def context_of(prov: dict[str, Any]) -> dict[str, str]:
    """machine, mpi, launcher and options of a results file's provenance (JSON texts) and
    `context`, the hash of the four."""
    hosts = prov.get("hosts") if isinstance(prov.get("hosts"), list) else []
    machine = {"hosts": sorted({str(h) for h in hosts}), "setting": prov.get("setting")}
    build = prov.get("build") if isinstance(prov.get("build"), dict) else {}
    mpi = {"mpi": prov.get("mpi"), "library": prov.get("mpi_library"),
           "build": build.get("mpi") if isinstance(build.get("mpi"), dict) else None}
    la = prov.get("launcher") if isinstance(prov.get("launcher"), dict) else {}
    args = la.get("args") if isinstance(la.get("args"), list) else []
    launcher = {"name": la.get("name"), "args": [str(a) for a in args[1:]]}
    opts = prov.get("options") if isinstance(prov.get("options"), dict) else {}
    options = {k: v for k, v in sorted(opts.items()) if k not in _FREE_OPTIONS}
    if isinstance(prov.get("mca"), dict):
        options["mca"] = prov["mca"]
    out = {"machine": _j(machine), "mpi": _j(mpi), "launcher": _j(launcher),
           "options": _j(options)}
    out["context"] = hashlib.sha256(_j(out).encode()).hexdigest()[:16]
    return out


def measurement_name(m: dict[str, Any]) -> str:
    """A short readable name: op:impl/timing/bytes[ ranks=N][ pair=i-j][ root=R]."""
    name = f"{m.get('op')}:{m.get('impl')}/{m.get('timing')}/{m.get('bytes')}"
    if m.get("ranks") is not None:
        name += f" ranks={m['ranks']}"
    pair = m.get("pair")
    if isinstance(pair, list | tuple) and len(pair) == 2:
        name += f" pair={pair[0]}-{pair[1]}"
    if m.get("root") not in (None, 0):
        name += f" root={m['root']}"
    return name


def _pos(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(v) and v > 0 else None


@dataclass(frozen=True)
class Point:
    """One measurement of one run."""
    key: dict[str, Any]
    figure: float
    lo: float | None
    hi: float | None
    launch_medians: list[float]
    flags: list[str]


def points_of(res: Results) -> list[Point]:
    """Every measurement of a results file with a positive figure: its launch-level figure
    (stats.median: the median of the launch medians in a file of several launches; stats.mean
    in a file without medians), its
    interval and launch medians; each pair of a compact pair matrix as a point of its own."""
    out: list[Point] = []
    for m in res.measurements:
        raw = m.raw
        st = raw.get("stats") if isinstance(raw.get("stats"), dict) else {}
        # the median; a file that states no median at all (the first schema asked only
        # for the mean) is kept by its mean
        fig = _pos(st.get("median") if "median" in st else st.get("mean"))
        if fig is None:
            continue
        la = raw.get("launches") if isinstance(raw.get("launches"), dict) else {}
        meds = [x for x in (_pos(v) for v in la.get("medians") or []) if x is not None]
        flags = [f for f in raw.get("flags") or [] if isinstance(f, str)]
        out.append(Point(raw, fig, _pos(st.get("med_lo")), _pos(st.get("med_hi")),
                         meds or [fig], flags))
    for pm in res.pair_matrices:
        for i, j, med in zip(pm.i, pm.j, pm.median, strict=True):
            fig = _pos(med)
            if fig is None:
                continue
            key = {"op": pm.op, "impl": pm.impl, "timing": pm.timing, "bytes": pm.bytes,
                   "bytes_back": pm.bytes_back, "ranks": pm.ranks, "schedule": pm.schedule,
                   "pair": [i, j], "isolation": pm.raw.get("isolation")}
            out.append(Point(key, fig, None, None, [fig], []))
    return out


def digest(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def add_results(c: sqlite3.Connection, res: Results, source: str, dig: str) -> tuple[int, bool]:
    """Add one loaded results file (one transaction). Returns (run id, added): a file whose
    bytes are already in the history is not added again."""
    raw = res.raw
    la = raw.get("launches") if isinstance(raw.get("launches"), dict) else {}
    n_launch = la.get("n") if isinstance(la.get("n"), int) else 1
    return add_run(c, res.provenance, points_of(res), source, dig, n_launch,
                   raw.get("partial") is True)


def add_run(c: sqlite3.Connection, prov: dict[str, Any], pts: list[Point], source: str,
            dig: str, launches: int = 1, partial: bool = False) -> tuple[int, bool]:
    """Add one run: its provenance (context and date) and points, in one transaction.
    (run id, added); a digest already in the history is not added again."""
    ctx = context_of(prov)
    date = prov.get("date") if isinstance(prov.get("date"), str) else now()
    with write(c):
        old = c.execute("SELECT id FROM runs WHERE digest = ?", (dig,)).fetchone()
        if old:
            return int(old[0]), False
        cur = c.execute(
            "INSERT INTO runs(date, added, source, digest, machine, mpi, launcher, options, "
            "context, launches, partial) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (date, now(), source, dig, ctx["machine"], ctx["mpi"], ctx["launcher"],
             ctx["options"], ctx["context"], launches, 1 if partial else 0))
        run_id = int(cur.lastrowid or 0)
        for p in pts:
            mkey = measurement_key(p.key)
            c.execute("INSERT OR IGNORE INTO series(context, mkey, name, op) VALUES (?,?,?,?)",
                      (ctx["context"], mkey, measurement_name(p.key), p.key.get("op")))
            sid = c.execute("SELECT id FROM series WHERE context = ? AND mkey = ?",
                            (ctx["context"], mkey)).fetchone()[0]
            c.execute("INSERT OR IGNORE INTO points(series_id, run_id, figure, lo, hi, "
                      "launch_medians, flags) VALUES (?,?,?,?,?,?,?)",
                      (sid, run_id, p.figure, p.lo, p.hi, _j(p.launch_medians), _j(p.flags)))
    return run_id, True


def prepare(path: str) -> tuple[Any, str]:
    """Load (mpilab.results: a bad file is one line) a results file to add: (results,
    digest). Done before the history is opened, so a refused file creates no history."""
    res = load(path)
    try:
        dig = digest(path)
    except OSError as e:
        raise MpilabError(f"{path}: cannot read it ({e.strerror})") from None
    return res, dig


def add_file(c: sqlite3.Connection, path: str,
             prepared: tuple[Any, str] | None = None) -> tuple[int, bool, int]:
    """Add one results file (loaded here, or `prepared` by prepare(path) before): (run id,
    added, measurements)."""
    res, dig = prepared if prepared is not None else prepare(path)
    run_id, added = add_results(c, res, os.path.abspath(path), dig)
    n = c.execute("SELECT count(*) FROM points WHERE run_id = ?", (run_id,)).fetchone()[0]
    return run_id, added, int(n)


# ---------------------------------------------------------------- reading

@dataclass(frozen=True)
class Run:
    id: int
    date: str
    source: str
    context: str
    machine: dict[str, Any]
    mpi: dict[str, Any]
    launcher: dict[str, Any]
    options: dict[str, Any]
    launches: int | None
    partial: bool
    points: int


_RUN_COLS = ("r.id, r.date, r.source, r.context, r.machine, r.mpi, r.launcher, r.options, "
             "r.launches, r.partial, (SELECT count(*) FROM points p WHERE p.run_id = r.id)")


@contextmanager
def errors_named(path: Path) -> Iterator[None]:
    """Errors met while the history at path is read or written, as one line naming it:
    rows that are not what mpilab writes (Damaged) and SQLite's own (a corrupt page)."""
    try:
        yield
    except Damaged as e:
        raise MpilabError(f"{path}: {e}") from None
    except UnicodeDecodeError:
        raise MpilabError(f"{path}: damaged history: text that is not UTF-8; move it aside "
                          "or use --db") from None
    except sqlite3.DatabaseError as e:
        why = " ".join(str(e).split())[:160]
        raise MpilabError(f"{path}: not a readable mpilab history ({why}); move it aside "
                          "or use --db") from None


class Damaged(MpilabError):
    """A row of the history that is not what mpilab writes (edited or corrupted by hand):
    the message names the row and the column; the command adds the file."""


#: the most launch medians or flags one point holds, and the longest JSON text read back
_MAX_ITEMS = 100_000
_MAX_TEXT = 1 << 22


def _bad(where: str, v: Any, why: str) -> Damaged:
    shown = repr(v)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return Damaged(f"damaged history: {where}: {shown} {why}")


def _int(v: Any, where: str, least: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        raise _bad(where, v, f"is not an integer of at least {least}")
    return v


def _text(v: Any, where: str, empty: bool = False) -> str:
    if not isinstance(v, str) or (not empty and not v) or len(v) > _MAX_TEXT:
        raise _bad(where, v, "is not a text")
    return v


def _number(v: Any, where: str, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
            or (positive and v <= 0):
        raise _bad(where, v, "is not a positive finite number" if positive
                   else "is not a finite number")
    return float(v)


def _json(v: Any, where: str, kind: type) -> Any:
    t = _text(v, where)
    try:
        x = json.loads(t)
    except (ValueError, RecursionError):
        raise _bad(where, v, "is not JSON") from None
    if not isinstance(x, kind):
        raise _bad(where, v, f"is not a JSON {'object' if kind is dict else 'array'}")
    return x


def _date(v: Any, where: str) -> str:
    t = _text(v, where)
    try:
        datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise _bad(where, v, "is not an ISO 8601 date") from None
    return t


def _obs(row: Any, at: str) -> Obs:
    """(run_id, date, figure, lo, hi, launch_medians, flags) checked."""
    run_id = _int(row[0], f"{at}: run", 1)
    fig = _number(row[2], f"{at}: figure", positive=True)
    # times, as `history add` stores them (points_of keeps only positive ends)
    lo = None if row[3] is None else _number(row[3], f"{at}: lo", positive=True)
    hi = None if row[4] is None else _number(row[4], f"{at}: hi", positive=True)
    if lo is not None and hi is not None and lo > hi:
        raise _bad(f"{at}: interval", [lo, hi], "has its low end above its high end")
    meds = [fig]
    if row[5]:
        meds = _json(row[5], f"{at}: launch_medians", list)
        if len(meds) > _MAX_ITEMS or not all(
                not isinstance(m, bool) and isinstance(m, int | float) and math.isfinite(m)
                and m > 0 for m in meds):
            raise _bad(f"{at}: launch_medians", row[5], "is not a list of positive numbers")
        meds = [float(m) for m in meds]
    flags: list[str] = []
    if row[6]:
        flags = _json(row[6], f"{at}: flags", list)
        if len(flags) > _MAX_ITEMS or not all(isinstance(f, str) for f in flags):
            raise _bad(f"{at}: flags", row[6], "is not a list of texts")
    return Obs(run_id, _date(row[1], f"run {run_id}: date"), fig, lo, hi, meds, flags)


def _series(r: Any) -> Series:
    sid = _int(r[0], "series: id", 1)
    return Series(sid, _text(r[1], f"series {sid}: context"),
                  _text(r[2], f"series {sid}: name"),
                  None if r[3] is None else _text(r[3], f"series {sid}: op", empty=True))


def _run(row: Any) -> Run:
    rid = _int(row[0], "run: id", 1)
    at = f"run {rid}"
    launches = None if row[8] is None else _int(row[8], f"{at}: launches", 1)
    if row[9] not in (0, 1) or isinstance(row[9], float):
        raise _bad(f"{at}: partial", row[9], "is not 0 or 1")
    return Run(rid, _date(row[1], f"{at}: date"), _text(row[2], f"{at}: source"),
               _text(row[3], f"{at}: context"), _json(row[4], f"{at}: machine", dict),
               _json(row[5], f"{at}: mpi", dict), _json(row[6], f"{at}: launcher", dict),
               _json(row[7], f"{at}: options", dict), launches, bool(row[9]),
               _int(row[10], f"{at}: points"))


def runs(c: sqlite3.Connection, limit: int | None = None) -> list[Run]:
    """The runs, newest last (the `limit` newest)."""
    q = f"SELECT {_RUN_COLS} FROM runs r ORDER BY r.date DESC, r.id DESC"
    rows = c.execute(q + (" LIMIT ?" if limit else ""), (limit,) if limit else ()).fetchall()
    return [_run(r) for r in reversed(rows)]


def run(c: sqlite3.Connection, run_id: int) -> Run:
    row = c.execute(f"SELECT {_RUN_COLS} FROM runs r WHERE r.id = ?", (run_id,)).fetchone()
    if row is None:
        raise MpilabError(f"no run {run_id} in the history (mpilab history list shows them)")
    return _run(row)


@dataclass(frozen=True)
class Series:
    id: int
    context: str
    name: str
    op: str | None


def series(c: sqlite3.Connection, pattern: str | None = None) -> list[Series]:
    """Series whose name matches the glob `pattern` (SQLite GLOB, case-sensitive; a series
    id as '#N'), all when None."""
    if pattern is not None and pattern.startswith("#") and pattern[1:].isdigit():
        rows = c.execute("SELECT id, context, name, op FROM series WHERE id = ?",
                         (int(pattern[1:]),)).fetchall()
    elif pattern is not None:
        rows = c.execute("SELECT id, context, name, op FROM series WHERE name GLOB ? "
                         "ORDER BY id", (pattern,)).fetchall()
    else:
        rows = c.execute("SELECT id, context, name, op FROM series ORDER BY id").fetchall()
    return [_series(r) for r in rows]


@dataclass(frozen=True)
class Obs:
    """One point of a series, with its run."""
    run_id: int
    date: str
    figure: float
    lo: float | None
    hi: float | None
    launch_medians: list[float]
    flags: list[str]


def observations(c: sqlite3.Connection, series_id: int, last: int | None = None) -> list[Obs]:
    """The points of a series in run order (date, then id), the `last` newest."""
    q = ("SELECT p.run_id, r.date, p.figure, p.lo, p.hi, p.launch_medians, p.flags "
         "FROM points p JOIN runs r ON r.id = p.run_id WHERE p.series_id = ? "
         "ORDER BY r.date DESC, r.id DESC")
    rows = c.execute(q + (" LIMIT ?" if last else ""),
                     (series_id, last) if last else (series_id,)).fetchall()
    return [_obs(r, f"series {series_id}, run {r[0]!r}") for r in reversed(rows)]


def run_points(c: sqlite3.Connection, run_id: int) -> list[tuple[Series, Obs]]:
    rows = c.execute(
        "SELECT s.id, s.context, s.name, s.op, p.run_id, r.date, p.figure, p.lo, p.hi, "
        "p.launch_medians, p.flags FROM points p JOIN series s ON s.id = p.series_id "
        "JOIN runs r ON r.id = p.run_id WHERE p.run_id = ? ORDER BY s.id", (run_id,)).fetchall()
    return [(_series(r[:4]), _obs(r[4:], f"series {r[0]!r}, run {run_id}")) for r in rows]


def latest_runs(c: sqlite3.Connection) -> list[int]:
    """The newest run of every context."""
    rows = c.execute("SELECT context FROM runs GROUP BY context").fetchall()
    out = []
    for (ctx,) in rows:
        r = c.execute("SELECT id FROM runs WHERE context = ? ORDER BY date DESC, id DESC "
                      "LIMIT 1", (ctx,)).fetchone()
        out.append(_int(r[0], "run: id", 1))
    return sorted(out)
