"""mpilab's figures as ReFrame performance variables (no ReFrame import: the checks, the
references tool and the tests share it).

Each variable names one measurement of a results file (`mpilab.results/1`) and how its
figure (the launch-level median, seconds) becomes the variable: a one-way latency in us
(the round trip / 2, as IMB and OSU print it), a bandwidth in MB/s (bytes / one-way time),
a collective's time in us, or the ratio of the slowest pair's round trip to the median
pair's (all pairs: a slow node or link shows as a ratio well above 1).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

#: name -> (op, impl, bytes, kind, unit); kind: latency | bandwidth | time | worst_pair
VARIABLES: dict[str, tuple[str, str, int, str, str]] = {
    "latency_1B": ("p2p", "roundtrip", 1, "latency", "us"),
    "bandwidth_1MiB": ("p2p", "roundtrip", 1 << 20, "bandwidth", "MB/s"),
    "bcast_64KiB": ("bcast", "native", 65536, "time", "us"),
    "allreduce_64KiB": ("allreduce", "native", 65536, "time", "us"),
    "worst_pair_1KiB": ("p2p", "roundtrip", 1024, "worst_pair", "x"),
}

#: the variables each check reports
CHECKS = {
    "pingpong": ("latency_1B", "bandwidth_1MiB"),
    "collectives": ("bcast_64KiB", "allreduce_64KiB"),
    "allpairs": ("worst_pair_1KiB",),
}


def _figures(doc: dict[str, Any], op: str, impl: str, size: int) -> list[float]:
    out = []
    for m in doc.get("measurements") or []:
        if not isinstance(m, dict) or (m.get("op"), m.get("impl"), m.get("bytes")) != \
                (op, impl, size):
            continue
        pm = m.get("pair_matrix")
        if isinstance(pm, dict) and isinstance(pm.get("median"), list):  # all pairs, compact
            out += [float(x) for x in pm["median"] if isinstance(x, int | float) and x > 0]
            continue
        med = (m.get("stats") or {}).get("median")
        if isinstance(med, int | float) and med > 0:
            out.append(float(med))
    return out


def value(kind: str, size: int, figs: list[float]) -> float:
    if not figs:
        raise KeyError("no such measurement")
    if kind == "worst_pair":
        return max(figs) / statistics.median(figs)
    f = statistics.median(figs)
    if kind == "latency":
        return f / 2 * 1e6
    if kind == "bandwidth":
        return size / (f / 2) / 1e6
    return f * 1e6


def from_results(doc: dict[str, Any], name: str) -> float:
    """The variable `name` from a results document (KeyError when it lacks the measurement)."""
    op, impl, size, kind, _ = VARIABLES[name]
    return value(kind, size, _figures(doc, op, impl, size))


def from_file(path: str | Path, name: str) -> float:
    return from_results(json.loads(Path(path).read_text(encoding="utf-8")), name)


def unit(name: str) -> str:
    return VARIABLES[name][4]


def higher_is_better(name: str) -> bool:
    return VARIABLES[name][3] == "bandwidth"
