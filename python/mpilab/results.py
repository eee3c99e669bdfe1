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
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpilab.errors import MpilabError

SCHEMA = "mpilab.results/1"
TIMINGS = ("max", "root", "global", "opspec", "p2p")

PathT = tuple[str | int, ...]


# ---------------------------------------------------------------------------------------
# typed view


@dataclass(frozen=True)
class Precision:
    cl: float
    eps: float
    min_reps: int
    max_reps: int


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class HockneyRange:
    lo: int
    hi: int
    alpha: float
    beta: float


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class LogGPPoint:
    """Per-size LogGP measurement of one pair (medians, seconds)."""
    bytes: int
    rtt: float
    os: float
    orr: float
    g: float


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class LogGPRange:
    lo: int
    hi: int
    params: LogGPParams


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Prediction:
    op: str
    impl: str
    bytes: int
    predicted: float
    measured: float | None
    timing: str | None = None  # the timing method of the measured value, if given

    @property
    def rel_error(self) -> float | None:
        if self.measured is None or self.measured == 0:
            return None
        return (self.predicted - self.measured) / self.measured


@dataclass(frozen=True)
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

    @property
    def clock_sync(self) -> ClockSync | None:
        cs = self.provenance.get("clock_sync")
        if not isinstance(cs, dict):
            return None
        return ClockSync(str(cs.get("method", "")), float(cs.get("max_residual_s", math.nan)),
                         tuple(r for r in cs.get("ranks", []) or [] if isinstance(r, dict)))

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
# locating a JSON path in the text (only used to put a line number on an error)

_WS = re.compile(r"[ \t\n\r]*")
_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _locate(text: str, target: PathT) -> int | None:
    """Line (1-based) where the value at `target` starts, or None if not found."""
    from json.decoder import scanstring

    pos = 0

    def ws() -> None:
        nonlocal pos
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]

    def skip_value() -> None:
        nonlocal pos
        ws()
        c = text[pos]
        if c == "{":
            pos += 1
            ws()
            if text[pos] == "}":
                pos += 1
                return
            while True:
                ws()
                _, pos = scanstring(text, pos + 1)
                ws()
                pos += 1  # ':'
                skip_value()
                ws()
                if text[pos] == ",":
                    pos += 1
                    continue
                pos += 1  # '}'
                return
        if c == "[":
            pos += 1
            ws()
            if text[pos] == "]":
                pos += 1
                return
            while True:
                skip_value()
                ws()
                if text[pos] == ",":
                    pos += 1
                    continue
                pos += 1
                return
        if c == '"':
            _, pos = scanstring(text, pos + 1)
            return
        for lit in ("true", "false", "null", "NaN", "Infinity", "-Infinity"):
            if text.startswith(lit, pos):
                pos += len(lit)
                return
        m = _NUM.match(text, pos)
        if not m:
            raise ValueError("bad token")
        pos = m.end()

    def find(depth: int) -> int | None:
        nonlocal pos
        ws()
        if depth == len(target):
            return pos
        key = target[depth]
        c = text[pos]
        if c == "{" and isinstance(key, str):
            pos += 1
            ws()
            if text[pos] == "}":
                return None
            while True:
                ws()
                k, pos = scanstring(text, pos + 1)
                ws()
                pos += 1
                if k == key:
                    return find(depth + 1)
                skip_value()
                ws()
                if text[pos] == ",":
                    pos += 1
                    continue
                return None
        if c == "[" and isinstance(key, int):
            pos += 1
            ws()
            if text[pos] == "]":
                return None
            idx = 0
            while True:
                if idx == key:
                    return find(depth + 1)
                skip_value()
                ws()
                if text[pos] == ",":
                    pos += 1
                    idx += 1
                    continue
                return None
        return None

    try:
        at = find(0)
    except (ValueError, IndexError):
        return None
    if at is None:
        return None
    return text.count("\n", 0, at) + 1


