"""`mpilab survey` fits its machine: ranks within the node's CPUs unless asked for more,
progress on any output, and a stopped survey leaves no hidden file (what it measured is
kept under a visible name; the leftovers of a killed one are named and removed by the
next)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env
from mpilab import results
from mpilab.cli import build_parser
from mpilab.commands import survey


@pytest.mark.parametrize("cpus, ranks", [(1, 2), (2, 2), (6, 6)])
def test_default_ranks_on_a_fake_topology(fake_bench: Callable[[str], dict[str, str]],
                                          monkeypatch: pytest.MonkeyPatch,
                                          cpus: int, ranks: int) -> None:
    """No --np: one rank per CPU this process may run on (2 at least: a pair), and the
    launcher is asked for exactly that many; more only with --oversubscribe or --np."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cpus)))
    monkeypatch.setenv("MPILAB_BIN", fake_bench("ok")["MPILAB_BIN"])
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    d = survey.default_ranks()
    assert d == survey.Ranks(ranks, cpus, "cores")
    j, _ = survey._job(None, [], None, None, None, False, None, None, d.np)
    assert j.np == ranks and j.cmd[j.cmd.index("-np") + 1] == str(ranks)
    rec = survey.ranks_record(j.np, None, d, "mpirun.openmpi", False)
    assert rec == {"ranks": ranks, "cores": cpus, "ranks_from": "cores",
                   "oversubscribed": ranks > cpus}
    line = survey.ranks_line(rec)
    assert line.startswith(f"{ranks} ranks") and ("oversubscribed" in line) == (ranks > cpus)
    # asked for more: --oversubscribe (two per CPU) or --np beyond the CPUs, said so
    o = survey.default_ranks(oversubscribe=True)
    assert o.np == max(2, 2 * cpus) and o.source == "oversubscribe"
    rec = survey.ranks_record(o.np, None, o, "mpirun.openmpi", False)
    assert rec["oversubscribed"] and "as asked (--oversubscribe)" in survey.ranks_line(rec)
    rec = survey.ranks_record(2 * cpus + 1, 2 * cpus + 1, d, "mpirun.openmpi", False)
    assert rec["ranks_from"] == "np" and rec["oversubscribed"]
    assert f"as asked (--np {2 * cpus + 1})" in survey.ranks_line(rec)
    # under srun the allocation decides; simulated, the platform
    assert survey.ranks_record(4, None, d, "srun", False)["ranks_from"] == "allocation"
    assert not survey.ranks_record(64, None, d, "smpirun", True)["oversubscribed"]


def test_oversubscribe_is_an_option() -> None:
    a = build_parser().parse_args(["survey", "--oversubscribe"])
    assert a.oversubscribe and a.np is None


def test_progress_lines_on_a_non_terminal(fake_bench: Callable[[str], dict[str, str]],
                                          run_cli: Callable[..., Any]) -> None:
    """Output to a pipe: the stages' names and no rich control sequences."""
    p = run_cli("survey", "--np", "1", "--quick", "--out", "sv", env=fake_bench("ok"))
    assert p.returncode == 0, p.stderr
    for stage in ("1/3 measure", "2/3 validate", "3/3 report"):
        assert stage in p.stderr
    assert "\x1b[" not in p.stderr


def test_stage_writes_a_line_while_it_runs() -> None:
    from io import StringIO

    from mpilab.stage import Stage
    from rich.console import Console

    buf = StringIO()
    con = Console(file=buf, force_terminal=False, width=200)
    with Stage(con, "validate", period=0.05) as st:
        st.note("merging 3 launches")
        end = time.monotonic() + 60
        while "merging" not in buf.getvalue() and time.monotonic() < end:
            time.sleep(0.01)
    assert "  validate: " in buf.getvalue() and ", merging 3 launches" in buf.getvalue()
    quiet = StringIO()
    with Stage(Console(file=quiet, quiet=True), "validate", period=0.01):
        time.sleep(0.1)
    assert quiet.getvalue() == ""


