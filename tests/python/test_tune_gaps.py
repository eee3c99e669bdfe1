"""Exported files read back with the libraries' own look-up rules (readers in tunekit.py,
not the exporter's code): every size and communicator size a choice leaves at the default,
between, below and above its tuned ranges, runs the default; a forced algorithm reaches only
half a step (geometric) beyond the sizes it won at (docs/tune.md, "Export")."""

from __future__ import annotations

import math
from typing import Any

from mpilab.tune import export
from mpilab.tune.algorithms import mpich_container
from mpilab.tune.choose import DEFAULT
from test_tune import MPICH_DEFAULT
from tunekit import csel, ompi_pick, read_ompi_rules

NP = 4
#: per collective: measured size -> winner; forced at both ends, defaults between
ALLREDUCE = {8: "ompi_basic_linear", 64: DEFAULT, 1024: DEFAULT, 16384: "ompi_recursive_doubling",
             32768: "ompi_recursive_doubling", 65536: DEFAULT, 262144: "ompi_nonoverlapping"}
ALLGATHER = {1024: "ompi_ring"}  # one measured size: the rule covers that size alone
ALGS = {"allreduce": {"ompi_basic_linear": 1, "ompi_nonoverlapping": 2,
                      "ompi_recursive_doubling": 3, "ompi_ring": 4, "ompi_rabenseifner": 6},
        "allgather": {"ompi_ring": 4, "ompi_bruck": 2}}
SIZES = sorted({0} | {v for k in range(31) for v in (1 << k, 3 << k, (1 << k) - 1,
                                                       (1 << k) + 1)})


def _choice(cells: dict[str, dict[int, str]], np: int = NP) -> dict[str, Any]:
    ranges = []
    for op, by in cells.items():
        rs: list[dict[str, Any]] = []
        for b, w in sorted(by.items()):
            if rs and rs[-1]["winner"] == w:
                rs[-1]["to"] = b
                rs[-1]["sizes"].append(b)
            else:
                rs.append({"winner": w, "from": b, "to": b, "sizes": [b]})
        ranges.append({"op": op, "np": np, "ranges": rs})
    return {"schema": "mpilab.tune-choice/1", "source": "test", "cells": [], "ranges": ranges}


def expected(by: dict[int, str], s: int) -> str | None:
    """The winner of the measured size nearest to s (log scale) within half a step of the
    measured sizes, else the default; None within 2% of a boundary (integer rounding)."""
    m = sorted(by)
    if len(m) > 1:
        lo, hi = m[0] / math.sqrt(m[1] / m[0]), m[-1] * math.sqrt(m[-1] / m[-2])
    else:
        lo, hi = m[0] - 0.5, m[0] + 0.5
    bounds = [lo, hi] + [math.sqrt(a * b) for a, b in zip(m, m[1:], strict=False)]
    if s > 0 and any(abs(s - x) <= 0.02 * x + 1 for x in bounds):
        return None
    if s < lo or s > hi:
        return DEFAULT
    return by[min(m, key=lambda b: abs(math.log(s) - math.log(b)))]


def test_open_mpi_rules_give_the_default_in_every_gap() -> None:
    choice = _choice({"allreduce": ALLREDUCE, "allgather": ALLGATHER})
    rules = read_ompi_rules(export.ompi_rules(choice, ALGS))
    checked = 0
    for op, by, cid, per_rank in (("allreduce", ALLREDUCE, 2, False),
                                  ("allgather", ALLGATHER, 0, True)):
        for s in SIZES:
            want = expected(by, s)
            if want is None:
                continue
            got = ompi_pick(rules, cid, NP, s * NP if per_rank else s)
            assert got == (0 if want == DEFAULT else ALGS[op][want]), (op, s, want, got)
            checked += 1
        for b, w in by.items():  # every measured size exactly
            assert ompi_pick(rules, cid, NP, b * NP if per_rank else b) == \
                (0 if w == DEFAULT else ALGS[op][w]), (op, b)
        for comm in (1, 2, 3, 5, 8, 64):  # communicator sizes not tuned: the fixed decision
            assert {ompi_pick(rules, cid, comm, s) for s in SIZES} == {0}, (op, comm)
    assert checked > 200
    # 8 B forced, 64 B the default: 16 B is nearer 8 B, 32 B nearer 64 B; from twice the
    # last measured size (half its step from 64 KiB) the default again
    assert [ompi_pick(rules, 2, NP, s) for s in (0, 8, 16, 32, 400000, 1 << 19, 1 << 30)] == \
        [0, 1, 1, 0, 2, 0, 0]


def test_open_mpi_explicit_default_fills_every_gap_with_the_default_algorithm() -> None:
    """With the fixed decision's steps, every stretch kept at the default names the
    default's own algorithm at that size (0 beyond the steps)."""
    steps = {("allreduce", NP): [(4, 3), (4096, 2), (131072, 6), (2097152, 0)]}
    choice = _choice({"allreduce": ALLREDUCE})
    rules = read_ompi_rules(export.ompi_rules(choice, ALGS, steps))
    for s in SIZES:
        want = expected(ALLREDUCE, s)
        if want is None:
            continue
        at = [n for f, n in steps[("allreduce", NP)] if f <= s]
        dflt = at[-1] if at else steps[("allreduce", NP)][0][1]
        assert ompi_pick(rules, 2, NP, s) == \
            (dflt if want == DEFAULT else ALGS["allreduce"][want]), s


