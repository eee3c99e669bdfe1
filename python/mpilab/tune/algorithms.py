"""What the MPI library offers to force, read from the library itself (never a list kept
here): Open MPI's coll_tuned algorithms from `ompi_info --param coll tuned --level 9
--parsable` (the enumerators of coll_tuned_<coll>_algorithm, their numbers being what a
rules file names), MPICH's from the installed library: the collective selection JSON it
was built with (its default decision, which an exported file must keep for everything it
does not tune) and the algorithm containers its JSON reader accepts ("algorithm=MPIR_..."
strings in libmpich). mpilab-bench reads the same lists through MPI_T (--mpi-algorithms);
the impl names match: ompi_<name> and mpich_<name>, non-word characters as "_"."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from mpilab.errors import MpilabError

#: the collectives mpilab measures natively and can therefore tune
COLLS = ("scatter", "gather", "bcast", "reduce", "allreduce", "allgather", "alltoall", "barrier")
_ENUM_RE = re.compile(r"^mca:coll:tuned:param:coll_tuned_(\w+)_algorithm"
                      r":enumerator:value:(\d+):(.+)$")


def word(name: str) -> str:
    return re.sub(r"\W", "_", name)


def parse_ompi_info(text: str) -> dict[str, dict[str, int]]:
    """{coll: {impl: number}} from ompi_info's parsable output (impl = ompi_<name>; 0,
    "ignore", is the default decision and left out)."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        m = _ENUM_RE.match(line.strip())
        if not m:
            continue
        coll, num, name = m.group(1), int(m.group(2)), m.group(3)
        if num == 0:
            continue
        out.setdefault(coll, {})[f"ompi_{word(name)}"] = num
    return out


@lru_cache(maxsize=1)
def ompi_algorithms() -> dict[str, dict[str, int]]:
    exe = shutil.which("ompi_info")
    if not exe:
        raise MpilabError("ompi_info not found: cannot read Open MPI's algorithm numbers")
    p = subprocess.run([exe, "--param", "coll", "tuned", "--level", "9", "--parsable"],
                       capture_output=True, text=True, timeout=120, check=False)
    algs = parse_ompi_info(p.stdout)
    if p.returncode != 0 or not algs:
        raise MpilabError("ompi_info --param coll tuned --level 9 --parsable listed no "
                          "coll_tuned algorithms (is Open MPI's tuned component installed?)")
    return algs


def mpich_library(program: str) -> Path:
    """The libmpich a program is linked with (ldd)."""
    ldd = shutil.which("ldd")
    if not ldd:
        raise MpilabError("ldd not found: cannot locate the MPICH library")
    p = subprocess.run([ldd, program], capture_output=True, text=True, timeout=60, check=False)
    for line in p.stdout.splitlines():
        m = re.match(r"\s*(libmpich[^\s]*|libmpi\.so\.12)\s+=>\s+(\S+)", line)
        if m:
            return Path(m.group(2))
    raise MpilabError(f"{program}: not linked with MPICH (ldd names no libmpich)")


def _balanced(data: bytes, start: int) -> bytes:
    depth = 0
    for k in range(start, len(data)):
        c = data[k]
        if c == 0x7B:
            depth += 1
        elif c == 0x7D:
            depth -= 1
            if depth == 0:
                return data[start:k + 1]
        elif c == 0:
            break
    raise MpilabError("the MPICH library's selection JSON is not terminated")


@lru_cache(maxsize=4)
def mpich_selection(lib: str) -> tuple[dict, frozenset[str]]:  # type: ignore[type-arg]
    """(the default MPIR-level selection tree, the algorithm containers the reader accepts)
    of the MPICH library at `lib`."""
    try:
        data = Path(lib).read_bytes()
    except OSError as e:
        raise MpilabError(f"{lib}: cannot read: {e.strerror}") from None
    names = frozenset(m.decode() for m in re.findall(rb"algorithm=(MPIR_[A-Za-z0-9_]+)", data))
    start = data.find(b'{"collective=')
    tree = None
    while start >= 0:
        blob = _balanced(data, start)
        try:
            cand = json.loads(blob)
        except ValueError:
            cand = None
        # the MPIR-level tree (the device levels have their own, with compositions)
        if isinstance(cand, dict) and "MPIR_" in blob.decode(errors="replace") \
                and "composition=" not in blob.decode(errors="replace"):
            tree = cand
            break
        start = data.find(b'{"collective=', start + 1)
    if tree is None or not names:
        raise MpilabError(f"{lib}: no collective selection JSON found in the MPICH library "
                          "(give its default with --mpich-default FILE)")
    return tree, names


# MPICH algorithms that are only correct for MPI_IN_PLACE calls ("Restrictions: Only for
# MPI_IN_PLACE" in MPICH's own source). Forced through MPIR_CVAR_<COLL>_INTRA_ALGORITHM on a
# call that is not in place, MPICH's fallback check runs its own choice instead, so the
# sweep measured something else under this name; named in a selection file, the algorithm
# runs and delivers wrong data (alltoall 16 KiB on the 2 x 4 grid). Neither
# swept nor exported.
MPICH_IN_PLACE_ONLY = frozenset({("alltoall", "mpich_pairwise_sendrecv_replace")})


def mpich_container(coll: str, impl: str) -> str:
    """The JSON container of an mpich_<name> impl: MPIR_<Coll>_intra_<name>, nb being
    MPIR_<Coll>_allcomm_nb."""
    name = impl[len("mpich_"):] if impl.startswith("mpich_") else impl
    kind = "allcomm" if name == "nb" else "intra"
    return f"MPIR_{coll.capitalize()}_{kind}_{name}"
