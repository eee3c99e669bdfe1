"""Spec files past the TOML parser's and the interpreter's limits give one line naming the
file and line, from every spec reader (issue 29: a 5000-digit integer and a table nested
5000 deep were internal errors)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mpilab import tomlread
from mpilab.disk import spec as dspec
from mpilab.errors import MpilabError
from mpilab.sim import platform
from mpilab.testbed import spec as tspec

HUGE = 'prefix = "x"\n[cluster]\nsites = ' + "9" * 5000 + "\n"
DEEP = 'prefix = "x"\na = ' + "[" * 5000 + "]" * 5000 + "\n"
SYNTAX = 'prefix = "x"\n\n[cluster\n'

READERS: list[Callable[[str, str], Any]] = [
    tomlread.loads, tspec.load_text, dspec.load_text, platform.load_hetero_text]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("text, line, words", [
    (HUGE, 3, "a number of more than"), (DEEP, 2, "nested too deep"),
    (SYNTAX, 3, "TOML syntax error")])
def test_one_line_with_file_and_line(reader: Callable[[str, str], Any], text: str, line: int,
                                     words: str) -> None:
    with pytest.raises(MpilabError) as e:
        reader(text, "spec.toml")
    msg = str(e.value)
    assert msg.startswith(f"spec.toml:{line}: ") and words in msg and "\n" not in msg, msg


def test_a_good_document_parses() -> None:
    assert tomlread.loads('a = 1\n[t]\nb = "c"\n', "x.toml") == {"a": 1, "t": {"b": "c"}}
