"""Seeded random fault injection: faults at random times on random rails of random nodes,
link down or silent drop, each healed after a random duration; the same seed gives the
same plan. At most one rail of a node pair is failed at a time (a fault on every rail
leaves nothing to migrate to), so a fault's window never overlaps another's.

`mpilab testbed fail --random SEED ...` runs a plan in a detached scheduler (the testbed's
own, `python -m mpilab.pathmig.inject --plan FILE`, which `testbed down` stops); benches
call `run_plan` in-process once the job has shown progress."""

from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mpilab import documents, units
from mpilab.errors import MpilabError
from mpilab.testbed import faults
from mpilab.testbed.spec import Spec


@dataclass
class Fault:
    at: float  # seconds after the plan starts
    target: str  # NODE:RAIL
    mode: str  # down | drop
    duration: float  # healed this long after `at`


def make_plan(seed: int, nodes: list[str], rails: list[int], count: int, within: float,
              modes: tuple[str, ...] | None = None,
              duration: tuple[float, float] = (1.0, 3.0)) -> list[Fault]:
    """`count` faults in [0, within) seconds, in time order, windows not overlapping;
    `modes`: the fault kinds drawn from (default: every registered kind)."""
    modes = faults.kind_names() if modes is None else modes
    if count < 1 or within <= 0 or not nodes or not rails or not modes:
        raise MpilabError("--random: need --count >= 1, --within > 0, nodes, rails and modes")
    lo, hi = duration
    if not 0 < lo <= hi:
        raise MpilabError(f"--fault-duration {lo:g}:{hi:g}: need 0 < MIN <= MAX")
    if count * hi > within:
        raise MpilabError(f"--random: {count} faults of up to {hi:g} s do not fit in "
                          f"{within:g} s without overlapping")
    rng = random.Random(seed)
    durs = [rng.uniform(lo, hi) for _ in range(count)]
    # random gaps: split the slack into count+1 random parts
    slack = within - sum(durs)
    cuts = sorted(rng.uniform(0, slack) for _ in range(count))
    out, t, prev = [], 0.0, 0.0
    for d, c in zip(durs, cuts, strict=True):
        t += c - prev
        prev = c
        out.append(Fault(at=round(t, 3), target=f"{rng.choice(nodes)}:{rng.choice(rails)}",
                         mode=rng.choice(modes), duration=round(d, 3)))
        t += d
    return out


def plan_json(plan: list[Fault], seed: int) -> str:
    return json.dumps({"seed": seed, "faults": [asdict(f) for f in plan]}, indent=1) + "\n"


PLAN_SCHEMA = "fault-plan-1.schema.json"


def load_plan(path: str) -> list[Fault]:
    """The faults of a plan file, checked against schemas/fault-plan-1.schema.json (one
    line naming the file and the place otherwise)."""
    doc = documents.load(path, "fault plan", PLAN_SCHEMA, limit=16 << 20)
    return [Fault(float(f["at"]), f["target"], f["mode"], float(f["duration"]))
            for f in doc["faults"]]


def run_plan(spec: Spec, plan: list[Fault], start: float | None = None,
             stop: Any = None) -> list[dict[str, Any]]:
    """Apply the plan (times from `start`, a time.monotonic() value, default now); each
    fault and heal goes to the testbed's fault log. `stop()` returning true ends it early
    (a pending fault is healed). Returns the log records written."""
    t0 = time.monotonic() if start is None else start
    events: list[tuple[float, int, Fault]] = []
    for f in plan:
        events += [(f.at, 0, f), (f.at + f.duration, 1, f)]
    events.sort(key=lambda e: (e[0], e[1]))
    out: list[dict[str, Any]] = []
    active: set[str] = set()
    for at, kind, f in events:
        while (left := t0 + at - time.monotonic()) > 0:
            if stop is not None and stop():
                break
            time.sleep(min(left, 0.05))
        if stop is not None and stop() and kind == 0:
            break
        node, rail = faults.parse_target(spec, f.target)
        if kind == 0:
            out.append(faults.fail_now(spec, node, rail, f.mode, scheduled=True))
            active.add(f.target)
        elif f.target in active:
            out += faults.heal_rail(spec, node, rail, scheduled=True)
            active.discard(f.target)
    for tgt in sorted(active):  # stopped early: leave nothing failed
        node, rail = faults.parse_target(spec, tgt)
        out += faults.heal_rail(spec, node, rail, scheduled=True)
    return out


