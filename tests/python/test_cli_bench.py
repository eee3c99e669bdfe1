"""`mpilab report` and `mpilab bench` from the command line (subprocesses)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import real_runner
from mpilab import results, results_model
from mpilab.pair_matrix import expand_all


def _one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# ----------------------------------------------------------------------- mpilab report


def test_report_default_output_beside_results(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path],
        run_cli: Callable[..., Any], tmp_path: Path) -> None:
    doc = synthetic_results(ranks=2, sizes=(0, 1024))
    doc["measurements"] = [m for m in doc["measurements"] if m["op"] in ("p2p", "gather")]
    src = write_json(doc, "run.json")
    p = run_cli("report", str(src))
    assert p.returncode == 0, p.stderr
    out = tmp_path / "run.html"
    assert out.is_file() and 'class="mpilab-fig' in out.read_text()
    assert str(out) in p.stdout

    p = run_cli("report", str(src), "-o", str(tmp_path / "sub" / "x.html"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "sub" / "x.html").is_file()


@pytest.mark.parametrize("content, expected", [
    (None, r"^mpilab: .*missing\.json: no such file$"),
    ('{\n "schema": "mpilab.results/1",\n "provenance": {\n}', r"^mpilab: .*bad\.json:4: "
     r"malformed JSON: "),
    ('{"schema": "mpilab.results/0", "provenance": {}, "measurements": []}',
     r"^mpilab: .*bad\.json:1: schema is \"mpilab.results/0\", expected 'mpilab.results/1'$"),
    ('{"provenance": {}, "measurements": []}', r"^mpilab: .*bad\.json: schema is missing"),
    ('{"schema": "mpilab.results/1", "provenance": {},\n "measurements": [{"op": "scatter", '
     '"timing": "max", "bytes": -1, "stats": {"mean": 1, "ci_half": 0, "reps": 1}}]}',
     r"^mpilab: .*bad\.json:2: measurements\[0\]\.bytes: -1 is below 0$"),
])
def test_report_bad_input_one_line_exit_2_no_output(
        run_cli: Callable[..., Any], tmp_path: Path, content: str | None, expected: str) -> None:
    name = "missing.json" if content is None else "bad.json"
    if content is not None:
        (tmp_path / name).write_text(content)
    before = sorted(p.name for p in tmp_path.iterdir())
    p = run_cli("report", name)
    assert p.returncode == 2
    assert re.match(expected, _one_line(p.stderr)), p.stderr
    assert p.stdout == ""
    assert sorted(x.name for x in tmp_path.iterdir()) == before  # no report, no temp file


def test_report_output_is_a_directory(synthetic_results: Callable[..., dict[str, Any]],
                                      write_json: Callable[..., Path],
                                      run_cli: Callable[..., Any], tmp_path: Path) -> None:
    src = write_json(synthetic_results(ranks=2, sizes=(8,)))
    (tmp_path / "d").mkdir()
    p = run_cli("report", str(src), "-o", str(tmp_path / "d"))
    assert p.returncode == 2
    assert "is a directory" in _one_line(p.stderr)


# ----------------------------------------------------------------------- mpilab bench (fake)


def _args(env: dict[str, str]) -> list[str]:
    return json.loads(Path(env["FAKE_BENCH_ARGS"]).read_text())


def test_bench_passes_arguments_and_writes_report(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    env = fake_bench("ok")
    p = run_cli("bench", "--np", "1", "--launches", "1", "--out", "res/run.json", "--report",
                "--", "--ops", "scatter:linear", "--sizes", "1K:4K:x2", "--quiet", env=env)
    assert p.returncode == 0, p.stderr
    assert _args(env) == ["--ops", "scatter:linear", "--sizes", "1K:4K:x2", "--quiet",
                          "--out", "res/run.json"]
    assert "op bytes mean" in p.stdout  # the runner's own output reaches the user
    r = results.load(tmp_path / "res" / "run.json")
    assert r.provenance["command"].startswith("mpilab-bench --ops scatter:linear")
    assert (tmp_path / "res" / "run.html").is_file()


def test_bench_out_given_to_runner_is_used_for_report(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    env = fake_bench("ok")
    p = run_cli("bench", "--np", "1", "--launches", "1", "--report", "--", "--out", "a.json",
                env=env)
    assert p.returncode == 0, p.stderr
    assert _args(env) == ["--out", "a.json"]
    assert (tmp_path / "a.html").is_file()


def test_bench_propagates_runner_exit_status(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    env = fake_bench("exit3")
    p = run_cli("bench", "--np", "1", "--out", "x.json", "--report", "--", "--ops", "nosuch",
                env=env)
    assert p.returncode == 3
    assert "mpilab: mpilab-bench exited with status 3" in p.stderr
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "x.html").exists()


def test_bench_failed_run_leaves_no_folder_of_its_own(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    """The results file's missing folders are made only after the arguments were checked,
    and a run that wrote nothing removes them again; a folder that was there stays."""
    env = fake_bench("exit3")
    p = run_cli("bench", "--np", "0", "--out", "new/sub/x.json", "--", "--ops", "p2p", env=env)
    assert p.returncode == 2 and not (tmp_path / "new").exists()
    p = run_cli("bench", "--np", "1", "--out", "new/sub/x.json", "--", "--ops", "p2p", env=env)
    assert p.returncode == 3 and not (tmp_path / "new").exists()
    (tmp_path / "kept").mkdir()
    p = run_cli("bench", "--np", "1", "--out", "kept/sub/x.json", "--", "--ops", "p2p", env=env)
    assert p.returncode == 3 and (tmp_path / "kept").is_dir()
    assert not (tmp_path / "kept" / "sub").exists()
    p = run_cli("bench", "--np", "1", "--launches", "1", "--out", "made/x.json", "--",
                "--ops", "p2p", env=fake_bench("ok"))
    assert p.returncode == 0 and (tmp_path / "made" / "x.json").is_file()


@pytest.mark.parametrize("argv, expected", [
    (["--report", "--", "--ops", "p2p"], "--report needs --out FILE"),
    (["--out", "a.json", "--", "--out", "b.json"], "--out given twice"),
    (["--np", "0", "--", "--list"], "--np 0: need at least 1 rank"),
])
def test_bench_bad_usage(fake_bench: Callable[[str], dict[str, str]],
                         run_cli: Callable[..., Any], tmp_path: Path, argv: list[str],
                         expected: str) -> None:
    env = fake_bench("ok")
    p = run_cli("bench", *argv, env=env)
    assert p.returncode == 2
    assert expected in _one_line(p.stderr)
    assert not Path(env["FAKE_BENCH_ARGS"]).exists()  # the runner never started


def test_bench_without_runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No runner in $MPILAB_BIN, the source tree or PATH: one-line error, exit 2."""
    import mpilab.tools
    from mpilab.cli import main

    monkeypatch.setattr(mpilab.tools, "REPO", tmp_path)  # a tree with no build/bin
    monkeypatch.setenv("MPILAB_BIN", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["bench", "--np", "1", "--", "--list"]) == 2


