"""Checks across the fields of a results document that passed its schema: values that
cannot all be true at once (issue 29: an interval that does not hold its median, more
invalid repetitions than repetitions, a rank count the mapping contradicts, an operation
that neither the runner nor the run's own provenance knows, a fitted model parameter outside
its own interval or an interval below 0). Each finding is (JSON path,
one-line reason); results.parse raises the first with the file and line.

Pure functions of the JSON objects; no import of mpilab.results (which calls them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

PathT = tuple[str | int, ...]

# mpilab-bench's built-in operations (`mpilab-bench --list --json`, tested against it in
# tests/python/test_hostile_outputs_specs.py) and the testbed check's link measurements; a user's
# entries (--entries FILE.so) are known through provenance.options.ops.
BUILTIN_OPS = frozenset({
    "allgather", "allreduce", "alltoall", "barrier", "bcast", "comb", "exchange", "gather",
    "overlap_iallreduce", "overlap_isend", "p2p", "pingping", "pingpong", "reduce", "scatter",
    "sendrecv", "stream", "stream_multi",
    "link",  # the testbed check's
    "wavefront"})  # mpilab-wavefront's (timing "iteration")

# the implementations of mpilab-bench's built-in operations (`mpilab-bench --list --json`,
# tested against it beside BUILTIN_OPS) and the testbed check's; `--mpi-algorithms` adds
# entries named after the library (FORCED_PREFIXES), a user's entries are known through
# provenance.options.ops ("op:impl"). Operations not listed (wavefront: layout/io) are not
# checked here.
BUILTIN_IMPLS: dict[str, frozenset[str]] = {
    "allgather": frozenset({"native"}), "allreduce": frozenset({"native"}),
    "alltoall": frozenset({"native"}), "barrier": frozenset({"native"}),
    "bcast": frozenset({"native"}), "reduce": frozenset({"native"}),
    "comb": frozenset({f"poll{n}" for n in (0, 100, 1000, 10000, 100000, 1000000)}),
    "exchange": frozenset({"mpi"}), "overlap_iallreduce": frozenset({"mpi"}),
    "overlap_isend": frozenset({"mpi"}), "pingping": frozenset({"mpi"}),
    "pingpong": frozenset({"mpi"}), "sendrecv": frozenset({"mpi"}),
    "stream": frozenset({"mpi"}), "stream_multi": frozenset({"mpi"}),
    "p2p": frozenset({"roundtrip"}),
    "scatter": frozenset({"native", "linear", "binomial", "multilane", "single-lane"}),
    "gather": frozenset({"native", "linear", "binomial", "multilane", "single-lane"}),
    "link": frozenset({"ping", "iperf3"})}
FORCED_PREFIXES = ("ompi_", "mpich_")

# relative slack for values written with 10 significant digits
_EPS = 1e-6


def _le(a: Any, b: Any) -> bool:
    """a <= b, both numbers (None: nothing to compare)."""
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return True
    return a <= b + _EPS * max(abs(a), abs(b))


def _order(get: Any, path: PathT) -> Iterator[tuple[PathT, str]]:
    """The orderings every set of statistics of one measurement obeys. get(key) -> value
    or None."""
    med, lo, hi = get("median"), get("med_lo"), get("med_hi")
    mn, mx, mean = get("min"), get("max"), get("mean")
    if not _le(lo, med):
        yield path + ("med_lo",), f"{lo} is above the median {med} (the interval must hold it)"
    if not _le(med, hi):
        yield path + ("med_hi",), f"{hi} is below the median {med} (the interval must hold it)"
    if not _le(mn, mx):
        yield path + ("min",), f"{mn} is above max {mx}"
    for key, v in (("median", med), ("mean", mean)):
        if not _le(mn, v):
            yield path + (key,), f"{v} is below the minimum {mn}"
        if not _le(v, mx):
            yield path + (key,), f"{v} is above the maximum {mx}"
    reps, inv = get("reps"), get("invalid")
    if isinstance(reps, int) and isinstance(inv, int) and inv > reps:
        yield path + ("invalid",), f"{inv} invalid repetitions of {reps}"


def _declared_ops(prov: dict[str, Any]) -> set[str]:
    opts = prov.get("options") if isinstance(prov.get("options"), dict) else {}
    ops = opts.get("ops") if isinstance(opts, dict) else None
    out: set[str] = set()
    for o in ops if isinstance(ops, list) else []:
        if isinstance(o, str) and o:
            out.add(o.split(":", 1)[0])
    return out


def _declared_entries(prov: dict[str, Any]) -> set[str]:
    """The "op:impl" entries provenance.options.ops lists."""
    opts = prov.get("options") if isinstance(prov.get("options"), dict) else {}
    ops = opts.get("ops") if isinstance(opts, dict) else None
    return {o for o in (ops if isinstance(ops, list) else []) if isinstance(o, str)}


def _impl_known(op: str, impl: Any, declared: set[str]) -> bool:
    builtin = BUILTIN_IMPLS.get(op)
    if builtin is None or not isinstance(impl, str):
        return True  # an operation whose implementations are not listed here
    return (impl in builtin or impl.startswith(FORCED_PREFIXES)
            or f"{op}:{impl}" in declared)


def _measurement(m: dict[str, Any], path: PathT, prov: dict[str, Any],
                 declared: set[str]) -> Iterator[tuple[PathT, str]]:
    """One measurement against the run it belongs to: its implementation is one the run
    could have measured, its rank count is not above the run's."""
    op, impl = m.get("op"), m.get("impl")
    if isinstance(op, str) and not _impl_known(op, impl, declared):
        yield path + ("impl",), (f"{impl!r}: unknown implementation of {op} (neither "
                                 "mpilab-bench's nor one listed in provenance.options.ops)")
    ranks, run = m.get("ranks"), prov.get("ranks")
    if (isinstance(ranks, int) and isinstance(run, int) and ranks > run
            and not isinstance(prov.get("runs"), list) and op != "wavefront"):
        yield path + ("ranks",), f"{ranks} ranks in a run of {run} ranks"


