"""Writing the choice for the MPI library to read.

Open MPI 4.1 coll_tuned dynamic rules (ompi/mca/coll/tuned/coll_tuned_dynamic_file.c reads
them with ompi_coll_base_file_getnext_long: whitespace-separated integers, "#" to the end of
a line a comment): the number of collectives; per collective its id (COLLTYPE in
coll_base_functions.h: allgather 0, allreduce 2, alltoall 3, barrier 6, bcast 7, gather 9,
reduce 11, scatter 15), the number of communicator sizes; per communicator size the size and
the number of message rules; per message rule "size algorithm fan-in/out segment-size", the
first from size 0. Open MPI takes the largest communicator size <= the communicator's and
the largest message size <= the call's, in bytes as its dynamic decision computes them: the
message for bcast, reduce and allreduce, block x ranks for allgather, alltoall, gather and
scatter, 0 for barrier. Algorithm 0 means "the fixed decision", the library's default. A
communicator size one above each measured one (unless measured) gets the default, so
untested sizes keep Open MPI's own choice; a forced algorithm covers only its measured sizes
and half a step around them (thresholds), so untested message sizes keep it too.

MPICH 4.0 collective selection JSON (src/mpi/coll/src/csel.c; read from
MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE, which replaces the library's whole MPIR-level
tree): the library's own default tree with each tuned collective's intra-communicator
branch replaced by "comm_size<P" -> default, "comm_size<=P" -> the ranges
("avg_msg_size<=X" for bcast, reduce, allreduce, alltoall; "total_msg_size<=X" = block x
ranks for allgather, gather, scatter) ending in the default, and "comm_size=any" -> default.
A range kept at the default holds the default's own subtree.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from mpilab.errors import MpilabError
from mpilab.tune import algorithms
from mpilab.tune.choose import DEFAULT

OMPI_IDS = {"allgather": 0, "allreduce": 2, "alltoall": 3, "barrier": 6, "bcast": 7,
            "gather": 9, "reduce": 11, "scatter": 15}
PER_RANK = ("allgather", "alltoall", "gather", "scatter")
#: the algorithms Open MPI 4.1 runs correctly for non-commutative operations (the comments of
#: coll_tuned_decision_fixed.c: reduce "only linear and in-order binary"; allreduce: not ring,
#: segmented ring; rabenseifner checks and falls back itself). A rules file cannot tell
#: operations apart, so an explicit rule written for the default's own choice (which the
#: fixed decision makes for commutative operations) is written only with these; elsewhere 0
#: leaves the choice to the fixed decision, which asks the operation.
NONCOMMUTATIVE_SAFE = {"reduce": ("ompi_linear", "ompi_in_order_binary", "ompi_rabenseifner"),
                       "allreduce": ("ompi_basic_linear", "ompi_nonoverlapping",
                                     "ompi_recursive_doubling", "ompi_rabenseifner")}
MPICH_AVG = ("bcast", "reduce", "allreduce", "alltoall")


def rule_bytes(op: str, nbytes: int, np: int) -> int:
    """mpilab's size (block or message) as the library's rule compares it."""
    if op == "barrier":
        return 0
    return nbytes * np if op in PER_RANK else nbytes


def _middle(a: int, b: int) -> int:
    """The geometric middle between sizes a < b: the first size that belongs to b."""
    return max(a + 1, math.isqrt(max(a, 1) * b))


def thresholds(rng: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """(first size, winner) per stretch of sizes from 0 up. A range covers its measured
    sizes and half a step (the geometric middle) towards each measured neighbour; beyond
    the first and the last measured size a forced algorithm reaches half a step further (the
    step to its neighbour, or none for a collective measured at one size) and the default
    takes over: an algorithm is never given sizes it was not measured near, and a file read
    with the library's rules (the largest rule size <= the call's) runs the default below
    the first measured size, above the last and in every range kept at the default."""
    if not rng:
        return [(0, DEFAULT)]
    first, last = rng[0], rng[-1]
    sizes = sorted({int(b) for r in rng for b in (r.get("sizes") or [r["from"], r["to"]])})
    out = [(0, DEFAULT)]
    if first["winner"] != DEFAULT:
        # from / sqrt(next / from): half the step to the next measured size, below
        a, b = sizes[0], (sizes[1] if len(sizes) > 1 else sizes[0])
        out.append((a if a == b else max(1, math.isqrt(a ** 3 // b)), first["winner"]))
    out += [(_middle(rng[k - 1]["to"], rng[k]["from"]), rng[k]["winner"])
            for k in range(1, len(rng))]
    if last["winner"] != DEFAULT:
        # to x sqrt(to / previous): half the step from the measured size before, above
        a, b = (sizes[-2] if len(sizes) > 1 else sizes[-1]), sizes[-1]
        out.append((max(b + 1, math.isqrt(b ** 3 // max(a, 1))), DEFAULT))
    merged: list[tuple[int, str]] = []
    for start, w in out:
        if merged and merged[-1][0] == start:
            merged.pop()  # the stretch before starts here too: it is empty
        if not merged or merged[-1][1] != w:
            merged.append((start, w))
    return merged


def stretches(op: str, rng: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """thresholds(), barrier (no message size: one rule at 0) its one range."""
    return [(0, rng[0]["winner"])] if op == "barrier" else thresholds(rng)


def tuned_ranges(choice: dict[str, Any]) -> list[dict[str, Any]]:
    """The choice's ranges of the collectives where some algorithm beat the default. A
    collective kept at the default everywhere is left out of the files: Open MPI installs its
    dynamic decision (a rule look-up on every call) only for the collectives its file names,
    and MPICH keeps the library's own subtree; measured with a file naming every collective
    on 2 ranks, the calls kept at the default ran the same algorithm, 5 to 12% slower (reduce
    8 to 128 B on Open MPI; scatter on MPICH), docs/tune.md."""
    won = {r["op"] for r in choice["ranges"]
           if any(x["winner"] != DEFAULT for x in r["ranges"])}
    return [r for r in choice["ranges"] if r["op"] in won]


def _safe(op: str, num: int, algs: dict[str, dict[str, int]]) -> int:
    if op not in NONCOMMUTATIVE_SAFE:
        return num
    ok = {algs.get(op, {}).get(i) for i in NONCOMMUTATIVE_SAFE[op]}
    return num if num in ok else 0


def _explicit(start: int, end: int | None, steps: list[tuple[int, int]], op: str,
              algs: dict[str, dict[str, int]]) -> list[tuple[int, int]]:
    """The default's own algorithm over [start, end) as rules (first size, number), from
    the fixed decision's steps (mpilab.tune.verify.ompi_default_steps)."""
    at = [n for f, n in steps if f <= start]
    out = [(start, _safe(op, at[-1] if at else steps[0][1], algs))]
    out += [(f, _safe(op, n, algs)) for f, n in steps
            if f > start and (end is None or f < end)]
    return out


