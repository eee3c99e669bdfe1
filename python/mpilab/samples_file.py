"""The compact form of a results file: summaries in the JSON, raw samples in a sidecar.

A results file in compact form keeps every measurement's statistics (`stats`, a pair
matrix's per-pair arrays, flags, launches) in its JSON and moves the repetitions
(`samples`, `valid`, a pair matrix's `samples`) into one compressed NumPy archive beside
it, named by the top-level object `samples_file` (docs/results-schema.md, "Compact form"):

    "samples_file": {"path": "results.samples.npz", "format": "npz", "dtype": "float32",
                     "measurements": 578, "samples": 1234567, "sha256": "<hex>"}

`path` is relative to the results file's folder. In the archive, measurement k's samples
are the array `s<k>` (float32 seconds, NaN for a null sample), its validity flags `v<k>`
(bool; absent when the measurement had none) and a pair matrix's samples as `p<k>` (every
pair's, concatenated in pair order) with `pn<k>` (int64: each pair's count, -1 for a pair
whose samples were null). float32 keeps 24 bits of a sample: a relative error
below 6e-8, far below any timer's resolution; the statistics in the JSON were computed by
the runner from the full values.

`attach` puts the samples back into a parsed document, so every reader (report, diff, tune)
sees the form it always read; a document without `samples_file` is left alone (the full
form, samples inline). A referenced archive that is missing leaves the summaries only, said
in one line on stderr; one that does not match its reference (another run's, truncated) is
refused in one line.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import re
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_bytes, read_regular

KEY = "samples_file"
SUFFIX = ".samples.npz"
# an archive larger than this is refused rather than read (the results file's own cap)
MAX_BYTES = 512 << 20


def sidecar_name(results_name: str) -> str:
    """The archive's file name for a results file name: r.json -> r.samples.npz."""
    stem = results_name[:-5] if results_name.endswith(".json") else results_name
    return stem + SUFFIX


def _f32(values: list[Any]) -> Any:
    import numpy as np

    return np.array([math.nan if v is None else float(v) for v in values], dtype=np.float32)


def split(doc: dict[str, Any]) -> dict[str, Any]:
    """Move every measurement's repetitions out of doc (in place) into arrays, returned by
    name (see the module docstring); doc's measurements keep their summaries."""
    arrays: dict[str, Any] = {}
    for k, m in enumerate(doc.get("measurements") or []):
        split_one(k, m, arrays)
    return arrays


def split_one(k: int, m: Any, arrays: dict[str, Any]) -> None:
    """Move measurement k's repetitions out of m (in place) into arrays."""
    import numpy as np

    if not isinstance(m, dict):
        return
    s = m.pop("samples", None)
    if isinstance(s, list):
        arrays[f"s{k}"] = _f32(s)
    v = m.pop("valid", None)
    if isinstance(v, list):
        arrays[f"v{k}"] = np.array([bool(x) for x in v], dtype=np.bool_)
    pm = m.get("pair_matrix")
    if isinstance(pm, dict) and isinstance(pm.get("samples"), list):
        per_pair = pm.pop("samples")
        arrays[f"pn{k}"] = np.array([len(ps) if isinstance(ps, list) else -1
                                     for ps in per_pair], dtype=np.int64)
        arrays[f"p{k}"] = _f32([x for ps in per_pair if isinstance(ps, list) for x in ps])


def archive_bytes(arrays: dict[str, Any]) -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def write_compact(doc: dict[str, Any], json_path: Path, npz_path: Path,
                  final_npz_name: str | None = None) -> int:
    """Split doc's samples into the archive npz_path, record it in doc as `samples_file`
    (named final_npz_name, the name it will have beside the results file; default
    npz_path's) and write doc to json_path. Both written by temporary name and rename.
    Returns the number of samples moved."""
    return write_split(doc, split(doc), json_path, npz_path, final_npz_name)