def random_args(args: Any) -> tuple[list[int] | None, float, float, float, tuple[str, ...]]:
    """The options of `testbed fail --random` that need no testbed, checked before it is
    looked at: (rails or None for all, shortest and longest fault, window, kinds)."""
    if args.target:
        raise MpilabError("--random: give no NODE:RAIL (targets are drawn from --nodes/--rails)")
    if args.nodes is not None and any(not n for n in args.nodes.split(",")):
        raise MpilabError(f"--nodes {args.nodes!r}: expected node names, e.g. s0n0,s1n0")
    try:
        rails = [units.parse_int(r) for r in args.fault_rails.split(",")] if args.fault_rails \
            else None
        lo, hi = (units.parse_duration(x) for x in args.fault_duration.split(":"))
        within = units.parse_duration(args.within)
        if not (0 <= lo <= hi and within > 0) or any(r < 0 for r in rails or []):
            raise ValueError
    except ValueError:
        raise MpilabError("--random: --fault-rails takes e.g. 0,1, --fault-duration MIN:MAX "
                          "seconds, --within seconds") from None
    modes = tuple(args.modes.split(",")) if args.modes else faults.kind_names()
    for m in modes:
        faults.get_kind(m, "--modes")
    make_plan(args.random, ["n"], [0], args.count, within, modes, (lo, hi))  # counts, fit
    return rails, lo, hi, within, modes


def cli_random(spec: Spec, args: Any) -> str:
    """`testbed fail --random SEED`: write the plan to the state dir, print it, and run it
    in a detached scheduler."""
    import os
    import subprocess
    import sys

    from mpilab.fsutil import atomic_write_text
    from mpilab.testbed import net

    rails_given, lo, hi, within, modes = random_args(args)
    nodes = args.nodes.split(",") if args.nodes else spec.node_names()
    for n in nodes:
        if n not in spec.node_names():
            raise MpilabError(f"--nodes: {n}: no such node in testbed '{spec.prefix}'")
    rails = rails_given if rails_given is not None else list(range(spec.rails))
    if any(not 0 <= r < spec.rails for r in rails):
        raise MpilabError(f"--fault-rails: testbed '{spec.prefix}' has rails 0..{spec.rails - 1}")
    plan = make_plan(args.random, nodes, rails, args.count, within, modes, (lo, hi))
    path = net.state_dir(spec.prefix) / f"plan-{args.random}.json"
    atomic_write_text(path, plan_json(plan, args.random))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + os.pathsep + \
        env.get("PYTHONPATH", "")
    with open(net.state_dir(spec.prefix) / "scheduler.log", "ab") as log:
        p = subprocess.Popen([sys.executable, "-m", "mpilab.pathmig.inject", "--prefix",
                              spec.prefix, "--plan", str(path)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
                             env=env)
    lines = [f"seed {args.random}: {len(plan)} fault(s) within {within:g} s (pid {p.pid}, "
             f"plan {path})"]
    lines += [f"  +{f.at:8.3f} s  {f.target} {f.mode} for {f.duration:.3f} s" for f in plan]
    return "\n".join(lines)


def _plan_main(argv: list[str]) -> int:
    """`python -m mpilab.pathmig.inject --prefix P --plan FILE`: the detached process that
    carries out a random fault plan (stopped by `testbed down` like the fault scheduler)."""
    import argparse

    from mpilab.testbed import net

    ap = argparse.ArgumentParser(prog="mpilab.pathmig.inject")
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--plan", required=True)
    a = ap.parse_args(argv)
    plan = load_plan(a.plan)  # the document before the testbed
    run_plan(net.current_spec(a.prefix), plan)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(_plan_main(sys.argv[1:]))
    except MpilabError as e:
        sys.stderr.write(f"mpilab.pathmig.inject: {e}\n")
        sys.exit(2)
