"""Shared by the tune tests (test_tune.py, test_tune_diff.py): synthetic results documents
(launches at levels of their own), pairs of launches with and without a file, and running
the mpilab command line."""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from mpilab import launches

REPO = Path(__file__).resolve().parents[2]


def _meas(op: str, impl: str, nbytes: int, samples: list[float]) -> dict[str, Any]:
    s = sorted(samples)
    med = s[len(s) // 2]
    return {"op": op, "impl": impl, "timing": "max", "isolation": "barrier", "bytes": nbytes,
            "root": 0, "ranks": 2,
            "precision": {"cl": 0.95, "eps": 0.025, "min_reps": 5, "max_reps": 1000},
            "stats": {"mean": sum(s) / len(s), "ci_half": 0.01 * med, "reps": len(s),
                      "invalid": 0, "median": med, "med_lo": med * 0.99, "med_hi": med * 1.01,
                      "converged": True},
            "samples": samples, "valid": [True] * len(samples), "flags": [], "wall_s": 0.1}


def _doc(ms: list[dict[str, Any]], mpi: str = "Open MPI v4.1.4",
         hosts: list[str] | None = None, ranks: int = 2) -> dict[str, Any]:
    return {"schema": "mpilab.results/1",
            "provenance": {"tool": "mpilab-bench", "ranks": ranks, "mpi": mpi,
                           "hosts": hosts or ["vm"], "date": "2026-11-25T10:00:00Z"},
            "measurements": ms}


def _launched(levels: list[float], table: dict[tuple[str, str, int], float], n: int = 40,
              noise: float = 0.03, seed: int = 1) -> dict[str, Any]:
    """A document merged from len(levels) launches: each launch at its own level (the
    machine's launch effect), each (op, impl, bytes) at its true time x the level."""
    rng = random.Random(seed)
    docs = []
    for lv in levels:
        ms = [_meas(op, impl, b, [t * lv * math.exp(rng.gauss(0, noise)) for _ in range(n)])
              for (op, impl, b), t in table.items()]
        docs.append(_doc(ms))
    return launches.merge(docs, [f"l{k}" for k in range(len(levels))])




def _mpilab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mpilab.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO)


def _write(tmp: Path, name: str, doc: dict[str, Any]) -> str:
    p = tmp / name
    p.write_text(json.dumps(doc))
    return str(p)




def _pair_docs(table: dict[tuple[str, int], float], factors: dict[tuple[str, int], float],
               levels: list[float], seed: int, jitter: float = 0.01
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per pair k, one launch with the file (times x factors) and one without, both at the
    pair's level (the machine's state then) with a small launch jitter of their own."""
    rng = random.Random(seed)
    rules, dflt = [], []
    for lv in levels:
        for out, fac in ((rules, factors), (dflt, {})):
            lj = lv * math.exp(rng.gauss(0, jitter))
            ms = [_meas(op, "native", b, [t * fac.get((op, b), 1.0) * lj
                                          * math.exp(rng.gauss(0, 0.03)) for _ in range(40)])
                  for (op, b), t in table.items()]
            out.append(_doc(ms))
    return rules, dflt


PAIR_LEVELS = [1.0, 1.6, 0.8, 1.2, 0.9, 1.3, 1.05, 0.85]


# ------------------------------- the libraries' readers, written here (not the exporter's)


def read_ompi_rules(text: str) -> dict[int, list[tuple[int, list[tuple[int, int, int, int]]]]]:
    """An independent reader with Open MPI's tokenizer semantics (fscanf %li; anything else
    skipped a character at a time; '#' skips to the end of the line)."""
    nums: list[int] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        nums += [int(x, 0) for x in re.findall(r"[-+]?(?:0[xX][0-9a-fA-F]+|\d+)", line)]
    it = iter(nums)
    out: dict[int, list[tuple[int, list[tuple[int, int, int, int]]]]] = {}
    for _ in range(next(it)):
        cid, ncs = next(it), next(it)
        coms = []
        for _ in range(ncs):
            cs, nms = next(it), next(it)
            msgs = [(next(it), next(it), next(it), next(it)) for _ in range(nms)]
            assert msgs[0][0] == 0, "Open MPI refuses a first message rule above 0 bytes"
            coms.append((cs, msgs))
        out[cid] = coms
    assert next(it, None) is None
    return out


def ompi_pick(rules: dict[int, Any], cid: int, comm: int, msg: int) -> int:
    """Open MPI's look-up: the largest comm size <= comm (else the first), then the largest
    message size <= msg."""
    coms = rules[cid]
    best = coms[0]
    for c in coms:
        if c[0] > comm:
            break
        best = c
    alg = best[1][0][1]
    for ms, a, _, _ in best[1]:
        if ms > msg:
            break
        alg = a
    return alg


def csel(tree: dict[str, Any], coll: str, size: int, avg: int, total: int) -> str:
    """An independent walk of MPICH's selection tree for an intra-communicator on one node
    (comm_hierarchy any, not threaded): the first key of each object that holds."""
    node = tree[f"collective={coll}"]["comm_type=intra"]
    while True:
        for k, v in node.items():
            if k.startswith("algorithm="):
                return k[len("algorithm="):]
            m = re.match(r"(comm_size|avg_msg_size|total_msg_size)(<=|<|=)(\w+)$", k)
            if m:
                x = {"comm_size": size, "avg_msg_size": avg, "total_msg_size": total}[m.group(1)]
                op, val = m.group(2), m.group(3)
                ok = (val == "any" or (val == "pow2" and size & (size - 1) == 0)
                      or (op == "<=" and val.isdigit() and x <= int(val))
                      or (op == "<" and val.isdigit() and x < int(val)))
            else:
                ok = k in ("comm_hierarchy=any", "is_commutative=yes", "is_op_built_in=yes",
                           "count=any", "is_sendbuf_inplace=no", "is_multi_threaded=no")
            if ok:
                node = v
                break
        else:
            raise AssertionError(f"no branch holds in {list(node)}")
