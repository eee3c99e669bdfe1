"""`mpilab pathmig ...` and `testbed run --pathmig` without a testbed (no root): every
pathmig command that prints ends quietly when its reader has gone (`| head`), the refusal
of --pathmig-events without --pathmig, and what the arm watcher tells a job's user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mpilab.pathmig.rails import start_notice
from mpilab.pathmig.watch import ArmWatch, LogTail, finish

REPO = Path(__file__).resolve().parents[2]

# Runs one pathmig command against fake agents (no testbed, no root): the agents' replies
# are large enough that the command writes something, and its stdout is a pipe whose
# reader has already gone.
RUNNER = r"""
import sys
from mpilab.pathmig import agents
from mpilab.testbed import net

class FakeSpec:
    prefix = "fk"
    rails = 2
    def node_names(self):
        return ["s0n0", "s1n0"]

conns = [{"token": f"{k:08x}", "peer": "s1n0", "server_side": 0, "state": "ARMED",
          "subflows": [{"rail": 0, "backup": 0, "established": True},
                       {"rail": 1, "backup": 1, "established": True}]} for k in range(500)]

def request(sp, node, line, timeout=10.0):
    if line == "status":
        return {"node": node, "connections": conns, "paths": [], "stats": {}}
    return {"done": 3}

net.current_spec = lambda prefix: FakeSpec()
agents.running = lambda sp: {"s0n0": 11, "s1n0": 12}
agents.request = request
agents.start = lambda sp, hosts=None, manual=False, alt=None: {"s0n0": 11, "s1n0": 12}
agents.stop = lambda sp, grace=3.0: ["s0n0", "s1n0"]
agents.events = lambda sp, nodes=None: [
    {"event": "state", "node": "s0n0", "token": f"{k:08x}", "time": float(k)}
    for k in range(5000)]
from mpilab.cli import main
sys.exit(main(sys.argv[1:]))
"""

COMMANDS = [["start"], ["stop"], ["status"], ["status", "--json"], ["status", "--node", "s0n0"],
            ["arm"], ["migrate", "all"], ["auto", "on"], ["events"], ["events", "--all"]]


@pytest.mark.parametrize("cmd", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_pathmig_command_survives_a_closed_pipe(cmd: list[str]) -> None:
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the command writes anything
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    try:
        p = subprocess.run([sys.executable, "-c", RUNNER, "pathmig", *cmd], stdout=w,
                           stderr=subprocess.PIPE, text=True, env=env, timeout=60)
    finally:
        os.close(w)
    assert p.returncode == 0, p.stderr
    assert p.stderr == "", p.stderr  # no traceback, no internal error


def test_every_pathmig_command_is_in_the_closed_pipe_test() -> None:
    """A pathmig command added later is not left out of the closed-pipe test above."""
    from mpilab.cli import build_parser
    pm = next(a for a in build_parser()._subparsers._group_actions  # type: ignore[union-attr]
              if "pathmig" in a.choices).choices["pathmig"]
    actions = next(a for a in pm._subparsers._group_actions).choices  # type: ignore[union-attr]
    assert set(actions) == {c[0] for c in COMMANDS}


def test_pathmig_command_output_reaches_an_open_pipe() -> None:
    """The same fakes with a reader: the output is all there (the quiet ending above is not
    a command that writes nothing)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    p = subprocess.run([sys.executable, "-c", RUNNER, "pathmig", "events"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 5000, p.stderr


def test_pathmig_events_without_pathmig_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "ev.jsonl"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"),
               MPILAB_TESTBED_STATE_ROOT=str(tmp_path / "none"))
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", "testbed", "run",
                        "--pathmig-events", str(out), "--", "true"],
                       capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "--pathmig-events: only with --pathmig" in p.stderr
    assert not out.exists()


def _ev(t: float, node: str, tok: str, event: str, **kw: object) -> dict[str, object]:
    return {"time": t, "node": node, "token": tok, "event": event, **kw}


ADDR = {"10.77.1.2": "s1n0", "10.77.3.2": "s1n0", "10.77.0.2": "s0n0", "10.77.2.2": "s0n0"}


def test_arm_watch_tells_when_an_unprotected_job_is_armed() -> None:
    w = ArmWatch(100.0, True, ADDR)
    w.feed(_ev(100.5, "s0n0", "aa", "kernel", type="established", server_side=0,
               daddr="10.77.3.2"))
    w.feed(_ev(100.5, "s1n0", "bb", "kernel", type="established", server_side=1,
               daddr="10.77.2.2"))
    assert w.lines() == []
    w.feed(_ev(105.25, "s0n0", "aa", "state", peer="s1n0", to="ARMED",
               cause="alternate established (rail 0)"))
    w.feed(_ev(105.3, "s1n0", "bb", "state", peer="s0n0", to="ARMED",
               cause="alternate loaded by the peer (rail 0)"))
    assert w.lines() == ["pathmig: +5.2 s: connection aa (s0n0 -> s1n0) armed on rail 0: it "
                         "has an alternate path now"]  # the client side only
    assert w.lines() == []
    assert w.summary() == ("pathmig: 1 connection(s) ran without an alternate path until "
                           "armed, the last at +5.2 s")


