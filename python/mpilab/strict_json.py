"""Strict JSON for every mpilab input (results files, multilane documents): RFC 8259's
number rules (no NaN or Infinity, nothing beyond the range of a double), no key twice in one
object, no lone surrogate; and one-line errors that name the file, the line where the
offending value starts and its JSON path (`Where`, `located`)."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from mpilab.errors import MpilabError
from mpilab.fsutil import read_regular
from mpilab.json_locate import PathT
from mpilab.json_locate import locate as _locate

# ---------------------------------------------------------------------------------------
# locating a JSON path in the text: mpilab.json_locate (only used to put a line number on an error)

def _fmt_path(p: PathT) -> str:
    out = ""
    for k in p:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
    return out or "(top level)"


class Where:
    """Builds one-line errors that carry file, line and JSON path."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text

    def fail(self, path: PathT, msg: str) -> MpilabError:
        # point at the innermost existing value on the path
        line = None
        for n in range(len(path), -1, -1):
            line = _locate(self.text, path[:n])
            if line is not None:
                break
        where = f"{self.name}:{line}" if line is not None else self.name
        return MpilabError(f"{where}: {_fmt_path(path)}: {msg}")


def located(name: str, text: str, path: PathT, msg: str) -> MpilabError:
    """One-line error `NAME:LINE: PATH: MSG` for any JSON document read with read_json."""
    return Where(name, text).fail(path, msg)


# ---------------------------------------------------------------------------------------
# strict JSON numbers (RFC 8259): no NaN/Infinity, nothing beyond the range of a double

_DBL_MAX = 1.7976931348623157e308


class _BadNumber:
    """Stands in for a number the loader refuses; found with its path after parsing."""

    def __init__(self, token: str, why: str) -> None:
        self.token = token
        self.why = why


def _parse_float(s: str) -> float | _BadNumber:
    v = float(s)
    if not math.isfinite(v):
        return _BadNumber(s, "is outside the range of a double")
    return v


def _parse_int(s: str) -> int | _BadNumber:
    if len(s) > 310:  # also keeps int() below Python's digit limit
        return _BadNumber(s, "is outside the range of a double")
    v = int(s)
    if abs(v) > _DBL_MAX:
        return _BadNumber(s, "is outside the range of a double")
    return v


def _parse_constant(s: str) -> _BadNumber:
    return _BadNumber(s, "is not a JSON number (RFC 8259 has no NaN or Infinity)")


class _Object(dict):  # type: ignore[type-arg]
    """A JSON object that remembers a key it was given twice (json keeps the later copy
    silently; RFC 8259 says names SHOULD be unique, and a results file with two values
    for one key is ambiguous)."""

    dup: str | None = None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    o = _Object(pairs)
    if len(o) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                o.dup = k
                break
            seen.add(k)
    return o


def _bad_string(x: str) -> bool:
    """A lone surrogate (\\ud800-\\udfff escaped in the JSON): not Unicode, cannot be
    written out as UTF-8 (a report crashed on it after rendering the whole page)."""
    return any("\ud800" <= c <= "\udfff" for c in x)


def _find_bad(v: Any, path: PathT) -> tuple[PathT, _BadNumber] | None:
    stack: list[tuple[Any, PathT]] = [(v, path)]
    while stack:
        x, p = stack.pop()
        if isinstance(x, _BadNumber):
            return p, x
        if isinstance(x, str):
            if _bad_string(x):
                return p, _BadNumber("a string", "holds a lone surrogate (not Unicode text)")
            continue
        if isinstance(x, dict):
            if getattr(x, "dup", None) is not None:
                k = str(x.dup)
                return p + (k,), _BadNumber("the key", "appears twice in one object (a "
                                            "later copy would silently win)")
            for k in x:
                if _bad_string(k):
                    return p, _BadNumber("a key", "holds a lone surrogate (not Unicode text)")
            stack.extend((x[k], p + (k,)) for k in reversed(list(x)))
        elif isinstance(x, list):
            stack.extend((x[k], p + (k,)) for k in range(len(x) - 1, -1, -1))
    return None


def strict_json(text: str, name: str) -> Any:
    """The JSON document in `text` under RFC 8259's number rules: NaN, Infinity and
    numbers outside the range of a double are refused. Any problem is one MpilabError
    line naming `name` and the line. Shared by every mpilab JSON input (results files,
    multilane documents)."""
    try:
        doc = json.loads(text, parse_float=_parse_float, parse_int=_parse_int,
                         parse_constant=_parse_constant, object_pairs_hook=_object)
    except json.JSONDecodeError as e:
        msg = f"{name}:{e.lineno}: malformed JSON: {e.msg} (column {e.colno})"
        raise MpilabError(msg) from None
    except RecursionError:
        raise MpilabError(f"{name}: malformed JSON: nested too deeply") from None
    bad = _find_bad(doc, ())
    if bad is not None:
        tok = bad[1].token
        tok = tok if len(tok) <= 40 else f"{tok[:20]}...({len(tok)} characters)"
        raise Where(name, text).fail(bad[0], f"{tok} {bad[1].why}")
    return doc


def read_json(path: str | os.PathLike[str], what: str, limit: int) -> tuple[Any, str]:
    """(document, text) of a JSON file: a regular file of at most `limit` bytes, UTF-8,
    strict_json's number rules; one-line MpilabError otherwise."""
    name = str(path)
    data = read_regular(path, what, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise MpilabError(f"{name}:{line}: not UTF-8 text") from None
    return strict_json(text, name), text
