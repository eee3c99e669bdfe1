"""The choice per (collective, communicator size, message size): a forced algorithm replaces
the library's default only when it beats it significantly (mpilab.tune.stats.paired: every
launch agrees and the launch-level interval of the ratio lies below 1) by at least the
minimum effect size; adjacent sizes with the same winner merge into ranges."""

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
                alpha: float = stats.ALPHA) -> Cell:
    """groups: impl -> per-launch raw samples, all from the same launches."""
    base = groups.get(DEFAULT)
    cell = Cell(op, np, nbytes, DEFAULT, 1.0, 1.0, 1.0)
    if not base:
        cell.winner = ""  # no default measured: nothing can be chosen against it
        return cell
    best: tuple[float, str, stats.Comparison] | None = None
    for impl, g in sorted(groups.items()):
        if impl == DEFAULT or not impl.startswith(FORCED):
            continue  # only the library's own algorithms can go into its files
        c = stats.paired(base, g, cl, alpha)
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


def choose_all(docs: list[dict[str, Any]], min_effect: float = stats.MIN_EFFECT
               ) -> list[Cell]:
    return [choose_cell(op, np, b, g, min_effect)
            for (op, np, b), g in sorted(table(docs).items())]