def _predictions(preds: Any, path: PathT) -> Iterator[tuple[PathT, str]]:
    """A Hockney prediction is a sum of parameters clamped at 0: never below 0 (the LMO
    model's own predictions, models.lmo, are flagged nonpositive instead)."""
    for k, p in enumerate(preds if isinstance(preds, list) else []):
        v = p.get("predicted") if isinstance(p, dict) else None
        if isinstance(v, (int, float)) and v < 0:
            yield path + (k, "predicted"), f"{v} is below 0 (a sum of parameters clamped at 0)"


def _provenance(prov: dict[str, Any]) -> Iterator[tuple[PathT, str]]:
    ranks = prov.get("ranks")
    mapping = prov.get("mapping") if isinstance(prov.get("mapping"), list) else None
    hosts = prov.get("hosts") if isinstance(prov.get("hosts"), list) else None
    p: PathT = ("provenance",)
    if isinstance(prov.get("runs"), list):
        return  # a merged view (results.merge): the largest run's rank count, the first's map
    if isinstance(ranks, int) and mapping:
        if len(mapping) != ranks:
            yield p + ("ranks",), f"{ranks} ranks, but the mapping lists {len(mapping)}"
        for k, m in enumerate(mapping):
            r = m.get("rank") if isinstance(m, dict) else None
            if isinstance(r, int) and r >= ranks:
                yield p + ("mapping", k, "rank"), f"rank {r} does not exist in a run of " \
                    f"{ranks} ranks"
    if isinstance(ranks, int) and hosts and len(set(hosts)) > ranks:
        yield p + ("hosts",), f"{len(set(hosts))} hosts for {ranks} ranks"
    if hosts and mapping:
        known = set(hosts)
        for k, m in enumerate(mapping):
            h = m.get("host") if isinstance(m, dict) else None
            if isinstance(h, str) and h not in known:
                yield p + ("mapping", k, "host"), f"host {h!r} is not in provenance.hosts"


