"""Path migration beside a busy CPU, on a live testbed (root): a job without any fault,
run while one busy loop per core competes with it, must never see a path judged dead or a
migration (the agents' verdicts need kernel evidence, and an agent that was itself late
re-arms its timers instead of blaming the path). Also `testbed run --mptcp-subflows 1`:
plain MPTCP, no second subflow. No test asserts a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from livetb import REPO, fresh_state, have_netns, have_tools, mpilab, pathmig_testbed
from mpilab.pathmig import pingpong as ppm
from mpilab.testbed import net
from mpilab.testbed.spec import Spec
from mpilab.tools import find_tool

pytestmark = [pytest.mark.root, pytest.mark.mpi,
              pytest.mark.skipif(not have_netns("mptcpize", "nstat"),
                                 reason="needs root, ip netns, mptcpize, nstat"),
              pytest.mark.skipif(not have_tools("mpilab-pathmigd", "mpilab-tb-pingpong"),
                                 reason="mpilab-pathmigd not built")]


@pytest.fixture(scope="module")
def tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Spec, dict[str, str]]]:
    yield from pathmig_testbed(tmp_path_factory.mktemp("pmload"), "l", ppm.SPEC_2X1)


@pytest.fixture
def fresh(tb: tuple[Spec, dict[str, str]]) -> Iterator[tuple[Spec, dict[str, str]]]:
    for _ in fresh_state(tb[0]):
        yield tb


def _hogs(n: int) -> list[subprocess.Popen[bytes]]:
    """n busy loops, each in a session (a CPU autogroup) of its own: they weigh what each
    rank weighs (its node's MPI daemon has a session of its own), whatever the priority of
    the test's own session (docs/pathmig.md, "Targets under load")."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
            for _ in range(n)]


# How long the no-fault job runs once its ranks exchange messages. The verdict's timers
# are short: probes every 10 ms, a timeout of 50 ms stretched at most to 20 x that (1 s) by
# slow round trips, and to 1.5 x the longest silence that recently ended with a sign of
# life, a memory kept for the last one or two 15 s windows (RECOVERY_WINDOW in
# src/pathmig/pm_probe.c). 32 s of ping-pong outlast two such windows, so the job also runs
# after a stretch earned at its start (the wire-up) has lapsed, judged by the timeout of
# its round trips alone. A fixed time, not a count of round trips (2000 took 77-121 s
# beside the busy loops), so a loaded machine does not lengthen the job.
NO_FAULT_S = 32.0


def test_no_fault_job_beside_cpu_hogs_is_never_migrated(fresh: tuple[Spec, dict[str, str]],
                                                        tmp_path: Path) -> None:
    sp, env = fresh
    ev, stop = tmp_path / "events.jsonl", tmp_path / "stop"
    hogs = _hogs(os.cpu_count() or 2)  # one busy loop per core, beside the job
    lines: list[str] = []
    try:
        with open(tmp_path / "stderr.txt", "w+") as errf:
            proc = subprocess.Popen(
                [sys.executable, "-m", "mpilab.cli", "testbed", "run", "--pathmig",
                 "--pathmig-events", str(ev), "--timeout", "280", "--",
                 find_tool("mpilab-tb-pingpong"), "--count", "1000000", "--bytes", "1024",
                 "--progress", "20", "--until", str(stop)],
                stdout=subprocess.PIPE, stderr=errf, text=True, env=env, cwd=REPO,
                # a session of its own, as a user's command on a busy node would have: it
                # weighs what each busy loop weighs, not the test run's own priority
                start_new_session=True)
            assert proc.stdout is not None
            first = 0.0
            for line in proc.stdout:
                lines.append(line)
                if " iteration " in line:
                    first = first or time.monotonic()
                    if time.monotonic() - first >= NO_FAULT_S:
                        stop.touch()  # the job ends at its next progress line
            rc = proc.wait(timeout=300)
            errf.seek(0)
            err = errf.read()
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    out = "".join(lines)
    assert rc == 0, out + err
    assert "verified" in out, out
    assert stop.exists(), f"the job ended before {NO_FAULT_S} s of round trips: " + err
    evs = [json.loads(x) for x in ev.read_text().splitlines()]
    states = [e for e in evs if e["event"] == "state"]
    # the job's connections were protected (armed on both sides): the agents did run
    assert sum(1 for e in states if e["to"] == "ARMED") >= 2, states
    dead = [e for e in evs if (e["event"] == "path" and not e["up"]) or e["event"] == "verdict"]
    migrations = [e for e in states if e["from"] == "ARMED" and e["to"] == "MIGRATED"]
    assert not dead and not migrations, (dead + migrations)[:6]
    assert "0 migration(s)" in err, err


def _joins(sp: Spec) -> int:
    """MP_JOIN SYNs received by every node so far (absolute counters)."""
    total = 0
    for n in sp.node_names():
        out = net.sh(["ip", "netns", "exec", sp.ns(n), "nstat", "-asz",
                      "MPTcpExtMPJoinSynRx"]).stdout
        total += sum(int(ln.split()[1]) for ln in out.splitlines()
                     if ln.startswith("MPTcpExtMPJoinSynRx"))
    return total


@pytest.mark.parametrize("opt,second", [(["--mptcp-subflows", "1"], False),
                                        (["--mptcp"], True)], ids=["subflows-1", "mptcp"])
def test_mptcp_subflows_1_is_plain_mptcp(fresh: tuple[Spec, dict[str, str]], opt: list[str],
                                         second: bool) -> None:
    sp, env = fresh
    before = _joins(sp)
    p = mpilab("testbed", "run", *opt, "--timeout", "120", "--",
               find_tool("mpilab-tb-pingpong"), "--count", "300", "--bytes", "1024",
               "--progress", "0", env=env, timeout=150)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (_joins(sp) > before) == second


def test_mptcp_subflows_refusals(tb: tuple[Spec, dict[str, str]]) -> None:
    _, env = tb
    for args, what in ((["--mptcp-subflows", "3"], "has 2 rail(s)"),
                       (["--pathmig", "--mptcp-subflows", "1"], "not with --pathmig"),
                       (["--mptcp-subflows", "0"], "at least 1")):
        p = mpilab("testbed", "run", *args, "--", sys.executable, "-c", "pass", env=env)
        assert p.returncode == 2 and what in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
