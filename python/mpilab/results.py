"""Reading `mpilab.results/1` files: load, validate, typed access, merge.

Every problem is raised as one-line `MpilabError` naming the file, the line where the
offending value starts (when it can be located) and the JSON path of the problem, e.g.
``run.json:42: measurements[3].stats.mean: expected a number``.
Unknown keys are ignored, as the schema requires; the whole document stays available in
`Results.raw` and each measurement's own object in `Measurement.raw`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpilab import pair_matrix, plausible, schemacheck
from mpilab.errors import MpilabError
from mpilab.fsutil import read_regular
from mpilab.json_locate import PathT
from mpilab.json_locate import locate as _locate

SCHEMA = "mpilab.results/1"
TIMINGS = ("max", "root", "global", "opspec", "p2p")


# ---------------------------------------------------------------------------------------
# typed view


@dataclass(frozen=True, slots=True)
class Precision:
    cl: float
    eps: float
    min_reps: int
    max_reps: int


@dataclass(frozen=True, slots=True)
class Stats:
    mean: float
    ci_half: float
    rel_err: float
    median: float
    min: float
    max: float
    stdev: float
    reps: int
    invalid: int
    converged: bool


@dataclass(frozen=True, slots=True)
class Measurement:
    index: int
    op: str
    impl: str
    timing: str
    bytes: int
    stats: Stats
    isolation: str | None = None
    root: int | None = None
    ranks: int | None = None
    precision: Precision | None = None
    samples: tuple[float, ...] = ()
    valid: tuple[bool, ...] = ()
    # point-to-point only
    pair: tuple[int, int] | None = None
    bytes_back: int | None = None
    schedule: str | None = None
    source: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_p2p(self) -> bool:
        return self.op == "p2p"


@dataclass(frozen=True, slots=True)
class PairMatrix:
    """One compact all-pairs measurement (docs/results-schema.md, "Pair matrix"): per-pair
    arrays in (i, j) order. `Results.measurements` also holds its pairs one by one."""
    index: int                     # position in the file's measurements array
    op: str
    impl: str
    timing: str
    bytes: int
    bytes_back: int
    design: str                    # "full" or "sampled"
    ranks: int | None
    i: tuple[int, ...]
    j: tuple[int, ...]
    median: tuple[float, ...]
    reps: tuple[int, ...]
    schedule: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def times(self) -> dict[tuple[int, int], float]:
        """{(i, j): median round trip} of every pair."""
        return dict(zip(zip(self.i, self.j, strict=True), self.median, strict=True))


@dataclass(frozen=True, slots=True)
class HockneyRange:
    lo: int
    hi: int
    alpha: float
    beta: float


@dataclass(frozen=True, slots=True)
class HockneyPair:
    i: int
    j: int
    alpha: float
    beta: float
    ranges: tuple[HockneyRange, ...] = ()

    def predict(self, nbytes: float) -> float:
        """One-way time of a message of nbytes, using the per-protocol piece if any."""
        for r in self.ranges:
            if r.lo <= nbytes <= r.hi:
                return r.alpha + r.beta * nbytes
        return self.alpha + self.beta * nbytes


@dataclass(frozen=True, slots=True)
class LogGPPoint:
    """Per-size LogGP measurement of one pair (medians, seconds)."""
    bytes: int
    rtt: float
    os: float
    orr: float
    g: float


@dataclass(frozen=True, slots=True)
class LogGPParams:
    """LogGP parameters (seconds, seconds per byte); o_s(m) = os + os_per_byte * m,
    o_r(m) = orr + or_per_byte * m, g(m) = g + G * m."""
    L: float
    os: float
    orr: float
    g: float
    G: float
    os_per_byte: float = 0.0
    or_per_byte: float = 0.0
    flags: tuple[str, ...] = ()

    def time(self, nbytes: float) -> float:
        """One-way time of one message: os + L + max(m - 1, 0) G + or."""
        return self.os + self.L + max(nbytes - 1.0, 0.0) * self.G + self.orr


@dataclass(frozen=True, slots=True)
class LogGPRange:
    lo: int
    hi: int
    params: LogGPParams


@dataclass(frozen=True, slots=True)
class LogGPPair:
    i: int
    j: int
    params: LogGPParams | None  # None: the fit failed (see error)
    per_size: tuple[LogGPPoint, ...] = ()
    ranges: tuple[LogGPRange, ...] = ()
    error: str | None = None

    def params_for(self, nbytes: float) -> LogGPParams | None:
        """The parameters of the protocol range holding nbytes (nearest range outside)."""
        if not self.ranges:
            return self.params
        return min(self.ranges, key=lambda r: max(r.lo - nbytes, nbytes - r.hi, 0.0)).params


@dataclass(frozen=True, slots=True)
class Prediction:
    op: str
    impl: str
    bytes: int
    predicted: float
    measured: float | None
    timing: str | None = None  # the timing method of the measured value, if given
    statistic: str = "median"  # which statistic of the measurement "measured" is

    @property
    def rel_error(self) -> float | None:
        if self.measured is None or self.measured == 0:
            return None
        return (self.predicted - self.measured) / self.measured


@dataclass(frozen=True, slots=True)
class ClockSync:
    method: str
    max_residual_s: float
    ranks: tuple[dict[str, Any], ...] = ()


@dataclass
class Results:
    path: str
    provenance: dict[str, Any]
    measurements: list[Measurement]
    hockney: list[HockneyPair]
    predictions: list[Prediction]
    raw: dict[str, Any]
    sources: list[str] = field(default_factory=list)
    loggp: list[LogGPPair] = field(default_factory=list)
    loggp_predictions: list[Prediction] = field(default_factory=list)
    pair_matrices: list[PairMatrix] = field(default_factory=list)

    @property
    def clock_sync(self) -> ClockSync | None:
        cs = self.provenance.get("clock_sync")
        if not isinstance(cs, dict):
            return None
        res = cs.get("max_residual_s")
        return ClockSync(str(cs.get("method", "")), math.nan if res is None else float(res),
                         tuple(cs.get("ranks") or ()))

    def p2p(self) -> list[Measurement]:
        return [m for m in self.measurements if m.is_p2p]

    def collectives(self) -> list[Measurement]:
        return [m for m in self.measurements if not m.is_p2p]

    def ops(self) -> list[str]:
        """Collective operations present, in first-seen order."""
        seen: dict[str, None] = {}
        for m in self.collectives():
            seen.setdefault(m.op, None)
        return list(seen)


# ---------------------------------------------------------------------------------------
# locating a JSON path in the text: mpilab.json_locate (only used to put a line number on an error)

def _fmt_path(p: PathT) -> str:
    out = ""
    for k in p:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
    return out or "(top level)"


class _Where:
    """Builds one-line errors that carry file, line and JSON path."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text

    def fail(self, path: PathT, msg: str) -> MpilabError:
        # point at the innermost existing value on the path
        line = None
        for n in range(len(path), -1, -1):
            line = _locate(self.text, path[:n])
            if line is not None:
                break
        where = f"{self.name}:{line}" if line is not None else self.name
        return MpilabError(f"{where}: {_fmt_path(path)}: {msg}")


