"""Faults on node rails, one table of kinds (`register`, `FaultKind`: apply, heal, detect),
read by `fail`, `heal`, `status`, the scheduler and the pathmig injector alike. Built in:
the switch port goes down (a cut cable: both ends lose the link), or every packet on the
rail is dropped with iptables inside the node. Faults can be
scheduled (`--at`, `--for`) by a detached process (`python -m mpilab.testbed.faults`),
which `down` finds and stops. Every fault and heal is appended to faults.jsonl in the
state dir with time.time() (CLOCK_REALTIME, the clock of results' dates and MPI_Wtime
based stamps) and time.monotonic().

A kind's apply and heal run at real-time priority (`realtime`, SCHED_FIFO CHANGE_PRIORITY,
inherited by the commands they start), so that a fault takes its place at one instant
whatever else keeps the CPUs busy. A switch port's `ip link set down` stops the port's
traffic first and drops the node's carrier only after sleeping in the kernel (RCU, the
port's qdisc); at the share of a CPU a busy machine leaves a low-priority caller (an MPI
job's two busy-polling ranks beside a process at autogroup nice 19) it woke 25-50 ms
later, and for that long the rail was half cut: no traffic, no carrier event for the
agents to see (docs/pathmig.md, "Tests")."""

from __future__ import annotations

import argparse
import datetime as _dt
import inspect
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpilab import argtypes, documents, units
from mpilab.errors import MpilabError
from mpilab.testbed import net
from mpilab.testbed.spec import Spec, parse_node


@dataclass(frozen=True)
class FaultKind:
    """One kind of rail fault. `apply(spec, node, rail)` puts it in place; `detect(spec,
    node, rail)` says whether the system shows it in place on that rail (the system's state,
    never a log: `heal` and `testbed status` find faults with it); `heal(spec, node, rail)`
    removes it completely. Registered with `register`, which refuses an incomplete kind."""

    name: str
    summary: str
    apply: Callable[[Spec, str, int], None]
    heal: Callable[[Spec, str, int], None]
    detect: Callable[[Spec, str, int], bool]


_KINDS: dict[str, FaultKind] = {}


def kind_problem(kind: FaultKind) -> str | None:
    """What is wrong with `kind` itself (None: nothing; a duplicate name is register's)."""
    if not isinstance(kind.name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", kind.name,
                                                          re.ASCII):
        return "the name must be lower-case letters, digits and '_', starting with a letter"
    if not isinstance(kind.summary, str) or not kind.summary.strip() or "\n" in kind.summary:
        return "needs a one-line summary"
    for role in ("apply", "heal", "detect"):
        fn = getattr(kind, role)
        if not callable(fn):
            return f"{role} is not a function (every kind needs apply, heal and detect)"
        try:
            inspect.signature(fn).bind(None, "", 0)
        except TypeError:
            return f"{role} does not take (spec, node, rail)"
        except ValueError:  # a builtin without a signature: taken as it is
            pass
    return None


def register(kind: FaultKind) -> FaultKind:
    """Add a fault kind to the table (the one registration path: the testbed's `fail`,
    `heal`, `status`, the scheduler and the pathmig injector all read it)."""
    problem = "already registered" if kind.name in _KINDS else kind_problem(kind)
    if problem:
        raise MpilabError(f"fault kind '{getattr(kind, 'name', '?')}': {problem}")
    _KINDS[kind.name] = kind
    return kind


def kinds() -> tuple[FaultKind, ...]:
    """Every registered fault kind, in registration order."""
    return tuple(_KINDS.values())


def kind_names() -> tuple[str, ...]:
    return tuple(_KINDS)


def get_kind(name: str, what: str = "--mode") -> FaultKind:
    try:
        return _KINDS[name]
    except KeyError:
        raise MpilabError(f"{what} {name}: expected one of {', '.join(_KINDS)}") from None


def parse_target(spec: Spec, text: str) -> tuple[str, int]:
    """'s0n1:0' or 's0n1:r0' -> ('s0n1', 0), checked against the testbed."""
    m = re.fullmatch(r"([a-z0-9]+):r?([0-9]+)", text, re.ASCII)
    if not m:
        raise MpilabError(f"{text}: expected NODE:RAIL (e.g. s0n1:0)")
    node, rail = m.group(1), int(m.group(2))
    parse_node(node)
    if node not in spec.node_names():
        raise MpilabError(f"{text}: no node {node} in testbed '{spec.prefix}'")
    if rail >= spec.rails:
        raise MpilabError(f"{text}: no rail {rail} (testbed has {spec.rails})")
    return node, rail


