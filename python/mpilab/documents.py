"""Reading the JSON documents mpilab writes for itself (event logs, state files), each
kind checked at load against its one JSON Schema in python/mpilab/schemas/: a regular
file only (a FIFO, device or directory is refused, never opened), UTF-8, strict JSON
numbers (no NaN or Infinity), bounded nesting, and every problem one MpilabError line
naming the file, the line and the JSON path (``faults.jsonl:3: time: expected a number``).
"""

from __future__ import annotations

import os
from typing import Any

from mpilab import schemacheck
from mpilab.errors import MpilabError
from mpilab.fsutil import read_regular
from mpilab.strict_json import Where, strict_json

# An event log of a long run (one record per probe and per state change) stays far below this
EVENT_LOG_LIMIT = 256 << 20
EVENTS_SCHEMA = "events-1.schema.json"


def _text(path: str | os.PathLike[str], what: str, limit: int) -> str:
    name = os.fspath(path)
    data = read_regular(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise MpilabError(f"{name}:{line}: not UTF-8 text") from None


def check(name: str, text: str, doc: Any, schema: str) -> None:
    """Validate `doc` (parsed from `text` of file `name`) against schemas/`schema`; one
    line naming file, line and JSON path on the first violation."""
    try:
        err = schemacheck.first_error(schema, doc)
    except RecursionError:
        raise MpilabError(f"{name}: nested too deeply") from None
    if err is not None:
        raise Where(name, text).fail(*err)


def load(path: str | os.PathLike[str], what: str, schema: str, limit: int = 64 << 20) -> Any:
    """The JSON document in file `path` (a `what`, e.g. "testbed state") after checking it
    against schemas/`schema`."""
    name = os.fspath(path)
    text = _text(path, what, limit)
    doc = strict_json(text, name)
    check(name, text, doc, schema)
    return doc


def load_lines(path: str | os.PathLike[str], what: str, schema: str = EVENTS_SCHEMA,
               limit: int = EVENT_LOG_LIMIT, partial_last: bool = False) -> list[dict[str, Any]]:
    """The records of a JSON-lines file, each checked against schemas/`schema`. Blank
    lines are skipped. With `partial_last`, a last line without its newline (a record being
    written) is left out instead of refused."""
    name = os.fspath(path)
    text = _text(path, what, limit)
    lines = text.split("\n")
    if partial_last and lines and lines[-1]:
        lines[-1] = ""
    out: list[dict[str, Any]] = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = strict_json(line, name)
            check(name, line, rec, schema)
        except MpilabError as e:
            msg = str(e)
            for pre in (f"{name}:1: ", f"{name}: "):
                if msg.startswith(pre):
                    msg = msg[len(pre):]
                    break
            raise MpilabError(f"{name}:{no}: {msg}") from None
        out.append(rec)
    return out

