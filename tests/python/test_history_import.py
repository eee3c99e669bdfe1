"""`mpilab history add` takes every results file the project writes and has written: the one
schema version (`mpilab.results/1`, python/mpilab/schemas/results-1.schema.json) in each form
its writers have given it (the first schema's minimum, the contract's example, the files
committed in this repository by earlier writers, the compact form with its samples archive)
and each document kind (mpilab-bench, survey, compare, partial runs, mpilab-wavefront); a
document of another kind (mpilab.multilane/1, mpilab.tune-choice/1) or a broken one is
refused in one line, exit 2, and nothing of it enters the history."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, cli_env, make_results
from mpilab import samples_file

SCHEMA = "mpilab.results/1"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mpilab.cli", *args], cwd=cwd, env=cli_env(),
                          capture_output=True, text=True, timeout=600)


def _points(dbp: Path) -> dict[str, int]:
    """Points per run, by the run's source file name."""
    c = sqlite3.connect(dbp)
    try:
        return {Path(src).name: n for src, n in c.execute(
            "SELECT r.source, (SELECT count(*) FROM points p WHERE p.run_id = r.id) "
            "FROM runs r")}
    finally:
        c.close()


def _committed_results() -> list[Path]:
    """Every results file in this checkout (written by the tools at the time it was added)."""
    out = []
    for top in ("tests/data", "docs/data", "tests/fuzz/corpus/results"):
        for f in sorted((REPO / top).rglob("*.json")):
            try:
                doc = json.loads(f.read_text())
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(doc, dict) and doc.get("schema") == SCHEMA:
                out.append(f)
    return out


