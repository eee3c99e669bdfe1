"""Inputs the document readers' fuzzer (bench/fuzz_readers.py) found: each is refused in
one line naming the file, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mpilab.errors import MpilabError
from mpilab.sim import platform
from mpilab.strict_json import located


@pytest.mark.parametrize("enc", ["UTF-0", "UTF-1e308", "UTF--1"])
def test_platform_with_an_unknown_encoding_is_one_line(enc: str) -> None:
    doc = f'<?xml version="1.0" encoding="{enc}"?><platform version="4.1"/>'.encode()
    for read in (platform.hosts_of, platform.configs_of):
        with pytest.raises(MpilabError, match=r"^p\.xml: not XML: ") as e:
            read(doc, "p.xml")
        assert "\n" not in str(e.value)


def test_a_line_break_in_a_quoted_value_stays_on_one_line(tmp_path: Path) -> None:
    text = json.dumps({"cells": [{"winner": "ompi_bi\nomial"}]})
    e = located("c.json", text, ["cells", 0, "winner"], "ompi_bi\nomial is not an algorithm")
    assert "\n" not in str(e) and "ompi_bi\\nomial" in str(e)
    assert str(e).startswith("c.json:1: cells[0].winner: ")
