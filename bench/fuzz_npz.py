"""The `.npz` samples archive's reader for bench/fuzz_readers.py: seeds, mutations, readers.

A results file in the compact form (mpilab.samples_file) names an archive beside it by
name, measurement count, sample count and sha256. One fuzz input is the pair: the results
file's JSON, the separator SEP, then the archive's bytes. The reader writes both files,
sets the reference's sha256 to the archive it was given (so every input reaches the
archive's parser, not only the hash check) and reads the pair as mpilab's commands do:
`results.load` (report, diff, history: the typed view), the streaming reader of large
results files (`report`), the raw document with its samples back (`tune choose`, `diff`).

Mutations: of the arrays (one left out, renamed to another kind, another measurement or a
name of none, another dtype: float64, int32, strings, objects; 2-D or 0-d, empty or longer,
infinite, NaN, huge or negative pair counts, an array added), written compressed or not,
the reference's `samples` and `measurements` then made to agree or not; of the zip (a
member duplicated, a folder, a path with `..`, a member that is no `.npy`, a forged `.npy`
header: a shape of 2**40 over a few bytes, Fortran order, format 3.0, a header that is no
dict, data cut short); of the bytes (the text mutations of the other readers).
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import test_helpers
from hypothesis import strategies as st

SEP = b"\n--npz--\n"
NAME = "r.samples.npz"  # the fuzzed file; the results file beside it is r.json


def seeds() -> list[bytes]:
    """Compact pairs written by mpilab's own writer: a small run, a run with a pair matrix
    (a null pair's samples), a run whose measurements have validity flags."""
    import tempfile

    test_helpers()  # conftest and test_samples_file: the writer's own test documents
    from conftest import make_results
    from mpilab import samples_file
    from test_samples_file import _pair_matrix_doc

    flagged = _pair_matrix_doc()
    flagged["measurements"][1]["valid"] = [True] * len(flagged["measurements"][1]["samples"])
    out = []
    with tempfile.TemporaryDirectory(prefix="mpilab-fuzz-npz-") as tmp:
        d = Path(tmp)
        for doc in (make_results(ranks=2, sizes=(0, 1024)), _pair_matrix_doc(), flagged):
            samples_file.write_compact(doc, d / "r.json", d / NAME)
            out.append((d / "r.json").read_bytes() + SEP + (d / NAME).read_bytes())
    return out


def split(raw: bytes) -> tuple[bytes, bytes]:
    head, _, npz = raw.partition(SEP)
    return head, npz


def _arrays(npz: bytes) -> dict[str, Any]:
    import numpy as np

    with np.load(io.BytesIO(npz), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _array_value(data: st.DataObject, a: Any) -> Any:
    import numpy as np

    how = data.draw(st.sampled_from([
        "float64", "int32", "strings", "objects", "2-D", "0-d", "empty", "longer", "shorter",
        "inf", "nan", "huge", "negative", "bool"]), "array damage")
    n = int(a.size)
    if how == "float64":
        return a.astype(np.float64)
    if how == "int32":
        return a.astype(np.int32)
    if how == "strings":
        return np.array(["x"] * max(n, 1))
    if how == "objects":
        return np.array([{"a": 1}] * max(n, 1), dtype=object)
    if how == "2-D":
        return np.zeros((2, max(n, 1)), dtype=a.dtype)
    if how == "0-d":
        return np.array(a.flat[0] if n else 0, dtype=a.dtype)
    if how == "empty":
        return a[:0]
    if how == "longer":
        return np.concatenate([a, a[:1] if n else np.zeros(1, dtype=a.dtype)] * 3)
    if how == "shorter":
        return a[:max(n - 1, 0)]
    if how == "bool":
        return np.ones(max(n, 1), dtype=np.bool_)
    fill = {"inf": np.inf, "nan": np.nan, "huge": 1e30, "negative": -1.0}[how]
    if a.dtype == np.int64:  # a pair-count array: counts out of range
        fill = {"inf": 2**62, "nan": 0, "huge": 10**12, "negative": -7}[how]
    out = a.copy()
    if n:
        out.flat[data.draw(st.integers(0, n - 1), "at")] = fill
    return out


def _mutate_arrays(data: st.DataObject, head: bytes, npz: bytes) -> tuple[bytes, bytes]:
    """Arrays damaged, written by numpy; the reference's counts then agree or not."""
    import numpy as np

    arrays = _arrays(npz)
    for _ in range(data.draw(st.integers(1, 3), "mutations")):
        names = sorted(arrays)
        op = data.draw(st.sampled_from(["drop", "rename", "value", "value", "add"]), "op")
        name = names[data.draw(st.integers(0, len(names) - 1), "array")] if names else ""
        if op == "add" or not name:
            new = data.draw(st.sampled_from(["s", "v", "p", "pn", "x", "s-1", "s99",
                                             "s0/../s"]), "kind")
            k = data.draw(st.integers(0, 60), "measurement")
            arrays[f"{new}{k}"] = np.zeros(data.draw(st.integers(0, 5), "n"),
                                           dtype=np.float32)
        elif op == "drop":
            del arrays[name]
        elif op == "rename":
            to = data.draw(st.sampled_from(["s", "v", "p", "pn"]), "kind") + str(
                data.draw(st.integers(0, 60), "measurement"))
            arrays[to] = arrays.pop(name)
        else:
            try:
                arrays[name] = _array_value(data, arrays[name])
            except (ValueError, TypeError, IndexError):  # an earlier damage left no
                pass  # numbers to convert, or a 0-d array that cannot be sliced
    buf = io.BytesIO()
    save = np.savez_compressed if data.draw(st.booleans(), "compressed") else np.savez
    try:
        save(buf, **arrays)
    except (ValueError, TypeError):  # a name numpy will not write: the arrays as they were
        return head, npz
    if data.draw(st.booleans(), "agree"):
        doc = json.loads(head)
        total = sum(int(a.size) for k, a in arrays.items()
                    if k[:1] in "sp" and not k.startswith("pn"))
        doc["samples_file"]["samples"] = total
        head = json.dumps(doc, indent=1).encode()
    return head, buf.getvalue()


def _npy(header: str, payload: bytes, version: tuple[int, int] = (1, 0)) -> bytes:
    h = header.encode("latin-1" if version < (3, 0) else "utf-8")
    pad = 64 - (10 + len(h) + 1) % 64
    h += b" " * pad + b"\n"
    size = struct.pack("<H", len(h)) if version == (1, 0) else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes(version) + size + h + payload


FORGED = {
    "a shape of 2**40 over 8 bytes": lambda: _npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", b"\0" * 8),
    "Fortran order": lambda: _npy(
        "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", b"\0" * 8),
    "format 3.0": lambda: _npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", b"\0" * 8, (3, 0)),
    "format 2.0": lambda: _npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", b"\0" * 8, (2, 0)),
    "a header that is no dict": lambda: _npy("[1, 2, 3]", b""),
    "a header of a call": lambda: _npy("__import__('os').getcwd()", b""),
    "a header cut short": lambda: _npy("{'descr': '<f4', ", b"")[:20],
    "big-endian samples": lambda: _npy(
        "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", b"\0" * 8),
    "a negative shape": lambda: _npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", b""),
    "data cut short": lambda: _npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }", b"\0" * 10),
    "a structured dtype": lambda: _npy(
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", b"\0" * 8),
    "no magic": lambda: b"just text",
}


def _mutate_zip(data: st.DataObject, head: bytes, npz: bytes) -> tuple[bytes, bytes]:
    """Members of the zip duplicated, renamed, replaced by a forged `.npy`."""
    with zipfile.ZipFile(io.BytesIO(npz)) as z:
        members = [(i.filename, z.read(i)) for i in z.infolist()]
    for _ in range(data.draw(st.integers(1, 2), "mutations")):
        k = data.draw(st.integers(0, max(len(members) - 1, 0)), "member")
        op = data.draw(st.sampled_from(["duplicate", "rename", "forge", "forge", "folder"]),
                       "op")
        if not members:
            op = "forge"
        if op == "duplicate":
            members.append(members[k])
        elif op == "rename":
            to = data.draw(st.sampled_from(["../s0.npy", "/s0.npy", "s0", "s0.npy/x.npy",
                                            "S0.npy", "s00.npy", "s1.npy ", "s\u0661.npy"]),
                           "name")
            members[k] = (to, members[k][1])
        elif op == "folder":
            members.append(("s0.npy/", b""))
        else:
            how = data.draw(st.sampled_from(sorted(FORGED)), "forged")
            name = members[k][0] if members else "s0.npy"
            members[k:k + 1] = [(name, FORGED[how]())]
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if data.draw(st.booleans(), "deflated") else \
        zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", method) as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a duplicated member is the point
        for name, body in members:
            z.writestr(name, body)
    return head, buf.getvalue()


def mutate(data: st.DataObject, raw: bytes,
           text: Callable[[st.DataObject, bytes], bytes]) -> bytes:
    """One mutated input from a seed; `text` is fuzz_readers' byte mutation."""
    head, npz = split(raw)
    how = data.draw(st.sampled_from(["arrays", "arrays", "zip", "bytes", "reference"]),
                    "npz")
    if how == "arrays":
        head, npz = _mutate_arrays(data, head, npz)
    elif how == "zip":
        head, npz = _mutate_zip(data, head, npz)
    elif how == "bytes":
        npz = text(data, npz)
    else:  # the reference's counts and names against an intact archive
        doc = json.loads(head)
        key = data.draw(st.sampled_from(["samples", "measurements", "path", "format",
                                         "dtype"]), "key")
        doc["samples_file"][key] = data.draw(st.sampled_from(
            [0, -1, 2**63, 1e300, "x", None, [], "r.samples.npz", "../r.samples.npz",
             "npz"]), "value")
        head = json.dumps(doc, indent=1).encode()
    return head + SEP + npz


def read(p: Path) -> Any:
    """The pair as mpilab reads it: p is the archive, r.json beside it the results file
    (the reference's sha256 set to p's). A refusal naming the results file is reported as
    naming p (fuzz_readers' invariant: one line starting with the input's name)."""
    from mpilab import results
    from mpilab.errors import MpilabError
    from mpilab.report import stream
    from mpilab.tune import cli as tune_cli

    head, npz = split(p.read_bytes())
    p.write_bytes(npz)
    js = p.with_name("r.json")
    try:
        doc = json.loads(head)
        ref = doc.get("samples_file") if isinstance(doc, dict) else None
        if isinstance(ref, dict):
            ref["sha256"] = hashlib.sha256(npz).hexdigest()
        js.write_text(json.dumps(doc, indent=1))
    except (ValueError, UnicodeDecodeError):
        js.write_bytes(head)
    try:
        out = [results.load(js), stream.load_large(js)]
        out.append(tune_cli._load_docs([str(js)]))  # noqa: SLF001 (tune choose's reader)
        return out
    except MpilabError as e:
        raise MpilabError(str(e).replace(str(js), str(p), 1)) from None
