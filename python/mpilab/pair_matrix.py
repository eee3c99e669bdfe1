"""The compact all-pairs form of a results file (docs/results-schema.md, "Pair matrix").

mpilab-bench writes one measurement object per (op, size, timing) of an all-pairs entry,
whose ``pair_matrix`` holds per-pair arrays (ranks i and j, round, statistics, flags,
samples) instead of one object per pair. Readers that want the per-pair objects of the
older form (one object with ``pair`` and ``stats`` per pair) expand it here; both forms
are accepted everywhere.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

#: per-pair statistics arrays, named as the keys of a measurement's "stats"
STAT_KEYS = ("mean", "ci_half", "rel_err", "median", "med_lo", "med_hi", "min", "max",
             "stdev")
#: measurement keys every expanded pair object inherits from the compact one
_SHARED = ("op", "impl", "timing", "schedule", "bytes", "bytes_back", "ranks", "precision",
           "all_pairs_wall_s", "isolation", "schedule_check")


def is_pair_matrix(m: Any) -> bool:
    """True for a compact all-pairs measurement object."""
    return isinstance(m, dict) and isinstance(m.get("pair_matrix"), dict)


def expand_one(m: dict[str, Any], k: int) -> dict[str, Any]:
    """Pair k of the compact object m as a measurement object of the per-pair form."""
    pm = m["pair_matrix"]

    def at(key: str, default: Any = None) -> Any:
        arr = pm.get(key)
        return arr[k] if isinstance(arr, list) and k < len(arr) else default

    out: dict[str, Any] = {key: m[key] for key in _SHARED if key in m}
    out["pair"] = [int(pm["i"][k]), int(pm["j"][k])]
    stats: dict[str, Any] = {key: at(key) for key in STAT_KEYS if key in pm}
    stats["reps"] = int(at("reps", 0))
    stats["invalid"] = int(at("invalid", 0) or 0)
    stats["converged"] = bool(at("converged", True))
    out["stats"] = stats
    samples = at("samples")
    if isinstance(samples, list):
        out["samples"] = samples
        out["valid"] = [True] * len(samples)
    out["flags"] = list(at("flags", []) or [])
    shared = m.get("flags")  # the measurement's own (parallel_contention): every pair's
    for f in shared if isinstance(shared, list) else []:
        if isinstance(f, str) and f not in out["flags"]:
            out["flags"].append(f)
    if at("round") is not None:
        out["round"] = at("round")
    out["design"] = pm.get("design")
    return out


def expand(m: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The per-pair objects of a compact measurement, in its (i, j) order."""
    for k in range(len(m["pair_matrix"].get("i") or [])):
        yield expand_one(m, k)


def expand_all(measurements: Iterable[Any]) -> Iterator[Any]:
    """Every measurement object of a document, compact ones expanded pair by pair (the
    others, and anything that is not an object, as they are)."""
    for m in measurements:
        if is_pair_matrix(m):
            yield from expand(m)
        else:
            yield m