def test_mpich_selection_gives_the_default_in_every_gap() -> None:
    bcast = {8: "mpich_scatter_ring_allgather", 64: DEFAULT, 16384: "mpich_binomial",
             1 << 20: DEFAULT}
    allgather = {16: DEFAULT, 1024: "mpich_nb", 4096: "mpich_nb"}
    names = frozenset({"MPIR_Bcast_intra_binomial", "MPIR_Bcast_intra_scatter_ring_allgather",
                       "MPIR_Allgather_allcomm_nb", "MPIR_Allgather_intra_ring",
                       "MPIR_Allgather_intra_brucks"})
    doc = export.mpich_json(_choice({"bcast": bcast, "allgather": allgather}), MPICH_DEFAULT,
                            names)
    checked = 0
    for op, by in (("bcast", bcast), ("allgather", allgather)):
        for s in SIZES:
            want = expected(by, s)
            if want is None:
                continue
            for comm in (1, 2, 3, NP, 5, 8):
                got = csel(doc, op, comm, s, s * comm)
                dflt = csel(MPICH_DEFAULT, op, comm, s, s * comm)
                if comm != NP or want == DEFAULT:
                    assert got == dflt, (op, comm, s, got)
                else:
                    assert got == mpich_container(op, want), (op, s, got)
                checked += 1
    assert checked > 1000


def _csel_in(tree: dict[str, Any], coll: str, ctx: dict[str, Any]) -> str:
    """An independent walk of MPICH's selection tree (the first key of each object that
    holds), every condition the library's tree uses answered from ctx."""
    import re

    node = tree[f"collective={coll}"]["comm_type=intra"]
    while True:
        for k, v in node.items():
            if k.startswith("algorithm="):
                return k[len("algorithm="):]
            m = re.match(r"(comm_size|avg_msg_size|total_msg_size|count)(<=|<|=)(\w+)$", k)
            if m:
                x = ctx[m.group(1)]
                op, val = m.group(2), m.group(3)
                if val == "pow2":
                    p2 = 1 << (ctx["comm_size"].bit_length() - 1)
                    ok = (x & (x - 1) == 0) if op == "=" else x < p2
                else:
                    ok = (val == "any" or (op == "<=" and x <= int(val))
                          or (op == "<" and x < int(val)) or (op == "=" and x == int(val)))
            else:
                name, _, val = k.partition("=")
                ok = val == "any" or ctx[name] == val
            if ok:
                node = v
                break
        else:
            raise AssertionError(f"no branch holds in {list(node)}")


def test_mpich_gaps_are_the_librarys_own_choice_in_every_context() -> None:
    """The installed libmpich's own MPIR-level tree (read from the library, as the export
    does): every size the export leaves at the default selects, for every communicator
    size 1-9 and every condition the tree asks (hierarchy parent or flat, commutative or
    not, built-in operation or not, count below the power of two or not, in place or not,
    threaded or not), exactly what the library selects without the file."""
    import itertools
    from pathlib import Path

    import pytest
    from mpilab.tune import algorithms

    lib = Path("/lib/x86_64-linux-gnu/libmpich.so.12")
    if not lib.is_file():
        pytest.skip("MPICH is not installed")
    tree, names = algorithms.mpich_selection(str(lib))
    won = {"bcast": {64: "mpich_scatter_ring_allgather", 16384: DEFAULT,
                     262144: "mpich_binomial"},
           "allreduce": {8: DEFAULT, 1024: "mpich_recursive_doubling", 65536: DEFAULT},
           "reduce": {4096: "mpich_binomial"},
           "allgather": {8: DEFAULT, 1024: "mpich_recursive_doubling"}}
    doc = export.mpich_json(_choice(won), tree, names)
    for k in tree:
        if k[len("collective="):] not in won:
            assert doc[k] == tree[k]
    flags = ("comm_hierarchy", "is_commutative", "is_op_built_in", "is_sendbuf_inplace",
             "is_multi_threaded", "is_block_regular", "is_node_consecutive")
    checked = 0
    for op, by in won.items():
        for s in SIZES[:60]:
            want = expected(by, s)
            if want is None:
                continue
            for comm in range(1, 10):
                for vals in itertools.product(("parent", "flat"), *[("yes", "no")] * 6):
                    ctx = dict(zip(flags, vals, strict=True))
                    for count in (s, 3):
                        ctx.update(comm_size=comm, avg_msg_size=s, total_msg_size=s * comm,
                                   count=count)
                        got, dflt = _csel_in(doc, op, ctx), _csel_in(tree, op, ctx)
                        if comm != NP or want == DEFAULT:
                            assert got == dflt, (op, comm, s, ctx, got, dflt)
                        else:
                            assert got == mpich_container(op, want), (op, s, got)
                        checked += 1
    assert checked > 100000