def located(name: str, text: str, path: PathT, msg: str) -> MpilabError:
    """One-line error `NAME:LINE: PATH: MSG` for any JSON document read with read_json."""
    return _Where(name, text).fail(path, msg)


# ---------------------------------------------------------------------------------------
# strict JSON numbers (RFC 8259): no NaN/Infinity, nothing beyond the range of a double

_DBL_MAX = 1.7976931348623157e308


class _BadNumber:
    """Stands in for a number the loader refuses; found with its path after parsing."""

    def __init__(self, token: str, why: str) -> None:
        self.token = token
        self.why = why


def _parse_float(s: str) -> float | _BadNumber:
    v = float(s)
    if not math.isfinite(v):
        return _BadNumber(s, "is outside the range of a double")
    return v


def _parse_int(s: str) -> int | _BadNumber:
    if len(s) > 310:  # also keeps int() below Python's digit limit
        return _BadNumber(s, "is outside the range of a double")
    v = int(s)
    if abs(v) > _DBL_MAX:
        return _BadNumber(s, "is outside the range of a double")
    return v


def _parse_constant(s: str) -> _BadNumber:
    return _BadNumber(s, "is not a JSON number (RFC 8259 has no NaN or Infinity)")


class _Object(dict):  # type: ignore[type-arg]
    """A JSON object that remembers a key it was given twice (json keeps the later copy
    silently; RFC 8259 says names SHOULD be unique, and a results file with two values
    for one key is ambiguous)."""

    dup: str | None = None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    o = _Object(pairs)
    if len(o) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                o.dup = k
                break
            seen.add(k)
    return o


