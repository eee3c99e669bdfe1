"""mpilab history: the database (schema, migration, concurrent writers), the commands, change
detection on synthetic series, bad input (one line, exit 2)."""

from __future__ import annotations

import json
import math
import random
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env, make_results, suite_built
from mpilab.history import db, detect


def _doc(date: str, scale: float = 1.0, seed: int = 1) -> dict[str, Any]:
    doc = make_results(ranks=2, sizes=(0, 1024), seed=seed)
    doc["measurements"] = [m for m in doc["measurements"] if m["op"] in ("p2p", "bcast")]
    doc["models"].pop("predictions")
    for m in doc["measurements"]:
        st = m["stats"]
        for k in ("mean", "median", "min", "max", "ci_half", "stdev"):
            st[k] *= scale
        m["samples"] = [s * scale for s in m["samples"]]
    doc["provenance"]["date"] = date
    return doc


def _write(tmp_path: Path, name: str, doc: dict[str, Any]) -> str:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return str(p)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mpilab.cli", *args], cwd=cwd, env=cli_env(),
                          capture_output=True, text=True, timeout=600)


def test_add_list_show_trend_check_report(tmp_path: Path) -> None:
    files = [_write(tmp_path, f"r{k}.json", _doc(f"2026-11-{k + 1:02d}T02:00:00Z", seed=k))
             for k in range(4)]
    dbp = str(tmp_path / "h.sqlite")
    r = _cli("history", "--db", dbp, "add", *files, files[0], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "already in the history as run 1" in r.stdout
    c = db.connect(Path(dbp), create=False)
    assert c.execute("SELECT count(*) FROM runs").fetchone()[0] == 4
    # one series per measurement identity, one point per run
    n_series = c.execute("SELECT count(*) FROM series").fetchone()[0]
    assert n_series == len(_doc("x")["measurements"])
    assert c.execute("SELECT count(*) FROM points").fetchone()[0] == 4 * n_series
    c.close()
    r = _cli("history", "--db", dbp, "list", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.count("\n") == 5, r.stdout
    r = _cli("history", "--db", dbp, "show", "2", cwd=tmp_path)
    assert r.returncode == 0 and "p2p:roundtrip/p2p/1024 ranks=2 pair=0-1" in r.stdout
    r = _cli("history", "--db", dbp, "trend", "p2p:*/1024 *", cwd=tmp_path)
    assert r.returncode == 0 and "4 run(s)" in r.stdout, r.stdout + r.stderr
    r = _cli("history", "--db", dbp, "check", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "page.html"
    r = _cli("history", "--db", dbp, "report", "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0 and out.read_text().count("class=\"plotly-graph-div\"") == n_series
    assert not list(tmp_path.glob("page.html.*"))  # no temporary left behind


def _add_synthetic(c: sqlite3.Connection, figs: list[float], tag: str = "") -> None:
    prov = {"hosts": ["node0"], "mpi": "Open MPI v4.1.4", "options": {}}
    key = {"op": "p2p", "impl": "roundtrip", "timing": "p2p", "bytes": 1024, "ranks": 2,
           "pair": [0, 1]}
    for k, f in enumerate(figs):
        p = db.Point(key, f, f * 0.98, f * 1.02, [f], [])
        db.add_run(c, {**prov, "date": f"2026-{1 + k // 28:02d}-{1 + k % 28:02d}T02:00:00Z"},
                   [p], f"synthetic{tag}{k}", f"{tag}{k}")


def _series(seed: int, n: int, step_at: int | None, step: float = 0.10,
            sd: float = 0.02) -> list[float]:
    rng = random.Random(seed)
    return [10e-6 * math.exp(rng.gauss(0, sd)) * (1 + step if step_at is not None
                                                    and k >= step_at else 1.0)
            for k in range(n)]


def test_check_names_the_run_where_a_step_began(tmp_path: Path) -> None:
    dbp = tmp_path / "h.sqlite"
    c = db.connect(dbp)
    _add_synthetic(c, _series(3, 30, 25))
    c.close()
    r = _cli("history", "--db", str(dbp), "check", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "p2p:roundtrip/p2p/1024 ranks=2 pair=0-1" in r.stdout
    assert "worse since run 26 " in r.stdout  # run ids start at 1: index 25 is run 26


def test_detect_on_synthetic_series() -> None:
    found = sum(detect.check_latest(_series(s, 30, 24)).began == 24 for s in range(20))
    alarms = sum(detect.check_latest(_series(100 + s, 30, None)).worse for s in range(20))
    better = sum(detect.check_latest(_series(200 + s, 30, 24, step=-0.10)).worse
                 for s in range(20))
    assert found >= 18 and alarms <= 1 and better == 0, (found, alarms, better)
    # a step 5 runs old is still named; the report's segmentation finds both steps
    figs = _series(7, 40, 10)[:25] + [f * 1.2 for f in _series(8, 15, None)]
    cps = detect.segments(figs)
    assert [cp.at for cp in cps] == [10, 25], cps
    assert not detect.check_latest(figs[:3]).worse  # too few runs: no verdict


def test_migration_from_version_1(tmp_path: Path) -> None:
    p = tmp_path / "h.sqlite"
    c = sqlite3.connect(p)
    c.executescript(db.V1_SCHEMA)
    for k in range(3):
        c.execute("INSERT INTO runs(date, added, source, digest, machine, mpi, launcher, "
                  "options, context) VALUES (?,?,?,?,?,?,?,?,?)",
                  (f"2026-01-0{k + 1}", "x", f"f{k}", f"d{k}", "{}", "{}", "{}", "{}", "ctx"))
        for b in (0, 1024):
            c.execute("INSERT INTO measurements(run_id, mkey, name, figure, lo, hi) "
                      "VALUES (?,?,?,?,?,?)", (k + 1, json.dumps(["p2p", b]), f"p2p/{b}",
                                               1e-6 * (k + 1), None, None))
    c.execute("PRAGMA user_version = 1")
    c.commit()
    c.close()
    m = db.connect(p, create=False)
    assert m.execute("PRAGMA user_version").fetchone()[0] == db.VERSION
    assert m.execute("SELECT count(*) FROM series").fetchone()[0] == 2
    assert m.execute("SELECT count(*) FROM points").fetchone()[0] == 6
    s = db.series(m, "p2p/1024")[0]
    assert [o.figure for o in db.observations(m, s.id)] == [1e-6, 2e-6, 3e-6]
    assert m.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    m.close()
    bak = sqlite3.connect(tmp_path / "h.sqlite.v1.bak")  # the old file is kept as it was
    assert bak.execute("PRAGMA user_version").fetchone()[0] == 1
    assert bak.execute("SELECT count(*) FROM measurements").fetchone()[0] == 6
    bak.close()


def test_concurrent_writers(tmp_path: Path) -> None:
    files = [_write(tmp_path, f"r{k}.json", _doc(f"2026-11-01T{k // 60:02d}:{k % 60:02d}:00Z"))
             for k in range(24)]
    dbp = str(tmp_path / "h.sqlite")
    procs = [subprocess.Popen([sys.executable, "-m", "mpilab.cli", "history", "--db", dbp,
                               "add", *files[w::2]], cwd=tmp_path, env=cli_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(2)]
    for pr in procs:
        _, err = pr.communicate(timeout=300)
        assert pr.returncode == 0, err
    c = sqlite3.connect(dbp)
    assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert c.execute("SELECT count(*) FROM runs").fetchone()[0] == 24
    n = len(_doc("x")["measurements"])
    assert c.execute("SELECT count(*) FROM points").fetchone()[0] == 24 * n
    c.close()


@pytest.mark.parametrize("case", ["not_sqlite", "other_db", "newer", "bad_results",
                                  "no_history", "no_run", "no_match", "bad_alpha", "dir"])
def test_bad_input_is_one_line(tmp_path: Path, case: str) -> None:
    dbp = tmp_path / "h.sqlite"
    args: list[str] = ["history", "--db", str(dbp), "list"]
    if case == "not_sqlite":
        dbp.write_text("hello\n" * 100)
    elif case == "other_db":
        c = sqlite3.connect(dbp)
        c.execute("CREATE TABLE t(x)")
        c.commit()
        c.close()
    elif case == "newer":
        c = sqlite3.connect(dbp)
        c.execute("PRAGMA user_version = 99")
        c.commit()
        c.close()
    elif case == "bad_results":
        bad = tmp_path / "bad.json"
        bad.write_text('{"schema": "mpilab.results/1",\n "provenance": 3}')
        args = ["history", "--db", str(dbp), "add", str(bad)]
    elif case == "no_run":
        db.connect(dbp).close()
        args = ["history", "--db", str(dbp), "show", "7"]
    elif case == "no_match":
        db.connect(dbp).close()
        args = ["history", "--db", str(dbp), "trend", "nosuch*"]
    elif case == "bad_alpha":
        args = ["history", "--db", str(dbp), "check", "--alpha", "2"]
    elif case == "dir":
        dbp.mkdir()
    r = _cli(*args, cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    if case == "bad_results":  # refused before the history is created
        assert "bad.json:" in r.stderr and not dbp.exists()



def test_bench_adds_to_the_history_when_asked(fake_bench: Any, run_cli: Any,
                                              tmp_path: Path) -> None:
    env = fake_bench("ok")
    dbp = tmp_path / "h.sqlite"
    p = run_cli("bench", "--np", "1", "--launches", "1", "--history", str(dbp), "--out",
                "a.json", env=env)
    assert p.returncode == 0, p.stderr
    p = run_cli("bench", "--np", "1", "--launches", "1", "--out", "b.json",
                env=dict(env, MPILAB_HISTORY=str(dbp)))
    assert p.returncode == 0, p.stderr
    p = run_cli("bench", "--np", "1", "--launches", "1", "--out", "c.json", env=env)
    assert p.returncode == 0, p.stderr  # neither: not added
    c = sqlite3.connect(dbp)
    assert [r[0] for r in c.execute("SELECT source FROM runs ORDER BY id")] == \
        [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    c.close()



@pytest.mark.mpi
@pytest.mark.skipif(not suite_built(), reason="suite runner not built")
def test_compare_adds_to_the_history_when_asked(tmp_path: Path) -> None:
    """`mpilab compare --history DB`: each transport's results file is added after the run
    (the option before $MPILAB_HISTORY, as for bench); `--from` measures nothing, adds
    nothing."""
    dbp, other = tmp_path / "h.sqlite", tmp_path / "env.sqlite"
    env = dict(cli_env(), MPILAB_HISTORY=str(other))
    args = ["compare", "--quick", "--no-scaling", "--transport", "shm", "--sizes", "1",
            "--poll-sweep", "0", "--np", "2", "--max-reps", "5"]
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", *args, "--out", str(tmp_path / "c"),
                        "--history", str(dbp)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert f"mpilab: history {dbp}: run 1 (" in p.stderr
    assert not other.exists()
    c = sqlite3.connect(dbp)
    assert [r[0] for r in c.execute("SELECT source FROM runs")] == \
        [str(tmp_path / "c" / "shm.json")]
    names = {r[0] for r in c.execute("SELECT op FROM series")}
    assert {"pingpong", "comb"} <= names
    c.close()
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", "compare", "--from",
                        str(tmp_path / "c")], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert not other.exists()