def test_every_committed_results_file(tmp_path: Path) -> None:
    files = _committed_results()
    kinds = {f.parent.name for f in files} | {f.name for f in files}
    # the kinds this covers: survey (older writers), compare (per transport), a partial run,
    # mpilab-bench with clock synchronisation (the fuzz corpus' seed)
    assert {"compare", "partial.json", "survey-quick-np3.json", "clock.json"} <= kinds, kinds
    links = []
    for k, f in enumerate(files):  # distinct names: the runs are told apart by file name
        link = tmp_path / f"{k:03d}-{f.name}"
        shutil.copyfile(f, link)
        links.append(str(link))
    dbp = tmp_path / "h.sqlite"
    r = _cli("history", "--db", str(dbp), "add", *links, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    pts = _points(dbp)
    assert len(pts) == len(files)
    assert all(n > 0 for n in pts.values()), pts


def _first_schema_minimum() -> dict[str, Any]:
    """What the first published schema required, nothing more: no provenance fields, a
    measurement with op, timing, bytes and stats {mean, ci_half, reps} (no median)."""
    return {"schema": SCHEMA, "provenance": {},
            "measurements": [{"op": "bcast", "timing": "max", "bytes": 1024,
                              "stats": {"mean": 1e-5, "ci_half": 1e-7, "reps": 5}}]}


def _contract_example() -> dict[str, Any]:
    """The results contract's example as the first writer filled it (docs/results-schema.md)."""
    st = {"mean": 2.0e-6, "ci_half": 1e-8, "rel_err": 0.005, "median": 2.0e-6, "min": 1.9e-6,
          "max": 2.2e-6, "stdev": 1e-7, "reps": 3, "invalid": 0, "converged": True}
    return {"schema": SCHEMA,
            "provenance": {"tool": "mpilab-bench", "version": "0.1.0", "mpi": "Open MPI v4.1.4",
                           "mpi_standard": "3.1", "date": "2026-11-21T10:00:00Z",
                           "command": "mpilab-bench --ops p2p,scatter", "ranks": 2,
                           "hosts": ["node0"],
                           "mapping": [{"rank": 0, "host": "node0", "pu": 1},
                                       {"rank": 1, "host": "node0", "pu": 2}],
                           "options": {"timing": ["max", "p2p"], "isolation": "barrier"},
                           "clock_sync": None},
            "measurements": [
                {"op": "scatter", "impl": "binomial", "timing": "max", "isolation": "barrier",
                 "bytes": 4096, "root": 0, "ranks": 2,
                 "precision": {"cl": 0.95, "eps": 0.025, "min_reps": 3, "max_reps": 100},
                 "stats": st, "samples": [2.0e-6, 1.9e-6, 2.2e-6], "valid": [True] * 3},
                {"op": "p2p", "impl": "roundtrip", "timing": "p2p", "schedule": "parallel",
                 "pair": [0, 1], "bytes": 4096, "bytes_back": 4096, "stats": st,
                 "samples": [2.0e-6, 1.9e-6, 2.2e-6], "valid": [True] * 3}],
            "models": {"hockney": {"pairs": [{"i": 0, "j": 1, "alpha": 1e-6, "beta": 1e-10,
                                              "ranges": [{"from": 0, "to": 65536,
                                                          "alpha": 1e-6, "beta": 1e-10}]}]},
                       "predictions": []}}


def _compact(tmp_path: Path) -> str:
    """The compact form (survey's): summaries in the JSON, samples in an npz archive."""
    doc = make_results(ranks=2, sizes=(0, 1024), seed=3)
    doc["models"].pop("predictions")
    arrays = samples_file.split(doc)
    out = tmp_path / "compact.json"
    samples_file.write_split(doc, arrays, out, tmp_path / "compact.samples.npz",
                             "compact.samples.npz")
    return str(out)


def test_each_form_of_version_1(tmp_path: Path) -> None:
    files = {}
    for name, doc in (("first-minimum.json", _first_schema_minimum()),
                      ("contract.json", _contract_example()),
                      ("current.json", make_results(ranks=2, sizes=(0, 1024), seed=2))):
        (tmp_path / name).write_text(json.dumps(doc))
        files[name] = str(tmp_path / name)
    files["compact.json"] = _compact(tmp_path)
    assert "samples_file" in json.loads(Path(files["compact.json"]).read_text())
    dbp = tmp_path / "h.sqlite"
    r = _cli("history", "--db", str(dbp), "add", *files.values(), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    pts = _points(dbp)
    assert pts["first-minimum.json"] == 1 and pts["contract.json"] == 2
    n_current = len([m for m in make_results(ranks=2, sizes=(0, 1024))["measurements"]
                     if m["stats"].get("median")])
    assert pts["current.json"] == n_current and pts["compact.json"] == n_current
    c = sqlite3.connect(dbp)
    # the first schema's file is kept by its mean (it states no median)
    assert c.execute("SELECT p.figure FROM points p JOIN runs r ON r.id = p.run_id "
                     "WHERE r.source LIKE '%first-minimum.json'").fetchone()[0] == 1e-5
    c.close()


def _tool(name: str) -> str | None:
    p = REPO / "build" / "bin" / name
    return str(p) if p.is_file() and os.access(p, os.X_OK) else None


@pytest.mark.skipif(_tool("mpilab-wavefront") is None, reason="mpilab-wavefront not built")
def test_wavefront_results(tmp_path: Path) -> None:
    env = dict(cli_env(), MPILAB_BIN=str(REPO / "build" / "bin"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mpilab.cli", "wavefront", *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    assert run("create", "--rows", "16", "--cols", "16", "d", "c").returncode == 0
    p = run("run", "--data", "d", "--coef", "c", "--mb", "4", "--nb", "4", "--iterations", "2",
            "--json", "w.json")
    assert p.returncode == 0, p.stderr
    dbp = tmp_path / "h.sqlite"
    r = _cli("history", "--db", str(dbp), "add", "w.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _points(dbp)["w.json"] >= 1


@pytest.mark.mpi
@pytest.mark.skipif(_tool("mpilab-bench") is None or shutil.which("mpirun") is None,
                    reason="mpilab-bench not built")
def test_bench_results_of_this_build(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", "bench", "--np", "2", "--launches",
                        "1", "--variation-store", "none", "--out", "b.json", "--",
                        "--ops", "p2p,bcast", "--sizes", "1", "--max-reps", "5", "--no-fit"],
                       cwd=tmp_path, env=cli_env(), capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    dbp = tmp_path / "h.sqlite"
    r = _cli("history", "--db", str(dbp), "add", "b.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _points(dbp)["b.json"] == 2  # p2p 0-1 and bcast at 1 byte


@pytest.mark.parametrize("case", ["multilane", "tune_choice", "truncated", "no_schema"])
def test_other_documents_are_refused(tmp_path: Path, case: str) -> None:
    docs: dict[str, str] = {
        "multilane": json.dumps({"schema": "mpilab.multilane/1", "runs": []}),
        "tune_choice": json.dumps({"schema": "mpilab.tune-choice/1", "choices": []}),
        "truncated": json.dumps(make_results(ranks=2, sizes=(0,)))[:200],
        "no_schema": json.dumps({"provenance": {}, "measurements": []}),
    }
    f = tmp_path / f"{case}.json"
    f.write_text(docs[case])
    dbp = tmp_path / "h.sqlite"
    r = _cli("history", "--db", str(dbp), "add", str(f), cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{case}.json" in lines[0] and "Traceback" not in r.stderr
    if dbp.exists():
        c = sqlite3.connect(dbp)
        assert c.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
        c.close()
