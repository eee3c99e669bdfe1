"""Path migration agents on a testbed: one `mpilab-pathmigd` per node namespace, started
detached (they outlive the command that started them; `testbed down` ends them with every
other process of the namespaces), a peers file shared by all, a unix control socket and a
JSON-lines event log per node, all in <state dir>/pathmig/."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from mpilab import documents, pidfile
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.testbed import net
from mpilab.testbed.spec import Spec
from mpilab.tools import find_tool


def agent_dir(spec: Spec) -> Path:
    return net.state_dir(spec.prefix) / "pathmig"


def peers_text(spec: Spec) -> str:
    """Every node and its address on each rail: the agents' shared map."""
    return "".join(f"{n} " + " ".join(spec.addr(n, r) for r in range(spec.rails)) + "\n"
                   for n in spec.node_names())


def setup_kernel(spec: Spec, hosts: list[str]) -> None:
    """MPTCP on, the userspace path manager (the agent) instead of the in-kernel one, no
    in-kernel endpoints: each connection starts with one subflow and the agent adds its
    alternate as a backup subflow."""
    for node in hosts:
        ns = spec.ns(node)
        net.sh(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.mptcp.enabled=1",
                "net.mptcp.pm_type=1"])
        net.sh(["ip", "-n", ns, "mptcp", "endpoint", "flush"])


AGENT = "mpilab-pathmigd"


def pid_of(spec: Spec, node: str) -> int | None:
    """The pid of the node's agent, checked against /proc (mpilab.pidfile.verified)."""
    return pidfile.verified(agent_dir(spec) / f"{node}.pid", AGENT)


def start(spec: Spec, hosts: list[str] | None = None, manual: bool = False,
          alt: str | None = None, extra: list[str] | None = None,
          timeout: float = 30.0) -> dict[str, int]:
    """Start an agent in every chosen node (default: all) that has none running; returns
    {node: pid}. Waits until each has written its pid file (it does so once its sockets are
    open), or fails with the agent's own one-line error."""
    net.require_root()
    if spec.rails < 2:
        raise MpilabError(f"pathmig: testbed '{spec.prefix}' has one rail; path migration "
                          "needs two")
    hosts = hosts or spec.node_names()
    d = agent_dir(spec)
    d.mkdir(parents=True, exist_ok=True)
    atomic_write_text(d / "peers", peers_text(spec))
    setup_kernel(spec, hosts)
    exe = find_tool("mpilab-pathmigd")
    started: dict[str, subprocess.Popen[bytes]] = {}
    out: dict[str, int] = {}
    for node in hosts:
        pid = pid_of(spec, node)
        if pid:
            out[node] = pid
            continue
        (d / f"{node}.pid").unlink(missing_ok=True)
        cmd = ["ip", "netns", "exec", spec.ns(node), exe, "--node", node,
               "--peers", str(d / "peers"), "--control", str(d / f"{node}.sock"),
               "--log", str(d / f"{node}.jsonl"), "--pidfile", str(d / f"{node}.pid")]
        if manual:
            cmd.append("--manual")
        if alt:
            cmd += ["--alt", alt]
        cmd += extra or []
        with open(d / f"{node}.err", "wb") as err:
            started[node] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=err,
                                             start_new_session=True)
    deadline = time.monotonic() + timeout
    for node, proc in started.items():
        ident = pidfile.wait_recorded(d / f"{node}.pid", proc, AGENT,
                                      deadline - time.monotonic(), "pathmig agent")
        if ident is None:
            why = (d / f"{node}.err").read_text().strip().splitlines()
            stop(spec)
            raise MpilabError(f"pathmig agent on {node} did not start: "
                              f"{why[-1] if why else 'no answer'}")
        out[node] = ident.pid
    return out


