"""Every table says what it prints: mpilab-bench's table names, under itself, what each entry's
median is (one-way time, time of one exchange, of one batch, ...), taken from the entry's own
declaration (`mpilab-bench --list --json`: "figure", "figure_text"), and shows the value that
line names (a round trip halved, everything else as measured); the results carry the figure.
Run with 2 ranks over every point-to-point entry (every entry that is not a collective)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env, real_runner
from mpilab import results

pytestmark = pytest.mark.skipif(real_runner() is None or shutil.which("mpirun") is None,
                                reason="needs the built mpilab-bench and mpirun")


def _entries() -> list[dict[str, Any]]:
    r = subprocess.run([str(real_runner()), "--list", "--json"], env=cli_env(),
                       capture_output=True, text=True, timeout=60, check=True)
    return list(json.loads(r.stdout)["entries"])


def _point_to_point(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per name (the first implementation) of every non-collective entry that runs
    on 2 ranks without a grid description."""
    out: dict[str, dict[str, Any]] = {}
    for e in entries:
        if e["family"] != "collective" and "grid" not in e["needs"]:
            out.setdefault(e["name"], e)
    return list(out.values())


def _run(ops: list[dict[str, Any]], tmp: Path) -> tuple[str, dict[str, Any]]:
    spec = ",".join(f"{e['name']}:{e['impl']}" for e in ops)
    cmd = ["mpirun", "--oversubscribe", "-np", "2", str(real_runner()), "--ops", spec,
           "--sizes", "1K", "--time-budget", "4s", "--max-reps", "40", "--poll-sweep", "0",
           "--comb-msgs", "4", "--window", "8", "--no-fit", "--quiet", "--out", "r.json"]
    r = subprocess.run(cmd, cwd=tmp, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    results.load(tmp / "r.json")  # the schema accepts the figure
    return r.stdout, json.loads((tmp / "r.json").read_text())


def test_every_point_to_point_table_names_its_figure(tmp_path: Path) -> None:
    ops = _point_to_point(_entries())
    names = {e["name"] for e in ops}
    # the table this is about: at least the ping-pong entries and the all-pairs one
    assert {"p2p", "pingpong", "pingping", "stream"} <= names, names
    for e in ops:
        assert e["figure"] and e["figure_text"], e
    out, doc = _run(ops, tmp_path)
    lines = out.splitlines()
    head = next(k for k, s in enumerate(lines) if s.split()[:3] == ["op", "impl", "timing"])
    rows = [s.split() for s in lines[head + 1:] if s and s.split()[0] in names]
    under = lines[head + 1 + len(rows):]
    k = under.index("what median(us) is, per entry (bytes: what the size means):")
    footer = under[k + 1:]
    by_name = {e["name"]: e for e in ops}
    for e in ops:
        want = f"  {e['name']}: {e['figure_text']} [bytes: {e['bytes']}]"
        assert want in footer, (want, footer)
    # each row shows the value its line names: the results' median, a round trip halved
    meas = [m for m in doc["measurements"] if m["op"] in names]
    assert len(meas) == len(ops)
    for m in meas:
        e = by_name[m["op"]]
        assert m["figure"] == e["figure"], (m["op"], m["figure"], e["figure"])
        median = m["pair_matrix"]["median"][0] if "pair_matrix" in m else m["stats"]["median"]
        row = next(r for r in rows if r[0] == m["op"])
        shown = float(row[4]) * 1e-6
        scale = 0.5 if e["figure"] == "round_trip" else 1.0
        assert shown == pytest.approx(scale * median, rel=2e-3, abs=1e-9), (row, median)


def test_pingpong_is_shown_one_way_like_p2p() -> None:
    """Both ping-pong entries declare a round trip, so both tables show it one-way (as IMB and
    OSU print a ping-pong) and say so; pingping, whose messages cross at once, is not halved."""
    by = {(e["name"], e["impl"]): e for e in _entries()}
    assert by[("p2p", "roundtrip")]["figure"] == "round_trip"
    assert by[("pingpong", "mpi")]["figure"] == "round_trip"
    assert by[("pingping", "mpi")]["figure"] == "exchange"
    assert "one-way" in by[("pingpong", "mpi")]["figure_text"]
    assert by[("bcast", "native")]["figure"] == "call"
