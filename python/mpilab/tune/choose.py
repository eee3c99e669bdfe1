"""The choice per (collective, communicator size, message size): a forced algorithm replaces
the library's default only when it beats it significantly (mpilab.tune.stats.paired: the
moderated t test on the per-launch log ratios of the launch medians, candidate and default
measured in the same launches, the variance shrunk towards the same algorithm's at the
collective's other sizes; its interval below 1) by at least the minimum effect size;
adjacent sizes with the same winner merge into ranges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mpilab.tune import stats

DEFAULT = "native"
FORCED = ("ompi_", "mpich_")  # impls of mpilab-bench --mpi-algorithms


@dataclass
class Cell:
    op: str
    np: int
    bytes: int
    winner: str
    ratio: float | None = None        # winner / default (1.0 for the default)
    lo: float | None = None
    hi: float | None = None
    candidates: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"op": self.op, "np": self.np, "bytes": self.bytes, "winner": self.winner,
                "ratio": self.ratio, "lo": self.lo, "hi": self.hi,
                "candidates": self.candidates}


def choose_cell(op: str, np: int, nbytes: int, groups: dict[str, list[list[float]]],
                min_effect: float = stats.MIN_EFFECT, cl: float = 0.95,
                alpha: float = stats.ALPHA,
                pooled: dict[str, list[stats.Prior]] | None = None) -> Cell:
    """groups: impl -> per-launch raw samples, all from the same launches; pooled: impl ->
    the variances of its log ratios to the default at the collective's other sizes."""
    base = groups.get(DEFAULT)
    cell = Cell(op, np, nbytes, DEFAULT, 1.0, 1.0, 1.0)
    if not base:
        cell.winner = ""  # no default measured: nothing can be chosen against it
        return cell
    best: tuple[float, str, stats.Comparison] | None = None
    for impl, g in sorted(groups.items()):
        if impl == DEFAULT or not impl.startswith(FORCED):
            continue  # only the library's own algorithms can go into its files
        c = stats.paired(base, g, cl, alpha, (pooled or {}).get(impl, []))
        cell.candidates[impl] = c.as_json()
        if c.faster and c.ratio is not None and c.ratio <= 1 - min_effect \
                and (best is None or c.ratio < best[0]):
            best = (c.ratio, impl, c)
    if best is not None:
        cell.winner, cell.ratio, cell.lo, cell.hi = best[1], best[2].ratio, best[2].lo, best[2].hi
    return cell


def ranges(cells: list[Cell]) -> list[dict[str, Any]]:
    """Adjacent sizes (of one op and communicator size) with the same winner, merged."""
    out: list[dict[str, Any]] = []
    for c in sorted(cells, key=lambda c: c.bytes):
        if out and out[-1]["winner"] == c.winner:
            out[-1]["to"] = c.bytes
            out[-1]["sizes"].append(c.bytes)
        else:
            out.append({"winner": c.winner, "from": c.bytes, "to": c.bytes, "sizes": [c.bytes]})
    return out


def refine(cells: list[Cell]) -> list[int]:
    """Sizes to measure next: a power of two between adjacent sizes whose winners differ
    (only where the winner changes, never a denser grid elsewhere)."""
    out = []
    cs = sorted(cells, key=lambda c: c.bytes)
    for a, b in zip(cs, cs[1:], strict=False):
        if a.winner != b.winner and a.bytes > 0 and b.bytes > 2 * a.bytes:
            mid = 1 << round((a.bytes.bit_length() - 1 + b.bytes.bit_length() - 1) / 2)
            if a.bytes < mid < b.bytes:
                out.append(mid)
    return sorted(set(out))


def table(docs: list[dict[str, Any]]) -> dict[tuple[str, int, int], dict[str, list[list[float]]]]:
    """(op, np, bytes) -> impl -> per-launch samples, from results documents (the first
    document measuring an (op, np, bytes) supplies all of its impls: they shared launches)."""
    out: dict[tuple[str, int, int], dict[str, list[list[float]]]] = {}
    for d in docs:
        np = int((d.get("provenance") or {}).get("ranks") or 0)
        here: dict[tuple[str, int, int], dict[str, list[list[float]]]] = {}
        for m in d.get("measurements") or []:
            if not isinstance(m, dict) or m.get("timing") != "max" or m.get("op") == "p2p":
                continue
            key = (str(m.get("op")), int(m.get("ranks") or np), int(m.get("bytes") or 0))
            here.setdefault(key, {})[str(m.get("impl"))] = stats.launch_groups(m)
        for k, v in here.items():
            out.setdefault(k, v)
    return out


def pooled_variances(tab: dict[tuple[str, int, int], dict[str, list[list[float]]]]
                     ) -> dict[tuple[str, int, int], dict[str, list[stats.Prior]]]:
    """Per cell and candidate: the variances (stats.variance_of) of the same candidate's
    per-launch log ratios to the default at the other sizes of its collective and
    communicator size, the group its own variance is shrunk towards."""
    own: dict[tuple[str, int], dict[str, dict[int, stats.Prior]]] = {}
    for (op, np, b), g in tab.items():
        base = g.get(DEFAULT)
        if not base:
            continue
        for impl, s in g.items():
            if impl != DEFAULT:
                logs = stats.pair_logs(base, s)[0]
                own.setdefault((op, np), {}).setdefault(impl, {})[b] = stats.variance_of(logs)
    return {(op, np, b): {impl: [v for bb, v in by.items() if bb != b]
                          for impl, by in own.get((op, np), {}).items()}
            for (op, np, b) in tab}


def choose_all(docs: list[dict[str, Any]], min_effect: float = stats.MIN_EFFECT
               ) -> list[Cell]:
    tab = table(docs)
    pooled = pooled_variances(tab)
    return [choose_cell(op, np, b, g, min_effect, pooled=pooled[(op, np, b)])
            for (op, np, b), g in sorted(tab.items())]