def request(spec: Spec, node: str, line: str, timeout: float = 10.0) -> dict[str, Any]:
    """Send one command to a node's agent and return its JSON answer."""
    path = agent_dir(spec) / f"{node}.sock"
    if not path.exists() or pid_of(spec, node) is None:
        raise MpilabError(f"pathmig: no agent running on {node} (mpilab pathmig start, or "
                          "mpilab testbed run --pathmig)")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(path))
            s.sendall(line.encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError as e:
            raise MpilabError(f"pathmig: agent on {node}: {e}") from None
    try:
        out: dict[str, Any] = json.loads(data)
    except ValueError:
        raise MpilabError(f"pathmig: agent on {node} sent no valid answer") from None
    return out


def running(spec: Spec) -> dict[str, int]:
    return {n: p for n in spec.node_names() if (p := pid_of(spec, n))}


def job_done(spec: Spec) -> list[str]:
    """Tell every running agent of the testbed that the job is done ("done": no more
    verdicts, probes still answered), before any is stopped: stopped one after another,
    the first to go would otherwise leave its peers' probes unanswered and be judged dead
    by an agent still running. The nodes that took it; an agent that does not answer is
    left to stop()."""
    told = []
    for node in running(spec):
        try:
            if request(spec, node, "done", timeout=2.0).get("ok"):
                told.append(node)
        except MpilabError:
            pass
    return told


def stop(spec: Spec, grace: float = 3.0) -> list[str]:
    """Stop every agent of the testbed ("done" to all of them first, then the stop
    command, SIGTERM, SIGKILL)."""
    pids = running(spec)
    job_done(spec)
    for node in pids:
        try:
            request(spec, node, "stop", timeout=2.0)
        except MpilabError:
            pass
    pidfile.stop([(agent_dir(spec) / f"{n}.pid", AGENT) for n in pids], grace=grace,
                 wait=0.0)
    reap(list(pids.values()))
    return sorted(pids)


def reap(pids: list[int], wait: float = 60.0) -> None:
    """Collect the exit status of those of `pids` that are children of this process (an
    agent started by start() here). Otherwise an agent that was stopped stays a zombie
    (`<defunct>`) as long as this process runs, and then until the machine's init collects
    it (here: up to a minute, seen beside running jobs). Called once every agent has been
    sent SIGKILL if it outlived SIGTERM, so each exits as soon as it is scheduled: this
    returns then; `wait` only bounds a process that cannot die (uninterruptible sleep). A
    one-second bound was a timing assumption that a loaded machine can break."""
    left = set(pids)
    deadline = time.monotonic() + wait
    while left:
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours, or collected already
                left.discard(pid)
                continue
            if done:
                left.discard(pid)
        if not left or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def events(spec: Spec, nodes: list[str] | None = None) -> list[dict[str, Any]]:
    """Every agent's event log, merged in time order."""
    out: list[dict[str, Any]] = []
    for node in nodes or spec.node_names():
        path = agent_dir(spec) / f"{node}.jsonl"
        if not os.path.lexists(path):
            continue
        out += documents.load_lines(path, "pathmig agent log")
    out.sort(key=lambda e: e.get("time", 0.0))
    return out


def collect(spec: Spec, dest: str | os.PathLike[str]) -> int:
    """Write the merged event logs to dest (JSON lines); returns the number of events."""
    evs = events(spec)
    atomic_write_text(dest, "".join(json.dumps(e) + "\n" for e in evs))
    return len(evs)


def clear_logs(spec: Spec) -> None:
    """Remove the agents' own logs (<node>.jsonl, appended by a running agent) before a
    run; the merged logs of earlier runs (run-*.jsonl) are kept (see rotate_runs)."""
    names = set(spec.node_names())
    for p in agent_dir(spec).glob("*.jsonl"):
        if p.stem in names:
            p.unlink()


RUNS_KEPT = 20  # merged event logs of `testbed run --pathmig` kept per testbed


def run_log_path(spec: Spec, now: float | None = None) -> Path:
    """A new name for a run's merged event log: <state>/pathmig/run-<UTC time to the
    microsecond>.jsonl (two runs never share one, and names sort by time)."""
    t = time.time() if now is None else now
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"
    return agent_dir(spec) / f"run-{stamp}.jsonl"


def rotate_runs(spec: Spec, keep: int = RUNS_KEPT) -> list[Path]:
    """Remove the oldest run-*.jsonl of the testbed's agent directory beyond the `keep`
    newest (by name, which is the start time); returns what was removed. Files given
    elsewhere (--pathmig-events) are never touched."""
    runs = sorted(agent_dir(spec).glob("run-*.jsonl"))
    old = runs[:-keep] if keep > 0 else runs
    for p in old:
        p.unlink(missing_ok=True)
    return old


def failed_actions(evs: list[dict[str, Any]]) -> tuple[int, int]:
    """(failed, moot) agent actions in an event log. Moot: the kernel refused the action
    because the connection was already gone, or a join came before the connection was
    fully established (the agent retries it within 50 ms); nothing was lost by either."""
    bad = [e for e in evs if e.get("event") == "action" and not e.get("ok")]
    moot = sum(1 for e in bad if e.get("moot"))
    return len(bad) - moot, moot

def false_counts(events: list[dict[str, Any]], fault_t: float | None) -> tuple[int, int]:
    """(pure) The agents' path-dead verdicts (path events with up false, verdict records)
    and migrations (ARMED -> MIGRATED) logged before the fault's request at fault_t
    (CLOCK_REALTIME s; None: a run without a fault, every record counts): on a healthy
    path each is a false one."""
    before = [e for e in events if fault_t is None or e.get("time", 0) < fault_t]
    dead = sum(1 for e in before if (e["event"] == "path" and not e.get("up", True))
               or e["event"] == "verdict")
    migr = sum(1 for e in before if e["event"] == "state" and e.get("from") == "ARMED"
               and e.get("to") == "MIGRATED")
    return dead, migr
