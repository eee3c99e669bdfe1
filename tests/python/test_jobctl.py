"""Job control (mpilab.testbed.jobctl) on plain process trees, without a testbed: the time
limit ends a whole tree (children that ignore SIGTERM and keep forking included), with and
without a job cgroup; `testbed down`'s reaping of job cgroups whose mpilab is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mpilab.fsutil import pid_alive
from mpilab.testbed import jobctl

# a tree that resists: the shell and its children ignore SIGTERM, and a child keeps
# starting short-lived grandchildren, so a kill that lists processes first races forks
TREE = ("trap '' TERM; (trap '' TERM; while :; do sleep 0.01; done) & "
        "(trap '' TERM; sleep 1000) & wait")

needs_cgroup = pytest.mark.skipif(os.geteuid() != 0 or jobctl.cgroup2_root() is None,
                                  reason="needs root and a writable cgroup v2 hierarchy")


def _tree_alive(tag: str) -> list[int]:
    return [p for p in jobctl.job_pids(tag) if pid_alive(p)]


def _run_with_limit(tag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                    ) -> tuple[int, Path | None, str]:
    trace = tmp_path / "trace"
    os.environ[jobctl.TRACE_ENV] = str(trace)
    try:
        proc, cg = jobctl.start(["/bin/sh", "-c", TREE], tag, dict(os.environ))
        # wait until the tree is complete (its children visible), whatever the load
        while len(jobctl.cgroup_pids(cg) if cg else _tree_alive(tag)) < 3:
            assert proc.poll() is None
            time.sleep(0.01)
        rc = jobctl.supervise(proc, tag, 0.5, None, cg=cg)
    finally:
        del os.environ[jobctl.TRACE_ENV]
    err = capsys.readouterr().err
    assert trace.read_text().count(f" {tag} ") >= 3  # start, ending, ended
    return rc, cg, err


@needs_cgroup
def test_time_limit_ends_the_whole_tree_through_its_cgroup(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tag = jobctl.new_tag("c11u")
    rc, cg, err = _run_with_limit(tag, tmp_path, capsys)
    assert cg is not None
    assert rc == 124
    assert err.strip().splitlines() == ["mpilab: run: job did not finish within 0.5 s; ended"]
    assert not cg.exists()
    assert _tree_alive(tag) == []


def test_time_limit_ends_the_whole_tree_without_a_cgroup(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobctl, "cgroup2_root", lambda: None)
    tag = jobctl.new_tag("c11v")
    rc, cg, err = _run_with_limit(tag, tmp_path, capsys)
    assert cg is None
    assert rc == 124
    assert len(err.strip().splitlines()) == 1
    assert _tree_alive(tag) == []


@needs_cgroup
def test_a_job_that_ends_by_itself_leaves_no_cgroup() -> None:
    tag = jobctl.new_tag("c11w")
    proc, cg = jobctl.start([sys.executable, "-c", "print('hi')"], tag, dict(os.environ),
                            stdout=subprocess.PIPE)
    assert jobctl.supervise(proc, tag, 60, None, cg=cg) == 0
    assert cg is not None and not cg.exists()


@needs_cgroup
def test_down_reaps_the_cgroup_of_a_job_whose_mpilab_is_gone() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid now names no process: an mpilab killed by SIGKILL
    prefix = f"c11r{os.getpid() % 10000}"
    tag = f"{prefix}-{dead.pid}-0123abcd"
    live_tag = jobctl.new_tag(prefix)  # this process's own job: not stale
    proc, cg = jobctl.start(["sleep", "1000"], tag, dict(os.environ))
    live, live_cg = jobctl.start(["sleep", "1000"], live_tag, dict(os.environ))
    try:
        assert cg is not None and live_cg is not None
        while not jobctl.cgroup_pids(cg) or not jobctl.cgroup_pids(live_cg):
            time.sleep(0.01)
        assert jobctl.prefix_cgroups(prefix) == [cg]
        assert jobctl.reap_cgroups(prefix) == 1
        assert proc.wait(timeout=30) == -signal.SIGKILL
        assert not cg.exists()
        assert live.poll() is None and live_cg.exists()
        assert jobctl.reap_cgroups(prefix, stale_only=False) == 1  # `testbed down`
        assert live.wait(timeout=30) == -signal.SIGKILL
    finally:
        for p in (proc, live):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_a_process_still_exiting_is_not_left_behind(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """When the launcher exits, a process of the job that ends by itself within the grace
    (a daemon still tearing down) is neither killed nor reported; one that stays is killed
    and named in the one line."""
    for stay, expect in ((0.2, False), (600, True)):
        tag = f"jt-left-{os.getpid()}-{int(stay)}"
        # the launcher starts a child outside its process group and exits at once
        proc, cg = jobctl.start(["/bin/sh", "-c", f"setsid sleep {stay} & exit 0"], tag,
                                dict(os.environ))
        try:
            rc = jobctl.supervise(proc, tag, 60.0, None, cg=cg)
            err = capsys.readouterr().err
            assert rc == 0
            assert ("left 1 process(es) behind (sleep " in err) is expect, err
            assert not [p for p in jobctl.job_pids(tag) if pid_alive(p)]
        finally:
            for p in jobctl.job_pids(tag):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
