"""Which rail a job can start on: the hostfile and Open MPI's out-of-band channel use one
rail's addresses, so a rail that is down (link down, or silently dropping) when the job
starts would hang it. The first rail on which the first host reaches every other host
is chosen (a probe, not the fault log: it also sees faults made by other means)."""

from __future__ import annotations

import subprocess

from mpilab.errors import MpilabError
from mpilab.testbed.spec import Spec


def reachable(spec: Spec, src: str, dsts: list[str], rail: int, tries: int = 3) -> bool:
    """Whether `src` gets an ICMP echo reply from every node of `dsts` on `rail`."""
    procs = [subprocess.Popen(["ip", "netns", "exec", spec.ns(src), "ping", "-n", "-q",
                               "-c", "1", "-W", "1", "-I", f"r{rail}", spec.addr(d, rail)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for d in dsts]
    ok = [p.wait() == 0 for p in procs]
    left = [d for d, good in zip(dsts, ok, strict=True) if not good]
    if left and tries > 1:
        return reachable(spec, src, left, rail, tries - 1)
    return not left


def first_usable_rail(spec: Spec, hosts: list[str]) -> int:
    others = hosts[1:]
    for r in range(spec.rails):
        if reachable(spec, hosts[0], others, r):
            return r
    raise MpilabError(f"no rail connects {hosts[0]} to all of {', '.join(others)} "
                      "(every rail is down somewhere)")
