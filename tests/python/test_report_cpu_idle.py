"""provenance.cpu_idle in the report: a health line when ranks slept or yielded on a machine
whose idle CPUs may halt, none when they spun or the CPUs poll; the object itself in the
provenance table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab import results
from mpilab.errors import MpilabError
from mpilab.report import build_report
from mpilab.report.summary import idle_note

HALTS = {"driver": "haltpoll", "governor": "haltpoll", "deepest_state": "haltpoll idle",
         "deepest_exit_latency_us": 1, "halt_poll_ns": 0, "latency_limit_us": 2000000000,
         "may_halt": True, "held_by_run": False}


def _prov(**kw: Any) -> dict[str, Any]:
    p: dict[str, Any] = {"cpu_idle": dict(HALTS), "mca": {}, "options": {}}
    p.update(kw)
    return p


def test_note_only_when_ranks_sleep_and_cpus_may_halt() -> None:
    assert idle_note(_prov()) is None  # ranks spin: a halted CPU wakes nobody late
    yielding = _prov(mca={"mpi_yield_when_idle": "1"})
    note = idle_note(yielding)
    assert note is not None and "mpi_yield_when_idle 1" in note and "--idle-poll" in note
    sleeping = _prov(options={"lmo_wait": {"mode": "sleep", "interval_s": 2e-5}})
    note = idle_note(sleeping)
    assert note is not None and "--lmo-wait sleep" in note and "haltpoll idle" in note
    held = dict(yielding, cpu_idle=dict(HALTS, latency_limit_us=0, may_halt=False,
                                        held_by_run=True))
    assert idle_note(held) is None
    unknown = dict(yielding, cpu_idle=dict(HALTS, may_halt=None))
    assert idle_note(unknown) is None
    # malformed provenance pieces are no note, not an error
    assert idle_note({"cpu_idle": "x", "mca": {"mpi_yield_when_idle": "1"}}) is None
    assert idle_note({"cpu_idle": HALTS, "mca": [], "options": 3}) is None


def test_report_says_it(synthetic_results: Callable[..., dict[str, Any]],
                        write_json: Callable[..., Path], tmp_path: Path) -> None:
    doc = synthetic_results(ranks=2, sizes=(8,))
    doc["provenance"]["cpu_idle"] = dict(HALTS)
    doc["provenance"]["mca"] = {"mpi_yield_when_idle": "1"}
    out = tmp_path / "r.html"
    build_report(results.load(write_json(doc)), out)
    text = out.read_text()
    assert "idle CPUs may halt here" in text
    assert "cpu_idle.deepest_state" in text  # the provenance table's row
    doc["provenance"]["mca"] = {"mpi_yield_when_idle": "0"}
    build_report(results.load(write_json(doc)), out)
    assert "idle CPUs may halt here" not in out.read_text()


def test_malformed_cpu_idle_is_refused_at_load(
        synthetic_results: Callable[..., dict[str, Any]],
        write_json: Callable[..., Path]) -> None:
    doc = synthetic_results(ranks=2, sizes=(8,))
    doc["provenance"]["cpu_idle"] = dict(HALTS, may_halt="yes")
    with pytest.raises(MpilabError, match="may_halt"):
        results.load(write_json(doc))
    doc["provenance"]["cpu_idle"] = dict(HALTS, latency_limit_us=-5)
    with pytest.raises(MpilabError, match="latency_limit_us"):
        results.load(write_json(doc))
