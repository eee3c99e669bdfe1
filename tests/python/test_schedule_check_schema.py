"""The fields of the parallel schedule's check and the LMO headlines in mpilab.results/1
files: as mpilab-bench writes them they load; malformed ones are refused in one line naming
the file, line and JSON path (python/mpilab/schemas/results-1.schema.json)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab import results
from mpilab.errors import MpilabError
from test_lmo_schema import lmo_section


def _check(disagreed: int = 1) -> dict[str, Any]:
    return {"asked": "parallel", "pairs_checked": 4, "disagreed": disagreed,
            "worst_ratio": 1.9 if disagreed else 1.0, "fell_back": disagreed > 0}


def _doc(synthetic_results: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    doc = synthetic_results(ranks=3, sizes=(1024,))
    m = doc["measurements"][0]
    m["schedule_check"] = _check()
    m["flags"] = ["parallel_contention"]
    doc["models"]["loggp"] = {"pairs": [], "pairs_design": "full", "schedule": "sequential",
                              "schedule_check": _check(), "flags": ["parallel_contention"]}
    lmo = lmo_section()
    lmo["slowest"] = {"node": 1, "node_by": "C", "link_by": "star", "link": None, "link_of": 2,
                      "path": [0, 2], "node_cost_s": 2e-6, "link_cost_s": 5e-6,
                      "path_cost_s": 9e-6, "node_vs_median": 1.0, "link_vs_median": 2.5,
                      "path_vs_median": 1.5, "cpu": 1, "cpu_C_s": 2e-6, "cpu_vs_median": 1.0}
    doc["models"]["lmo"] = lmo
    return doc


def test_written_fields_load(synthetic_results: Callable[..., dict[str, Any]],
                             write_json: Callable[..., Path]) -> None:
    assert results.load(write_json(_doc(synthetic_results))) is not None


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        o = doc
        for k in path[:-1]:
            o = o[k]
        o[path[-1]] = value
    return mutate


def _drop(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        o = doc
        for k in path[:-1]:
            o = o[k]
        del o[path[-1]]
    return mutate


LG = ["models", "loggp"]
SL = ["models", "lmo", "slowest"]


@pytest.mark.parametrize(("mutate", "where"), [
    (_set(["measurements", 0, "schedule_check", "worst_ratio"], 0.5),
     "measurements[0].schedule_check.worst_ratio"),
    (_set(["measurements", 0, "schedule_check", "disagreed"], -1),
     "measurements[0].schedule_check.disagreed"),
    (_set(["measurements", 0, "schedule_check", "pairs_checked"], 0),
     "measurements[0].schedule_check.pairs_checked"),
    (_set(["measurements", 0, "schedule_check", "fell_back"], "yes"),
     "measurements[0].schedule_check.fell_back"),
    (_set(["measurements", 0, "schedule_check", "asked"], "sequential"),
     "measurements[0].schedule_check.asked"),
    (_drop(["measurements", 0, "schedule_check", "disagreed"]), "measurements[0].schedule_check"),
    (_set(["measurements", 0, "flags"], "parallel_contention"), "measurements[0].flags"),
    (_set(LG + ["flags"], ["contended"]), "models.loggp.flags[0]"),
    (_set(LG + ["schedule"], "both"), "models.loggp.schedule"),
    (_set(LG + ["schedule_check", "worst_ratio"], "2"), "models.loggp.schedule_check.worst_ratio"),
    (_set(SL + ["link_of"], -1), "models.lmo.slowest.link_of"),
    (_set(SL + ["link_of"], 1.5), "models.lmo.slowest.link_of"),
    (_drop(SL + ["link_of"]), "models.lmo.slowest"),
    (_set(SL + ["link_by"], "ring"), "models.lmo.slowest.link_by"),
    (_set(SL + ["link"], [0]), "models.lmo.slowest.link"),
    (_set(SL + ["node"], "0"), "models.lmo.slowest.node"),
])
def test_malformed_refused_in_one_line(synthetic_results: Callable[..., dict[str, Any]],
                                       tmp_path: Path, mutate: Callable[[dict[str, Any]], None],
                                       where: str) -> None:
    doc = _doc(synthetic_results)
    mutate(doc)
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc, indent=1))
    with pytest.raises(MpilabError) as e:
        results.load(p)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{p}:")
    assert f": {where}" in msg, msg


def test_report_refuses_malformed_check(synthetic_results: Callable[..., dict[str, Any]],
                                        write_json: Callable[..., Path],
                                        run_cli: Callable[..., Any]) -> None:
    doc = _doc(synthetic_results)
    doc["models"]["loggp"]["schedule_check"]["worst_ratio"] = -3
    p = run_cli("report", str(write_json(doc)))
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "models.loggp.schedule_check.worst_ratio" in lines[0], p.stderr
    assert "Traceback" not in p.stderr