def _fmt_path(p: PathT) -> str:
    out = ""
    for k in p:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
    return out or "(top level)"


class _Checker:
    """Type checks with one-line errors that carry file, line and JSON path."""

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

    def obj(self, v: Any, path: PathT) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(path, "expected an object")
        return v

    def lst(self, v: Any, path: PathT) -> list[Any]:
        if not isinstance(v, list):
            raise self.fail(path, "expected an array")
        return v

    def get(self, d: dict[str, Any], key: str, path: PathT) -> Any:
        if key not in d:
            raise self.fail(path + (key,), "missing")
        return d[key]

    def string(self, v: Any, path: PathT) -> str:
        if not isinstance(v, str) or not v:
            raise self.fail(path, "expected a non-empty string")
        return v

    def integer(self, v: Any, path: PathT, minimum: int | None = None) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                raise self.fail(path, "expected an integer")
        if minimum is not None and v < minimum:
            raise self.fail(path, f"{v} is below {minimum}")
        return v

    def number(self, v: Any, path: PathT, nullable: bool = False) -> float:
        if v is None and nullable:
            return math.nan
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(path, "expected a number")
        return float(v)

    def boolean(self, v: Any, path: PathT) -> bool:
        if not isinstance(v, bool):
            raise self.fail(path, "expected true or false")
        return v

    def opt(self, d: dict[str, Any], key: str, path: PathT, conv: Any, default: Any,
            **kw: Any) -> Any:
        if key not in d:
            return default
        return conv(d[key], path + (key,), **kw)


# ---------------------------------------------------------------------------------------
# validation


def _stats(c: _Checker, v: Any, path: PathT) -> Stats:
    s = c.obj(v, path)
    # null: no valid sample (the measurement is flagged no_valid_samples)
    mean = c.number(c.get(s, "mean", path), path + ("mean",), nullable=True)
    ci = c.number(c.get(s, "ci_half", path), path + ("ci_half",), nullable=True)
    reps = c.integer(c.get(s, "reps", path), path + ("reps",), minimum=0)
    nan = math.nan
    return Stats(
        mean=mean, ci_half=ci,
        rel_err=c.opt(s, "rel_err", path, c.number, nan, nullable=True),
        median=c.opt(s, "median", path, c.number, nan, nullable=True),
        min=c.opt(s, "min", path, c.number, nan, nullable=True),
        max=c.opt(s, "max", path, c.number, nan, nullable=True),
        stdev=c.opt(s, "stdev", path, c.number, nan, nullable=True),
        reps=reps,
        invalid=c.opt(s, "invalid", path, c.integer, 0, minimum=0),
        converged=c.opt(s, "converged", path, c.boolean, True),
    )


def _precision(c: _Checker, v: Any, path: PathT) -> Precision:
    p = c.obj(v, path)
    return Precision(
        cl=c.opt(p, "cl", path, c.number, math.nan),
        eps=c.opt(p, "eps", path, c.number, math.nan),
        min_reps=c.opt(p, "min_reps", path, c.integer, 0, minimum=0),
        max_reps=c.opt(p, "max_reps", path, c.integer, 0, minimum=0),
    )