def ompi_rules(choice: dict[str, Any], algs: dict[str, dict[str, int]],
               defaults: dict[tuple[str, int], list[tuple[int, int]]] | None = None) -> str:
    """The rules file text of a choice document (mpilab.tune-choice/1). With `defaults`
    (the fixed decision's steps per (collective, ranks), read from the library), a range kept
    at the default gets the default's own algorithm, explicitly, instead of 0: such a call
    then skips the fixed decision after the rule look-up (coll_tuned_decision_dynamic.c:
    algorithm 0 runs the look-up and then the whole fixed decision). The fixed decision
    passes fan-in/out 0 and segment size 0 to the algorithm (4.1), as these rules do."""
    by_op: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for r in tuned_ranges(choice):
        if r["op"] not in OMPI_IDS:
            raise MpilabError(f"{r['op']}: Open MPI's rules file has no collective of that name")
        by_op.setdefault(r["op"], {})[int(r["np"])] = r["ranges"]
    lines = ["# Open MPI coll_tuned dynamic rules written by mpilab tune export",
             f"# from {choice.get('source', '?')}; algorithm 0 = Open MPI's own fixed decision",
             f"{len(by_op)} # collectives"]
    for op in sorted(by_op, key=lambda o: OMPI_IDS[o]):
        sizes = by_op[op]
        coms: list[tuple[int, list[tuple[int, int]]]] = []
        for np in sorted(sizes):
            msgs: list[tuple[int, int]] = []
            ths = stretches(op, sizes[np])
            steps = (defaults or {}).get((op, np))
            for k, (start, winner) in enumerate(ths):
                end = ths[k + 1][0] if k + 1 < len(ths) else None
                if winner == DEFAULT:
                    part = _explicit(start, end, steps, op, algs) if steps else [(start, 0)]
                else:
                    num = algs.get(op, {}).get(winner, -1)
                    if num < 0:
                        raise MpilabError(f"{op}: algorithm {winner} is not one Open MPI offers "
                                          "(ompi_info lists no such coll_tuned enumerator)")
                    part = [(start, num)]
                for b, num in part:
                    if not msgs or msgs[-1][1] != num:
                        msgs.append((rule_bytes(op, b, np), num))
            coms.append((np, msgs))
            if np + 1 not in sizes:
                coms.append((np + 1, [(0, 0)]))
        if coms[0][0] > 1:
            coms.insert(0, (1, [(0, 0)]))
        lines.append(f"{OMPI_IDS[op]} # {op}")
        lines.append(f"{len(coms)} # communicator sizes")
        for np, msgs in coms:
            lines.append(f"{np} # communicator size")
            lines.append(f"{len(msgs)} # message sizes")
            for ms, num in msgs:
                lines.append(f"{ms} {num} 0 0 # from {ms} bytes: algorithm {num}")
    return "\n".join(lines) + "\n"