def _bad_string(x: str) -> bool:
    """A lone surrogate (\\ud800-\\udfff escaped in the JSON): not Unicode, cannot be
    written out as UTF-8 (a report crashed on it after rendering the whole page)."""
    return any("\ud800" <= c <= "\udfff" for c in x)


def _find_bad(v: Any, path: PathT) -> tuple[PathT, _BadNumber] | None:
    stack: list[tuple[Any, PathT]] = [(v, path)]
    while stack:
        x, p = stack.pop()
        if isinstance(x, _BadNumber):
            return p, x
        if isinstance(x, str):
            if _bad_string(x):
                return p, _BadNumber("a string", "holds a lone surrogate (not Unicode text)")
            continue
        if isinstance(x, dict):
            if getattr(x, "dup", None) is not None:
                k = str(x.dup)
                return p + (k,), _BadNumber("the key", "appears twice in one object (a "
                                            "later copy would silently win)")
            for k in x:
                if _bad_string(k):
                    return p, _BadNumber("a key", "holds a lone surrogate (not Unicode text)")
            stack.extend((x[k], p + (k,)) for k in reversed(list(x)))
        elif isinstance(x, list):
            stack.extend((x[k], p + (k,)) for k in range(len(x) - 1, -1, -1))
    return None


# ---------------------------------------------------------------------------------------
# validation against the one schema (python/mpilab/schemas/results-1.schema.json)

SCHEMA_FILE = Path(__file__).with_name("schemas") / "results-1.schema.json"
def _schema_check(w: _Where, doc: Any) -> None:
    err = schemacheck.first_error(SCHEMA_FILE.name, doc)
    if err is not None:
        raise w.fail(*err)


# ---------------------------------------------------------------------------------------
# the typed view of a document that passed the schema, and the checks across fields


def _f(v: Any) -> float:
    return math.nan if v is None else float(v)


def _stats(s: dict[str, Any]) -> Stats:
    # mean null: no valid sample (the measurement is flagged no_valid_samples)
    return Stats(mean=_f(s["mean"]), ci_half=_f(s["ci_half"]), rel_err=_f(s.get("rel_err")),
                 median=_f(s.get("median")), min=_f(s.get("min")), max=_f(s.get("max")),
                 stdev=_f(s.get("stdev")), reps=int(s["reps"]), invalid=int(s.get("invalid", 0)),
                 converged=bool(s.get("converged", True)))


def _precision(w: _Where, p: dict[str, Any], path: PathT) -> Precision:
    out = Precision(cl=_f(p.get("cl")), eps=_f(p.get("eps")), min_reps=int(p.get("min_reps", 0)),
                    max_reps=int(p.get("max_reps", 0)))
    if "min_reps" in p and "max_reps" in p and out.max_reps < out.min_reps:
        raise w.fail(path + ("max_reps",), f"{out.max_reps} is below min_reps {out.min_reps}")
    return out


def _rank_check(w: _Where, v: int, path: PathT, nranks: int | None) -> int:
    if nranks is not None and v >= nranks:
        raise w.fail(path, f"rank {v} does not exist in a run of {nranks} ranks")
    return v


def _measurement(w: _Where, m: dict[str, Any], idx: int, source: str,
                 nranks: int | None) -> Measurement:
    path: PathT = ("measurements", idx)
    samples = tuple(_f(x) for x in m.get("samples", ()))
    valid = tuple(m.get("valid", ()))
    if samples and "valid" in m and len(valid) != len(samples):
        raise w.fail(path + ("valid",), f"{len(valid)} flags for {len(samples)} samples")
    if samples and int(m["stats"]["reps"]) != len(samples):  # a count that contradicts the data
        raise w.fail(path + ("stats", "reps"),
                     f"{m['stats']['reps']} repetitions for {len(samples)} samples")
    nbytes = int(m["bytes"])
    ranks = None if m.get("ranks") is None else int(m["ranks"])
    # a measurement's own rank count wins (merged files hold runs of different sizes)
    limit = ranks if ranks is not None else nranks
    pair = None
    bytes_back = None
    if m["op"] == "p2p":
        a, b = (int(x) for x in m["pair"])
        if a == b:
            raise w.fail(path + ("pair",), f"a pair needs two different ranks, got [{a}, {b}]")
        _rank_check(w, a, path + ("pair", 0), limit)
        _rank_check(w, b, path + ("pair", 1), limit)
        pair = (a, b)
        bytes_back = int(m.get("bytes_back", nbytes))
    root = None if m.get("root") is None else _rank_check(w, int(m["root"]), path + ("root",),
                                                           limit)
    return Measurement(
        index=idx, op=m["op"], impl=m.get("impl", "native"), timing=m["timing"], bytes=nbytes,
        stats=_stats(m["stats"]), isolation=m.get("isolation"), root=root, ranks=ranks,
        precision=(_precision(w, m["precision"], path + ("precision",))
                   if "precision" in m else None),
        samples=samples, valid=valid, pair=pair, bytes_back=bytes_back,
        schedule=m.get("schedule"), source=source, raw=m)