def _measurement(c: _Checker, v: Any, idx: int, source: str) -> Measurement:
    path: PathT = ("measurements", idx)
    m = c.obj(v, path)
    op = c.string(c.get(m, "op", path), path + ("op",))
    impl = c.opt(m, "impl", path, c.string, "native")
    timing = c.string(c.get(m, "timing", path), path + ("timing",))
    nbytes = c.integer(c.get(m, "bytes", path), path + ("bytes",), minimum=0)
    stats = _stats(c, c.get(m, "stats", path), path + ("stats",))
    samples: tuple[float, ...] = ()
    if "samples" in m:
        raw = c.lst(m["samples"], path + ("samples",))
        samples = tuple(c.number(x, path + ("samples", k), nullable=True)
                        for k, x in enumerate(raw))
    valid: tuple[bool, ...] = ()
    if "valid" in m:
        raw = c.lst(m["valid"], path + ("valid",))
        valid = tuple(c.boolean(x, path + ("valid", k)) for k, x in enumerate(raw))
        if samples and len(valid) != len(samples):
            raise c.fail(path + ("valid",),
                         f"{len(valid)} flags for {len(samples)} samples")
    pair = None
    bytes_back = None
    if op == "p2p":
        pv = c.lst(c.get(m, "pair", path), path + ("pair",))
        if len(pv) != 2:
            raise c.fail(path + ("pair",), "expected two ranks [i, j]")
        a = c.integer(pv[0], path + ("pair", 0), minimum=0)
        b = c.integer(pv[1], path + ("pair", 1), minimum=0)
        if a == b:
            raise c.fail(path + ("pair",), f"a pair needs two different ranks, got [{a}, {b}]")
        pair = (a, b)
        bytes_back = c.opt(m, "bytes_back", path, c.integer, nbytes, minimum=0)
    return Measurement(
        index=idx, op=op, impl=impl, timing=timing, bytes=nbytes, stats=stats,
        isolation=c.opt(m, "isolation", path, c.string, None),
        root=c.opt(m, "root", path, c.integer, None, minimum=0),
        ranks=c.opt(m, "ranks", path, c.integer, None, minimum=1),
        precision=(_precision(c, m["precision"], path + ("precision",))
                   if "precision" in m else None),
        samples=samples, valid=valid, pair=pair, bytes_back=bytes_back,
        schedule=c.opt(m, "schedule", path, c.string, None),
        source=source, raw=m,
    )


def _models(c: _Checker, v: Any) -> tuple[list[HockneyPair], list[Prediction]]:
    path: PathT = ("models",)
    if v is None:
        return [], []
    models = c.obj(v, path)
    pairs: list[HockneyPair] = []
    hock = models.get("hockney")
    if hock is not None:
        hp: PathT = path + ("hockney",)
        h = c.obj(hock, hp)
        for k, pv in enumerate(c.lst(h.get("pairs", []), hp + ("pairs",))):
            pp: PathT = hp + ("pairs", k)
            p = c.obj(pv, pp)
            ranges = []
            if "ranges" in p:
                for r, rv in enumerate(c.lst(p["ranges"], pp + ("ranges",))):
                    rp: PathT = pp + ("ranges", r)
                    ro = c.obj(rv, rp)
                    lo = c.integer(c.get(ro, "from", rp), rp + ("from",), minimum=0)
                    hi = c.integer(c.get(ro, "to", rp), rp + ("to",), minimum=0)
                    if hi < lo:
                        raise c.fail(rp, f"range from {lo} to {hi} is empty")
                    ranges.append(HockneyRange(
                        lo, hi, c.number(c.get(ro, "alpha", rp), rp + ("alpha",)),
                        c.number(c.get(ro, "beta", rp), rp + ("beta",))))
            pairs.append(HockneyPair(
                i=c.integer(c.get(p, "i", pp), pp + ("i",), minimum=0),
                j=c.integer(c.get(p, "j", pp), pp + ("j",), minimum=0),
                alpha=c.number(c.get(p, "alpha", pp), pp + ("alpha",)),
                beta=c.number(c.get(p, "beta", pp), pp + ("beta",)),
                ranges=tuple(ranges)))
    preds: list[Prediction] = []
    if models.get("predictions") is not None:
        pp0: PathT = path + ("predictions",)
        for k, pv in enumerate(c.lst(models["predictions"], pp0)):
            pp = pp0 + (k,)
            p = c.obj(pv, pp)
            preds.append(Prediction(
                op=c.string(c.get(p, "op", pp), pp + ("op",)),
                impl=c.string(c.get(p, "impl", pp), pp + ("impl",)),
                bytes=c.integer(c.get(p, "bytes", pp), pp + ("bytes",), minimum=0),
                predicted=c.number(c.get(p, "predicted", pp), pp + ("predicted",)),
                measured=(None if p.get("measured") is None
                          else c.number(p["measured"], pp + ("measured",))),
                timing=c.opt(p, "timing", pp, c.string, None)))
    return pairs, preds


