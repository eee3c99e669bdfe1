"""Rewriting a results file in the compact form (mpilab.samples_file) as a stream: the
runner's file is read one measurement at a time (mpilab.report.stream.walk_measurements),
each measurement's samples go straight into float32 arrays, so the memory it takes is the
summaries and the compact samples, not the file's millions of JSON numbers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpilab import samples_file
from mpilab.report.stream import NotPlain, walk_measurements
from mpilab.results import read_raw


def compact_file(src: Path, json_out: Path, npz_out: Path, final_npz_name: str,
                 extra: dict[str, Any] | None = None,
                 transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> int:
    """Write src (a results file in the full form) as json_out plus its archive npz_out
    (named final_npz_name in json_out), with the top-level keys of `extra` added and each
    measurement passed through `transform` first. Returns the number of samples moved. A
    file the stream walker does not read plainly is read whole (the strict reader,
    results.read_raw), with the same
    result."""
    arrays: dict[str, Any] = {}

    def each(k: int, m: dict[str, Any]) -> dict[str, Any]:
        if transform is not None:
            m = transform(m)
        samples_file.split_one(k, m, arrays)
        return m

    try:
        doc = walk_measurements(src, each)
    except NotPlain:
        arrays.clear()
        doc = read_raw(src)
        if transform is not None and isinstance(doc.get("measurements"), list):
            doc["measurements"] = [transform(m) if isinstance(m, dict) else m
                                   for m in doc["measurements"]]
        arrays = samples_file.split(doc)
    doc.update(extra or {})
    return samples_file.write_split(doc, arrays, json_out, npz_out, final_npz_name)
