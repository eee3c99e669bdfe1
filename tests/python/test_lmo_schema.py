"""models.lmo in mpilab.results/1 files: a section as mpilab-bench writes it loads; malformed
ones are refused in one line naming the file, line and JSON path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab import results
from mpilab.errors import MpilabError


def _param(v: float, flags: list[str] | None = None) -> dict[str, Any]:
    return {"value": max(v, 0.0), "raw": v, "lo": max(v * 0.9, 0.0), "hi": max(v * 1.1, 0.0),
            "flags": flags or []}


def _series(roots: list[int], xs: list[int], ys: list[int] | None, bytes_: int) -> dict[str, Any]:
    n = len(roots)
    s: dict[str, Any] = {"bytes": bytes_, "root": roots, "x": xs, "round": list(range(n)),
                         "median": [1e-5] * n, "reps": [3] * n, "converged": [True] * n,
                         "samples": [[1e-5, 1.1e-5, 0.9e-5]] * n}
    if ys is not None:
        s["y"] = ys
    return s


def lmo_section() -> dict[str, Any]:
    """models.lmo of a 3-rank run: one triplet, three links."""
    return {"bytes": 8192, "mode": "parallel", "triplets": 1, "rounds": 1, "wall_s": 0.2,
            "experiments": {"rt_0": _series([0, 0, 1], [1, 2, 2], None, 0),
                            "rt_m": _series([0, 0, 1], [1, 2, 2], None, 8192),
                            "p2t_0": _series([0, 1, 2], [1, 0, 0], [2, 2, 1], 0),
                            "p2t_m": _series([0, 1, 2], [1, 0, 0], [2, 2, 1], 8192)},
            "nodes": [{"rank": r, "C": _param(2e-6), "t": _param(-1e-10, ["clamped"]),
                       "C_spread": 1e-7, "t_spread": 0.0, "triplets": 1} for r in range(3)],
            "links": {"pairs": [[0, 1], [0, 2], [1, 2]], "L": [_param(3e-6)] * 3,
                      "inv_beta": [_param(1e-9)] * 3, "rate_Bps": [1e9] * 3},
            "slowest": {"node": 0, "link": [0, 1]}, "predictions": []}


def test_lmo_section_loads(synthetic_results: Callable[..., dict[str, Any]],
                           write_json: Callable[..., Path]) -> None:
    doc = synthetic_results(ranks=3, sizes=(1024,))
    doc["models"]["lmo"] = lmo_section()
    assert results.load(write_json(doc)) is not None


@pytest.mark.parametrize(("mutate", "where", "problem"), [
    (lambda s: s["nodes"][1]["C"].__setitem__("flags", ["bogus"]), "models.lmo.nodes[1].C.flags[0]",
     "unknown flag 'bogus'"),
    (lambda s: s["nodes"][2]["t"].__setitem__("value", -1.0), "models.lmo.nodes[2].t.value", ""),
    (lambda s: s.__setitem__("mode", "both"), "models.lmo.mode", ""),
    (lambda s: s["experiments"].pop("p2t_m"), "models.lmo.experiments", ""),
    (lambda s: s["links"]["pairs"].__setitem__(0, [0, -1]), "models.lmo.links.pairs[0][1]", ""),
])
def test_bad_lmo_names_file_line_and_path(synthetic_results: Callable[..., dict[str, Any]],
                                          tmp_path: Path, mutate: Callable[[dict[str, Any]], Any],
                                          where: str, problem: str) -> None:
    doc = synthetic_results(ranks=3, sizes=(1024,))
    sec = lmo_section()
    mutate(sec)
    doc["models"]["lmo"] = sec
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc, indent=1))
    with pytest.raises(MpilabError) as e:
        results.load(p)
    msg = str(e.value)
    assert "\n" not in msg
    assert f": {where}" in msg, msg
    assert problem in msg
    assert msg.startswith(f"{p}:")
