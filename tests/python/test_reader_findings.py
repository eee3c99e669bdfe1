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


def _wavefront(tmp_path: Path, **wf: object) -> Path:
    base: dict[str, object] = {"iterations": 10, "total_s": 1.5, "bytes_read": 1 << 20,
                               "bytes_written": 1 << 20, "requests_read": 16,
                               "requests_written": 16}
    p = tmp_path / "wf.json"
    p.write_text(json.dumps({"wavefront": {**base, **wf}}))
    return p


@pytest.mark.parametrize("wf,needle", [
    ({"iterations": -10}, r"wavefront\.iterations = -10: need a finite number >= 0"),
    ({"iterations": 0}, r"wavefront\.iterations = 0: need a positive number"),
    ({"total_s": [[[0]]]}, r"wavefront\.total_s: a list: need a finite number"),
    ({"dev_read_bytes": -1}, r"wavefront\.dev_read_bytes = -1: need a finite number"),
    ({"per_worker": 7}, r"wavefront\.per_worker is not a list"),
    ({"per_worker": True}, r"wavefront\.per_worker is not a list"),
    ({"total_s": 1e-320, "iterations": 1e10}, r"not a positive time per iteration"),
])
def test_wavefront_results_counters_are_checked_at_load(tmp_path: Path, wf: dict[str, object],
                                                        needle: str) -> None:
    from mpilab import wavefront_regime as wr

    p = _wavefront(tmp_path, **wf)
    with pytest.raises(MpilabError, match=needle) as e:
        wr.load_results(str(p))
    assert str(e.value).startswith(f"{p}: ") and "\n" not in str(e.value)


def test_wavefront_results_deep_nesting_and_fifo_are_one_line(tmp_path: Path) -> None:
    import os

    from mpilab import wavefront_regime as wr

    p = tmp_path / "deep.json"
    p.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(MpilabError, match=r"deep\.json"):
        wr.load_results(str(p))
    f = tmp_path / "fifo.json"
    os.mkfifo(f)
    with pytest.raises(MpilabError, match=r"fifo\.json: .*FIFO"):  # refused, never opened
        wr.load_results(str(f))


@pytest.mark.parametrize("fault,needle", [
    ({"at": "x"}, r"faults\[0\]\.at"),
    ({"at": -1}, r"faults\[0\]\.at"),
    ({"duration": 0}, r"faults\[0\]\.duration"),
    ({"target": "s0n0"}, r"faults\[0\]\.target"),
    ({"mode": 7}, r"faults\[0\]\.mode"),
    ({"extra": 1}, r"faults\[0\]"),
])
def test_fault_plan_fields_are_checked_at_load(tmp_path: Path, fault: dict[str, object],
                                               needle: str) -> None:
    from mpilab.pathmig import inject

    good = {"at": 1.0, "target": "s0n0:1", "mode": "down", "duration": 2.0}
    p = tmp_path / "plan.json"
    p.write_text(json.dumps({"seed": 1, "faults": [good]}))
    assert inject.load_plan(str(p)) == [inject.Fault(1.0, "s0n0:1", "down", 2.0)]
    p.write_text(json.dumps({"seed": 1, "faults": [{**good, **fault}]}))
    with pytest.raises(MpilabError, match=needle) as e:
        inject.load_plan(str(p))
    assert str(e.value).startswith(f"{p}:") and "\n" not in str(e.value)
    p.write_text('{"faults": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(MpilabError, match=r"plan\.json"):
        inject.load_plan(str(p))


def test_sweep_state_nested_deep_is_one_line(tmp_path: Path) -> None:
    """A sweep state nested 10^5 deep (the fuzzer's finding: RecursionError) is refused in
    one line naming the file, as every document the project reads."""
    from mpilab.tune import sweep

    p = tmp_path / sweep.STATE
    p.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(MpilabError) as e:
        sweep._load_state(tmp_path, {})  # noqa: SLF001
    assert str(e.value).startswith(str(p)) and "\n" not in str(e.value)