def _pair_matrix(w: _Where, m: dict[str, Any], idx: int, nranks: int | None) -> PairMatrix:
    """The checks across a compact object's arrays (after the schema): one length, two
    different existing ranks per pair, pairs strictly in (i, j) order, one sample per
    repetition."""
    path: PathT = ("measurements", idx, "pair_matrix")
    pm = m["pair_matrix"]
    n = int(pm["count"])
    for key, arr in pm.items():
        if isinstance(arr, list) and len(arr) != n:
            raise w.fail(path + (key,), f"{len(arr)} items, expected count {n}")
    limit = int(m["ranks"]) if m.get("ranks") is not None else nranks
    prev = (-1, -1)
    for k in range(n):
        a, b = int(pm["i"][k]), int(pm["j"][k])
        if a >= b:
            raise w.fail(path + ("j", k), f"pair {a}-{b}: expected i < j")
        _rank_check(w, b, path + ("j", k), limit)
        if (a, b) <= prev:
            raise w.fail(path + ("i", k), f"pair {a}-{b} is out of (i, j) order or repeated")
        prev = (a, b)
        sa = pm["samples"][k] if isinstance(pm.get("samples"), list) else None
        if isinstance(sa, list) and len(sa) != int(pm["reps"][k]):
            raise w.fail(path + ("samples", k), f"{len(sa)} samples for {pm['reps'][k]} reps")
    nbytes = int(m["bytes"])
    return PairMatrix(index=idx, op=m["op"], impl=m.get("impl", "native"), timing=m["timing"],
                      bytes=nbytes, bytes_back=int(m.get("bytes_back", nbytes)),
                      design=str(pm["design"]), ranks=limit,
                      i=tuple(int(x) for x in pm["i"]), j=tuple(int(x) for x in pm["j"]),
                      median=tuple(_f(x) for x in pm["median"]),
                      reps=tuple(int(x) for x in pm["reps"]), schedule=m.get("schedule"), raw=m)


def _measurements(w: _Where, raw: list[dict[str, Any]], source: str, nranks: int | None
                  ) -> tuple[list[Measurement], list[PairMatrix]]:
    """The per-measurement view: compact all-pairs objects expanded pair by pair (each
    pair's `raw` is its object in the per-pair form, mpilab.pair_matrix.expand_one)."""
    meas: list[Measurement] = []
    mats: list[PairMatrix] = []
    for k, m in enumerate(raw):
        if not pair_matrix.is_pair_matrix(m):
            one = _measurement(w, m, k, source, nranks)
            meas.append(one if one.index == len(meas) else _reindex(one, len(meas)))
            continue
        mats.append(_pair_matrix(w, m, k, nranks))
        for one in pair_matrix.expand(m):
            meas.append(_reindex(_measurement(w, one, k, source, nranks), len(meas)))
    return meas, mats


def _pair_ranks(w: _Where, p: dict[str, Any], pp: PathT, nranks: int | None) -> tuple[int, int]:
    i, j = int(p["i"]), int(p["j"])
    if i == j:
        raise w.fail(pp + ("j",), "a pair needs two different ranks")
    _rank_check(w, i, pp + ("i",), nranks)
    _rank_check(w, j, pp + ("j",), nranks)
    return i, j


def _range_bounds(w: _Where, r: dict[str, Any], rp: PathT) -> tuple[int, int]:
    lo, hi = int(r["from"]), int(r["to"])
    if hi < lo:
        raise w.fail(rp, f"range from {lo} to {hi} is empty")
    return lo, hi


def _prediction(p: dict[str, Any]) -> Prediction:
    return Prediction(op=p["op"], impl=p["impl"], bytes=int(p["bytes"]),
                      predicted=float(p["predicted"]),
                      measured=None if p.get("measured") is None else float(p["measured"]),
                      timing=p.get("timing"),
                      statistic=str(p.get("measured_statistic") or "median"))


