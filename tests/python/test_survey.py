"""`mpilab survey`: what it asks the runner for, where it writes, and what it leaves on
failure (with a stand-in runner), then end to end with the real runner."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env, real_runner
from mpilab import results
from mpilab.commands import survey


def _args(env: dict[str, str]) -> list[str]:
    return json.loads(Path(env["FAKE_BENCH_ARGS"]).read_text())


def _opt(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_survey_asks_for_everything(fake_bench: Callable[[str], dict[str, str]],
                                    run_cli: Callable[..., Any], tmp_path: Path) -> None:
    env = fake_bench("ok")
    p = run_cli("survey", "--np", "1", "--out", "sv", env=env)
    assert p.returncode == 0, p.stderr
    args = _args(env)
    ops = _opt(args, "--ops").split(",")
    assert "p2p" in ops
    for op in ("scatter", "gather"):
        for impl in ("native", "linear", "binomial"):
            assert f"{op}:{impl}" in ops
    assert "bcast:native" in ops and "allreduce:native" in ops
    assert set(_opt(args, "--timing").split(",")) == {"max", "root", "global", "opspec"}
    assert _opt(args, "--p2p-schedule") == "parallel"
    assert set(_opt(args, "--models").split(",")) == {"hockney", "loggp"}
    assert _opt(args, "--sizes") == survey.FULL.sizes
    assert int(_opt(args, "--max-reps")) == survey.FULL.max_reps
    out = tmp_path / "sv"
    assert (out / "results.json").is_file() and (out / "report.html").is_file()
    assert "results: sv/results.json" in p.stdout and "report:  sv/report.html" in p.stdout
    # no temporary results left behind
    assert not [x for x in out.iterdir() if x.name.startswith(".")]


def test_survey_leaves_opspec_out_at_scale() -> None:
    """Operation-specific timing costs p - 1 barriers per sample: above OPSPEC_MAX_RANKS
    ranks the survey asks for the other three methods only."""
    n = survey.OPSPEC_MAX_RANKS
    assert "opspec" in survey.FULL.runner_args("r.json", n)[3].split(",")
    big = survey.FULL.runner_args("r.json", n + 1)
    assert big[2] == "--timing" and big[3].split(",") == ["max", "root", "global"]


def test_survey_defaults(fake_bench: Callable[[str], dict[str, str]],
                         run_cli: Callable[..., Any], tmp_path: Path) -> None:
    from mpilab.cli import build_parser

    a = build_parser().parse_args(["survey"])
    assert a.np is None and not a.oversubscribe  # one rank per CPU (under srun the allocation's)
    assert a.out == "results/survey" and not a.quick
    env = fake_bench("ok")
    p = run_cli("survey", "--np", "1", "--quick", "-q", env=env)
    assert p.returncode == 0, p.stderr
    assert _opt(_args(env), "--sizes") == survey.QUICK.sizes
    assert (tmp_path / "results" / "survey" / "results.json").is_file()
    assert p.stderr == ""  # --quiet: no progress display


@pytest.mark.parametrize("mode, expected", [
    ("exit5", "mpilab: mpilab-bench failed (exit status 5): fake-bench: unknown op 'nosuch'"),
    ("garbage", "malformed JSON"),
    ("noout", "mpilab: mpilab-bench exited 0 but wrote no results"),
])
def test_survey_failure_leaves_no_results(fake_bench: Callable[[str], dict[str, str]],
                                          run_cli: Callable[..., Any], tmp_path: Path,
                                          mode: str, expected: str) -> None:
    out = tmp_path / "sv"
    out.mkdir()
    (out / "results.json").write_text("earlier results")
    p = run_cli("survey", "--np", "1", "--quick", "-q", "--out", "sv", env=fake_bench(mode))
    assert p.returncode != 0
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("mpilab:")]
    assert len(lines) == 1 and expected in lines[0], p.stderr
    assert (out / "results.json").read_text() == "earlier results"
    assert not (out / "report.html").exists()
    assert sorted(x.name for x in out.iterdir()) == ["results.json", "runner.log"]


def test_survey_out_is_a_file(fake_bench: Callable[[str], dict[str, str]],
                              run_cli: Callable[..., Any], tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    p = run_cli("survey", "--np", "1", "--quick", "-q", "--out", "f", env=fake_bench("ok"))
    assert p.returncode == 2
    assert p.stderr.strip().endswith("argument --out: 'f': not a directory"), p.stderr
    assert (tmp_path / "f").read_text() == "x"


@pytest.mark.mpi
@pytest.mark.skipif(real_runner() is None,
                    reason="mpilab-bench not built (scripts/build builds it into build/bin; "
                           "or set MPILAB_BIN)")
def test_survey_quick_end_to_end(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    env = cli_env()
    env["MPILAB_BIN"] = str(Path(real_runner() or "").parent)
    p = run_cli("survey", "--quick", "--np", "3", "--out", "sv", env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    out = tmp_path / "sv"
    r = results.load(out / "results.json")
    sizes = {0, 4096, 65536}
    assert r.provenance.get("ranks") == 3
    # all pairs, every size, parallel schedule
    p2p = r.p2p()
    assert {(m.pair, m.bytes) for m in p2p} == {((i, j), s) for i in range(3)
                                                for j in range(i + 1, 3) for s in sizes}
    assert all(m.schedule == "parallel" for m in p2p)
    coll = {(m.op, m.impl, m.timing) for m in r.collectives()}
    for op in ("scatter", "gather"):
        for impl in ("native", "linear", "binomial"):
            for timing in ("max", "root", "global"):
                assert (op, impl, timing) in coll
        for impl in ("linear", "binomial"):
            assert (op, impl, "opspec") in coll
    for op in ("bcast", "allreduce"):
        for timing in ("max", "root", "global"):
            assert (op, "native", timing) in coll
    assert all(m.stats.reps <= survey.QUICK.max_reps for m in r.collectives())
    # global timing was used: its clock synchronisation is recorded
    assert r.clock_sync is not None
    # models: one Hockney fit per pair, predictions for linear/binomial scatter/gather
    assert {(h.i, h.j) for h in r.hockney} == {(0, 1), (0, 2), (1, 2)}
    assert {(x.op, x.impl) for x in r.predictions} >= {("scatter", "linear"),
                                                       ("scatter", "binomial"),
                                                       ("gather", "linear"),
                                                       ("gather", "binomial")}
    # LogGP: every pair fitted (sender i -> receiver j), at every survey size
    assert {(x.i, x.j) for x in r.loggp} == {(0, 1), (0, 2), (1, 2)}
    assert all(x.params is not None and {pt.bytes for pt in x.per_size} == sizes
               for x in r.loggp)
    assert {(x.op, x.impl) for x in r.loggp_predictions} >= {("scatter", "linear"),
                                                             ("gather", "linear")}
    text = (out / "report.html").read_text()
    for anchor in ("summary", "collectives", "timing", "p2p", "models", "measurements"):
        assert f'<section id="{anchor}"' in text
    assert 'id="provenance-table"' in text


def test_survey_runs_launches_on_request(fake_bench: Callable[[str], dict[str, str]],
                                         run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """--launches N: the runner runs N times, each with its share of the budget, the merged
    document is the results, each launch's own file is kept (compact, like the results),
    and the cost is printed."""
    env = fake_bench("ok")
    n = 3
    p = run_cli("survey", "--np", "1", "--out", "sv", "--launches", str(n), env=env)
    assert p.returncode == 0, p.stderr
    args = _args(env)
    assert _opt(args, "--time-budget") == f"{survey.FULL.time_budget / n:g}s"
    out = tmp_path / "sv"
    doc = json.loads((out / "results.json").read_text())
    assert doc["launches"]["n"] == n and doc["launches"]["asked"] == n
    assert doc["launches"]["files"] == [str(Path("sv") / f"results.launch{k}.json")
                                        for k in range(1, n + 1)]
    for k in range(1, n + 1):
        r = results.load(out / f"results.launch{k}.json")
        assert r.measurements and any(m.samples for m in r.measurements)
        assert (out / f"results.launch{k}.samples.npz").is_file()
    assert all(m["launches"]["n"] == n for m in doc["measurements"])
    assert "launches took" in p.stderr
    assert not [x for x in out.iterdir() if x.name.startswith(".")]


def test_survey_one_launch_by_default(fake_bench: Callable[[str], dict[str, str]],
                                     run_cli: Callable[..., Any], tmp_path: Path) -> None:
    env = fake_bench("ok")
    assert survey.FULL.launches == 1
    p = run_cli("survey", "--np", "1", "--out", "sv", env=env)
    assert p.returncode == 0, p.stderr
    assert _opt(_args(env), "--time-budget") == f"{survey.FULL.time_budget:g}s"
    out = tmp_path / "sv"
    doc = json.loads((out / "results.json").read_text())
    assert "launches" not in doc
    assert not list(out.glob("results.launch*.json"))
    # the compact form: summaries in the JSON, the samples beside it, read back by the loader
    assert doc["samples_file"]["path"] == "results.samples.npz" and doc["samples_file"]["samples"]
    assert not any("samples" in m for m in doc["measurements"])
    r = results.load(out / "results.json")
    assert sum(len(m.samples) for m in r.measurements) == doc["samples_file"]["samples"]
    assert doc["survey"] == {"ranks": 1, "cores": survey.node_cpus(), "ranks_from": "np",
                             "oversubscribed": False}
    bad = run_cli("survey", "--np", "1", "--out", "sv", "--launches", "0", env=env)
    assert bad.returncode == 2 and "--launches" in bad.stderr


def test_runner_log_shows_each_progress_line_while_the_runner_runs(tmp_path: Path) -> None:
    """The runner's log is how a long (simulated) survey is followed: each line is in it as
    soon as the runner prints it (block-buffered, the last 8 KB of progress showed up
    minutes late, which read as a run making no progress)."""
    import sys
    import threading
    import time

    go = tmp_path / "go"
    child = ("import os, sys, time\n"
             "print('[1/2] p2p 0 B: 1 s (6 reps)', file=sys.stderr, flush=True)\n"
             "t = time.monotonic()\n"
             f"while not os.path.exists({str(go)!r}) and time.monotonic() - t < 120:\n"
             "    time.sleep(0.05)\n")
    job = survey.Job([sys.executable, "-c", child], {}, 1)
    log = tmp_path / "runner.log"
    t = threading.Thread(target=survey._run_runner, args=(job, log, True))
    t.start()
    seen = False
    end = time.monotonic() + 120
    while not seen and time.monotonic() < end and t.is_alive():
        seen = log.exists() and "[1/2] p2p 0 B" in log.read_text()
        time.sleep(0.05)
    alive = t.is_alive()
    go.touch()
    t.join()
    assert seen and alive