def write_split(doc: dict[str, Any], arrays: dict[str, Any], json_path: Path, npz_path: Path,
                final_npz_name: str | None = None) -> int:
    """write_compact for a document whose samples were already split into arrays."""
    import json

    data = archive_bytes(arrays)
    total = int(sum(a.size for name, a in arrays.items() if name[0] in "sp" and name[1] != "n"))
    ref = {"path": final_npz_name or npz_path.name, "format": "npz", "dtype": "float32",
           "measurements": len(doc.get("measurements") or []), "samples": total,
           "sha256": hashlib.sha256(data).hexdigest()}
    # the reference before the measurements: a streaming reader meets it first
    out: dict[str, Any] = {}
    for key, val in doc.items():
        if key == "measurements":
            out[KEY] = ref
        out[key] = val
    out.setdefault(KEY, ref)
    doc.clear()
    doc.update(out)
    atomic_write_bytes(npz_path, data)
    atomic_write_bytes(json_path, (json.dumps(doc, indent=1) + "\n").encode("utf-8"))
    return total


class Samples:
    """An opened archive: arrays by measurement index, checked against its reference."""

    def __init__(self, arrays: Any) -> None:
        self.arrays = arrays
        self.names = frozenset(arrays.files)

    def measurement(self, k: int, m: dict[str, Any]) -> None:
        """Put measurement k's repetitions back into its object m."""
        a, names = self.arrays, self.names
        if f"s{k}" in names:
            m["samples"] = [None if math.isnan(x) else x for x in a[f"s{k}"].tolist()]
        if f"v{k}" in names:
            m["valid"] = [bool(x) for x in a[f"v{k}"].tolist()]
        pm = m.get("pair_matrix")
        if isinstance(pm, dict) and f"pn{k}" in names and f"p{k}" in names:
            flat = [None if math.isnan(x) else x for x in a[f"p{k}"].tolist()]
            per_pair: list[list[float | None] | None] = []
            at = 0
            for n in a[f"pn{k}"].tolist():
                per_pair.append(None if n < 0 else flat[at:at + n])
                at += max(n, 0)
            pm["samples"] = per_pair


def open_for(doc: dict[str, Any], results_path: str | os.PathLike[str],
             override: str | os.PathLike[str] | None = None) -> Samples | None:
    """The archive doc refers to (None: doc is in the full form, or the archive is missing,
    said on stderr). `override`: read that file instead of the referenced name (a results
    file not yet renamed to its final name)."""
    ref = doc.get(KEY)
    if not isinstance(ref, dict):
        return None
    name = str(results_path)
    rel = ref.get("path")
    if not isinstance(rel, str) or not rel or os.path.isabs(rel) or ".." in Path(rel).parts:
        raise MpilabError(f"{name}: {KEY}.path: expected a file name beside the results file")
    if ref.get("format") != "npz":
        raise MpilabError(f"{name}: {KEY}.format: {ref.get('format')!r} is not 'npz'")
    side = Path(override) if override is not None else Path(name).parent / rel
    if not side.exists():
        sys.stderr.write(f"mpilab: {name}: its samples file {side} is missing; reading the "
                         "summaries only (no raw samples)\n")
        return None
    data = read_regular(side, "samples file", MAX_BYTES)
    if hashlib.sha256(data).hexdigest() != ref.get("sha256"):
        raise MpilabError(f"{side}: does not match {name} (sha256 differs from "
                          f"{KEY}.sha256: another run's file, or damaged)")
    import numpy as np

    if not data.startswith(b"PK"):  # np.load would take anything else for a pickle
        raise MpilabError(f"{side}: not a samples archive (not a zip file)")
    try:
        arrays = np.load(io.BytesIO(data), allow_pickle=False)
        nmeas = len(doc["measurements"]) if isinstance(doc.get("measurements"), list) else 0
        check_archive(side, arrays, ref, nmeas)
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as e:
        raise MpilabError(f"{side}: not a readable samples archive ({e})") from None
    return Samples(arrays)