# launch 1 completes; launch 2 writes a checkpoint (partial) and waits to be stopped
_SLOW_RUNNER = """#!{python}
import json, os, sys, time
sys.path.insert(0, {tests!r})
from conftest import make_results
args = sys.argv[1:]
out = args[args.index("--out") + 1]
doc = make_results(ranks=2, sizes=(0, 4096))
if ".launch1." in out:
    with open(out + ".tmp", "w") as f:
        json.dump(doc, f)
    os.replace(out + ".tmp", out)
    sys.exit(0)
with open({pids!r}, "a") as f:
    f.write(f"{{os.getpid()}}\\n")
doc["partial"] = True
doc["partial_reason"] = "checkpoint"
doc["measurements"] = doc["measurements"][:3]
part = out[:-len(".json")] + ".partial.json"
with open(part + ".tmp", "w") as f:
    json.dump(doc, f)
os.replace(part + ".tmp", part)
print("[1/9] p2p 0 B: 1e-06 s (5 reps)", file=sys.stderr, flush=True)
t = time.monotonic()
while time.monotonic() - t < 300:
    time.sleep(0.05)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_survey_leaves_nothing_hidden(tmp_path: Path, sig: int) -> None:
    """Stopped in its second launch: the launcher and runner are gone, the checkpoint is kept
    as results.partial.json (compact, renderable), no hidden file stays, earlier results
    are untouched, and the exit status says which signal."""
    tests = str(Path(__file__).parent)
    pids = tmp_path / "pids"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "mpilab-bench"
    exe.write_text(_SLOW_RUNNER.format(python=sys.executable, tests=tests, pids=str(pids)))
    exe.chmod(0o755)
    env = cli_env()
    env["MPILAB_BIN"] = str(bindir)
    out = tmp_path / "sv"
    out.mkdir()
    (out / "results.json").write_text("earlier results")
    proc = subprocess.Popen([sys.executable, "-m", "mpilab.cli", "survey", "--np", "1",
                             "--launches", "2", "--out", "sv"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 240
    while not list(out.glob(".survey-*.launch2.partial.json")) and time.monotonic() < end:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    assert list(out.glob(".survey-*.launch1.json"))  # hidden files exist while it runs
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130), err
    names = sorted(x.name for x in out.iterdir())
    assert not [n for n in names if n.startswith(".")], names
    assert (out / "results.json").read_text() == "earlier results"
    assert "results.partial.json" in names and "results.partial.samples.npz" in names
    r = results.load(out / "results.partial.json")
    assert r.raw["partial"] is True and len(r.measurements) == 3
    assert any(m.samples for m in r.measurements)
    assert "survey stopped" in err and "sv/results.partial.json" in err
    runner = int(pids.read_text().split()[0])
    end = time.monotonic() + 60
    while _alive(runner) and time.monotonic() < end:
        time.sleep(0.05)
    assert not _alive(runner)


def test_next_survey_names_and_clears_leftovers(fake_bench: Callable[[str], dict[str, str]],
                                                run_cli: Callable[..., Any],
                                                tmp_path: Path) -> None:
    """A survey killed outright (SIGKILL: no clean-up) leaves hidden files; the next survey
    in that folder names and removes them, and a completed survey removes the partial
    results of an earlier stopped one."""
    out = tmp_path / "sv"
    out.mkdir()
    left = [".survey-abc123.launch1.partial.json", ".survey-abc123.json.tmp.4242"]
    for n in left:
        (out / n).write_text("x" * 1000)
    (out / "results.partial.json").write_text(json.dumps({"partial": True}))
    (out / "results.partial.samples.npz").write_bytes(b"x")
    p = run_cli("survey", "--np", "1", "--quick", "--out", "sv", env=fake_bench("ok"))
    assert p.returncode == 0, p.stderr
    for n in left:
        assert n in p.stderr
    assert "removed 2 hidden file(s)" in p.stderr
    assert "results.partial.json" in p.stderr
    names = sorted(x.name for x in out.iterdir())
    assert names == ["report.html", "results.json", "results.samples.npz", "runner.log"]
