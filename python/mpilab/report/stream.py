"""Reading a large results file for the report as a stream (issue 26: memory grows with
what is drawn, not with the samples).

`results.load` holds the file's text, the whole parsed document and every measurement's
samples, and validates the document with jsonschema (about 90% of a 10^5-measurement
report's time and all of its memory). `load_large` reads the same file in one pass instead:

- the top-level object is walked key by key; each measurement is decoded on its own
  (json's C decoder, results' strict number rules: NaN, Infinity and out-of-range numbers
  are refused) while the file streams past, everything else is decoded whole;
- validation is the same schema (python/mpilab/schemas/results-1.schema.json, its
  references inlined as results.py does), checked by jsonschema (mpilab.schemacheck): the
  document without
  its measurements once, then each measurement on its own (the schema puts no constraint on
  the measurements array besides its items); then the checks across fields that
  results.load runs (mpilab.results_check: measurement, models, loggp), so the typed view
  is the one results.load builds;
- a point-to-point measurement keeps its statistics but not its repetitions (the run
  report draws no p2p samples; collectives keep theirs for the significance rule).

Whenever anything is not plainly valid (a decoding problem, a schema failure, a check
across fields, an unexpected layout), it hands over to `results.load`, which names the
problem in its one line with file and line; so the stream reader never accepts a file
results.load refuses, and never words an error differently.
"""

from __future__ import annotations

import codecs
import gc
import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from mpilab import plausible, results, results_check, samples_file, schemacheck
from mpilab.errors import MpilabError
from mpilab.results_model import SCHEMA, Measurement, Results
from mpilab.strict_json import NotStrict, Where, strict_decoder

CHUNK = 1 << 20
_WS = " \t\n\r"


class _Fallback(Exception):
    """Not plainly valid: results.load decides and words the error."""


# strict_json's number and key rules (NaN, Infinity, numbers beyond a double, a key twice)
_DEC = strict_decoder()
# a \uD800-\uDFFF escape: maybe a lone surrogate, which results.load refuses with its place
_SURROGATE = re.compile(r"\\[uU][dD][89a-fA-F]")


def _validators() -> tuple[Any, Any]:
    """The results schema's validators (schemacheck, jsonschema): the document without its
    measurements, and one measurement."""
    name = results_check.SCHEMA_FILE.name
    return schemacheck.validator(name), schemacheck.validator(name, "measurement")


class _Reader:
    """The file's text as a sliding buffer, decoded incrementally from UTF-8."""

    def __init__(self, f: Any) -> None:
        self.f = f
        self.dec = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf = ""
        self.pos = 0
        self.eof = False

    def more(self, size: int = CHUNK) -> bool:
        if self.eof:
            return False
        b = self.f.read(size)
        try:
            text = self.dec.decode(b, final=not b)
        except UnicodeDecodeError:
            raise _Fallback from None
        old = self.buf[self.pos:]
        self.buf = old + text
        self.pos = 0
        self.eof = not b
        if _SURROGATE.search(self.buf, max(0, len(old) - 5)):
            raise _Fallback
        return True

    def skip_ws(self) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def expect(self, ch: str) -> None:
        if self.skip_ws() != ch:
            raise _Fallback
        self.pos += 1

    def value(self) -> Any:
        """The next JSON value (read more text until it is complete)."""
        self.skip_ws()
        size = CHUNK  # doubled on every retry: a large value is decoded O(1) times
        while True:
            try:
                v, end = _DEC.raw_decode(self.buf, self.pos)
            except NotStrict:
                raise _Fallback from None
            except json.JSONDecodeError:
                if self.more(size):
                    size *= 2
                    continue
                raise _Fallback from None
            except RecursionError:
                raise _Fallback from None
            # a number at the end of the buffer may continue in the next chunk
            if end == len(self.buf) and not self.eof and self.more(size):
                size *= 2
                continue
            self.pos = end
            return v


def _slim(m: dict[str, Any], shared: dict[Any, Any]) -> dict[str, Any]:
    """The same object in less memory: keys interned (each decoded value has its own key
    strings), equal precision objects shared."""
    out = {sys.intern(k): v for k, v in m.items()}
    st = out.get("stats")
    if isinstance(st, dict):
        out["stats"] = {sys.intern(k): v for k, v in st.items()}
    pr = out.get("precision")
    if isinstance(pr, dict):
        try:
            key = tuple(sorted(pr.items()))
            out["precision"] = shared.setdefault(key, pr)
        except TypeError:  # an unhashable value: keep it as it is
            pass
    return out


def _measurements(rd: _Reader, name: str, check: Any, nranks: Any,
                  keep: list[Measurement], side: samples_file.Samples | None = None) -> None:
    """Each measurement: decoded (its repetitions back from the samples archive `side` of a
    file in the compact form), validated (schema, then results' checks across fields),
    typed; a p2p measurement's raw object loses its repetitions."""
    w = Where(name, "")
    shared: dict[Any, Any] = {}
    rd.expect("[")
    if rd.skip_ws() == "]":
        rd.pos += 1
        return
    while True:
        m = rd.value()
        if side is not None and isinstance(m, dict) and m.get("op") != "p2p":
            side.measurement(len(keep), m)
        try:
            ok = check.is_valid(m)
        except RecursionError:
            raise _Fallback from None
        if not ok:
            raise _Fallback
        m = _slim(m, shared)
        if m.get("op") == "p2p" and "samples" in m:
            # the check results_check.measurement makes on them, before they are dropped
            if "valid" in m and len(m["valid"]) != len(m["samples"]):
                raise _Fallback
            st = m.get("stats")
            if m["samples"] and isinstance(st, dict) and st.get("reps") != len(m["samples"]):
                raise _Fallback
            del m["samples"]
            m.pop("valid", None)
        keep.append(results_check.measurement(w, m, len(keep), name, nranks))
        c = rd.skip_ws()
        rd.pos += 1
        if c == "]":
            return
        if c != ",":
            raise _Fallback