_ARRAY_RE = re.compile(r"\A(s|v|p|pn)(\d{1,9})\.npy\Z")
_DTYPES = {"s": "float32", "p": "float32", "v": "bool", "pn": "int64"}
# samples of one archive at most (1 GiB of float32): a campaign's stay far below
MAX_SAMPLES = 1 << 28


def _headers(side: Path, z: Any, nmeas: int) -> dict[str, tuple[str, int, int]]:
    """Each array's (kind, measurement, length) from its header, before any data is
    decompressed: a name that is not a measurement's, another type or shape is refused."""
    from numpy.lib import format as npf

    out: dict[str, tuple[str, int, int]] = {}
    for member in z.zip.namelist():
        m = _ARRAY_RE.match(member)
        if not m or int(m.group(2)) >= nmeas:
            raise MpilabError(f"{side}: {member!r} is not the samples of one of the "
                              f"{nmeas} measurements")
        kind, k = m.group(1), int(m.group(2))
        with z.zip.open(member) as f:
            version = npf.read_magic(f)
            read = npf.read_array_header_1_0 if version == (1, 0) else \
                npf.read_array_header_2_0
            shape, _fortran, dtype = read(f)
        if len(shape) != 1 or dtype.name != _DTYPES[kind]:
            raise MpilabError(f"{side}: {member}: expected a list of {_DTYPES[kind]}, found "
                              f"{dtype.name} of shape {shape}")
        out[member[:-4]] = (kind, k, int(shape[0]))
    return out


def check_archive(side: Path, z: Any, ref: dict[str, Any], nmeas: int) -> None:
    """The archive holds what its reference says and what a writer of it writes: per
    measurement, samples (float32, NaN for null, no infinity), validity flags as many as
    the samples, a pair matrix's samples with per-pair counts (-1 or more) adding up to
    them; as many measurements and samples in all as the reference counts."""
    import numpy as np

    heads = _headers(side, z, nmeas)
    total = sum(n for kind, _k, n in heads.values() if kind in ("s", "p"))
    want = ref.get("samples")
    if total > MAX_SAMPLES:
        raise MpilabError(f"{side}: {total} samples, more than {MAX_SAMPLES} are refused")
    if isinstance(want, int) and not isinstance(want, bool) and want != total:
        raise MpilabError(f"{side}: holds {total} samples, {KEY}.samples says {want}")
    if isinstance(ref.get("measurements"), int) and ref["measurements"] != nmeas:
        raise MpilabError(f"{side}: {KEY}.measurements is {ref['measurements']}, the file "
                          f"has {nmeas}")
    for name, (kind, k, n) in heads.items():
        arr = z[name]  # every member decompressed here, where a damaged stream is caught
        if kind in ("s", "p") and n and bool(np.isinf(arr).any()):
            raise MpilabError(f"{side}: {name}: an infinite sample")
        if kind == "v" and f"s{k}" in heads and heads[f"s{k}"][2] != n:
            raise MpilabError(f"{side}: {name}: {n} validity flags for "
                              f"{heads[f's{k}'][2]} samples")
        if kind == "pn":
            if f"p{k}" not in heads:
                raise MpilabError(f"{side}: {name} without p{k}")
            counts = arr
            if n and int(counts.min()) < -1:
                raise MpilabError(f"{side}: {name}: a pair count below -1")
            if sum(max(0, int(x)) for x in counts.tolist()) != heads[f"p{k}"][2]:
                raise MpilabError(f"{side}: {name}: the pair counts do not add up to the "
                                  f"{heads[f'p{k}'][2]} samples of p{k}")
        if kind == "p" and f"pn{k}" not in heads:
            raise MpilabError(f"{side}: {name} without pn{k}")


def attach(doc: dict[str, Any], results_path: str | os.PathLike[str],
           override: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """doc with every measurement's repetitions back from its archive (in place; a document
    in the full form is returned unchanged)."""
    s = open_for(doc, results_path, override)
    if s is None:
        return doc
    ms = doc.get("measurements")
    if isinstance(ms, list):
        for k, m in enumerate(ms):
            if isinstance(m, dict):
                s.measurement(k, m)
    return doc