def _default_intra(tree: dict[str, Any], op: str) -> tuple[Any, dict[str, Any]]:
    key = f"collective={op}"
    sub = tree.get(key)
    if not isinstance(sub, dict) or "comm_type=intra" not in sub:
        raise MpilabError(f"the MPICH library's selection tree has no intra branch for {op}")
    return sub["comm_type=intra"], sub


def mpich_json(choice: dict[str, Any], tree: dict[str, Any], names: frozenset[str]
               ) -> dict[str, Any]:
    """The selection document of a choice, built on the library's default tree."""
    out = copy.deepcopy(tree)
    by_op: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for r in tuned_ranges(choice):
        by_op.setdefault(r["op"], {})[int(r["np"])] = r["ranges"]
    for op, sizes in by_op.items():
        default, sub = _default_intra(out, op)
        branch: dict[str, Any] = {}
        for np in sorted(sizes):
            branch[f"comm_size<{np}"] = copy.deepcopy(default)
            rules: dict[str, Any] = {}
            ths = stretches(op, sizes[np])
            for k, (_, winner) in enumerate(ths):
                if winner == DEFAULT:
                    leaf: Any = copy.deepcopy(default)
                else:
                    if (op, winner) in algorithms.MPICH_IN_PLACE_ONLY:
                        raise MpilabError(f"{op}: {winner} is MPICH's algorithm for "
                                          "MPI_IN_PLACE calls only (wrong data otherwise); "
                                          "not exported")
                    cont = algorithms.mpich_container(op, winner)
                    if cont not in names:
                        raise MpilabError(f"{op}: {cont} is not an algorithm the MPICH "
                                          "library's selection reader accepts")
                    leaf = {f"algorithm={cont}": {}}
                if op == "barrier" or k == len(ths) - 1:
                    rules[f"{'avg' if op in MPICH_AVG else 'total'}_msg_size=any"
                          if op != "barrier" else "comm_size=any"] = leaf
                else:
                    # csel's avg_msg_size is the message or block itself (alltoall's block
                    # too, sendcount x type size); total_msg_size is block x ranks
                    start = ths[k + 1][0]
                    upper = (start if op in MPICH_AVG else start * np) - 1
                    rules[f"{'avg' if op in MPICH_AVG else 'total'}_msg_size<={upper}"] = leaf
            branch[f"comm_size<={np}"] = rules
        branch["comm_size=any"] = copy.deepcopy(default)
        sub["comm_type=intra"] = branch
    return out