def test_arming_read_only_after_the_agents_stopped_is_still_told(tmp_path: Path) -> None:
    """An arming that reaches the log after the watcher's last look (the job's last
    moments, an agent slowed by busy CPUs) is still announced, before the summary."""
    log = tmp_path / "s0n0.jsonl"
    log.write_text(json.dumps(_ev(100.5, "s0n0", "aa", "kernel", type="established",
                                  server_side=0, daddr="10.77.3.2")) + "\n")
    w, tail = ArmWatch(100.0, True, ADDR), LogTail([log])
    for e in tail.poll():  # the watcher thread's last look
        w.feed(e)
    assert w.lines() == []
    with log.open("a") as f:  # written afterwards
        f.write(json.dumps(_ev(106.0, "s0n0", "aa", "state", peer="s1n0", to="ARMED",
                               cause="alternate established (rail 0)")) + "\n")
    assert finish(w, tail) == [
        "pathmig: +6.0 s: connection aa (s0n0 -> s1n0) armed on rail 0: it has an alternate "
        "path now",
        "pathmig: 1 connection(s) ran without an alternate path until armed, the last at +6.0 s"]


def test_arm_watch_names_connections_never_armed() -> None:
    w = ArmWatch(0.0, False, ADDR)
    w.feed(_ev(0.1, "s0n0", "aa", "kernel", type="established", server_side=0,
               daddr="10.77.1.2"))
    w.feed(_ev(0.1, "s0n0", "cc", "kernel", type="established", server_side=0,
               daddr="10.77.1.2"))
    w.feed(_ev(0.15, "s0n0", "cc", "state", peer="s1n0", to="ARMED",
               cause="alternate established (rail 1)"))
    # a connection that closed at once had no time to be armed: not counted
    w.feed(_ev(0.2, "s0n0", "dd", "kernel", type="established", server_side=0,
               daddr="10.77.1.2"))
    w.feed(_ev(0.3, "s0n0", "dd", "kernel", type="closed"))
    # outside the testbed: not managed, not counted
    w.feed(_ev(0.2, "s0n0", "ee", "kernel", type="established", server_side=0,
               daddr="192.0.2.1"))
    assert w.lines() == []  # armed at once: nothing to announce
    assert w.summary() == "pathmig: 1 connection(s) never armed (no alternate path: aa s0n0->s1n0)"


def test_arm_watch_quiet_when_all_armed() -> None:
    w = ArmWatch(0.0, False, ADDR)
    w.feed(_ev(0.1, "s0n0", "aa", "kernel", type="established", server_side=0,
               daddr="10.77.1.2"))
    w.feed(_ev(0.12, "s0n0", "aa", "state", peer="s1n0", to="ARMED", cause="x (rail 1)"))
    assert w.lines() == [] and w.summary() is None


def test_start_notice_names_the_hosts_without_an_alternate() -> None:
    """The job-start notice of `testbed run --pathmig`: every host but the first one
    unreached on the other rails (the 2-node case of the live test), one host of four
    (only its connections are unprotected: only it is named), and nothing when every host
    has a second rail (also with a third rail standing in for a down one)."""
    two = start_notice(["s0n0", "s1n0"], {0: ["s1n0"], 1: []}, 1)
    assert two == ("pathmig: rail(s) 0 do not connect s0n0, s1n0 now: the job starts on rail "
                   "1 without an alternate path; its connections are armed when another "
                   "rail works again (said below when it happens)")
    hosts = ["s0n0", "s1n0", "s2n0", "s3n0"]
    one = start_notice(hosts, {0: [], 1: ["s2n0"]}, 0)
    assert one == ("pathmig: rail(s) 1 do not connect s0n0 to s2n0 now: the job starts on "
                   "rail 0, and its connections with s2n0 have no alternate path; they are "
                   "armed when another rail works again (said below when it happens)")
    assert start_notice(hosts, {0: [], 1: []}, 0) is None
    assert start_notice(hosts, {0: ["s2n0"], 1: [], 2: []}, 1) is None
    assert start_notice(hosts, {0: [], 1: ["s2n0"], 2: ["s3n0"]}, 0) is None
    assert start_notice(["s0n0"], {0: [], 1: []}, 0) is None