def _models(w: _Where, models: dict[str, Any] | None,
            nranks: int | None) -> tuple[list[HockneyPair], list[Prediction]]:
    if not models:
        return [], []
    pairs: list[HockneyPair] = []
    hp: PathT = ("models", "hockney", "pairs")
    for k, p in enumerate((models.get("hockney") or {}).get("pairs", [])):
        i, j = _pair_ranks(w, p, hp + (k,), nranks)
        ranges = tuple(HockneyRange(*_range_bounds(w, r, hp + (k, "ranges", n)),
                                    float(r["alpha"]), float(r["beta"]))
                       for n, r in enumerate(p.get("ranges", [])))
        pairs.append(HockneyPair(i=i, j=j, alpha=float(p["alpha"]), beta=float(p["beta"]),
                                 ranges=ranges))
    preds = [_prediction(p) for p in models.get("predictions") or []]
    return pairs, preds


def _loggp_params(p: dict[str, Any]) -> LogGPParams:
    return LogGPParams(L=float(p["L"]), os=float(p["os"]), orr=float(p["or"]), g=float(p["g"]),
                       G=float(p["G"]), os_per_byte=float(p.get("os_per_byte", 0.0)),
                       or_per_byte=float(p.get("or_per_byte", 0.0)),
                       flags=tuple(p.get("flags", ())))


def _loggp(w: _Where, models: dict[str, Any] | None,
           nranks: int | None) -> tuple[list[LogGPPair], list[Prediction]]:
    """models.loggp (see docs/results-schema.md)."""
    lg = (models or {}).get("loggp")
    if not lg:
        return [], []
    lp: PathT = ("models", "loggp", "pairs")
    pairs: list[LogGPPair] = []
    seen: set[tuple[int, int]] = set()
    for k, p in enumerate(lg["pairs"]):
        pp = lp + (k,)
        i, j = _pair_ranks(w, p, pp, nranks)
        if (i, j) in seen:
            raise w.fail(pp, f"pair {i}-{j} appears twice")
        seen.add((i, j))
        pts: list[LogGPPoint] = []
        for s, so in enumerate(p["per_size"]):
            b = int(so["bytes"])
            if pts and b <= pts[-1].bytes:
                raise w.fail(pp + ("per_size", s, "bytes"),
                             f"{b} does not increase on {pts[-1].bytes}")
            pts.append(LogGPPoint(b, *(_f(so[key]) for key in ("rtt", "os", "or", "g"))))
        failed = "fit_failed" in p.get("flags", ())
        ranges = () if failed else tuple(
            LogGPRange(*_range_bounds(w, r, pp + ("ranges", n)), _loggp_params(r))
            for n, r in enumerate(p.get("ranges", [])))
        pairs.append(LogGPPair(i=i, j=j, params=None if failed else _loggp_params(p),
                               per_size=tuple(pts), ranges=ranges,
                               error=p.get("error") if failed else None))
    return pairs, [_prediction(p) for p in lg.get("predictions", [])]


def strict_json(text: str, name: str) -> Any:
    """The JSON document in `text` under RFC 8259's number rules: NaN, Infinity and
    numbers outside the range of a double are refused. Any problem is one MpilabError
    line naming `name` and the line. Shared by every mpilab JSON input (results files,
    multilane documents)."""
    try:
        doc = json.loads(text, parse_float=_parse_float, parse_int=_parse_int,
                         parse_constant=_parse_constant, object_pairs_hook=_object)
    except json.JSONDecodeError as e:
        msg = f"{name}:{e.lineno}: malformed JSON: {e.msg} (column {e.colno})"
        raise MpilabError(msg) from None
    except RecursionError:
        raise MpilabError(f"{name}: malformed JSON: nested too deeply") from None
    bad = _find_bad(doc, ())
    if bad is not None:
        tok = bad[1].token
        tok = tok if len(tok) <= 40 else f"{tok[:20]}...({len(tok)} characters)"
        raise _Where(name, text).fail(bad[0], f"{tok} {bad[1].why}")
    return doc


