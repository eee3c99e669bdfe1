"""Reading TOML spec files (testbed, disk, simulated platforms) with every failure of the
parser turned into one line naming the file and, where it can be found, the line: syntax
errors, integers beyond the interpreter's digit limit and nesting beyond its recursion
limit (a spec nested 5000 deep, or a 5000-digit integer, was an internal error). A leaf
module: it imports nothing of mpilab but its errors."""

from __future__ import annotations

import re
import sys
import tomllib
from typing import Any

from mpilab.errors import MpilabError

_DIGITS = re.compile(r"\d[\d_]*")


def _line_of(text: str, pred: Any) -> int | None:
    for no, line in enumerate(text.splitlines(), 1):
        if pred(line):
            return no
    return None


def loads(text: str, source: str) -> dict[str, Any]:
    """The parsed document, or MpilabError('SOURCE[:LINE]: ...')."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"at line (\d+)", str(e))
        where = f"{source}:{m.group(1)}" if m else source
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        msg = re.sub(r"\s*[(]at end of document[)]", "", msg)
        raise MpilabError(f"{where}: TOML syntax error: {msg}") from None
    except ValueError as e:  # int(): the interpreter's limit on digits
        limit = sys.get_int_max_str_digits()
        no = _line_of(text, lambda ln: any(len(d.group().replace("_", "")) > limit
                                           for d in _DIGITS.finditer(ln)))
        if no is None:  # another ValueError of the parser: its own words, on one line
            raise MpilabError(f"{source}: TOML: {' '.join(str(e).split())[:120]}") from None
        raise MpilabError(f"{source}:{no}: a number of more than {limit} digits (not a "
                          "count, size or rate any spec needs)") from None
    except RecursionError:
        depth = 0
        deepest = None
        for no, line in enumerate(text.splitlines(), 1):
            for ch in line:
                depth += ch in "[{"
                depth -= ch in "]}"
                if depth > 100 and deepest is None:
                    deepest = no
        where = f"{source}:{deepest}" if deepest else source
        raise MpilabError(f"{where}: arrays or tables nested too deep for the TOML "
                          "parser") from None