_LOGGP_FLAGS = ("L_clamped", "G_clamped", "g_clamped", "fit_failed")


def _loggp_params(c: _Checker, p: dict[str, Any], pp: PathT) -> LogGPParams:
    def num(key: str, minimum: float | None = None) -> float:
        v = c.number(c.get(p, key, pp), pp + (key,))
        if minimum is not None and v < minimum:
            raise c.fail(pp + (key,), f"{v} is below {minimum:g}")
        return v
    flags: list[str] = []
    if "flags" in p:
        for k, fv in enumerate(c.lst(p["flags"], pp + ("flags",))):
            f = c.string(fv, pp + ("flags", k))
            if f not in _LOGGP_FLAGS:
                raise c.fail(pp + ("flags", k), f"unknown flag '{f}' "
                             f"(expected one of {', '.join(_LOGGP_FLAGS)})")
            flags.append(f)
    return LogGPParams(L=num("L", 0.0), os=num("os"), orr=num("or"), g=num("g"),
                       G=num("G", 0.0),
                       os_per_byte=c.opt(p, "os_per_byte", pp, c.number, 0.0),
                       or_per_byte=c.opt(p, "or_per_byte", pp, c.number, 0.0),
                       flags=tuple(flags))


def _prediction(c: _Checker, pv: Any, pp: PathT) -> Prediction:
    p = c.obj(pv, pp)
    return Prediction(
        op=c.string(c.get(p, "op", pp), pp + ("op",)),
        impl=c.string(c.get(p, "impl", pp), pp + ("impl",)),
        bytes=c.integer(c.get(p, "bytes", pp), pp + ("bytes",), minimum=0),
        predicted=c.number(c.get(p, "predicted", pp), pp + ("predicted",)),
        measured=(None if p.get("measured") is None
                  else c.number(p["measured"], pp + ("measured",))),
        timing=c.opt(p, "timing", pp, c.string, None))


def _loggp(c: _Checker, v: Any) -> tuple[list[LogGPPair], list[Prediction]]:
    """models.loggp (see docs/results-schema.md)."""
    if not isinstance(v, dict) or v.get("loggp") is None:
        return [], []
    lp: PathT = ("models", "loggp")
    lg = c.obj(v["loggp"], lp)
    pairs: list[LogGPPair] = []
    seen: set[tuple[int, int]] = set()
    for k, pv in enumerate(c.lst(c.get(lg, "pairs", lp), lp + ("pairs",))):
        pp: PathT = lp + ("pairs", k)
        p = c.obj(pv, pp)
        i = c.integer(c.get(p, "i", pp), pp + ("i",), minimum=0)
        j = c.integer(c.get(p, "j", pp), pp + ("j",), minimum=0)
        if i == j:
            raise c.fail(pp + ("j",), "a pair needs two different ranks")
        if (i, j) in seen:
            raise c.fail(pp, f"pair {i}-{j} appears twice")
        seen.add((i, j))
        pts: list[LogGPPoint] = []
        for s, sv in enumerate(c.lst(c.get(p, "per_size", pp), pp + ("per_size",))):
            sp: PathT = pp + ("per_size", s)
            so = c.obj(sv, sp)
            b = c.integer(c.get(so, "bytes", sp), sp + ("bytes",), minimum=0)
            if pts and b <= pts[-1].bytes:
                raise c.fail(sp + ("bytes",), f"{b} does not increase on {pts[-1].bytes}")
            pts.append(LogGPPoint(b, *(c.number(c.get(so, key, sp), sp + (key,), nullable=True)
                                       for key in ("rtt", "os", "or", "g"))))
        failed = "fit_failed" in (p.get("flags") or [])
        params = None if failed else _loggp_params(c, p, pp)
        ranges: list[LogGPRange] = []
        if not failed and "ranges" in p:
            for r, rv in enumerate(c.lst(p["ranges"], pp + ("ranges",))):
                rp: PathT = pp + ("ranges", r)
                ro = c.obj(rv, rp)
                lo = c.integer(c.get(ro, "from", rp), rp + ("from",), minimum=0)
                hi = c.integer(c.get(ro, "to", rp), rp + ("to",), minimum=0)
                if hi < lo:
                    raise c.fail(rp, f"range from {lo} to {hi} is empty")
                ranges.append(LogGPRange(lo, hi, _loggp_params(c, ro, rp)))
        err = c.opt(p, "error", pp, c.string, None) if failed else None
        pairs.append(LogGPPair(i=i, j=j, params=params, per_size=tuple(pts),
                               ranges=tuple(ranges), error=err))
    preds = [_prediction(c, pv, lp + ("predictions", k))
             for k, pv in enumerate(c.lst(lg.get("predictions", []), lp + ("predictions",)))]
    return pairs, preds