def test_find_tool_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import mpilab.tools
    from mpilab.errors import MpilabError

    monkeypatch.setattr(mpilab.tools, "REPO", tmp_path)
    monkeypatch.delenv("MPILAB_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MpilabError, match="mpilab-bench: tool not found"):
        mpilab.tools.find_tool("mpilab-bench")
    monkeypatch.setenv("MPILAB_BIN", str(tmp_path))
    with pytest.raises(MpilabError, match="mpilab-bench: not in MPILAB_BIN"):
        mpilab.tools.find_tool("mpilab-bench")
    tool = tmp_path / "mpilab-bench"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert mpilab.tools.find_tool("mpilab-bench") == str(tool)


# ----------------------------------------------------------------------- with the real runner

needs_runner = pytest.mark.skipif(real_runner() is None,
                                  reason="mpilab-bench not built (scripts/build builds it into "
                                         "build/bin; or set MPILAB_BIN)")


@pytest.mark.mpi
@needs_runner
def test_bench_end_to_end_real_runner(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    from conftest import cli_env

    env = cli_env()
    env["MPILAB_BIN"] = str(Path(real_runner() or "").parent)
    p = run_cli("bench", "--np", "2", "--launches", "1", "--out", "e2e.json", "--report", "--",
                "--ops", "p2p,scatter:linear", "--sizes", "0,1K", "--timing", "max",
                "--min-reps", "2", "--max-reps", "3", "--quiet", env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    r = results.load(tmp_path / "e2e.json")
    assert r.provenance.get("ranks") == 2
    p2p = r.p2p()
    assert {m.pair for m in p2p} == {(0, 1)}
    assert sorted(m.bytes for m in p2p) == [0, 1024]
    sc = [m for m in r.measurements if m.op == "scatter"]
    assert {(m.impl, m.timing) for m in sc} == {("linear", "max")}
    assert all(1 <= m.stats.reps <= 3 and m.stats.mean > 0 for m in sc)
    assert (tmp_path / "e2e.html").is_file()


@pytest.mark.mpi
@needs_runner
def test_default_bench_imports_neither_numpy_nor_scipy(tmp_path: Path) -> None:
    """The default run (one launch merged through the launch-variation store, table and
    verdict; every run after the first, which measures the variation) needs no numpy or
    scipy: their imports cost more than the gap to the peers' wall time. -X importtime lists
    every module the command imported."""
    import sys

    from conftest import cli_env

    env = cli_env()
    env["MPILAB_BIN"] = str(Path(real_runner() or "").parent)
    for _ in range(2):  # the first run measures the variation (3 launches, once); the
        # second is the default every later run makes: one launch merged through the store
        p = subprocess.run([sys.executable, "-X", "importtime", "-m", "mpilab.cli", "bench",
                            "--np", "2", "--out", "d.json", "--", "--ops", "p2p", "--sizes",
                            "1:1K:x4", "--quiet"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
        mods = {ln.rsplit("|", 1)[-1].strip() for ln in p.stderr.splitlines()
                if ln.startswith("import time:")}
        assert {"mpilab.launches", "mpilab.launchvar"} <= mods  # the merge path ran
    assert "one launch" in p.stderr
    assert not {m for m in mods if m.split(".")[0] in ("numpy", "scipy")}


@pytest.mark.mpi
@needs_runner
def test_bench_real_runner_bad_op(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    from conftest import cli_env

    env = cli_env()
    env["MPILAB_BIN"] = str(Path(real_runner() or "").parent)
    p = run_cli("bench", "--np", "2", "--out", "bad.json", "--", "--ops", "nosuchop",
                env=env, timeout=600)
    assert p.returncode != 0
    assert "nosuchop" in p.stderr
    assert not (tmp_path / "bad.json").exists()


def test_report_matrix_sizes(synthetic_results: Callable[..., dict[str, Any]],
                             write_json: Callable[..., Path], run_cli: Callable[..., Any],
                             tmp_path: Path) -> None:
    doc = synthetic_results(ranks=3, sizes=(0, 1024, 65536))
    doc["measurements"] = [m for m in doc["measurements"] if m["op"] == "p2p"]
    del doc["models"]
    src = write_json(doc, "run.json")
    p = run_cli("report", str(src), "--matrix-sizes", "1K,64k,0")
    assert p.returncode == 0, p.stderr
    heads = re.findall(r"<h3>Latency matrix, ([^<]*)</h3>", (tmp_path / "run.html").read_text())
    assert heads == ["1 KiB (parallel schedule)", "64 KiB (parallel schedule)",
                     "0 B (parallel schedule)"]
    (tmp_path / "run.html").unlink()
    for bad, msg in (("512", "no point-to-point measurement of 512 bytes (parallel schedule) "
                             "(sizes: 0, 1024, 65536)"),
                     ("4X", "--matrix-sizes: '4X' is not a size")):
        p = run_cli("report", str(src), "--matrix-sizes", bad)
        assert p.returncode == 2
        assert msg in _one_line(p.stderr)
        assert not (tmp_path / "run.html").exists()


def test_out_in_args() -> None:
    from mpilab.commands import bench
    from mpilab.errors import MpilabError

    assert bench.out_in_args(["--ops", "p2p", "--out=x.json"]) == "x.json"
    assert bench.out_in_args(["--ops", "p2p"]) is None
    with pytest.raises(MpilabError, match="--out needs a FILE"):
        bench.out_in_args(["--out"])


# ----------------------------------------------------------------------- LogGP (--models)


def _run_runner(tmp_path: Path, np: int, *args: str,
                timeout: float = 240) -> Any:
    """The real mpilab-bench under mpirun, directly (its own stderr, no CLI wrapper)."""
    import shutil
    import tempfile

    from conftest import cli_env
    from mpilab.launch import mpirun_command

    env = cli_env()
    # a session directory of its own, short: Open MPI's unix socket paths under TMPDIR are
    # limited to 108 bytes (pytest's tmp_path is too long for that)
    tmp = tempfile.mkdtemp(prefix="lg", dir="/tmp")
    env["TMPDIR"] = tmp
    runner = str(Path(real_runner() or "").resolve())
    cmd = mpirun_command(np, ["--mca", "btl", "self,vader,tcp"]) + [runner, *args]
    try:
        return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=timeout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.mpi
@needs_runner
@pytest.mark.parametrize("args, expected", [
    (["--models", "hockney,nosuch"], "--models: unknown model 'nosuch' (hockney, loggp, lmo)"),
    (["--models", "loggp,"], "--models: empty item in 'loggp,'"),
    (["--models", "loggp", "--no-fit"], "--no-fit contradicts --models loggp"),
    (["--models", "loggp", "--sizes", "1K"],
     "--models loggp needs at least 2 message sizes in --sizes"),
    (["--models", "loggp", "--loggp-burst", "1"], "--loggp-burst: 1 outside 2..100000"),
    (["--models", "loggp", "--loggp-burst", "x"], "--loggp-burst: 'x' is not an integer"),
    (["--models", "loggp", "--loggp-or-wait", "1"], "--loggp-or-wait: 1 outside (1,1000]"),
])
def test_runner_models_bad_value_one_line_no_output(tmp_path: Path, args: list[str],
                                                     expected: str) -> None:
    p = _run_runner(tmp_path, 2, "--ops", "p2p", "--sizes", "0,1K", *args, "--out", "o.json",
                    timeout=600)
    assert p.returncode == 2, p.stderr
    assert _one_line(p.stderr) == f"mpilab-bench: {expected}"
    assert not (tmp_path / "o.json").exists()
    assert not [x for x in tmp_path.iterdir() if x.name.startswith("o.json")]


@pytest.mark.mpi
@needs_runner
def test_runner_predictions_against_the_median(tmp_path: Path) -> None:
    """Every model's "measured" is the measurement's median (the figure the tables show),
    labelled as such, never the mean."""
    p = _run_runner(tmp_path, 2, "--ops", "p2p,scatter:linear,gather:binomial", "--sizes",
                    "0,1K,16K", "--max-reps", "40", "--models", "hockney,loggp",
                    "--loggp-burst", "4", "--quiet", "--out", "pm.json")
    assert p.returncode == 0, p.stderr
    raw = json.loads((tmp_path / "pm.json").read_text())
    med = {(m["op"], m["impl"], m["timing"], m["bytes"]): m["stats"]["median"]
           for m in list(expand_all(raw["measurements"]))}
    preds = raw["models"]["predictions"] + raw["models"]["loggp"]["predictions"]
    assert preds
    for x in preds:
        assert x["measured_statistic"] == "median"
        assert x["measured"] == med[(x["op"], x["impl"], x["timing"], x["bytes"])]


@pytest.mark.mpi
@needs_runner
def test_runner_time_budget_shared_and_recorded(tmp_path: Path) -> None:
    """--time-budget is shared over the run's measurements: each stops at its share of
    samples (recorded as precision.max_time_s), converged or flagged, never by a hidden
    repetition cap; a bad budget is one line and no output."""
    p = _run_runner(tmp_path, 2, "--ops", "p2p,bcast", "--sizes", "1,4K", "--eps", "1e-9",
                    "--time-budget", "0.2s", "--quiet", "--out", "tb.json")
    assert p.returncode == 0, p.stderr
    raw = json.loads((tmp_path / "tb.json").read_text())
    ms = list(expand_all(raw["measurements"]))
    assert len(ms) == 4
    for m in ms:
        share = m["precision"]["max_time_s"]
        assert share == pytest.approx(0.2 / 4)
        assert m["precision"]["max_reps"] == 1000000
        # eps 1e-9 cannot be reached: every measurement ends on its budget, not converged
        assert m["stats"]["converged"] is False
        assert sum(m["samples"]) >= share  # ended by its budget, not by a repetition cap
        assert m["stats"]["reps"] < m["precision"]["max_reps"]
    bad = _run_runner(tmp_path, 2, "--ops", "p2p", "--time-budget", "soon", "--out", "x.json")
    assert bad.returncode == 2
    assert _one_line(bad.stderr).startswith("mpilab-bench: --time-budget: 'soon'")
    assert not (tmp_path / "x.json").exists()


@pytest.mark.mpi
@needs_runner
def test_runner_loggp_json_validates_and_renders(run_cli: Callable[..., Any],
                                                 tmp_path: Path) -> None:
    sizes = [0, 1024, 16384]
    p = _run_runner(tmp_path, 3, "--ops", "p2p,scatter:linear,gather:linear", "--sizes",
                    ",".join(map(str, sizes)), "--min-reps", "3", "--max-reps", "6",
                    "--models", "hockney,loggp", "--loggp-burst", "4", "--quiet",
                    "--out", "lg.json")
    assert p.returncode == 0, p.stderr
    assert "LogGP per pair" in p.stdout
    r = results.load(tmp_path / "lg.json")
    assert r.provenance["options"]["models"] == ["hockney", "loggp"]
    assert len(r.hockney) == 3  # the default model is still there
    assert [(x.i, x.j) for x in r.loggp] == [(0, 1), (0, 2), (1, 2)]
    for lp in r.loggp:
        assert lp.params is not None, lp.error
        assert lp.params.L >= 0 and lp.params.G >= 0
        assert [pt.bytes for pt in lp.per_size] == sizes
        assert all(pt.rtt > 0 and pt.os > 0 and pt.orr > 0 for pt in lp.per_size)
    raw = r.raw["models"]["loggp"]["pairs"][0]["per_size"][0]
    budget = r.provenance["options"]["precision"]["max_time_s"]
    for q in ("rtt", "os", "or", "g"):
        reps, samples = raw["stats"][q]["reps"], raw["samples"][q]
        assert len(samples) == reps and 1 <= reps <= 6
        # fewer than --min-reps only when the time budget ended the series (its samples'
        # positive sum, as the stopping rule counts it: slow repetitions on a loaded machine)
        assert reps >= 3 or (budget > 0 and sum(max(x, 0.0) for x in samples) >= budget), \
            (q, reps, samples, budget)
    # LogGP predictions for every measured linear scatter/gather size
    assert sorted((x.op, x.bytes) for x in r.loggp_predictions) == \
        sorted((op, b) for op in ("scatter", "gather") for b in sizes)
    assert all(x.predicted > 0 for x in r.loggp_predictions)
    q = run_cli("report", "lg.json")
    assert q.returncode == 0, q.stderr
    assert "LogGP parameters per pair" in (tmp_path / "lg.html").read_text()


def _lowbit(v: int) -> int:
    return v & -v


def _loggp_binomial(pairs: list[results_model.LogGPPair], p: int, root: int, nbytes: float,
                    gather: bool) -> float:
    """LogGP binomial scatter/gather written out from docs/models-loggp.md: parent(v) = v with
    its lowest bit cleared, each message carries the child's subtree and is charged with
    the pair's range of its own size."""
    by_pair = {(x.i, x.j): x for x in pairs}

    def params(a: int, b: int, m: float) -> results_model.LogGPParams:
        x = by_pair[(min(a, b), max(a, b))].params_for(m)
        assert x is not None
        return x

    def blocks(v: int) -> int:
        return min(_lowbit(v), p - v)

    def children(v: int) -> list[int]:
        return [c for c in range(v + 1, p) if c & (c - 1) == v]

    ready = [0.0] * p
    if not gather:
        worst = 0.0
        for v in range(p):
            start = ready[v]
            for c in sorted(children(v), reverse=True):
                m = blocks(c) * nbytes
                q = params((v + root) % p, (c + root) % p, m)
                ready[c] = start + q.time(m)
                worst = max(worst, ready[c])
                start += max(q.g + q.G * m, q.os + q.os_per_byte * m)
        return worst
    for v in reversed(range(p)):
        done: float | None = None
        for c in children(v):
            m = blocks(c) * nbytes
            q = params((c + root) % p, (v + root) % p, m)
            arrive = ready[c] + q.os + q.L + max(m - 1, 0) * q.G
            o_r = q.orr + q.or_per_byte * m
            begin = arrive if done is None else max(arrive, done + max(q.g + q.G * m - o_r, 0))
            done = begin + o_r
        ready[v] = 0.0 if done is None else done
    return ready[0]


@pytest.mark.mpi
@needs_runner
def test_runner_loggp_binomial_predictions(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    sizes = [0, 1024, 65536]
    nranks, root = 4, 1
    p = _run_runner(tmp_path, nranks, "--ops", "p2p,scatter,gather", "--sizes",
                    ",".join(map(str, sizes)), "--min-reps", "3", "--max-reps", "5",
                    "--root", str(root), "--models", "hockney,loggp", "--loggp-burst", "4",
                    "--quiet", "--out", "lb.json")
    assert p.returncode == 0, p.stderr
    r = results.load(tmp_path / "lb.json")
    assert all(x.params is not None for x in r.loggp)
    got = {(x.op, x.impl, x.bytes): x for x in r.loggp_predictions}
    # every measured entry that declares a model pattern (from the entry list, not names),
    # every size; nothing for the others
    listed = json.loads(subprocess.run([str(real_runner()), "--list", "--json"], check=True,
                                       capture_output=True, text=True).stdout)["entries"]
    patterned = {(e["name"], e["impl"]) for e in listed
                 if e["name"] in ("scatter", "gather") and "grid" not in e["needs"]
                 and e["model"] not in (None, "fit")}
    assert patterned
    assert sorted(got) == sorted((op, impl, b) for op, impl in patterned for b in sizes)
    for (op, impl, b), x in got.items():
        assert x.predicted > 0 and x.measured is not None and x.measured > 0
        if impl == "binomial":
            want = _loggp_binomial(r.loggp, nranks, root, b, op == "gather")
            assert x.predicted == pytest.approx(want, rel=1e-9), (op, b)
    q = run_cli("report", "lb.json")
    assert q.returncode == 0, q.stderr
    html = (tmp_path / "lb.html").read_text()
    sect = html[html.index("LogGP predictions versus measured"):]
    assert "binomial" in sect and "linear" in sect


@pytest.mark.mpi
@needs_runner
def test_runner_default_has_no_loggp(tmp_path: Path) -> None:
    p = _run_runner(tmp_path, 2, "--ops", "p2p", "--sizes", "0,1K", "--min-reps", "2",
                    "--max-reps", "3", "--quiet", "--out", "d.json", timeout=600)
    assert p.returncode == 0, p.stderr
    r = results.load(tmp_path / "d.json")
    assert r.loggp == [] and "loggp" not in r.raw["models"] and len(r.hockney) == 1
    assert "LogGP" not in p.stdout


@pytest.mark.mpi
@needs_runner
def test_runner_isolation_list_notes_disagreements(tmp_path: Path) -> None:
    """--isolation barrier,none: each entry, timing and size under both (opspec once); a
    pair is flagged isolation_differs, with the other figure beside it and a note under the
    table, exactly when the two medians' intervals are apart."""
    p = _run_runner(tmp_path, 2, "--ops", "bcast,scatter:linear", "--sizes", "1K,64K",
                    "--timing", "max,opspec", "--isolation", "barrier,none",
                    "--max-reps", "60", "--out", "iso.json")
    assert p.returncode == 0, p.stderr
    raw = json.loads((tmp_path / "iso.json").read_text())
    assert raw["provenance"]["options"]["isolations"] == ["barrier", "none"]
    ms = list(expand_all(raw["measurements"]))
    keys = [(m["op"], m["timing"], m["bytes"], m["isolation"]) for m in ms]
    assert len(keys) == len(set(keys))
    for op in ("bcast", "scatter"):
        for b in (1024, 65536):
            assert (op, "max", b, "barrier") in keys and (op, "max", b, "none") in keys
    assert sum(1 for m in ms if m["timing"] == "opspec") == 2  # scatter, 2 sizes, once
    from mpilab import quality
    pairs = quality.isolation_pairs(ms)
    assert len(pairs) == 4
    for a, b, differs in pairs:
        for k, o in ((a, b), (b, a)):
            assert (quality.ISOLATION_DIFFERS in ms[k]["flags"]) == differs
            if differs:
                assert ms[k]["isolation_other"]["median"] == ms[o]["stats"]["median"]
                assert ms[k]["isolation_other"]["isolation"] == ms[o]["isolation"]
            else:
                assert "isolation_other" not in ms[k]
    notes = [x for x in p.stdout.splitlines() if x.startswith("note: ") and " B: " in x]
    assert len(notes) == sum(1 for *_, d in pairs if d)


def _one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_mpi_stack_chosen_by_name_and_wrong_bin_refused(run_cli: Callable[..., Any],
                                                        tmp_path: Path) -> None:
    """`mpilab --mpi mpich` runs build-mpich's tools; an unknown name, a build that is not
    there and a MPILAB_BIN without the tool are each one line and exit 2, never a silent
    fallback to build/bin (issue 28 item 5)."""
    import os

    from mpilab import tools

    env = dict(os.environ)
    env.pop("MPILAB_BIN", None)
    p = run_cli("--mpi", "lam", "bench", "--", "--list", env=env)
    assert p.returncode == 2 and _one_line(p.stderr) == \
        "mpilab: --mpi lam: expected one of openmpi, mpich"
    p = run_cli("bench", "--", "--list", env=dict(env, MPILAB_BIN=str(tmp_path / "nope")))
    assert p.returncode == 2 and "no such directory" in _one_line(p.stderr)
    p = run_cli("bench", "--", "--list", env=dict(env, MPILAB_BIN=str(tmp_path)))
    assert p.returncode == 2
    assert _one_line(p.stderr) == f"mpilab: mpilab-bench: not in MPILAB_BIN={tmp_path} " \
                                  "(that build has no mpilab-bench)"
    if not (tools.REPO / "build-mpich" / "bin" / "mpilab-bench").is_file():
        pytest.skip("build-mpich not built")
    out = tmp_path / "m.json"
    p = run_cli("--mpi", "mpich", "bench", "--np", "2", "--launches", "1", "--",
                "--ops", "p2p", "--sizes", "1", "--min-reps", "2", "--max-reps", "3",
                "--quiet", "--out", str(out), env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["provenance"]["mpi"].startswith("MPICH")


def test_global_mpi_option_does_not_take_a_subcommands_own() -> None:
    """`testbed run --mpi auto` is that command's launcher choice, not `mpilab --mpi`."""
    from mpilab import cli

    a = cli.build_parser().parse_args(["testbed", "run", "--mpi", "auto", "--", "true"])
    assert a.mpi == "auto" and a.mpi_build is None
    a = cli.build_parser().parse_args(["--mpi", "mpich", "report", "r.json"])
    assert a.mpi_build == "mpich"


def test_each_command_module_registers_the_name_it_is_listed_under() -> None:
    """mpilab.cli.COMMANDS is what lets a command line import one module: every module
    registers exactly its listed name, and a named command parses with that module alone."""
    import argparse
    import importlib

    from mpilab import cli

    for name, module in cli.COMMANDS.items():
        p = argparse.ArgumentParser()
        sub = p.add_subparsers()
        importlib.import_module(module).register(sub)
        assert list(sub.choices) == [name]
    one = cli.build_parser(["--mpi", "mpich", "report", "r.json"])
    subs = next(a for a in one._actions if isinstance(a, argparse._SubParsersAction))
    assert list(subs.choices) == ["report"]
    assert one.parse_args(["--mpi", "mpich", "report", "r.json"]).mpi_build == "mpich"
    every = cli.build_parser(["--help"])
    subs = next(a for a in every._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(subs.choices) == sorted(cli.COMMANDS)
    version = cli.build_parser(["--version"])  # needs no command module
    subs = next(a for a in version._actions if isinstance(a, argparse._SubParsersAction))
    assert list(subs.choices) == []
    assert sorted(next(a for a in cli.build_parser(["--version", "--help"])._actions
                       if isinstance(a, argparse._SubParsersAction)).choices) \
        == sorted(cli.COMMANDS)
