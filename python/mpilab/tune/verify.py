"""Proof, without timing, that an exported file is read and its rules fire: mpilab-bench
--probe runs each tuned collective once per measured size (1) with the exported file, (2)
with the chosen algorithm forced, (3) with the library's default, and the library itself
names the algorithm each call ran:

* Open MPI: libmpilab-collaudit.so (LD_AUDIT) logs every call from coll_tuned into libmpi's
  ompi_coll_base_<coll>_intra_<algorithm> (Debian's Open MPI 4.1 is built without the debug
  output that would print the choice);
* MPICH: --probe-skew gives counts one byte apart, and MPICH's error stack names the
  algorithm function (MPIR_Bcast_intra_binomial(...): ...) that found the mismatch.

A cell is proven when (1) ran the same algorithm as (2); it shows the file took effect when
that algorithm differs from (3)."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mpilab import launch
from mpilab.errors import MpilabError
from mpilab.tools import REPO, find_tool
from mpilab.tune import sweep
from mpilab.tune.choose import DEFAULT

_PROBE = re.compile(r"^mpilab-probe: rank (\d+) (begin|end) (\w+):(\w+) (\d+)(.*)$")
_AUDIT = re.compile(r"^mpilab-audit: rank \S+ ompi_coll_base_(\w+?)_intra_(\w+)$")
_MPICH = re.compile(r"MPIR_([A-Z][a-z_]+?)_(intra|allcomm)_(\w+?)\(")
_HELPERS = ("generic",)


def audit_library() -> Path:
    for d in (Path(find_tool("mpilab-bench")).parent.parent / "lib", REPO / "build" / "lib"):
        p = d / "libmpilab-collaudit.so"
        if p.is_file():
            return p
    raise MpilabError("libmpilab-collaudit.so not found (build it: scripts/build)")


def parse_log(text: str, mpi: str) -> dict[tuple[str, str, int], str]:
    """(op, impl, bytes) -> the algorithm the library ran, from one rank's probe log."""
    out: dict[tuple[str, str, int], str] = {}
    cur: tuple[str, str, int] | None = None
    for line in text.splitlines():
        m = _PROBE.match(line)
        if m:
            key = (m.group(3), m.group(4), int(m.group(5)))
            if m.group(2) == "begin":
                cur = key
            else:
                if mpi == "mpich":
                    frames = [f for f in _MPICH.findall(m.group(6))
                              if f[0].lower() == key[0] and f[1:] != ("allcomm", "auto")]
                    if frames:
                        out[key] = f"{frames[-1][1]}_{frames[-1][2]}"
                cur = None
            continue
        a = _AUDIT.match(line)
        if a and cur is not None and cur not in out and a.group(1) == cur[0] \
                and a.group(2) not in _HELPERS:
            out[cur] = a.group(2)
    return out


def probe(np: int, ops: list[str], sizes: list[int], mpi: str, env_file: str | None,
          timeout: float = 300.0) -> dict[tuple[str, str, int], str]:
    """One probe run; the algorithms seen, merged over the ranks (rank 0 first)."""
    tmp = Path(tempfile.mkdtemp(prefix="mpilab-probe-"))
    try:
        extra: list[str] = []
        args = ["--mpi-algorithms", "--ops", ",".join(ops), "--sizes",
                ",".join(map(str, sizes)), "--quiet"]
        if mpi == "openmpi":
            extra += launch.rank_env_args(mpi, {"LD_AUDIT": audit_library(),
                                                "MPILAB_PROBE_LOG": str(tmp)})
            if env_file:
                extra += ["--mca", "coll_tuned_dynamic_rules_filename", env_file]
            args.append("--probe")
        else:
            env = {"MPILAB_PROBE_LOG": str(tmp)}
            if env_file:
                env["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] = env_file
            extra += launch.rank_env_args(mpi, env)
            args.append("--probe-skew")
        rc = sweep._launch(np, args, mpi, timeout, tmp / "launch.log", extra)
        seen: dict[tuple[str, str, int], str] = {}
        for r in range(np):
            f = tmp / f"probe.{r}.log"
            if f.is_file():
                for k, v in parse_log(f.read_text(encoding="utf-8", errors="replace"),
                                      mpi).items():
                    seen.setdefault(k, v)
        if rc != 0 and not seen:
            log = (tmp / "launch.log").read_text(errors="replace").strip().splitlines()
            raise MpilabError(f"probe run failed (exit {rc}): {log[-1] if log else 'no output'}")
        return seen
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def verify(choice: dict[str, Any], np: int, mpi: str, file: str) -> list[dict[str, Any]]:
    cells = [c for c in choice["cells"] if int(c["np"]) == np and c["winner"]]
    if not cells:
        raise MpilabError(f"the choice has no cell for {np} ranks")
    ops = sorted({c["op"] for c in cells})
    sizes = sorted({int(c["bytes"]) for c in cells})
    forced = sorted({f"{c['op']}:{c['winner']}" for c in cells if c["winner"] != DEFAULT})
    with_file = probe(np, [f"{o}:native" for o in ops], sizes, mpi, file)
    default = probe(np, [f"{o}:native" for o in ops], sizes, mpi, None)
    chosen = probe(np, forced, sizes, mpi, None) if forced else {}
    rows = []
    for c in cells:
        op, b, w = c["op"], int(c["bytes"]), c["winner"]
        got = with_file.get((op, "native", b))
        want = chosen.get((op, w, b)) if w != DEFAULT else default.get((op, "native", b))
        dflt = default.get((op, "native", b))
        rows.append({"op": op, "bytes": b, "winner": w, "with_file": got, "expected": want,
                     "default": dflt, "proven": got is not None and got == want,
                     "changed": got is not None and dflt is not None and got != dflt})
    return rows


def _pow2(lo: int, hi: int) -> list[int]:
    out, v = [], 1
    while v <= hi:
        if v >= lo:
            out.append(v)
        v *= 2
    return out


def ompi_default_steps(np: int, ops: list[str], algs: dict[str, dict[str, int]],
                       max_bytes: int, min_bytes: int = 4
                       ) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """Open MPI's fixed decision at np ranks as steps {(op, np): [(first size, algorithm
    number)]} in mpilab's sizes (the block for per-rank collectives), read from the library:
    the default is probed once at every power of two from min_bytes to max_bytes (every
    threshold of coll_tuned_decision_fixed.c in 4.1 is a power of two of the block or
    message), every forced algorithm at the same sizes, and the default's algorithm at a
    size is the number whose forced run called the same ompi_coll_base function there; 0
    (keep the fixed decision) where no number or more than one matches. Sizes beyond
    max_bytes get 0: the steps end with (2 x the last size probed, 0)."""
    sizes = _pow2(min_bytes, max_bytes)
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for group, at in (([o for o in ops if o != "barrier"], sizes),
                      ([o for o in ops if o == "barrier"], [0])):
        if not group:
            continue
        nat = probe(np, [f"{o}:native" for o in group], at, "openmpi", None)
        forced = probe(np, [f"{o}:{i}" for o in group for i in sorted(algs.get(o, {}))], at,
                       "openmpi", None)
        for op in group:
            steps: list[tuple[int, int]] = []
            for b in at:
                name = nat.get((op, "native", b))
                nums = {n for i, n in algs.get(op, {}).items()
                        if name is not None and forced.get((op, i, b)) == name}
                num = nums.pop() if len(nums) == 1 else 0
                if not steps or steps[-1][1] != num:
                    steps.append((b, num))
            if op != "barrier":
                steps.append((2 * at[-1], 0))
            out[(op, np)] = steps
    return out
