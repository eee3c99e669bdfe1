"""Sampled pair design and per-node / per-link estimates from pair times.

Measuring all p(p-1)/2 pairs does not scale; a sampled design measures O(p log p) pairs chosen
so that every node is in several pairs and every boundary between groups (switches, sites) is
crossed, and a robust fit of

    t(i, j) = node[i] + node[j] + link[g(i), g(j)]        (link is 0 inside a group)

turns them into one estimate per node and per group boundary. Nodes, links and pairs that
stand out (robust z-score above a threshold) are flagged. The same fit applies to a full
matrix, so both designs can be compared where both can run (tests/python/test_pairs.py).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.stats
from scipy import sparse
from scipy.sparse import linalg as splinalg

from mpilab.results_model import Measurement

Pair = tuple[int, int]

#: above this many ranks the sampled design is the default (a full matrix on request)
FULL_MATRIX_LIMIT = 64
#: robust z-score above which a node, link or pair is flagged
OUTLIER_Z = 3.5


def _norm(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


def full_pairs(p: int) -> list[Pair]:
    """Every pair i < j of p ranks."""
    return [(i, j) for i in range(p) for j in range(i + 1, p)]


_MASK = (1 << 64) - 1


class _SplitMix64:
    """splitmix64, the generator of mpilab_pairs_sample (src/bench/pairs.c)."""

    def __init__(self, seed: int) -> None:
        self.s = seed & _MASK

    def below(self, m: int) -> int:
        self.s = (self.s + 0x9E3779B97F4A7C15) & _MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return (z ^ (z >> 31)) % m


def default_matchings(p: int) -> int:
    """ceil(log2 p), at least 1 (mpilab_pairs_default_matchings)."""
    return max(1, math.ceil(math.log2(p))) if p > 1 else 1


def sample_pairs(p: int, groups: Sequence[int] | None = None, rounds: int | None = None,
                 seed: int = 0) -> list[Pair]:
    """The sampled design of O(p log p) distinct pairs (sorted, i < j): a mirror of the C
    runner's mpilab_pairs_sample (the same pairs for the same p, groups, matchings and
    seed; tests/python/test_pairs.py checks it against the C library).

    A ring (every node in two pairs, the design connected) plus the pair (0, 2) (a
    triangle: an odd cycle, so that node[i] + node[j] has one solution), plus `rounds`
    (default ceil(log2 p)) random perfect matchings, plus for each two groups of `groups`
    (non-negative group label of each rank) two pairs crossing their boundary, so that every
    link term is measured at least twice; with more pairs of groups than ranks, two pairs
    between each group and the next (a ring of groups).
    """
    if p < 3:
        raise ValueError(f"a pair design needs at least 3 ranks, got {p}")
    if groups is not None and len(groups) != p:
        raise ValueError(f"{len(groups)} group labels for {p} ranks")
    if groups is not None and min(groups) < 0:
        raise ValueError("group labels must be non-negative")
    rng = _SplitMix64(seed)
    chosen: set[Pair] = {_norm(i, (i + 1) % p) for i in range(p)}
    chosen.add(_norm(0, 2))
    k = default_matchings(p) if rounds is None else rounds
    for _ in range(k):
        perm = list(range(p))
        for a in range(p - 1, 0, -1):
            b = rng.below(a + 1)
            perm[a], perm[b] = perm[b], perm[a]
        for a in range(0, p - 1, 2):
            chosen.add(_norm(perm[a], perm[a + 1]))
    if groups is not None:
        members: dict[int, list[int]] = {}
        for r, g in enumerate(groups):
            members.setdefault(int(g), []).append(r)
        labels = sorted(members)
        nl = len(labels)
        every = nl * (nl - 1) // 2 <= p
        for x in range(nl if nl > 1 else 0):
            for y in range(x + 1, nl if every else x + 2):
                ga, gb = members[labels[x]], members[labels[y % nl]]
                for _ in range(2):
                    a = ga[rng.below(len(ga))]
                    chosen.add(_norm(a, gb[rng.below(len(gb))]))
    return sorted(pq for pq in chosen if pq[0] != pq[1])


@dataclass
class PairFit:
    """Per-node and per-link estimates (seconds) and what stands out."""

    nodes: list[float]
    links: dict[Pair, float]              # (group a, group b), a < b
    residuals: dict[Pair, float]
    slow_nodes: list[int] = field(default_factory=list)
    slow_links: list[Pair] = field(default_factory=list)
    slow_pairs: list[Pair] = field(default_factory=list)
    #: the robust z-scores the verdicts come from (node, link, pair: value over the typical
    #: one in units of the robust spread); slow means above the fit's z
    node_z: list[float] = field(default_factory=list)
    link_z: dict[Pair, float] = field(default_factory=dict)
    pair_z: dict[Pair, float] = field(default_factory=dict)

    def expected(self, i: int, j: int, groups: Sequence[int] | None = None) -> float:
        """node[i] + node[j] + the link term of their groups (0 inside a group)."""
        t = self.nodes[i] + self.nodes[j]
        if groups is not None and groups[i] != groups[j]:
            t += self.links.get(_norm(groups[i], groups[j]), 0.0)
        return t


def _robust_z(x: np.ndarray, floor: float) -> np.ndarray:
    med = float(np.median(x))
    mad = float(scipy.stats.median_abs_deviation(x, scale="normal"))
    return (x - med) / max(mad, floor)


def fit_pairs(times: dict[Pair, float], p: int, groups: Sequence[int] | None = None,
              z: float = OUTLIER_Z, iters: int = 30) -> PairFit:
    """Robust (Huber IRLS) fit of t(i,j) = node[i] + node[j] + link[g(i),g(j)].

    `times` maps pairs (i < j) to a time (e.g. the median round trip). Raises ValueError
    when the design cannot determine every node (a node in no pair, a disconnected or
    bipartite design).
    """
    if groups is not None and len(groups) != p:
        raise ValueError(f"{len(groups)} group labels for {p} ranks")
    pairs = sorted(_norm(*k) for k in times)
    for i, j in pairs:
        if i == j or not (0 <= i < p and 0 <= j < p):
            raise ValueError(f"pair ({i}, {j}) is not two different ranks of {p}")
    links: list[Pair] = []
    if groups is not None:
        links = sorted({_norm(groups[i], groups[j]) for i, j in pairs if groups[i] != groups[j]})
    lidx = {lk: p + n for n, lk in enumerate(links)}
    y = np.array([times[pq] if pq in times else times[(pq[1], pq[0])] for pq in pairs])
    # the design matrix is sparse (two or three ones a row): the weighted normal equations
    # are solved, (p + links) unknowns, so that a full matrix of 256 ranks fits in a second
    rows: list[int] = []
    cols: list[int] = []
    for r, (i, j) in enumerate(pairs):
        rows += [r, r]
        cols += [i, j]
        if groups is not None and groups[i] != groups[j]:
            rows.append(r)
            cols.append(lidx[_norm(groups[i], groups[j])])
    a = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(pairs), p + len(links)))
    if np.linalg.matrix_rank((a.T @ a).toarray()) < a.shape[1]:
        raise ValueError("the pair design does not determine every node and link "
                         "(a node in no pair, or a disconnected or bipartite design)")
    w = np.ones(len(pairs))
    floor = 0.01 * float(np.median(y))
    x = np.zeros(a.shape[1])
    for _ in range(iters):
        aw = a.T @ sparse.diags(w)
        x = np.asarray(splinalg.spsolve((aw @ a).tocsc(), aw @ y), dtype=float)
        res = y - a @ x
        scale = max(1.4826 * float(np.median(np.abs(res))), floor * 0.1, 1e-300)
        k = 1.345 * scale
        w_new = np.where(np.abs(res) <= k, 1.0, k / np.maximum(np.abs(res), 1e-300))
        if np.allclose(w_new, w):
            break
        w = w_new
    res = y - a @ x
    nodes = x[:p]
    node_floor = 0.01 * float(np.median(np.abs(nodes))) if p else 0.0
    node_z = _robust_z(nodes, node_floor)
    slow_nodes = [int(i) for i in np.nonzero(node_z > z)[0]]
    link_vals = {lk: float(x[lidx[lk]]) for lk in links}
    slow_links: list[Pair] = []
    link_z: dict[Pair, float] = {}
    if links:
        # a link stands out against the typical pair time, not against other links (with
        # two groups there is one link and nothing to compare it with)
        base = float(np.median(nodes)) * 2.0
        lv = np.array([link_vals[lk] for lk in links])
        lmed = float(np.median(lv)) if len(links) > 2 else 0.0
        lscale = max(1.4826 * float(np.median(np.abs(lv - lmed))) if len(links) > 2 else 0.0,
                     0.05 * base)
        link_z = {lk: (link_vals[lk] - lmed) / lscale for lk in links}
        slow_links = [lk for lk in links if link_z[lk] > z]
    # timing noise is multiplicative (a slow node's pairs vary more in seconds, not in
    # ratio): a pair stands out by its residual relative to its expected time
    fitted = a @ x
    rel = np.where(fitted > 0, res / np.where(fitted > 0, fitted, 1.0), 0.0)
    pair_scale = max(1.4826 * float(np.median(np.abs(rel))), 0.01)
    slow_pairs = [pairs[r] for r in np.nonzero(rel / pair_scale > z)[0]]
    return PairFit(nodes=[float(v) for v in nodes], links=link_vals,
                   residuals={pq: float(v) for pq, v in zip(pairs, res, strict=True)},
                   slow_nodes=slow_nodes, slow_links=slow_links, slow_pairs=slow_pairs,
                   node_z=[float(v) for v in node_z], link_z=link_z,
                   pair_z={pq: float(v) / pair_scale for pq, v in zip(pairs, rel, strict=True)})


def default_design(p: int, requested: str | None = None) -> str:
    """'full' or 'sampled': sampled above FULL_MATRIX_LIMIT ranks unless asked otherwise."""
    if requested is not None:
        if requested not in ("full", "sampled"):
            raise ValueError(f"--pairs expects full or sampled, got {requested!r}")
        return requested
    return "sampled" if p > FULL_MATRIX_LIMIT else "full"


def pair_times(measurements: Sequence[Measurement], nbytes: int | None = None
               ) -> tuple[int, dict[Pair, float]]:
    """Median pair times of one size from p2p measurements (mpilab.results_model.Measurement).

    `nbytes` None takes the smallest size present. Returns (ranks, {(i, j): median}).
    """
    p2p = [m for m in measurements if m.pair is not None]
    if not p2p:
        raise ValueError("no p2p pair measurements (run mpilab-bench --ops p2p)")
    size = min(int(m.bytes) for m in p2p) if nbytes is None else nbytes
    times: dict[Pair, float] = {}
    ranks = 0
    for m in p2p:
        if int(m.bytes) != size:
            continue
        assert m.pair is not None
        i, j = m.pair
        times[_norm(i, j)] = float(m.stats.median)
        ranks = max(ranks, i + 1, j + 1, int(m.ranks or 0))
    if not times:
        raise ValueError(f"no p2p pair measurement of {size} bytes")
    return ranks, times


def run_design(provenance: dict[str, object]) -> dict[str, object]:
    """provenance.options.pairs of a run (the design the C runner measured: design, pairs,
    groups, rank_groups, seed, ...), {} for files written before it was recorded."""
    opts = provenance.get("options")
    d = opts.get("pairs") if isinstance(opts, dict) else None
    return d if isinstance(d, dict) else {}


def compare_sampled(times: dict[Pair, float], p: int, groups: Sequence[int] | None = None,
                    seed: int = 0) -> tuple[PairFit, PairFit, float]:
    """Fit a full matrix and its sampled subset; (full fit, sampled fit, largest relative
    difference of a node estimate). Checks the sampled design where both can run."""
    full = fit_pairs(times, p, groups)
    sub = {pq: times[pq] for pq in sample_pairs(p, groups, seed=seed) if pq in times}
    sampled = fit_pairs(sub, p, groups)
    worst = max(abs(a - b) / abs(a) for a, b in zip(full.nodes, sampled.nodes, strict=True)
                if a != 0.0)
    return full, sampled, worst


def main(argv: Sequence[str] | None = None) -> int:
    """python -m mpilab.pairs RESULTS.json [BYTES]: per-node estimates and flagged outliers."""
    import sys

    from mpilab.errors import MpilabError
    from mpilab.results import load

    args = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= len(args) <= 2:
        print("usage: python -m mpilab.pairs RESULTS.json [BYTES]", file=sys.stderr)
        return 2
    try:
        nbytes = int(args[1]) if len(args) == 2 else None
    except ValueError:
        print(f"mpilab.pairs: BYTES must be an integer, got {args[1]!r}", file=sys.stderr)
        return 2
    try:
        res = load(args[0])
    except (OSError, MpilabError) as e:
        print(f"mpilab.pairs: {e}", file=sys.stderr)
        return 1
    design = run_design(res.provenance)
    rg = design.get("rank_groups")
    groups = [int(g) for g in rg] if isinstance(rg, list) else None
    try:
        ranks, times = pair_times(res.measurements, nbytes)
        if groups is not None and len(groups) != ranks:
            groups = None
        fit = fit_pairs(times, ranks, groups)
    except ValueError as e:
        print(f"mpilab.pairs: {args[0]}: {e}", file=sys.stderr)
        return 1
    how = (f" ({design.get('design')} design, groups: {design.get('groups')}, "
           f"{design.get('ngroups')})") if design else ""
    print(f"{len(times)} pairs of {ranks} ranks{how}")
    if len(times) == ranks * (ranks - 1) // 2 and ranks >= 4:
        _, sampled, worst = compare_sampled(times, ranks, groups)
        n = len(sample_pairs(ranks, groups))
        print(f"sampled design ({n} of {len(times)} pairs): node estimates within "
              f"{worst * 100:.1f}% of the full matrix's; slow nodes {sampled.slow_nodes}, "
              f"slow links {sampled.slow_links}")
    print(f"slow nodes {fit.slow_nodes}, slow links {fit.slow_links}")
    for i, v in enumerate(fit.nodes):
        mark = "  SLOW" if i in fit.slow_nodes else ""
        print(f"node {i:5d} {v * 1e6:10.2f} us{mark}")
    for i, j in fit.slow_pairs:
        print(f"slow pair {i}-{j}: +{fit.residuals[(i, j)] * 1e6:.2f} us over node_i + node_j")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
