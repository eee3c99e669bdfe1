"""The confirmation verdict: does an exported file, run in an unmodified benchmark against the
library's default in interleaved pairs of launches, lose anywhere or keep its gains?

One figure per launch and cell (the benchmark's own headline time); the unit of replication is
the pair of adjacent launches (ABBA order), the evidence per cell the per-pair log ratios of
the two launches' figures. Decisions:

* per cell, Wilcoxon's signed-rank test and the Hodges-Lehmann interval on those log ratios
  (mpilab.tune.stats.paired_rank): a pair in which one launch met a load spike counts as one
  sign, never as a mean pulled far off (IMB's 64 B bcast figure swung x0.17 to x4.3 between
  pairs of launches running the same algorithm on both sides);
* a LOSS is family-wise over every cell of the file (Holm's step-down at alpha over all
  cells) and at least the minimum effect (the Hodges-Lehmann ratio above 1 + min_effect and
  the interval above 1): with 25 cells at 5% each, about one cell running the same
  algorithm on both sides is flagged by chance;
* a GAIN (a cell the file gives another algorithm) is family-wise over the cells the file
  gives an algorithm (Holm over that family) with the interval below 1;
* the design must be able to decide: the smallest p-value the signed-rank test reaches with
  n pairs is 2 / 2^n, so a family of m cells needs 2 / 2^n <= alpha / m (12 pairs for up to
  102 cells at 5%); with fewer pairs the verdict is "undecided", never a pass.
"""

from __future__ import annotations

from typing import Any

from mpilab.tune import stats

#: per (collective, bytes): the figure of each launch, default side and file side, by pair
Figures = dict[tuple[str, int], tuple[list[float], list[float]]]


def min_p(n: int) -> float:
    """The smallest two-sided p-value of the exact signed-rank test with n pairs."""
    return 1.0 if n < 1 else min(1.0, 2.0 / 2 ** n)


def pairs_needed(m: int, alpha: float = stats.ALPHA) -> int:
    """The fewest pairs whose smallest signed-rank p-value passes Holm's first step in a
    family of m cells."""
    n = 1
    while min_p(n) > alpha / max(m, 1):
        n += 1
    return n


def holm_reject(ps: list[float], alpha: float) -> list[bool]:
    """Holm's step-down over a family of p-values: which are rejected."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out = [False] * len(ps)
    for rank, i in enumerate(order):
        if ps[i] > alpha / (len(ps) - rank):
            break
        out[i] = True
    return out


def cell(default: list[float], rules: list[float]) -> stats.Comparison:
    """One cell's comparison: the file's figures against the default's, pair by pair."""
    return stats.paired_rank([[x] for x in default], [[y] for y in rules], min_samples=1)


def verdicts(figs: Figures, listed: set[tuple[str, int]],
             min_effect: float = stats.MIN_EFFECT, alpha: float = stats.ALPHA
             ) -> dict[str, Any]:
    """Per cell (sorted) its comparison and verdict, and the confirmation's outcome: PASS (no
    family-wise loss beyond the minimum effect, every listed cell a family-wise gain), FAIL,
    or UNDECIDED (too few pairs for the family to reach significance at all)."""
    keys = sorted(figs)
    cmp = {k: cell(*figs[k]) for k in keys}
    p = {k: (c.p if c.p is not None else 1.0) for k, c in cmp.items()}
    loss_rej = dict(zip(keys, holm_reject([p[k] for k in keys], alpha), strict=True))
    gkeys = [k for k in keys if k in listed]
    gain_rej = dict(zip(gkeys, holm_reject([p[k] for k in gkeys], alpha), strict=True))
    rows = []
    for k in keys:
        c = cmp[k]
        ratio = c.ratio if c.ratio is not None else 1.0
        loss = loss_rej[k] and c.lo is not None and c.lo > 1 and ratio > 1 + min_effect
        gain = gain_rej.get(k, False) and c.hi is not None and c.hi < 1
        per_cell = "GAIN" if c.faster else "LOSS" if c.slower else "same"
        rows.append({"op": k[0], "bytes": k[1], "listed": k in listed,
                     "comparison": c.as_json(), "per_cell": per_cell,
                     "verdict": "LOSS" if loss else "GAIN" if gain else "same"})
    n = min((c.launches for c in cmp.values()), default=0)
    need = pairs_needed(len(keys), alpha)
    losses = [r for r in rows if r["verdict"] == "LOSS"]
    missing = [r for r in rows if r["listed"] and r["verdict"] != "GAIN"]
    if n < need:
        outcome = "UNDECIDED"
    else:
        outcome = "FAIL" if losses or missing else "PASS"
    return {"rows": rows, "pairs": n, "pairs_needed": need, "cells": len(rows),
            "listed": len(gkeys), "losses": len(losses), "missing_gains": len(missing),
            "per_cell_losses": sum(r["per_cell"] == "LOSS" for r in rows),
            "min_effect": min_effect, "alpha": alpha, "outcome": outcome}
