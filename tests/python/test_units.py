"""mpilab.units: the strict parsers, against the case table the C parsers are tested
against too (tests/data/parse_cases.json, tests/c/common_parse.c)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab import units

TABLE = Path(__file__).parent.parent / "data" / "parse_cases.json"
CASES = json.loads(TABLE.read_text())["cases"]
PARSERS: dict[str, Callable[[str], Any]] = {
    "int": units.parse_int, "real": units.parse_real, "size": units.parse_size,
    "duration": units.parse_duration, "rate": units.parse_rate,
    "size_list": lambda t: units.parse_size_list(t, 1000)}


def test_the_table_covers_every_parser() -> None:
    kinds = {c["kind"] for c in CASES}
    assert kinds == set(PARSERS)
    for k in kinds:  # each parser has accepted and refused cases
        assert any(c["value"] is None for c in CASES if c["kind"] == k)
        assert any(c["value"] is not None for c in CASES if c["kind"] == k)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['kind']}:{c['text']!a}" for c in CASES])
def test_shared_cases(case: dict[str, Any]) -> None:
    parse = PARSERS[case["kind"]]
    if case["value"] is None:
        with pytest.raises(ValueError) as e:
            parse(case["text"])
        assert str(e.value) and "\n" not in str(e.value)
    else:
        got = parse(case["text"])
        if isinstance(case["value"], float):
            assert math.isclose(got, case["value"], rel_tol=1e-12)
            assert math.copysign(1.0, got) == math.copysign(1.0, case["value"])
        else:
            assert got == case["value"]
            assert type(got) is type(case["value"])


def test_numbers_from_files() -> None:
    assert units.parse_size(4096) == 4096
    assert units.parse_duration(0.005) == 0.005
    assert units.parse_duration(2) == 2.0
    assert units.parse_rate(5e7) == 5e7
    for bad in (True, float("nan"), float("inf"), -1):
        for parse in (units.parse_duration, units.parse_rate):
            with pytest.raises(ValueError):
                parse(bad)
    for bad_size in (True, -1, 1 << 64, 1.5):
        with pytest.raises(ValueError):
            units.parse_size(bad_size)  # type: ignore[arg-type]


@pytest.mark.parametrize("text,words", [
    ("-3", "negative"), ("-1ms", "negative"), ("soon", "not a duration")])
def test_duration_reasons(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        units.parse_duration(text)


def test_instants() -> None:
    noon = 1795262400.0  # 2026-11-21T12:00:00Z
    assert units.parse_instant("2026-11-21T12:00:00Z") == noon
    assert units.parse_instant("2026-11-21T13:00:00+01:00") == noon
    assert units.parse_instant("@1795262400.25") == noon + 0.25
    for bad, words in (("2026-11-21T12:00:00", "no time zone"),
                       ("2026-13-01T00:00:00Z", "ISO 8601"),
                       ("@-5", "positive"), ("@inf", "not a time"), ("@nan", "not a time"),
                       ("@ 5", "not a time"), ("\u0662026-11-21T12:00:00Z", "not a time")):
        with pytest.raises(ValueError, match=words):
            units.parse_instant(bad)
    assert units.is_instant("@5") and units.is_instant("2026-11-21T12:00:00Z")
    assert not units.is_instant("5ms")
