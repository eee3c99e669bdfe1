"""Reading `mpilab.results/1` files: load, validate, merge.

Every problem is raised as one-line `MpilabError` naming the file, the line where the
offending value starts (when it can be located) and the JSON path of the problem, e.g.
``run.json:42: measurements[3].stats.mean: expected a number``.
Unknown keys are ignored, as the schema requires; the whole document stays available in
`Results.raw` and each measurement's own object in `Measurement.raw`.

The pieces, one concern each: mpilab.results_model (the typed view), mpilab.strict_json
(strict JSON and located errors), mpilab.results_check (the schema and the checks across
fields); this module puts them together.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from mpilab import plausible, samples_file, schemacheck
from mpilab.errors import MpilabError
from mpilab.results_check import loggp, measurements, models, schema_check
from mpilab.results_model import SCHEMA, Measurement, Results, reindex
from mpilab.strict_json import Where, read_json, read_text, strict_json
from mpilab.strict_json import locate as _locate


def parse(text: str, name: str, samples: str | os.PathLike[str] | None = None) -> Results:
    """Validate the text of a results file; `name` is used in error messages. A file in
    the compact form gets its samples back from the archive it names, beside `name` (or
    from `samples`: the archive under another name; mpilab.samples_file)."""
    doc = strict_json(text, name)
    w = Where(name, text)
    if not isinstance(doc, dict):
        raise MpilabError(f"{name}:1: expected a JSON object at the top level")
    if "schema" not in doc:
        raise MpilabError(f"{name}: schema is missing, expected '{SCHEMA}'")
    if doc["schema"] != SCHEMA:
        line = _locate(text, ("schema",))
        where = f"{name}:{line}" if line else name
        got = schemacheck.short(doc["schema"])
        raise MpilabError(f"{where}: schema is {got}, expected '{SCHEMA}'")
    try:
        schema_check(w, doc)
    except RecursionError:
        raise MpilabError(f"{name}: nested too deeply to validate") from None
    for path, why in plausible.problems(doc):  # values that cannot all be true at once
        raise w.fail(path, why)
    # a compact file's samples: numbers or null by construction (float32 arrays), checked
    # against their measurements' counts below
    samples_file.attach(doc, name, samples)
    prov = doc["provenance"]
    nranks = prov.get("ranks")
    meas, mats = measurements(w, doc["measurements"], name, nranks)
    hockney, preds = models(w, doc.get("models"), nranks)
    lg_pairs, lg_preds = loggp(w, doc.get("models"), nranks)
    return Results(path=name, provenance=prov, measurements=meas, hockney=hockney,
                   predictions=preds, raw=doc, sources=[name], loggp=lg_pairs,
                   loggp_predictions=lg_preds, pair_matrices=mats)


# A results file of a large campaign (every sample of thousands of measurements) stays
# far below this; anything larger is refused rather than read into memory.
MAX_RESULTS_BYTES = 512 << 20


def load(path: str | os.PathLike[str], samples: str | os.PathLike[str] | None = None) -> Results:
    """Load and validate one results file (with its samples archive, if it names one;
    `samples`: read the archive from that file instead). Raises MpilabError (one line) on
    any problem. Only regular files are read (a FIFO or a device is refused, never opened)."""
    name = str(path)
    text = read_text(path, "results file", MAX_RESULTS_BYTES)
    if not text.strip():
        raise MpilabError(f"{name}: empty file, expected a results file")
    try:
        return parse(text, name, samples)
    except MemoryError:
        raise MpilabError(f"{name}: out of memory while reading it") from None


def read_raw(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The document of a results file as it is (no typed view, no schema): the strict
    reader's rules and one-line errors. For callers that have validated it with load()."""
    doc, _ = read_json(path, "results file", MAX_RESULTS_BYTES)
    if not isinstance(doc, dict):
        raise MpilabError(f"{path}: not a JSON object, expected a results file")
    return doc


def merge(results: Sequence[Results] | Iterable[Results]) -> Results:
    """Combine several results into one view (e.g. for `compare`). Measurements keep
    their `source`; the first file's provenance is the main one and every file's
    provenance is listed under provenance['runs']. Models are concatenated."""
    items = list(results)
    if not items:
        raise MpilabError("merge: no results given")
    first = items[0]
    prov = dict(first.provenance)
    prov["runs"] = [dict(r.provenance, source=r.path) for r in items]
    sizes = [r.provenance.get("ranks") for r in items]
    if all(isinstance(n, int) for n in sizes):
        prov["ranks"] = max(sizes)  # the merged view spans the largest run
    meas: list[Measurement] = []
    raw_meas: list[dict[str, Any]] = []
    for r in items:
        for m in r.measurements:
            meas.append(reindex(m, len(meas)))
            raw_meas.append(m.raw)
    hockney = [p for r in items for p in r.hockney]
    preds = [p for r in items for p in r.predictions]
    raw = {"schema": SCHEMA, "provenance": prov, "measurements": raw_meas}
    models: dict[str, Any] = {}
    hp = [x for r in items for x in ((r.raw.get("models") or {}).get("hockney") or {})
          .get("pairs", [])]
    pr = [x for r in items for x in (r.raw.get("models") or {}).get("predictions") or []]
    lgp = [x for r in items for x in ((r.raw.get("models") or {}).get("loggp") or {})
           .get("pairs", [])]
    lgr = [x for r in items for x in ((r.raw.get("models") or {}).get("loggp") or {})
           .get("predictions", [])]
    if hp:
        models["hockney"] = {"pairs": hp}
    if pr:
        models["predictions"] = pr
    if lgp or lgr:
        models["loggp"] = {"pairs": lgp, "predictions": lgr}
    if models:
        raw["models"] = models
    return Results(path="+".join(r.path for r in items), provenance=prov, measurements=meas,
                   hockney=hockney, predictions=preds, raw=raw,
                   sources=[s for r in items for s in r.sources],
                   loggp=[p for r in items for p in r.loggp],
                   loggp_predictions=[p for r in items for p in r.loggp_predictions],
                   pair_matrices=[p for r in items for p in r.pair_matrices])