def parse(text: str, name: str) -> Results:
    """Validate the text of a results file; `name` is used in error messages."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        msg = f"{name}:{e.lineno}: malformed JSON: {e.msg} (column {e.colno})"
        raise MpilabError(msg) from None
    except RecursionError:
        raise MpilabError(f"{name}: malformed JSON: nested too deeply") from None
    c = _Checker(name, text)
    if not isinstance(doc, dict):
        raise MpilabError(f"{name}:1: expected a JSON object at the top level")
    if "schema" not in doc:
        raise MpilabError(f"{name}: schema is missing, expected '{SCHEMA}'")
    if doc["schema"] != SCHEMA:
        line = _locate(text, ("schema",))
        where = f"{name}:{line}" if line else name
        raise MpilabError(f"{where}: schema is {json.dumps(doc['schema'])}, "
                          f"expected '{SCHEMA}'")
    prov = c.obj(c.get(doc, "provenance", ()), ("provenance",))
    # type-check the provenance fields the report relies on
    pp: PathT = ("provenance",)
    c.opt(prov, "ranks", pp, c.integer, None, minimum=1)
    if "hosts" in prov:
        for k, h in enumerate(c.lst(prov["hosts"], pp + ("hosts",))):
            c.string(h, pp + ("hosts", k))
    if prov.get("clock_sync") is not None:
        cs = c.obj(prov["clock_sync"], pp + ("clock_sync",))
        c.opt(cs, "max_residual_s", pp + ("clock_sync",), c.number, None, nullable=True)
    if "mapping" in prov:
        for k, mv in enumerate(c.lst(prov["mapping"], pp + ("mapping",))):
            c.obj(mv, pp + ("mapping", k))
    meas_raw = c.lst(c.get(doc, "measurements", ()), ("measurements",))
    meas = [_measurement(c, v, k, name) for k, v in enumerate(meas_raw)]
    hockney, preds = _models(c, doc.get("models"))
    lg_pairs, lg_preds = _loggp(c, doc.get("models"))
    return Results(path=name, provenance=prov, measurements=meas, hockney=hockney,
                   predictions=preds, raw=doc, sources=[name], loggp=lg_pairs,
                   loggp_predictions=lg_preds)


def load(path: str | os.PathLike[str]) -> Results:
    """Load and validate one results file. Raises MpilabError (one line) on any problem."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise MpilabError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise MpilabError(f"{name}: is a directory, expected a results file") from None
    except OSError as e:
        raise MpilabError(f"{name}: cannot read: {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise MpilabError(f"{name}:{line}: not UTF-8 text") from None
    if not text.strip():
        raise MpilabError(f"{name}: empty file, expected a results file")
    return parse(text, name)


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
                   loggp_predictions=[p for r in items for p in r.loggp_predictions])


def _reindex(m: Measurement, idx: int) -> Measurement:
    from dataclasses import replace
    return replace(m, index=idx)
