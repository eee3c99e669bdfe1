"""Strict JSON for every mpilab input (results files, multilane documents): RFC 8259's
number rules (no NaN or Infinity, nothing beyond the range of a double), no key twice in one
object, no lone surrogate; and one-line errors that name the file, the line where the
offending value starts and its JSON path (`Where`, `located`)."""

from __future__ import annotations

import json
import math
import os
import re
from json.decoder import scanstring
from typing import Any

from mpilab.errors import MpilabError
from mpilab.fsutil import read_regular

PathT = tuple[str | int, ...]

# ---------------------------------------------------------------------------------------
# locating a JSON path in the text (only used to put a line number on an error)

_WS = re.compile(r"[ \t\n\r]*")
_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def locate(text: str, target: PathT) -> int | None:
    """Line (1-based) where the value at `target` starts, or None if not found."""
    pos = 0

    def ws() -> None:
        nonlocal pos
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]

    def skip_value() -> None:
        nonlocal pos
        ws()
        c = text[pos]
        if c == "{":
            pos += 1
            ws()
            if text[pos] == "}":
                pos += 1
                return
            while True:
                ws()
                _, pos = scanstring(text, pos + 1)
                ws()
                pos += 1  # ':'
                skip_value()
                ws()
                if text[pos] == ",":
                    pos += 1
                    continue
                pos += 1  # '}'
                return
        if c == "[":
            pos += 1
            ws()
            if text[pos] == "]":
                pos += 1
                return
            while True:
                skip_value()
                ws()
                if text[pos] == ",":
                    pos += 1
                    continue
                pos += 1
                return
        if c == '"':
            _, pos = scanstring(text, pos + 1)
            return
        for lit in ("true", "false", "null", "NaN", "Infinity", "-Infinity"):
            if text.startswith(lit, pos):
                pos += len(lit)
                return
        m = _NUM.match(text, pos)
        if not m:
            raise ValueError("bad token")
        pos = m.end()

    def find(depth: int) -> int | None:
        nonlocal pos
        ws()
        if depth == len(target):
            return pos
        key = target[depth]
        c = text[pos]
        if c == "{" and isinstance(key, str):
            pos += 1
            ws()
            if text[pos] == "}":
                return None
            while True:
                ws()
                k, pos = scanstring(text, pos + 1)
                ws()
                pos += 1
                if k == key:
                    return find(depth + 1)
                skip_value()
                ws()
                if text[pos] == ",":
                    pos += 1
                    continue
                return None
        if c == "[" and isinstance(key, int):
            pos += 1
            ws()
            if text[pos] == "]":
                return None
            idx = 0
            while True:
                if idx == key:
                    return find(depth + 1)
                skip_value()
                ws()
                if text[pos] == ",":
                    pos += 1
                    idx += 1
                    continue
                return None
        return None

    try:
        at = find(0)
    except (ValueError, IndexError, RecursionError):
        return None
    if at is None:
        return None
    return text.count("\n", 0, at) + 1



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
            line = locate(self.text, path[:n])
            if line is not None:
                break
        where = f"{self.name}:{line}" if line is not None else self.name
        # a key or value quoted in the message may hold a line break: escaped, one line
        return MpilabError(f"{where}: {_fmt_path(path)}: {msg}".translate(_CONTROL_ESCAPES))


_CONTROL_ESCAPES = {c: f"\\x{c:02x}" for c in range(32)} | {10: "\\n", 13: "\\r", 9: "\\t"}


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


_RANGE = "is outside the range of a double"


def _parse_float(s: str) -> float | _BadNumber:
    v = float(s)
    if not math.isfinite(v):
        return _BadNumber(s, _RANGE)
    return v


def _parse_int(s: str) -> int | _BadNumber:
    if len(s) > 310:  # also keeps int() below Python's digit limit
        return _BadNumber(s, _RANGE)
    v = int(s)
    if abs(v) > _DBL_MAX:
        return _BadNumber(s, _RANGE)
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


class NotStrict(ValueError):
    """Raised by strict_decoder() at the first value strict_json refuses; the caller re-reads
    the document with strict_json for the located one-line message."""


def _must(v: Any) -> Any:
    if isinstance(v, _BadNumber):
        raise NotStrict(v.why)
    return v


def _object_or_raise(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    o = dict(pairs)
    if len(o) != len(pairs):
        raise NotStrict("a key appears twice in one object")
    return o


def strict_decoder() -> json.JSONDecoder:
    """A json decoder under strict_json's number and key rules that raises NotStrict at the
    first violation instead of locating it: for readers that decode a document piece by
    piece (report.stream) and hand anything refused to strict_json. Lone surrogates are the
    caller's to screen (they are refused by strict_json, not by this decoder)."""
    return json.JSONDecoder(parse_float=lambda s: _must(_parse_float(s)),
                            parse_int=lambda s: _must(_parse_int(s)),
                            parse_constant=lambda s: _must(_parse_constant(s)),
                            object_pairs_hook=_object_or_raise)


def read_text(path: str | os.PathLike[str], what: str, limit: int) -> str:
    """The text of a JSON file: a regular file of at most `limit` bytes, UTF-8; one-line
    MpilabError (file:line for bad UTF-8) otherwise."""
    data = read_regular(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise MpilabError(f"{path}:{line}: not UTF-8 text") from None


def read_json(path: str | os.PathLike[str], what: str, limit: int) -> tuple[Any, str]:
    """(document, text) of a JSON file: read_text, then strict_json's rules; one-line
    MpilabError otherwise."""
    text = read_text(path, what, limit)
    return strict_json(text, str(path)), text