_MODEL_PARAMS = {"hockney": ("alpha", "beta"), "loggp": ("L", "os", "or", "g", "G")}


def _models(models: Any) -> Iterator[tuple[PathT, str]]:
    """A fitted parameter's interval (quality.NAME.lo .. hi) cannot be upside down, cannot
    reach below 0 (the fitter clamps both ends at 0, as the value) and must hold the value the
    file reports for the parameter (the fitter stretches it to: a value outside was not
    written by it)."""
    if not isinstance(models, dict):
        return
    for model, names in _MODEL_PARAMS.items():
        m = models.get(model)
        pairs = m.get("pairs") if isinstance(m, dict) else None
        for k, p in enumerate(pairs if isinstance(pairs, list) else []):
            q = p.get("quality") if isinstance(p, dict) else None
            if not isinstance(q, dict):
                continue
            for name in names:
                qn = q.get(name)
                if not isinstance(qn, dict):
                    continue
                path: PathT = ("models", model, "pairs", k, "quality", name)
                lo, hi, v = qn.get("lo"), qn.get("hi"), p.get(name)
                for end, x in (("lo", lo), ("hi", hi)):
                    if isinstance(x, (int, float)) and x < 0:
                        yield path + (end,), f"{x} is below 0 (a fitted {name} and its " \
                            "interval are clamped at 0)"
                if not _le(lo, hi):
                    yield path + ("lo",), f"{lo} is above hi {hi} (the interval is upside down)"
                elif not (_le(lo, v) and _le(v, hi)):
                    yield path, f"{name} {v} lies outside its own interval {lo} .. {hi}"


# `mpilab compare` (the suite) writes one document over several rank counts (scaling
# series) with entries of its own recipes and plug-ins: the run-level checks are mpilab-bench's
SUITE_TOOL = "mpilab compare"


def problems(doc: dict[str, Any]) -> Iterator[tuple[PathT, str]]:
    """Every impossible combination in a schema-valid results document, in document
    order (provenance first)."""
    prov = doc.get("provenance") if isinstance(doc.get("provenance"), dict) else {}
    yield from _provenance(prov)
    known = BUILTIN_OPS | _declared_ops(prov)
    declared = _declared_entries(prov)
    for k, m in enumerate(doc.get("measurements") or []):
        if not isinstance(m, dict):
            continue
        path: PathT = ("measurements", k)
        op = m.get("op")
        if isinstance(op, str) and op not in known:
            yield path + ("op",), (f"{op!r}: unknown operation (neither mpilab-bench's nor "
                                   "one listed in provenance.options.ops)")
        if prov.get("tool") != SUITE_TOOL:  # a suite study spans rank counts and entries
            yield from _measurement(m, path, prov, declared)
        st = m.get("stats")
        if isinstance(st, dict):
            yield from _order(st.get, path + ("stats",))
        pm = m.get("pair_matrix")
        if isinstance(pm, dict):
            n = pm.get("count")
            for j in range(n if isinstance(n, int) else 0):
                for pp, why in _order(_column(pm, j), path + ("pair_matrix",)):
                    yield pp + (j,), why
    yield from _models(doc.get("models"))
    models = doc.get("models") if isinstance(doc.get("models"), dict) else {}
    yield from _predictions(models.get("predictions"), ("models", "predictions"))


def _column(pm: dict[str, Any], j: int) -> Any:
    """get(key) -> pair j's value of a pair matrix's array `key` (None if absent)."""
    def get(key: str) -> Any:
        a = pm.get(key)
        return a[j] if isinstance(a, list) and j < len(a) else None
    return get
