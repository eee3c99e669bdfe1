"""The checks of an `mpilab.results/1` document: against the one schema
(python/mpilab/schemas/results-1.schema.json), then across fields (ranks that exist, counts
that match the data, pairs in order, ranges that are not empty), building the typed view
(mpilab.results_model) as it goes. mpilab.results.parse runs them on a whole document,
mpilab.report.stream on a document read piece by piece."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from mpilab import pair_matrix, schemacheck
from mpilab.results_model import (
    HockneyPair,
    HockneyRange,
    LogGPPair,
    LogGPParams,
    LogGPPoint,
    LogGPRange,
    Measurement,
    PairMatrix,
    Precision,
    Prediction,
    Stats,
    reindex,
)
from mpilab.strict_json import PathT, Where

# ---------------------------------------------------------------------------------------
# validation against the one schema (python/mpilab/schemas/results-1.schema.json)

SCHEMA_FILE = Path(__file__).with_name("schemas") / "results-1.schema.json"


def schema_check(w: Where, doc: Any) -> None:
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


def _precision(w: Where, p: dict[str, Any], path: PathT) -> Precision:
    out = Precision(cl=_f(p.get("cl")), eps=_f(p.get("eps")), min_reps=int(p.get("min_reps", 0)),
                    max_reps=int(p.get("max_reps", 0)))
    if "min_reps" in p and "max_reps" in p and out.max_reps < out.min_reps:
        raise w.fail(path + ("max_reps",), f"{out.max_reps} is below min_reps {out.min_reps}")
    return out


def _rank_check(w: Where, v: int, path: PathT, nranks: int | None) -> int:
    if nranks is not None and v >= nranks:
        raise w.fail(path, f"rank {v} does not exist in a run of {nranks} ranks")
    return v


def measurement(w: Where, m: dict[str, Any], idx: int, source: str,
                 nranks: int | None) -> Measurement:
    path: PathT = ("measurements", idx)
    samples = tuple(_f(x) for x in m.get("samples", ()))
    valid = tuple(m.get("valid", ()))
    if samples and "valid" in m and len(valid) != len(samples):
        raise w.fail(path + ("valid",), f"{len(valid)} flags for {len(samples)} samples")
    for i, x in enumerate(samples):  # a time below 0 is stored as invalid, never counted
        if x is not None and x < 0 and (i >= len(valid) or valid[i] is not False):
            raise w.fail(path + ("samples", i), f"{x:g} s: a negative time counted as valid "
                         "(the runner stores an impossible sample with valid false)")
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


def _pair_matrix(w: Where, m: dict[str, Any], idx: int, nranks: int | None) -> PairMatrix:
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


def measurements(w: Where, raw: list[dict[str, Any]], source: str, nranks: int | None
                  ) -> tuple[list[Measurement], list[PairMatrix]]:
    """The per-measurement view: compact all-pairs objects expanded pair by pair (each
    pair's `raw` is its object in the per-pair form, mpilab.pair_matrix.expand_one)."""
    meas: list[Measurement] = []
    mats: list[PairMatrix] = []
    for k, m in enumerate(raw):
        if not pair_matrix.is_pair_matrix(m):
            one = measurement(w, m, k, source, nranks)
            meas.append(one if one.index == len(meas) else reindex(one, len(meas)))
            continue
        mats.append(_pair_matrix(w, m, k, nranks))
        for one in pair_matrix.expand(m):
            meas.append(reindex(measurement(w, one, k, source, nranks), len(meas)))
    return meas, mats


def _pair_ranks(w: Where, p: dict[str, Any], pp: PathT, nranks: int | None) -> tuple[int, int]:
    i, j = int(p["i"]), int(p["j"])
    if i == j:
        raise w.fail(pp + ("j",), "a pair needs two different ranks")
    _rank_check(w, i, pp + ("i",), nranks)
    _rank_check(w, j, pp + ("j",), nranks)
    return i, j


def _range_bounds(w: Where, r: dict[str, Any], rp: PathT) -> tuple[int, int]:
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


def models(w: Where, models: dict[str, Any] | None,
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


def loggp(w: Where, models: dict[str, Any] | None,
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
