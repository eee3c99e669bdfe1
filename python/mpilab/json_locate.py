"""Where a JSON path's value starts in the text of a document (the line of an error).

Used by mpilab.results to put a line number on a one-line error; kept apart so that the
results loader stays short.
"""
from __future__ import annotations

import re

PathT = tuple[str | int, ...]

_WS = re.compile(r"[ \t\n\r]*")
_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def locate(text: str, target: PathT) -> int | None:
    """Line (1-based) where the value at `target` starts, or None if not found."""
    from json.decoder import scanstring

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
