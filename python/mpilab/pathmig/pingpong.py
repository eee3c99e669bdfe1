"""Drive `mpilab-pm-pingpong` between two testbed nodes (N MPTCP or TCP connections used
round robin, every byte checked) and act at given iteration counts: fail or heal a rail,
ask the agents to arm or migrate. Steps are triggered by the client's progress lines,
never by the wall clock, so a busy machine only slows the run down. The pause of a step
is the longest round trip that ended in the step's window."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpilab.errors import MpilabError
from mpilab.pathmig import agents
from mpilab.testbed import faults
from mpilab.testbed.spec import Spec
from mpilab.tools import find_tool

# the smallest testbed for path migration: two sites of one node, two rails, 1 ms WAN delay
SPEC_2X1 = """\
[cluster]
sites = 2
nodes_per_site = 1
rails = 2

[lan]
rate = "1Gbit"

[wan]
node_rate = "1Gbit"
total_rate = "1Gbit"
delay = "1ms"
"""


@dataclass
class Step:
    at_iter: int
    action: str  # fail | heal | arm | migrate | call
    target: str = ""  # NODE:RAIL for fail/heal, NODE for arm/migrate
    mode: str = "down"
    arg: str = "all"
    fn: Any = None  # for action "call": fn() runs at that point
    t0: float = 0.0  # time.time() when the step began
    t1: float = 0.0  # ... and ended
    result: Any = None


@dataclass
class Result:
    rc: int
    summary: dict[str, Any]
    stderr: str
    steps: list[Step]
    rtts: list[tuple[int, float, float]] = field(default_factory=list)  # iter, end, rtt
    hung: bool = False

    def pause(self, step: Step, window: float = 3.0) -> float:
        """Longest round trip that ended within `window` s after the step began."""
        inside = [r for _, t, r in self.rtts if step.t0 <= t <= step.t0 + window]
        return max(inside) if inside else float("nan")

    def baseline(self, before: float) -> list[float]:
        return [r for _, t, r in self.rtts if t < before]


def _do(spec: Spec, st: Step) -> None:
    st.t0 = time.time()
    if st.action == "fail":
        st.result = faults.fail(spec, st.target, st.mode)
    elif st.action == "heal":
        st.result = faults.heal(spec, st.target or None)
    elif st.action in ("arm", "migrate"):
        st.result = agents.request(spec, st.target, f"{st.action} {st.arg}")
    elif st.action == "call":
        st.result = st.fn()
    else:
        raise MpilabError(f"pingpong step: unknown action {st.action}")
    st.t1 = time.time()


def run(spec: Spec, client: str, server: str, workdir: Path, connections: int = 1,
        nbytes: int = 1024, iters: int = 2000, steps: list[Step] | None = None,
        tcp: bool = False, port: int = 5000, timeout: float = 300.0,
        progress: int = 10, idle: tuple[int, float] | None = None) -> Result:
    """Run one ping-pong from `client` to `server`'s rail-0 address (or, if rail 0 of
    either end is failed now, the first rail that is not); returns its Result. The job is
    killed after `timeout` s (reported as hung). `idle` (I, S): the client waits S seconds
    before round trip I, its connections idle (a step at I runs as the wait begins)."""
    steps = sorted(steps or [], key=lambda s: s.at_iter)
    pp = find_tool("mpilab-pm-pingpong")
    workdir.mkdir(parents=True, exist_ok=True)
    rtt_log = workdir / "rtt.log"
    rtt_log.unlink(missing_ok=True)
    broken = {(n, r) for n, r, _ in faults.active(spec)}
    rail = next((r for r in range(spec.rails)
                 if (client, r) not in broken and (server, r) not in broken), 0)
    common = ["--connections", str(connections), "--bytes", str(nbytes)] + (
        ["--tcp"] if tcp else [])
    srv = subprocess.Popen(["ip", "netns", "exec", spec.ns(server), pp, "--listen",
                            f"0.0.0.0:{port}", *common], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           start_new_session=True)
    assert srv.stdout is not None
    line = srv.stdout.readline()
    if not line.startswith(b"listening"):
        srv.wait()
        raise MpilabError(f"pingpong server did not start: "
                          f"{(srv.stderr.read() if srv.stderr else b'').decode().strip()}")
    cli = subprocess.Popen(["ip", "netns", "exec", spec.ns(client), pp, "--connect",
                            f"{spec.addr(server, rail)}:{port}", *common, "--iters",
                            str(iters), "--progress", str(progress), "--rtt-log", str(rtt_log),
                            *(["--idle", f"{idle[0]}:{idle[1]}"] if idle else [])],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, start_new_session=True)
    assert cli.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(cli.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    pending = list(steps)
    summary: dict[str, Any] = {}
    buf = b""
    hung = False
    os.set_blocking(cli.stdout.fileno(), False)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            hung = True
            break
        if not sel.select(timeout=min(left, 1.0)):
            if cli.poll() is not None:
                break
            continue
        chunk = cli.stdout.read()
        if not chunk:
            if cli.poll() is not None or chunk == b"":
                break
            continue
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for ln in lines:
            text = ln.decode(errors="replace")
            if text.startswith("progress "):
                done = int(text.split()[1])
                while pending and done >= pending[0].at_iter:
                    _do(spec, pending.pop(0))
            elif text.startswith("{"):
                summary = json.loads(text)
    sel.close()
    for p in (cli, srv):
        if hung and p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    try:
        rc = cli.wait(timeout=max(1.0, deadline - time.monotonic()))
        srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        hung = True
        for p in (cli, srv):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        rc = cli.wait()
        srv.wait()
    err = (cli.stderr.read() if cli.stderr else b"").decode() + \
        (srv.stderr.read() if srv.stderr else b"").decode()
    if srv.returncode != 0 and rc == 0:
        rc = srv.returncode
    rtts = []
    if rtt_log.exists():
        for ln in rtt_log.read_text().splitlines():
            i, t, r = ln.split()
            rtts.append((int(i), float(t), float(r)))
    return Result(rc=-1 if hung else rc, summary=summary, stderr=err,
                  steps=steps, rtts=rtts, hung=hung)