def _scan(path: str) -> tuple[dict[str, Any], list[Measurement]]:
    whole, meas = _validators()
    top: dict[str, Any] = {}
    ms: list[Measurement] = []
    with open(path, "rb") as f:
        rd = _Reader(f)
        rd.expect("{")
        while True:
            if rd.skip_ws() != '"':
                raise _Fallback
            key = rd.value()
            if key in top or (key == "measurements" and "measurements" in top):
                raise _Fallback  # a repeated key: json keeps the last; results.load decides
            if key == samples_file.KEY and "measurements" in top:
                raise _Fallback  # the archive named after the measurements: results.load reads it
            rd.expect(":")
            if key == "measurements":
                prov = top.get("provenance")
                if not isinstance(prov, dict):
                    raise _Fallback  # the provenance (rank count) comes first in mpilab's files
                side = samples_file.open_for(top, path) if samples_file.KEY in top else None
                _measurements(rd, path, meas, prov.get("ranks"), ms, side)
                top[key] = []
            else:
                top[key] = rd.value()
            c = rd.skip_ws()
            rd.pos += 1
            if c == "}":
                break
            if c != ",":
                raise _Fallback
        if rd.skip_ws() != "":
            raise _Fallback  # text after the document
    if top.get("schema") != SCHEMA or "measurements" not in top:
        raise _Fallback
    try:
        ok = whole.is_valid(top)
    except RecursionError:
        raise _Fallback from None
    if not ok:
        raise _Fallback
    # values that cannot all be true at once: results.load names the first
    if next(plausible.problems({**top, "measurements": [m.raw for m in ms]}), None):
        raise _Fallback
    return top, ms


def _build(name: str, top: dict[str, Any], meas: list[Measurement]) -> Results:
    w = Where(name, "")
    prov = top["provenance"]
    nranks = prov.get("ranks")
    hockney, preds = results_check.models(w, top.get("models"), nranks)
    lg_pairs, lg_preds = results_check.loggp(w, top.get("models"), nranks)
    top["measurements"] = [m.raw for m in meas]
    return Results(path=name, provenance=prov, measurements=meas, hockney=hockney,
                   predictions=preds, raw=top, sources=[name], loggp=lg_pairs,
                   loggp_predictions=lg_preds)


def load_large(path: str | os.PathLike[str]) -> Results:
    """The results file as results.load gives it (p2p measurements without their
    repetitions), read in one pass; any problem is results.load's one line."""
    name = str(path)
    # hundreds of thousands of new containers, none of them garbage: the cyclic collector's
    # full passes over them would make the read quadratic
    gc_was = gc.isenabled()
    gc.disable()
    try:
        top, ms = _scan(name)
        return _build(name, top, ms)
    except (_Fallback, MpilabError, KeyError, TypeError, ValueError, OSError):
        pass
    finally:
        if gc_was:
            gc.enable()
    return results.load(name)  # names the problem (or, if it finds none, reads the file)


class NotPlain(Exception):
    """walk_measurements met something it does not read as a stream (the caller reads the
    file whole instead, where the problem, if any, is named)."""


def walk_measurements(path: str | os.PathLike[str],
                      each: Callable[[int, dict[str, Any]], Any]) -> dict[str, Any]:
    """The top-level object of a results file, read in one pass: each measurement is decoded
    on its own and replaced by each(k, m)'s value, so a file of millions of samples never
    holds them all. No validation (the caller validates what it writes). Raises NotPlain
    for anything but a plain object with one measurements array."""
    gc_was = gc.isenabled()
    gc.disable()
    top: dict[str, Any] = {}
    try:
        with open(path, "rb") as f:
            rd = _Reader(f)
            rd.expect("{")
            while True:
                if rd.skip_ws() != '"':
                    raise _Fallback
                key = rd.value()
                if not isinstance(key, str) or key in top:
                    raise _Fallback
                rd.expect(":")
                if key == "measurements":
                    top[key] = _walk(rd, each)
                else:
                    top[key] = rd.value()
                c = rd.skip_ws()
                rd.pos += 1
                if c == "}":
                    break
                if c != ",":
                    raise _Fallback
            if rd.skip_ws() != "":
                raise _Fallback
    except (_Fallback, OSError, ValueError) as e:
        raise NotPlain(str(e)) from None
    finally:
        if gc_was:
            gc.enable()
    if not isinstance(top.get("measurements"), list):
        raise NotPlain("no measurements array")
    return top


def _walk(rd: _Reader, each: Callable[[int, dict[str, Any]], Any]) -> list[Any]:
    out: list[Any] = []
    rd.expect("[")
    if rd.skip_ws() == "]":
        rd.pos += 1
        return out
    while True:
        m = rd.value()
        out.append(each(len(out), m) if isinstance(m, dict) else m)
        c = rd.skip_ws()
        rd.pos += 1
        if c == "]":
            return out
        if c != ",":
            raise _Fallback
