"""Launch-to-launch variation of one machine, measured once and kept up to date.

A launch of mpilab-bench (one mpirun) sits at a level of its own: on a shared or virtual
machine the same command's launch medians differ by a few percent to tens of percent, so one
launch's own interval does not say what a repeat of the command reports. Instead of
repeating every measurement over several launches, the variation of launch medians is kept in
a store per *context* (machine, launcher and its settings, rank count; the MPI library it
held for is recorded and checked) and per *measurement* (operation, implementation, timing,
size, pair): the last KEEP launch medians of each. Every run adds its launches, so the store
is re-checked on every run at no extra cost; a context seen for the first time, or a
measurement group (an operation at any size) without history, is measured over
BOOTSTRAP_LAUNCHES launches once.

The standard deviation of the log launch medians of one measurement is robust (launches
further than 3.5 robust standard deviations from the median are set aside: a launch now and
then sits far off the usual level) and moderated as in Smyth's limma: its own (df_m = n - 1)
shrunk towards the one pooled over its group (the same operation at every size), with D0
prior degrees of freedom: s2 = (d0 s2_g + df_m s2_m) / (d0 + df_m); df = d0 + df_m, at most
the launches' own (the sizes share each launch's level). A launch whose figure lies outside
the interval around the measurement's usual level (the median of its 5 most recent stored
launches) is an outlier launch: its interval reaches back to the usual level and it is not
converged. The interval a user reads is the prediction interval for the figure a repeat of
the command reports, on the log scale:
figure x exp(-+h), h = t(cl, df) s sqrt(c_N / N + c_R / R) with N launches in this run, R in
the repeat and c the efficiency of a median of that many launches (1 for one or two, pi/2
from three); the launch's own sampling interval is its floor.

The precision a machine allows for a measurement is that h with the launch's own error taken
as nil (`limit`): where it exceeds the asked eps, the asked precision cannot be reached by
any number of repetitions inside a launch, and the answer is reported as converged at the
limit (said once before the run and in the verdict under the table).

Pure functions (estimation, interval) and a small JSON store with a lock; the command is in
commands/bench.py.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import math
import os
import re
import stat
import statistics
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.tdist import t_quantile
from mpilab.tools import data_dir

STORE_FILE = "launch-variation.json"
FORMAT = "mpilab.launch-variation/1"
KEEP = 20               # launch medians kept per measurement (the oldest go first)
D0 = 4.0                # prior degrees of freedom of the group's pooled variance
BOOTSTRAP_LAUNCHES = 3  # launches of a first run in a context or of an operation never seen
USUAL_MIN_LAUNCHES = 3  # earlier launches of a measurement that give its usual level
USUAL_RECENT = 5        # the usual level is the median of this many most recent launches (a
                        # machine whose level moved for good has a new usual level 3 runs on)
EPS_RELAXED_MAX = 0.15  # the most a launch's own precision is relaxed to (--eps-for)
_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,47}")
MAX_CONTEXTS = 200      # contexts kept in one store (least recently used go first)
_MAX_BYTES = 64 << 20   # a store is far smaller (KEEP numbers per measurement and context)
#: environment variables that change how MPI moves data: part of a context
ENV_PREFIXES = ("OMPI_MCA_", "MPIR_CVAR_", "UCX_", "FI_", "I_MPI_", "PSM2_", "MPICH_")
#: runner options that do not change what a measurement is (sizes and operations are in the
#: measurement's own key; budget and precision change how long it runs, not its level)
_RUNNER_FREE = frozenset({"--out", "--sizes", "--ops", "--time-budget", "--eps", "--cl",
                          "--min-reps", "--max-reps", "--min-time", "--budget-floor",
                          "--models", "--format"})
_RUNNER_FREE_FLAGS = frozenset({"--quiet", "--no-fit"})
_KEY_FIELDS = ("op", "impl", "timing", "isolation", "schedule", "bytes", "bytes_back", "root",
               "ranks")
_GROUP_FIELDS = ("op", "impl", "timing", "isolation", "schedule", "root", "ranks")


def default_store() -> Path:
    return data_dir() / STORE_FILE


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    """What identifies the machine a launch level belongs to."""
    u = os.uname()  # socket.gethostname() and platform.release(), without their imports
    return {"host": u.nodename, "cpu": _cpu_model(), "cpus": os.cpu_count() or 0,
            "kernel": u.release}


def runner_settings(runner_args: list[str]) -> list[str]:
    """Runner arguments that change what is measured (everything but sizes, operations,
    budget, precision and outputs)."""
    out: list[str] = []
    skip = False
    for a in runner_args:
        if skip:
            skip = False
            continue
        name = a.partition("=")[0]
        if a in _RUNNER_FREE_FLAGS:
            continue
        if name in _RUNNER_FREE:
            skip = "=" not in a
            continue
        out.append(a)
    return out


@dataclass(frozen=True)
class Context:
    """A machine, launcher and settings under which launch levels are comparable."""
    machine: tuple[tuple[str, Any], ...]
    launcher: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    settings: tuple[str, ...]
    np: int

    def key(self) -> str:
        text = json.dumps([list(self.machine), list(self.launcher), list(self.env),
                           list(self.settings), self.np], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        return {"machine": dict(self.machine), "launcher": list(self.launcher),
                "env": dict(self.env), "settings": list(self.settings), "np": self.np}


def context(launch_cmd: list[str], env: dict[str, str], runner_args: list[str], np: int,
            mach: dict[str, Any] | None = None) -> Context:
    """The context of a job: launch_cmd is the launcher's part of the command line (without
    the program and its arguments)."""
    m = mach if mach is not None else machine()
    e = sorted((k, v) for k, v in env.items() if k.startswith(ENV_PREFIXES))
    return Context(tuple(sorted(m.items())), tuple(launch_cmd), tuple(e),
                   tuple(runner_settings(runner_args)), np)


def measurement_key(m: dict[str, Any]) -> str:
    pair = m.get("pair")
    return json.dumps([m.get(f) for f in _KEY_FIELDS]
                      + [list(pair) if isinstance(pair, list) else None])


def group_key(m: dict[str, Any]) -> str:
    return json.dumps([m.get(f) for f in _GROUP_FIELDS])


def _logs(values: Iterable[Any]) -> list[float]:
    out = []
    for v in values:
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
            out.append(math.log(v))
    return out


#: a normal distribution's standard deviation over its median absolute deviation
MAD_SCALE = 1.4826
#: launch medians further than this many robust standard deviations from their median are
#: set aside before the variance is taken
TRIM_SDS = 3.5


def _trimmed(xs: list[float]) -> list[float]:
    """The values within TRIM_SDS robust standard deviations of their median (all of them
    when fewer than two would remain)."""
    m = statistics.median(xs)
    rsd = MAD_SCALE * statistics.median(abs(x - m) for x in xs)
    kept = [x for x in xs if abs(x - m) <= TRIM_SDS * rsd] if rsd > 0 else list(xs)
    return kept if len(kept) >= 2 else list(xs)


def _var(xs: list[float]) -> tuple[float, float] | None:
    """A robust variance of log launch medians and its degrees of freedom: the sample
    variance of the values within TRIM_SDS robust standard deviations (MAD_SCALE x the median
    absolute deviation) of their median. Robust because launch levels on a shared machine are
    not normal: a launch now and then sits 2x off the usual level, and one such launch among
    ten made a sample variance ten times the usual launches' (every interval +-100%), while
    the usual level is what a repeat of the command reports (such a launch is flagged when it
    is the one being reported). Without such launches it is the sample variance."""
    return _var_of(tuple(xs))


@functools.lru_cache(maxsize=1024)
def _var_of(xs: tuple[float, ...]) -> tuple[float, float] | None:
    """_var of one series, computed once: every measurement of a group pools the variances
    of all the others (n^2 exact-arithmetic variances otherwise, most of a default run's own
    time)."""
    if len(xs) < 2:
        return None
    kept = _trimmed(list(xs))
    return statistics.variance(kept), float(len(kept) - 1)


@dataclass(frozen=True)
class Sigma:
    """The moderated standard deviation of log launch medians and its degrees of freedom;
    n_own: launch medians of the measurement itself; n_group: measurements pooled."""
    sd: float
    df: float
    n_own: int
    n_group: int


def moderated(own: list[float], group: list[list[float]], d0: float = D0) -> Sigma | None:
    """Sigma from the measurement's own log launch medians and its group's (each a list of
    log medians of one measurement, the measurement itself among them). None when neither
    has two launches."""
    pooled_ss, pooled_df, n_group, most = 0.0, 0.0, 0, 0.0
    for g in group:
        v = _var(g)
        if v is not None:
            pooled_ss += v[0] * v[1]
            pooled_df += v[1]
            n_group += 1
            most = max(most, v[1])
    mine = _var(own)
    if pooled_df == 0 and mine is None:
        return None
    if pooled_df == 0:
        assert mine is not None
        return Sigma(math.sqrt(mine[0]), mine[1], len(own), 0)
    s2g = pooled_ss / pooled_df
    prior = min(d0, pooled_df)
    # the sizes of one operation share each launch's level: pooled over them, the variance
    # has no more degrees of freedom than the launches that gave it
    if mine is None:
        return Sigma(math.sqrt(s2g), min(prior, most), len(own), n_group)
    s2 = (prior * s2g + mine[1] * mine[0]) / (prior + mine[1])
    return Sigma(math.sqrt(s2), min(prior + mine[1], max(most, mine[1])), len(own), n_group)


def median_efficiency(n: int) -> float:
    """Variance of the median of n launch levels over one level's: 1 for one or two
    (the median of two is their mean: 1/2 of the variance, counted by 1/n), pi/2 from three
    (normal levels)."""
    return 1.0 if n <= 2 else math.pi / 2


def half_log(sig: Sigma, cl: float, n: int, repeat: int) -> float:
    """The machine's part of the interval on the log scale: the prediction half width for the
    figure of a repeat of `repeat` launches, from a figure of n launches."""
    df = max(1, int(math.floor(sig.df)))
    scale = math.sqrt(median_efficiency(n) / n + median_efficiency(repeat) / repeat)
    return t_quantile(cl, df) * sig.sd * scale


def limit_rel(sig: Sigma, cl: float, n: int, repeat: int) -> float:
    """The finest relative half width this machine allows (the upper end's distance)."""
    return math.expm1(half_log(sig, cl, n, repeat))


# ---------------------------------------------------------------- the store

def _empty() -> dict[str, Any]:
    return {"format": FORMAT, "contexts": {}}


def _valid_series(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(e, list) and len(e) == 2 and isinstance(e[0], str | type(None))
        and isinstance(e[1], int | float) and not isinstance(e[1], bool) for e in v)


def load(path: Path) -> dict[str, Any]:
    """The store at path (empty when it does not exist). A store that is not one (not JSON,
    another format, wrong shapes) is refused in one line: it is the user's file, never
    silently replaced."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open
            raise MpilabError(f"{path}: the launch-variation store is not a regular file")
        with open(path, "rb") as f:
            raw = f.read(_MAX_BYTES + 1)
        if len(raw) > _MAX_BYTES:
            raise MpilabError(f"{path}: the launch-variation store is over {_MAX_BYTES >> 20} MiB")
    except FileNotFoundError:
        return _empty()
    except OSError as e:
        raise MpilabError(f"{path}: cannot read the launch-variation store ({e.strerror})") \
            from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise MpilabError(f"{path}: not a launch-variation store ({e}); move it aside or "
                          "give another with --variation-store") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT \
            or not isinstance(doc.get("contexts"), dict):
        raise MpilabError(f"{path}: not a launch-variation store (format {FORMAT} expected)")
    for k, c in doc["contexts"].items():
        ok = (isinstance(c, dict) and isinstance(c.get("series"), dict)
              and all(_valid_series(s) for s in c["series"].values())
              and isinstance(c.get("mpi", ""), str | type(None))
              and all(isinstance(c.get(f, 0), int) and not isinstance(c.get(f, 0), bool)
                      and c.get(f, 0) >= 0 for f in ("runs", "launches")))
        if not ok:
            raise MpilabError(f"{path}: context {k[:16]!r} is malformed (series of "
                              "[date, median] pairs expected)")
    return doc


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock beside the store, for read-modify-write by concurrent runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def lookup(doc: dict[str, Any], ctx: Context) -> dict[str, Any] | None:
    c = doc["contexts"].get(ctx.key())
    return c if isinstance(c, dict) else None


def series_of(entry: dict[str, Any] | None) -> dict[str, list[float]]:
    """Each measurement key's launch medians (oldest first)."""
    if entry is None:
        return {}
    return {k: [float(e[1]) for e in v] for k, v in entry["series"].items()}


def groups(series: dict[str, list[float]]) -> dict[str, list[str]]:
    """Measurement keys by group (the same key without bytes, bytes back and pair)."""
    out: dict[str, list[str]] = {}
    for k in series:
        f = json.loads(k)
        g = json.dumps([f[_KEY_FIELDS.index(n)] for n in _GROUP_FIELDS])
        out.setdefault(g, []).append(k)
    return out


def sigma_for(series: dict[str, list[float]], key: str, group: str,
              extra: list[float] | None = None) -> Sigma | None:
    """Sigma of one measurement from the stored series, with this run's launch medians
    (`extra`) added to its own."""
    by = groups(series)
    own = _logs(series.get(key, []) + (extra or []))
    members = [own] + [_logs(series[k]) for k in by.get(group, []) if k != key]
    return moderated(own, members)


def known_groups(entry: dict[str, Any] | None) -> set[str]:
    """Groups with at least two launches of some measurement (a variance to pool)."""
    out = set()
    for g, ks in groups(series_of(entry)).items():
        if entry is not None and any(len(entry["series"][k]) >= 2 for k in ks):
            out.add(g)
    return out


def record(path: Path, ctx: Context, mpi: str | None,
           launches: list[list[dict[str, Any]]], date: str) -> None:
    """Add this run's launch medians (launches: per launch, its measurements) to the store,
    under the lock; a context whose MPI library differs from the one it held for starts
    afresh (its levels belong to another library)."""
    with locked(path):
        doc = load(path)
        key = ctx.key()
        entry = doc["contexts"].get(key)
        if not isinstance(entry, dict) or (mpi is not None and entry.get("mpi") not in
                                           (None, mpi)):
            entry = {"describe": ctx.describe(), "mpi": mpi, "created": date, "series": {}}
        entry["used"] = date
        entry["runs"] = int(entry.get("runs", 0)) + 1
        entry["launches"] = int(entry.get("launches", 0)) + len(launches)
        for ms in launches:
            for m in ms:
                st = m.get("stats") if isinstance(m.get("stats"), dict) else {}
                med = st.get("median")
                if not (isinstance(med, int | float) and math.isfinite(med) and med > 0):
                    continue
                s = entry["series"].setdefault(measurement_key(m), [])
                s.append([date, float(med)])
                del s[:-KEEP]
        doc["contexts"][key] = entry
        if len(doc["contexts"]) > MAX_CONTEXTS:
            oldest = sorted(doc["contexts"], key=lambda k: str(doc["contexts"][k].get("used")))
            for k in oldest[:len(doc["contexts"]) - MAX_CONTEXTS]:
                del doc["contexts"][k]
        atomic_write_text(path, json.dumps(doc, separators=(",", ":")) + "\n")


def forget(path: Path, ctx: Context | None) -> int:
    """Remove one context's history (or every context's); how many were removed."""
    with locked(path):
        doc = load(path)
        if ctx is None:
            n = len(doc["contexts"])
            doc["contexts"] = {}
        else:
            n = 1 if doc["contexts"].pop(ctx.key(), None) is not None else 0
        atomic_write_text(path, json.dumps(doc, separators=(",", ":")) + "\n")
    return n


# ---------------------------------------------------------------- one run's use of the store

def _ms(doc: dict[str, Any]) -> list[dict[str, Any]]:
    from mpilab.pair_matrix import expand_all

    return [m for m in expand_all(doc.get("measurements") or []) if isinstance(m, dict)]


def _op_name(m: dict[str, Any]) -> str:
    return f"{m.get('op')}:{m.get('impl')}" if m.get("impl") else str(m.get("op"))


class Session:
    """One `mpilab bench` run against the store: what the stored context knows before the
    run, whether the run's operations need launches of their own, the interval function for
    the merge, and the record afterwards."""

    def __init__(self, path: Path, ctx: Context) -> None:
        self.path, self.ctx = path, ctx
        self.entry = lookup(load(path), ctx)

    def drop_if_other_mpi(self, mpi: str | None) -> bool:
        """Forget the stored context (for this run) when it held for another MPI library;
        True when it did."""
        if self.entry is not None and mpi is not None and self.entry.get("mpi") not in (None,
                                                                                       mpi):
            self.entry = None
            return True
        return False

    def stored(self) -> tuple[int, str]:
        e = self.entry
        if e is None:
            return 0, "-"
        n = e.get("launches")
        return (n if isinstance(n, int) and not isinstance(n, bool) else 0,
                str(e.get("created", "-")))

    def unknown_ops(self, docs: list[dict[str, Any]]) -> list[str]:
        """Operations of these launches whose group has no stored variance."""
        known = known_groups(self.entry)
        out: list[str] = []
        for d in docs:
            for m in _ms(d):
                if group_key(m) not in known and _op_name(m) not in out:
                    out.append(_op_name(m))
        return out

    def far_off(self) -> tuple[int, int]:
        """(stored launch medians set aside as far off their measurement's usual level, all
        stored launch medians of measurements with three or more)."""
        off = total = 0
        for v in series_of(self.entry).values():
            logs = _logs(v)
            if len(logs) >= 3:
                total += len(logs)
                off += len(logs) - len(_trimmed(logs))
        return off, total

    def limits(self, ops: list[str] | None, sizes: list[int] | None,
               cl: float = 0.95) -> list[float]:
        """Each stored measurement's limit for one launch against a repeat of one, for the
        operations and sizes named (all when None)."""
        series = series_of(self.entry)
        out = []
        at = _KEY_FIELDS.index("bytes")
        for g, keys in groups(series).items():
            op = json.loads(g)[0]
            if ops is not None and op not in ops:
                continue
            for k in keys:
                if sizes is not None and json.loads(k)[at] not in sizes:
                    continue
                sig = sigma_for(series, k, g)
                if sig is not None:
                    out.append(limit_rel(sig, cl, 1, 1))
        return out

    def eps_rules(self, eps: float, cl: float = 0.95) -> str | None:
        """The runner's --eps-for for one launch: each stored measurement whose machine limit
        exceeds eps is measured only to a third of that limit (at most EPS_RELAXED_MAX):
        inside a launch more precision adds nothing a repeat would see (the interval is
        max(limit, own) and own <= limit / 3). None when nothing is relaxed."""
        series = series_of(self.entry)
        rules: dict[str, float] = {}
        for g, keys in groups(series).items():
            f = json.loads(g)
            op, impl = f[0], f[1]
            if not isinstance(op, str) or not _NAME_RE.fullmatch(op) or \
                    not (impl is None or (isinstance(impl, str) and _NAME_RE.fullmatch(impl))):
                continue
            for k in keys:
                b = json.loads(k)[_KEY_FIELDS.index("bytes")]
                sig = sigma_for(series, k, g)
                if sig is None or not isinstance(b, int) or isinstance(b, bool) or b < 0:
                    continue
                lim = limit_rel(sig, cl, 1, 1)
                if lim > eps:
                    item = f"{op}{':' + impl if impl else ''}@{b}"
                    rules[item] = min(rules.get(item, 1.0), min(EPS_RELAXED_MAX,
                                                               max(eps, lim / 3)))
        return ",".join(f"{k}={v:.4g}" for k, v in sorted(rules.items())) or None

    def variation(self, docs: list[dict[str, Any]], repeat: int,
                  eps_asked: float | None = None) -> Any:
        """The merge's interval function (mpilab.launches.Variation) over the stored series
        with these launches' medians added."""
        series = series_of(self.entry)
        for d in docs:
            for m in _ms(d):
                st = m.get("stats") if isinstance(m.get("stats"), dict) else {}
                med = st.get("median")
                if isinstance(med, int | float) and not isinstance(med, bool) and med > 0:
                    series.setdefault(measurement_key(m), []).append(float(med))
        n_run = len(docs)
        stored, since = self.stored()

        before = series_of(self.entry)

        def var(m: dict[str, Any], medians: list[float]) -> tuple[float, dict[str, Any]] | None:
            key = measurement_key(m)
            sig = sigma_for(series, key, group_key(m))
            if sig is None:
                return None
            # the machine's usual level for this measurement, from its earlier launches
            earlier = before.get(key, [])[-USUAL_RECENT:]
            usual = statistics.median(earlier) if len(earlier) >= USUAL_MIN_LAUNCHES else None
            p = m.get("precision") if isinstance(m.get("precision"), dict) else {}
            cl = p.get("cl") if isinstance(p.get("cl"), float) else 0.95
            n = len(medians) or n_run
            return half_log(sig, cl, n, repeat), {
                "sd_log": sig.sd, "df": sig.df, "own_launches": sig.n_own,
                "pooled_measurements": sig.n_group, "repeat_launches": repeat, "cl": cl,
                "launches_stored": stored, "since": since, "usual": usual,
                "eps_asked": eps_asked}
        return var

    def record(self, docs: list[dict[str, Any]], mpi: str | None, date: str) -> str | None:
        """Add the launches to the store; the one line to print when it could not be
        written (the results are complete either way), else None."""
        try:
            record(self.path, self.ctx, mpi, [_ms(d) for d in docs], date)
        except (OSError, MpilabError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            return (f"mpilab: the launch-variation store {self.path} was not updated ({why}); "
                    "the results are complete")
        return None