def read_json(path: str | os.PathLike[str], what: str, limit: int) -> tuple[Any, str]:
    """(document, text) of a JSON file: a regular file of at most `limit` bytes, UTF-8,
    strict_json's number rules; one-line MpilabError otherwise."""
    name = str(path)
    data = read_regular(path, what, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise MpilabError(f"{name}:{line}: not UTF-8 text") from None
    return strict_json(text, name), text


def parse(text: str, name: str) -> Results:
    """Validate the text of a results file; `name` is used in error messages."""
    doc = strict_json(text, name)
    w = _Where(name, text)
    if not isinstance(doc, dict):
        raise MpilabError(f"{name}:1: expected a JSON object at the top level")
    if "schema" not in doc:
        raise MpilabError(f"{name}: schema is missing, expected '{SCHEMA}'")
    if doc["schema"] != SCHEMA:
        line = _locate(text, ("schema",))
        where = f"{name}:{line}" if line else name
        got = schemacheck.short(doc["schema"])
        raise MpilabError(f"{where}: schema is {got}, expected '{SCHEMA}'")
    try:
        _schema_check(w, doc)
    except RecursionError:
        raise MpilabError(f"{name}: nested too deeply to validate") from None
    for path, why in plausible.problems(doc):  # values that cannot all be true at once
        raise w.fail(path, why)
    prov = doc["provenance"]
    nranks = prov.get("ranks")
    meas, mats = _measurements(w, doc["measurements"], name, nranks)
    hockney, preds = _models(w, doc.get("models"), nranks)
    lg_pairs, lg_preds = _loggp(w, doc.get("models"), nranks)
    return Results(path=name, provenance=prov, measurements=meas, hockney=hockney,
                   predictions=preds, raw=doc, sources=[name], loggp=lg_pairs,
                   loggp_predictions=lg_preds, pair_matrices=mats)


# A results file of a large campaign (every sample of thousands of measurements) stays
# far below this; anything larger is refused rather than read into memory.
MAX_RESULTS_BYTES = 512 << 20


def load(path: str | os.PathLike[str]) -> Results:
    """Load and validate one results file. Raises MpilabError (one line) on any problem.
    Only regular files are read (a FIFO or a device is refused, never opened)."""
    name = str(path)
    data = read_regular(path, "results file", MAX_RESULTS_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise MpilabError(f"{name}:{line}: not UTF-8 text") from None
    if not text.strip():
        raise MpilabError(f"{name}: empty file, expected a results file")
    try:
        return parse(text, name)
    except MemoryError:
        raise MpilabError(f"{name}: out of memory while reading it") from None


def merge(results: Sequence[Results] | Iterable[Results]) -> Results:
    """Combine several results into one view (e.g. for `compare`). Measurements keep
    their `source`; the first file's provenance is the main one and every file's
    provenance is listed under provenance['runs']. Models are concatenated."""
    items = list(results)
    if not items:
        raise MpilabError("merge: no results given")
    first = items[0]
    prov = dict(first.provenance)
    prov["runs"] = [dict(r.provenance, source=r.path) for r in items]
    sizes = [r.provenance.get("ranks") for r in items]
    if all(isinstance(n, int) for n in sizes):
        prov["ranks"] = max(sizes)  # the merged view spans the largest run
    meas: list[Measurement] = []
    raw_meas: list[dict[str, Any]] = []
    for r in items:
        for m in r.measurements:
            meas.append(_reindex(m, len(meas)))
            raw_meas.append(m.raw)
    hockney = [p for r in items for p in r.hockney]
    preds = [p for r in items for p in r.predictions]
    raw = {"schema": SCHEMA, "provenance": prov, "measurements": raw_meas}
    models: dict[str, Any] = {}
    hp = [x for r in items for x in ((r.raw.get("models") or {}).get("hockney") or {})
          .get("pairs", [])]
    pr = [x for r in items for x in (r.raw.get("models") or {}).get("predictions") or []]
    lgp = [x for r in items for x in ((r.raw.get("models") or {}).get("loggp") or {})
           .get("pairs", [])]
    lgr = [x for r in items for x in ((r.raw.get("models") or {}).get("loggp") or {})
           .get("predictions", [])]
    if hp:
        models["hockney"] = {"pairs": hp}
    if pr:
        models["predictions"] = pr
    if lgp or lgr:
        models["loggp"] = {"pairs": lgp, "predictions": lgr}
    if models:
        raw["models"] = models
    return Results(path="+".join(r.path for r in items), provenance=prov, measurements=meas,
                   hockney=hockney, predictions=preds, raw=raw,
                   sources=[s for r in items for s in r.sources],
                   loggp=[p for r in items for p in r.loggp],
                   loggp_predictions=[p for r in items for p in r.loggp_predictions],
                   pair_matrices=[p for r in items for p in r.pair_matrices])


def _reindex(m: Measurement, idx: int) -> Measurement:
    from dataclasses import replace
    return replace(m, index=idx)
