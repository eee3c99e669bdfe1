"""The table of fault kinds (mpilab.testbed.faults): properties every registered kind must
have, checked for each kind in the table (never a list of names), and the refusals of an
incomplete kind. Without root the kinds run against a fake namespace layer that emulates
the `ip` and `iptables` commands; the same properties on a real testbed are in
test_testbed.py (test_every_fault_kind_is_seen_and_healed)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mpilab.errors import MpilabError
from mpilab.testbed import faults, net
from mpilab.testbed.spec import Spec

SPEC = Spec(prefix="fk", sites=2, nodes_per_site=1, rails=2)


class Unemulated(Exception):
    pass


class FakeNet:
    """The state the built-in kinds touch: switch ports' admin state and one iptables
    chain per namespace, driven by the command lines net.sh would run."""

    def __init__(self) -> None:
        self.down: set[tuple[str, str]] = set()  # (namespace, port)
        self.chains: dict[tuple[str, str], list[list[str]]] = {}  # (ns, chain) -> rules
        self.jumps: dict[str, list[str]] = {}

    def sh(self, cmd: list[str], check: bool = True, input: str | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
        rc, out = self._run(cmd)
        if check and rc != 0:
            raise MpilabError(f"{' '.join(cmd[:6])}: failed")
        return subprocess.CompletedProcess(cmd, rc, out, "")

    def _run(self, cmd: list[str]) -> tuple[int, str]:
        match cmd:
            case ["ip", "-n", ns, "link", "set", port, ("up" | "down") as how]:
                (self.down.add if how == "down" else self.down.discard)((ns, port))
                return 0, ""
            case ["ip", "-n", ns, "-o", "link", "show", port]:
                flags = "BROADCAST,MULTICAST" + ("" if (ns, port) in self.down else ",UP")
                return 0, f"7: {port}@if6: <{flags}> mtu 1500 qdisc noqueue\n"
            case ["ip", "netns", "exec", ns, "iptables", "-w", *args]:
                return self._iptables(ns, args)
        raise Unemulated(" ".join(cmd))

    def _iptables(self, ns: str, args: list[str]) -> tuple[int, str]:
        op, chain, *rule = args
        key = (ns, chain)
        if op == "-S":
            if key not in self.chains:
                return 1, ""
            return 0, "".join(f"-A {chain} {' '.join(r)}\n" for r in self.chains[key])
        if op == "-N":
            self.chains.setdefault(key, [])
            return 0, ""
        if op == "-I" and rule[:1] == ["-j"]:
            self.jumps.setdefault(ns, []).append(f"{chain}->{rule[1]}")
            return 0, ""
        if op in ("-C", "-A", "-D"):
            rules = self.chains.get(key)
            if rules is None:
                return 1, ""
            if op == "-A":
                rules.append(rule)
                return 0, ""
            if rule not in rules:
                return 1, ""
            if op == "-D":
                rules.remove(rule)
            return 0, ""
        raise Unemulated("iptables " + " ".join(args))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeNet:
    fn = FakeNet()
    monkeypatch.setattr(net, "sh", fn.sh)
    monkeypatch.setenv("MPILAB_TESTBED_STATE_ROOT", str(tmp_path))
    net.state_dir(SPEC.prefix).mkdir(parents=True)
    return fn


def test_the_table_is_not_empty_and_every_kind_is_complete() -> None:
    assert faults.kinds(), "no fault kind registered"
    assert faults.kind_names() == tuple(k.name for k in faults.kinds())
    for k in faults.kinds():
        assert faults.kind_problem(k) is None, k.name
        assert faults.get_kind(k.name) is k


@pytest.mark.parametrize("kind", faults.kinds(), ids=faults.kind_names())
def test_every_kind_is_applied_seen_and_healed(kind: faults.FaultKind, fake: FakeNet) -> None:
    node, rail = SPEC.node_names()[-1], SPEC.rails - 1
    try:
        assert faults.active(SPEC) == []
        msg = faults.fail(SPEC, f"{node}:{rail}", kind.name)
    except Unemulated as e:
        pytest.skip(f"the fake layer does not emulate '{e}' (the live test covers it)")
    assert msg == f"{node}:{rail} {kind.name}"
    # seen in place on that rail only, by its own detect and by every listing
    assert kind.detect(SPEC, node, rail)
    assert faults.active(SPEC) == [(node, rail, kind.name)]
    # applying it twice is harmless; heal (no target: every failed rail) undoes it once
    faults.fail(SPEC, f"{node}:{rail}", kind.name)
    assert faults.heal(SPEC, None) == [f"{node}:{rail} {kind.name}"]
    assert not kind.detect(SPEC, node, rail)
    assert faults.active(SPEC) == []
    assert faults.heal(SPEC, f"{node}:{rail}") == []
    log = [(e["event"], e["target"], e["mode"]) for e in faults.read_log(SPEC)]
    assert log == [("fail", f"{node}:{rail}", kind.name)] * 2 + \
        [("heal", f"{node}:{rail}", kind.name)]


def _one_line(e: pytest.ExceptionInfo[MpilabError], name: str) -> str:
    text = str(e.value)
    assert "\n" not in text and f"'{name}'" in text, text
    return text


def _complete(name: str) -> faults.FaultKind:
    def nothing(spec: Spec, node: str, rail: int) -> None:
        pass

    def never(spec: Spec, node: str, rail: int) -> bool:
        return False
    return faults.FaultKind(name, "a test kind", nothing, nothing, never)


@pytest.mark.parametrize("change,why", [
    (dict(heal=None), "heal is not a function"),
    (dict(detect="yes"), "detect is not a function"),
    (dict(apply=lambda spec: None), "apply does not take (spec, node, rail)"),
    (dict(detect=lambda spec, node: True), "detect does not take (spec, node, rail)"),
    (dict(name="Bad Name"), "the name must be"),
    (dict(summary=""), "needs a one-line summary"),
    (dict(summary="two\nlines"), "needs a one-line summary"),
])
def test_an_incomplete_kind_is_refused_naming_it(change: dict[str, object], why: str) -> None:
    before = faults.kind_names()
    k = dataclasses.replace(_complete("partial"), **change)  # type: ignore[arg-type]
    with pytest.raises(MpilabError) as e:
        faults.register(k)
    assert why in _one_line(e, k.name)
    assert faults.kind_names() == before


def test_a_duplicate_kind_is_refused_naming_it() -> None:
    for k in faults.kinds():
        with pytest.raises(MpilabError) as e:
            faults.register(dataclasses.replace(k))
        assert "already registered" in _one_line(e, k.name)


def test_a_kind_its_detect_cannot_see_is_undone_and_refused(
        monkeypatch: pytest.MonkeyPatch, fake: FakeNet) -> None:
    calls: list[str] = []

    def apply(spec: Spec, node: str, rail: int) -> None:
        calls.append("apply")

    def heal(spec: Spec, node: str, rail: int) -> None:
        calls.append("heal")
    k = dataclasses.replace(_complete("blind"), apply=apply, heal=heal)
    monkeypatch.setitem(faults._KINDS, k.name, k)
    with pytest.raises(MpilabError) as e:
        faults.fail(SPEC, "s0n0:0", "blind")
    assert "its detect does not see it" in _one_line(e, "blind")
    assert calls == ["apply", "heal"]


def test_a_kind_whose_heal_leaves_the_fault_is_refused(
        monkeypatch: pytest.MonkeyPatch, fake: FakeNet) -> None:
    k = dataclasses.replace(_complete("sticky"), detect=lambda spec, node, rail: True)
    monkeypatch.setitem(faults._KINDS, k.name, k)
    with pytest.raises(MpilabError) as e:
        faults.heal(SPEC, "s0n0:0")
    assert "heal left the fault in place" in _one_line(e, "sticky")


def test_unknown_modes_name_the_registered_kinds(fake: FakeNet) -> None:
    with pytest.raises(MpilabError) as e:
        faults.fail(SPEC, "s0n0:0", "melt")
    text = str(e.value)
    assert re.fullmatch(r"--mode melt: expected one of .*", text)
    assert all(name in text for name in faults.kind_names())


def _policy() -> tuple[int, int]:
    return os.sched_getscheduler(0), os.sched_getparam(0).sched_priority


def _may_be_realtime() -> bool:
    """Whether this process may take SCHED_FIFO (tried on a child, never on itself)."""
    p = subprocess.run([sys.executable, "-c", "import os; os.sched_setscheduler(0, "
                        "os.SCHED_FIFO, os.sched_param(1))"], capture_output=True)
    return p.returncode == 0


def test_realtime_reaches_the_commands_started_and_is_undone() -> None:
    """The commands a block starts inherit SCHED_FIFO at the priority asked; afterwards the
    caller is as it was. Without the privilege the block runs unchanged and says so."""
    before = _policy()
    show = [sys.executable, "-c",
            "import os; print(os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)"]
    with faults.realtime(faults.CHANGE_PRIORITY) as ok:
        child = subprocess.run(show, capture_output=True, text=True, check=True).stdout.split()
    assert _policy() == before
    assert ok == _may_be_realtime()
    want = (os.SCHED_FIFO, faults.CHANGE_PRIORITY) if ok else before
    assert (int(child[0]), int(child[1])) == want


def test_every_kind_is_applied_and_healed_at_realtime_priority(
        monkeypatch: pytest.MonkeyPatch, fake: FakeNet) -> None:
    """fail and heal run a kind's apply and heal under faults.realtime (a starved `ip link
    set down` leaves the rail half cut for tens of ms: docs/pathmig.md, "Tests"); detect
    and everything else at the caller's own priority."""
    seen: dict[str, tuple[int, int]] = {}

    def apply(spec: Spec, node: str, rail: int) -> None:
        seen["apply"] = _policy()
        fake.down.add(("x", "y"))

    def heal(spec: Spec, node: str, rail: int) -> None:
        seen["heal"] = _policy()
        fake.down.discard(("x", "y"))

    def detect(spec: Spec, node: str, rail: int) -> bool:
        seen["detect"] = _policy()
        return ("x", "y") in fake.down
    k = faults.FaultKind("timed", "a test kind", apply, heal, detect)
    monkeypatch.setitem(faults._KINDS, k.name, k)
    before = _policy()
    faults.fail(SPEC, "s0n0:0", "timed")
    assert faults.heal(SPEC, "s0n0:0") == ["s0n0:0 timed"]
    rt = (os.SCHED_FIFO, faults.CHANGE_PRIORITY) if _may_be_realtime() else before
    assert seen == {"apply": rt, "heal": rt, "detect": before}
    assert _policy() == before