def parse_seconds(text: str, what: str) -> float:
    try:
        return units.parse_duration(text)
    except ValueError as e:
        raise MpilabError(f"{what} {text}: {e}") from None


def _iso(t: float) -> str:
    return (_dt.datetime.fromtimestamp(t, _dt.UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"))


def parse_at(text: str, now: float | None = None) -> tuple[float | None, float | None]:
    """`--at`: seconds from now ('2', '1.5s', '500ms') -> (seconds, None); an absolute time,
    ISO 8601 with a time zone ('2026-11-21T12:00:00Z', '...+01:00') or '@EPOCH' (seconds
    since 1970, UTC) -> (None, epoch seconds). Absolute times must not be in the past."""
    now = time.time() if now is None else now
    if not units.is_instant(text):
        return parse_seconds(text, "--at"), None
    try:
        epoch = units.parse_instant(text)
    except ValueError as e:
        raise MpilabError(f"--at {text}: {e}") from None
    if epoch < now:
        raise MpilabError(f"--at {text}: {now - epoch:.1f} s in the past")
    return None, epoch


def _chain(spec: Spec) -> str:
    return f"{spec.prefix}-fault"


def _iptables(ns: str, args: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return net.sh(["ip", "netns", "exec", ns, "iptables", "-w", *args], check=check)


# ---- the built-in kinds ----------------------------------------------------------------

def _switch_port(spec: Spec, node: str, rail: int) -> tuple[str, str]:
    s, j = parse_node(node)
    return spec.sw_ns(s), f"n{j}r{rail}"


def _down_apply(spec: Spec, node: str, rail: int) -> None:
    ns, port = _switch_port(spec, node, rail)
    net.sh(["ip", "-n", ns, "link", "set", port, "down"])


def _down_heal(spec: Spec, node: str, rail: int) -> None:
    ns, port = _switch_port(spec, node, rail)
    net.sh(["ip", "-n", ns, "link", "set", port, "up"])


def _down_detect(spec: Spec, node: str, rail: int) -> bool:
    ns, port = _switch_port(spec, node, rail)
    p = net.sh(["ip", "-n", ns, "-o", "link", "show", port], check=False)
    flags = re.search(r"<([^>]*)>", p.stdout)
    return p.returncode == 0 and bool(flags) and "UP" not in flags.group(1).split(",")


def _drop_rules(rail: int) -> list[list[str]]:
    return [["-i", f"r{rail}", "-j", "DROP"], ["-o", f"r{rail}", "-j", "DROP"]]


def _drop_apply(spec: Spec, node: str, rail: int) -> None:
    ns, chain = spec.ns(node), _chain(spec)
    if _iptables(ns, ["-S", chain], check=False).returncode != 0:
        _iptables(ns, ["-N", chain])
        _iptables(ns, ["-I", "INPUT", "-j", chain])
        _iptables(ns, ["-I", "OUTPUT", "-j", chain])
    for rule in _drop_rules(rail):
        if _iptables(ns, ["-C", chain, *rule], check=False).returncode != 0:
            _iptables(ns, ["-A", chain, *rule])


def _drop_heal(spec: Spec, node: str, rail: int) -> None:
    for rule in _drop_rules(rail):
        while _iptables(spec.ns(node), ["-D", _chain(spec), *rule],
                        check=False).returncode == 0:
            pass


def _drop_detect(spec: Spec, node: str, rail: int) -> bool:
    p = _iptables(spec.ns(node), ["-S", _chain(spec)], check=False)
    return p.returncode == 0 and f"r{rail} -j DROP" in p.stdout


register(FaultKind("down", "the switch port goes down (a cut cable: both ends lose the link)",
                   _down_apply, _down_heal, _down_detect))
register(FaultKind("drop", "every packet on the rail is dropped inside the node (iptables): "
                   "a silent fault, the link stays up", _drop_apply, _drop_heal, _drop_detect))


# ---- using the table ---------------------------------------------------------------------

#: SCHED_FIFO priority of a fault's apply and heal: above the delay line's real-time
#: priority (10 in the benches) and the path-migration agents' (5); the commands are short
CHANGE_PRIORITY = 20


@contextmanager
def realtime(priority: int = CHANGE_PRIORITY) -> Iterator[bool]:
    """Run the block, and every command it starts (children inherit the policy), at
    SCHED_FIFO `priority` (a higher real-time priority already held is kept); yields
    whether it could. Without the privilege (no CAP_SYS_NICE, or a cgroup with no
    real-time budget) the block runs as the caller was. The caller's policy and priority
    are restored afterwards."""
    try:
        old_policy, old_param = os.sched_getscheduler(0), os.sched_getparam(0)
        if old_policy in (os.SCHED_FIFO, os.SCHED_RR):
            priority = max(priority, old_param.sched_priority)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        os.sched_setscheduler(0, old_policy, old_param)


def fail_now(spec: Spec, node: str, rail: int, mode: str, scheduled: bool) -> dict[str, Any]:
    """Put a fault of kind `mode` in place (at real-time priority: `realtime`) and log it
    (the record's time is taken before the commands run, see log_event). Its kind must
    then see it: a fault its own detect cannot see would never be healed, so it is undone
    at once and refused, in one line naming the kind."""
    k = get_kind(mode)
    with realtime():
        began = now_pair()
        k.apply(spec, node, rail)
    rec = log_event(spec, "fail", node, rail, k.name, scheduled, began=began)
    if not k.detect(spec, node, rail):
        with realtime():
            began = now_pair()
            k.heal(spec, node, rail)
        log_event(spec, "heal", node, rail, k.name, scheduled, began=began)
        raise MpilabError(f"fault kind '{k.name}': applied on {node}:{rail} but its detect "
                          "does not see it (heal could never find it)")
    return rec


def heal_rail(spec: Spec, node: str, rail: int, scheduled: bool) -> list[dict[str, Any]]:
    """Undo whatever fault the system shows on this rail, every kind its own detect sees,
    and log each heal; returns the records. A kind whose heal leaves its fault in place is
    refused (one line naming it)."""
    out = []
    for k in kinds():
        if not k.detect(spec, node, rail):
            continue
        with realtime():
            began = now_pair()
            k.heal(spec, node, rail)
        out.append(log_event(spec, "heal", node, rail, k.name, scheduled, began=began))
        if k.detect(spec, node, rail):
            raise MpilabError(f"fault kind '{k.name}': heal left the fault in place on "
                              f"{node}:{rail}")
    return out


def active_on(spec: Spec, node: str, rail: int) -> list[str]:
    """Faults the system shows on one rail (not what a log says)."""
    return [k.name for k in kinds() if k.detect(spec, node, rail)]


def active(spec: Spec) -> list[tuple[str, int, str]]:
    return [(n, r, m) for n in spec.node_names() for r in range(spec.rails)
            for m in active_on(spec, n, r)]


def log_path(spec: Spec) -> Path:
    return net.state_dir(spec.prefix) / "faults.jsonl"


def now_pair() -> tuple[float, float]:
    """(time.time(), time.monotonic()) now: take it before applying or healing a fault and
    give it to log_event as `began`."""
    return time.time(), time.monotonic()


def log_event(spec: Spec, event: str, node: str, rail: int, mode: str,
              scheduled: bool, began: tuple[float, float] | None = None) -> dict[str, Any]:
    """Append one record. `time`/`monotonic` are when the change began (`began`, taken
    before the tc/ip commands ran: the earliest instant the fault can have acted), `done`
    when it was in place; a loaded machine can put tens of milliseconds between them, and
    an agent may well react inside that window."""
    done = time.time()
    now, mono = began if began is not None else (done, time.monotonic())
    rec = {"event": event, "target": f"{node}:{rail}", "mode": mode, "time": now,
           "monotonic": mono, "done": done, "scheduled": scheduled,
           "date": _dt.datetime.fromtimestamp(now, _dt.UTC)
           .isoformat(timespec="milliseconds").replace("+00:00", "Z")}
    line = (json.dumps(rec) + "\n").encode()
    fd = os.open(log_path(spec), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)  # one write of one line: readers never see half a record
    finally:
        os.close(fd)
    return rec


def read_log(spec: Spec) -> list[dict[str, Any]]:
    if not os.path.lexists(log_path(spec)):
        return []
    return documents.load_lines(log_path(spec), "testbed fault log")


def fail(spec: Spec, target: str, mode: str = "down", at: float | None = None,
         duration: float | None = None, at_epoch: float | None = None) -> str:
    """Fail a rail now, `at` seconds from now, or at the absolute time `at_epoch`
    (time.time() seconds); `duration` heals it that long after the failure."""
    node, rail = parse_target(spec, target)
    get_kind(mode)
    if at is not None and at < 0 or duration is not None and duration <= 0:
        raise MpilabError("--at must be >= 0 and --for > 0")
    if at is not None and at_epoch is not None:
        raise MpilabError("--at: give either seconds from now or an absolute time")
    if at_epoch is not None:
        pid = _schedule(spec, node, rail, mode, None, duration, at_epoch)
        return (f"{node}:{rail} {mode} scheduled at {_iso(at_epoch)} "
                f"(in {max(0.0, at_epoch - time.time()):.1f} s)"
                + (f" for {duration:g} s" if duration else "") + f" (pid {pid})")
    if at:
        pid = _schedule(spec, node, rail, mode, at, duration)
        return (f"{node}:{rail} {mode} scheduled in {at:g} s"
                + (f" for {duration:g} s" if duration else "") + f" (pid {pid})")
    fail_now(spec, node, rail, mode, scheduled=False)
    if duration:
        pid = _schedule(spec, node, rail, mode, None, duration)
        return f"{node}:{rail} {mode} now, heals in {duration:g} s (pid {pid})"
    return f"{node}:{rail} {mode}"


def heal(spec: Spec, target: str | None) -> list[str]:
    if target:
        node, rail = parse_target(spec, target)
        todo = [(node, rail)]
    else:
        todo = sorted({(n, r) for n, r, _ in active(spec)})
    return [f"{node}:{rail} {rec['mode']}" for node, rail in todo
            for rec in heal_rail(spec, node, rail, scheduled=False)]


def _schedule(spec: Spec, node: str, rail: int, mode: str, at: float | None,
              duration: float | None, at_epoch: float | None = None) -> int:
    cmd = [sys.executable, "-m", "mpilab.testbed.faults", "--prefix", spec.prefix,
           "--target", f"{node}:{rail}", "--mode", mode]
    if at is not None:
        cmd += ["--at", repr(at)]
    if at_epoch is not None:
        cmd += ["--at-epoch", repr(at_epoch)]
    if duration is not None:
        cmd += ["--for", repr(duration)]
    env = dict(os.environ)
    pkg_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_root + os.pathsep + env.get("PYTHONPATH", "")
    with open(net.state_dir(spec.prefix) / "scheduler.log", "ab") as log:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=log, start_new_session=True, env=env)
    return p.pid


def _scheduler_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="mpilab.testbed.faults")
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--target")
    ap.add_argument("--mode", choices=kind_names())
    ap.add_argument("--at", type=argtypes.real)
    ap.add_argument("--at-epoch", type=argtypes.real)
    ap.add_argument("--for", dest="duration", type=argtypes.duration)
    a = ap.parse_args(argv)
    spec = net.current_spec(a.prefix)
    if not a.target or not a.mode:
        ap.error("--target and --mode are required")
    node, rail = parse_target(spec, a.target)
    t0 = time.monotonic()
    if a.at is not None or a.at_epoch is not None:
        if a.at is not None:
            time.sleep(max(0.0, t0 + a.at - time.monotonic()))
        else:
            # wall-clock target: short sleeps, so a clock step (NTP) is followed
            while (left := a.at_epoch - time.time()) > 0:
                time.sleep(min(left, 0.5))
        fail_now(spec, node, rail, a.mode, scheduled=True)
        t0 = time.monotonic()
    if a.duration:
        time.sleep(max(0.0, t0 + a.duration - time.monotonic()))
        heal_rail(spec, node, rail, scheduled=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(_scheduler_main(sys.argv[1:]))
    except MpilabError as e:
        sys.stderr.write(f"mpilab.testbed.faults: {e}\n")
        sys.exit(2)
