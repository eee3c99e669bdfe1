"""Which rail a job can start on: the hostfile and Open MPI's out-of-band channel use one
rail's addresses, so a rail that is down (link down, or silently dropping) when the job
starts would hang it. The first rail on which the first host reaches every other host
is chosen (a probe, not the fault log: it also sees faults made by other means)."""

from __future__ import annotations

import subprocess

from mpilab.errors import MpilabError
from mpilab.testbed.spec import Spec


def unreached(spec: Spec, src: str, dsts: list[str], rail: int, tries: int = 3) -> list[str]:
    """The nodes of `dsts` from which `src` gets no ICMP echo reply on `rail` (each asked
    up to `tries` times)."""
    procs = [subprocess.Popen(["ip", "netns", "exec", spec.ns(src), "ping", "-n", "-q",
                               "-c", "1", "-W", "1", "-I", f"r{rail}", spec.addr(d, rail)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for d in dsts]
    ok = [p.wait() == 0 for p in procs]
    left = [d for d, good in zip(dsts, ok, strict=True) if not good]
    if left and tries > 1:
        return unreached(spec, src, left, rail, tries - 1)
    return left


def reachable(spec: Spec, src: str, dsts: list[str], rail: int, tries: int = 3) -> bool:
    """Whether `src` gets an ICMP echo reply from every node of `dsts` on `rail`."""
    return not unreached(spec, src, dsts, rail, tries)


def start_notice(hosts: list[str], missing: dict[int, list[str]], start: int) -> str | None:
    """What a `--pathmig` job's user is told when it starts on rail `start` (pure).
    `missing`: for every rail of the testbed, the hosts it does not reach from the first
    host now. A host that no rail other than `start` reaches has no alternate path; only
    such hosts are named (with hosts s0n0..s3n0 and rail 1 down at s2n0 alone, the
    connections with s2n0 are the unprotected ones). None when every host has one."""
    others = [r for r in sorted(missing) if r != start]
    named = [h for h in hosts[1:] if all(h in missing[r] for r in others)]
    if not named:
        return None
    rails_s = ", ".join(str(r) for r in others)
    if len(named) == len(hosts) - 1:
        head = (f"rail(s) {rails_s} do not connect {', '.join(hosts)} now: the job starts on "
                f"rail {start} without an alternate path; its connections")
    else:
        head = (f"rail(s) {rails_s} do not connect {hosts[0]} to {', '.join(named)} now: the "
                f"job starts on rail {start}, and its connections with {', '.join(named)} "
                "have no alternate path; they")
    return (f"pathmig: {head} are armed when another rail works again (said below when it "
            "happens)")


def first_usable_rail(spec: Spec, hosts: list[str]) -> int:
    others = hosts[1:]
    for r in range(spec.rails):
        if reachable(spec, hosts[0], others, r):
            return r
    raise MpilabError(f"no rail connects {hosts[0]} to all of {', '.join(others)} "
                      "(every rail is down somewhere)")
