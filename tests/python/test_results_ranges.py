"""Range checks of what reads results (issue 53, item 5's report cases): values no run can
produce are refused once, by the loader every command shares (the schema
python/mpilab/schemas/results-1.schema.json and mpilab.plausible), in one line naming the
file, the line and the JSON path; `report` (HTML and CSV), `diff` and `tune choose` all
refuse them with exit 2 and write nothing."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import make_results
from mpilab import results
from mpilab.errors import MpilabError


def _pair(d: dict[str, Any]) -> dict[str, Any]:
    return d["models"]["hockney"]["pairs"][0]


def _coll(d: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in d["measurements"] if m["op"] == "scatter")


# name -> (mutation, JSON path the message names, words it carries)
CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str, str]] = {
    "measurement ranks beyond the run": (
        lambda d: _coll(d).update(ranks=99), "ranks", "99 ranks in a run of 4 ranks"),
    "wall_s -100": (
        lambda d: _coll(d).update(wall_s=-100), "wall_s", "not a possible time"),
    "all_pairs_wall_s 1e30": (
        lambda d: d["measurements"][0].update(all_pairs_wall_s=1e30), "all_pairs_wall_s",
        "not a possible time"),
    "unknown implementation": (
        lambda d: _coll(d).update(impl="zzimpl"), "impl", "unknown implementation of scatter"),
    "negative Hockney alpha": (
        lambda d: _pair(d).update(alpha=-1e-5), "alpha", "below 0"),
    "negative Hockney beta": (
        lambda d: _pair(d).update(beta=-1e-9), "beta", "below 0"),
    "negative beta of a range": (
        lambda d: _pair(d)["ranges"][0].update(beta=-1e-9), "ranges[0].beta", "below 0"),
    "negative intercept not flagged": (
        lambda d: _pair(d)["ranges"][1].update(alpha=-1e-6, flags=[]), "ranges[1].flags",
        "negative_intercept"),
    "negative intercept without flags": (
        lambda d: _pair(d)["ranges"][1].update(alpha=-1e-6), "ranges[1].flags",
        "written with the flag negative_intercept"),
    "negative prediction": (
        lambda d: d["models"]["predictions"][0].update(predicted=-1e-3), "predicted",
        "below 0"),
    "negative clock residual of a measurement": (
        lambda d: _coll(d).update(clock_sync_residual_s=-1.0), "clock_sync_residual_s",
        "below 0"),
}


def _write(tmp_path: Path, mutate: Callable[[dict[str, Any]], None] | None,
           name: str = "r.json") -> Path:
    d = make_results()
    if mutate:
        mutate(d)
    p = tmp_path / name
    p.write_text(json.dumps(d, indent=1))
    return p


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_loader_refuses_values_no_run_produces(tmp_path: Path, case: str) -> None:
    mutate, path, words = CASES[case]
    p = _write(tmp_path, mutate)
    with pytest.raises(MpilabError) as e:
        results.load(p)
    msg = str(e.value)
    assert "\n" not in msg and re.match(rf"{re.escape(str(p))}:\d+: ", msg), msg
    assert path in msg and words in msg, msg


def test_what_a_run_does_produce_is_accepted(tmp_path: Path) -> None:
    """The same fields within their ranges: a flagged negative intercept, an algorithm
    forced through MPI_T, a user's entry listed in the provenance, a measurement on fewer
    ranks than the run."""
    def ok(d: dict[str, Any]) -> None:
        _pair(d)["ranges"][1].update(alpha=-1e-6, flags=["negative_intercept"])
        c = _coll(d)
        c.update(ranks=2, wall_s=0.5, clock_sync_residual_s=1e-7)
        b = next(m for m in d["measurements"] if m["op"] == "bcast")
        b["impl"] = "ompi_binomial"
        g = next(m for m in d["measurements"] if m["op"] == "gather")
        g["impl"] = "mine"
        d["provenance"]["options"]["ops"] = ["gather:mine", "scatter:linear"]
    r = results.load(_write(tmp_path, ok))
    assert {m.impl for m in r.measurements} >= {"ompi_binomial", "mine"}


def test_a_good_file_has_none_of_them(tmp_path: Path) -> None:
    d = make_results()
    for mutate, _, _ in CASES.values():
        probe = copy.deepcopy(d)
        mutate(probe)
        assert probe != d  # every case changes something
    results.load(_write(tmp_path, None))


@pytest.mark.parametrize(("cmd", "case"), [
    ("report", "wall_s -100"), ("report-csv", "unknown implementation"),
    ("diff", "negative Hockney alpha"), ("tune-choose", "measurement ranks beyond the run")])
def test_every_reader_refuses_in_one_line(run_cli: Callable[..., Any], tmp_path: Path,
                                          cmd: str, case: str) -> None:
    mutate, path, words = CASES[case]
    bad = _write(tmp_path, mutate)
    good = _write(tmp_path, None, "good.json")
    out = tmp_path / "out"
    args = {"report": ["report", str(bad), "-o", str(out)],
            "report-csv": ["report", "--format", "csv", str(bad), "-o", str(out)],
            "diff": ["diff", str(good), str(bad)],
            "tune-choose": ["tune", "choose", str(bad), "--out", str(out)]}[cmd]
    p = run_cli(*args)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and words in lines[0], p.stderr
    assert not out.exists() and sorted(x.name for x in tmp_path.iterdir()) == [
        "good.json", "r.json"]
