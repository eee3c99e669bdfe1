"""`mpilab testbed ...`: emulated clusters on one machine (see docs/testbed.md)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from typing import Any

from mpilab import actions, argtypes
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text, check_output, hold_fifo
from mpilab.testbed import check as checkmod
from mpilab.testbed import faults, jobctl, launch, net
from mpilab.testbed import spec as specmod
from mpilab.testbed.lineinfo import trim_text, verdict_text, verdict_warning
from mpilab.testbed.spec import format_rate


def _prefix(args: argparse.Namespace) -> str:
    # an explicit --prefix '' is refused, not replaced by the environment's (which `down`
    # would then remove)
    p = (args.prefix if args.prefix is not None
         else os.environ.get("MPILAB_TESTBED_PREFIX") or specmod.DEFAULT_PREFIX)
    if not specmod.PREFIX_RE.match(p):
        raise MpilabError(f"prefix {p!r}: must be 1-6 characters a-z0-9, starting with a letter")
    return p


def cmd_up(args: argparse.Namespace) -> int:
    sp = specmod.load(args.spec, args.prefix)
    if args.delay_backend is not None:
        sp.delay_backend = args.delay_backend
    started = time.monotonic()
    line = net.up(sp, lambda line: print(f"mpilab: testbed up: {line}", file=sys.stderr,
                                         flush=True))
    st = net.load_state(sp.prefix) or {}
    warning = verdict_warning(st.get("delay_truth"))
    if warning and args.require_delay:
        net.down(sp.prefix)
        print(f"mpilab: testbed up: refused: {warning}; testbed '{sp.prefix}' taken down",
              file=sys.stderr)
        return 1
    took = time.monotonic() - started
    trim = st.get("delay_trim") or {}
    if " already up " not in line:
        line += f"; took {took:.1f} s"
        if trim.get("elapsed_s") is not None:
            line += (f" (measuring the trim {float(trim['elapsed_s']):.1f} s, "
                     f"{int(trim.get('attempts', 1))} attempt(s))")
    print(line)
    if warning:
        print(f"mpilab: testbed up: WARNING: {warning}; `testbed status` and results of "
              "`mpilab bench --testbed` carry the flag", file=sys.stderr, flush=True)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    prefix = _prefix(args)
    removed = net.down(prefix)
    print(f"testbed '{prefix}' down" + (f": removed {', '.join(removed)}" if removed
                                        else ": nothing to remove"))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    prefix = _prefix(args)
    net.require_root()
    namespaces = net.list_namespaces(prefix)
    st = net.load_state(prefix)
    info: dict[str, Any] = {"prefix": prefix, "up": bool(namespaces and st),
                            "namespaces": namespaces}
    if st:
        sp = specmod.Spec.from_dict(st["spec"])
        pid = st.get("delayline_pid")
        info["spec"] = sp.to_dict()
        info["missing_namespaces"] = sorted(set(sp.namespaces()) - set(namespaces))
        info["delayline"] = {"pid": pid, "alive": bool(pid and net.pid_alive(int(pid)))}
        if info["delayline"]["alive"]:
            info["delayline"].update(net.sched_of(int(pid)))
            # adaptive: --rt-adaptive, or the packet line's default as root (its statistics)
            stats = net.delayline_stats(prefix, 1.0)
            ad = (stats or {}).get("adaptive")
            info["delayline"]["adaptive"] = isinstance(ad, dict) and bool(ad.get("active"))
            # None: its statistics did not answer, so whether it spins a CPU is not known
            info["delayline"]["busy_poll"] = (None if stats is None
                                              else stats.get("busy_poll") is True)
        backend = st.get("delay_backend", "delayline" if sp.wan_delay > 0 else "none")
        info["delay"] = {"backend": backend, "requested": sp.delay_backend,
                         "io": st.get("delay_io"),
                         "netem_available": st.get("netem_available"),
                         "trim": st.get("delay_trim"),
                         # does the line hold the configured delay (lineinfo.delay_verdict)
                         "truth": st.get("delay_truth"),
                         # the options the line was started with ($MPILAB_DELAYLINE_ARGS)
                         "args": st.get("delayline_args", []),
                         "pid": pid if backend == "delayline" else None,
                         # every delay line: the default one's and each per-node delay's
                         "pids": st.get("delayline_pids", [pid] if pid else []),
                         "alive": info["delayline"]["alive"] if backend == "delayline"
                         else backend == "netem"}
        info["faults_active"] = [f"{n}:{r} {m}" for n, r, m in faults.active(sp)] \
            if namespaces else []
        info["fault_log"] = faults.read_log(sp)
        info["scheduled"] = net.scheduler_pids(prefix)
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    if not namespaces and not st:
        print(f"testbed '{prefix}': down")
        return 0
    if not st:
        print(f"testbed '{prefix}': {len(namespaces)} namespaces left without state "
              f"(crashed?); 'mpilab testbed down' removes them")
        return 0
    sp = specmod.Spec.from_dict(st["spec"])
    print(f"testbed '{prefix}' ({sp.source}): {sp.sites} sites x {sp.nodes_per_site} nodes x "
          f"{sp.rails} rails; LAN {format_rate(sp.lan_rate)}, b_WAN "
          f"{format_rate(sp.wan_node_rate)}, B_WAN {format_rate(sp.wan_total_rate)}, "
          + (f"L {sp.wan_delay * 1e3:g} ms" if sp.sites > 1 else "no WAN"))
    if info["missing_namespaces"]:
        print(f"  MISSING namespaces: {', '.join(info['missing_namespaces'])}")
    dl, backend = info["delayline"], info["delay"]["backend"]
    if backend == "delayline":
        sched = ""
        if dl["alive"]:
            sched = (f", SCHED_FIFO priority {dl['rt_priority']}" if dl.get("sched") == "fifo"
                     else ", normal scheduling")
            if dl.get("busy_poll"):  # it spins a CPU whatever its policy
                sched = f", busy-polling (spins a CPU{sched.replace(', normal scheduling', '')})"
            elif dl.get("busy_poll") is None:  # never "normal scheduling" for a spinning line
                sched = (f", {'SCHED_FIFO' if dl.get('sched') == 'fifo' else 'SCHED_OTHER'}; "
                         "busy-polling or not unknown (its statistics did not answer)")
            if dl.get("adaptive"):
                sched = f", adaptive scheduling (SCHED_FIFO while a stream is held; now{sched[1:]})"
        on = {"packet": " on packet sockets", "tun": " on a tun device"}.get(
            info["delay"]["io"] or "", "")
        print(f"  delay: delay line{on} (pid {dl['pid']}"
              f"{'' if dl['alive'] else ', NOT RUNNING'}){sched}"
              f"{trim_text(info['delay'].get('trim'), sp.wan_delay)}")
        if info["delay"]["args"]:
            print(f"  delay line options: {' '.join(info['delay']['args'])}")
        if sp.wan_delay > 0:
            print(f"  delay {sp.wan_delay * 1e6:g} us: {verdict_text(info['delay']['truth'])}")
    elif sp.sites < 2:
        print("  delay: none (one site: no WAN)")
    else:
        print(f"  delay: {backend}")
    for node in sp.node_names():
        addrs = ", ".join(f"r{r} {sp.addr(node, r)}" for r in range(sp.rails))
        print(f"  {node:6} ns {sp.ns(node):12} {addrs}")
    print("  active faults: " + (", ".join(info["faults_active"]) or "none"))
    if info["scheduled"]:
        print(f"  scheduled fault processes: {', '.join(map(str, info['scheduled']))}")
    for ev in info["fault_log"]:
        print(f"  {ev['date']}  {ev['event']:4} {ev['target']} {ev['mode']}"
              f"{' (scheduled)' if ev.get('scheduled') else ''}  t={ev['time']:.6f}")
    return 0


def _congestion(text: str) -> str:
    """auto, default, or a congestion control this kernel has (at most 15 characters of
    a-z, 0-9, _, -). The nodes are namespaces of this machine's kernel, so its list
    (tcp_available_congestion_control) or a module that loads one is theirs: a name the
    kernel lacks is refused here, before any testbed, agent or job is looked at."""
    if text in ("auto", "default"):
        return text
    if not re.fullmatch(r"[a-z0-9_-]{1,15}", text):
        raise ValueError("expected auto, default or a name such as cubic or bbr")
    from mpilab.pathmig import congestion
    have = congestion.kernel_available()
    if have is not None and text not in have and not congestion.kernel_module(text):
        raise ValueError(f"not a congestion control of this kernel (have: "
                         f"{' '.join(sorted(have)) or 'none'})")
    return text


def cmd_run(args: argparse.Namespace) -> int:
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if args.pathmig_events is not None and not args.pathmig:
        raise MpilabError("--pathmig-events: only with --pathmig (without it no agent runs "
                          "and there are no events to write)")
    if args.pathmig_events is not None:
        check_output(args.pathmig_events)
    if args.mptcp and args.pathmig:
        raise MpilabError("--mptcp: not with --pathmig (a --pathmig job runs over MPTCP, the "
                          "agents being its path manager; give one of them)")
    if args.mptcp_subflows is not None and args.pathmig:
        raise MpilabError("--mptcp-subflows: not with --pathmig (the agents add the "
                          "subflows there)")
    if args.like_mptcp and (args.mptcp or args.pathmig or args.mptcp_subflows is not None):
        raise MpilabError("--like-mptcp: only for a plain TCP job (an --mptcp or --pathmig "
                          "job has those settings already)")
    mpi = args.mpi
    if args.mpich_yield:
        if mpi == "auto" and program:
            from mpilab.launch import program_mpi_of
            mpi = program_mpi_of(program)
        if mpi != "mpich":
            raise MpilabError("--mpich-yield: only for an MPICH job (--mpi mpich, or a program "
                              "linked with MPICH; Open MPI's ranks yield when idle already)")
    timeout = (jobctl.parse_limit(args.timeout, "--timeout") if args.timeout is not None
               else None)
    grace = (jobctl.parse_limit(args.fault_grace, "--fault-grace")
             if args.fault_grace is not None else None)
    rails = None
    if args.rails:
        try:
            rails = [int(x) for x in args.rails.split(",")]
        except ValueError:
            raise MpilabError(f"--rails {args.rails}: expected e.g. 0 or 0,1") from None
    sp = net.current_spec(_prefix(args))
    if args.mptcp_subflows is not None and args.mptcp_subflows > sp.rails:
        raise MpilabError(f"--mptcp-subflows {args.mptcp_subflows}: testbed '{sp.prefix}' has "
                          f"{sp.rails} rail(s), at most one subflow each")
    # every argument before anything starts (agents, MPTCP endpoints, the job)
    launch.check_job_args(sp, args.np, args.hosts, rails)
    if args.pathmig_events is not None:
        if not args.pathmig:
            raise MpilabError("--pathmig-events needs --pathmig")
        check_output(args.pathmig_events)
    if args.pathmig:  # path migration agents around the job (python/mpilab/pathmig)
        from mpilab.pathmig.cli import run_job
        held = hold_fifo(args.pathmig_events) if args.pathmig_events else None
        try:
            return run_job(sp, program, args.pathmig_events, np=args.np, hosts=args.hosts,
                           timeout=timeout, rails=rails, fault_grace=grace,
                           congestion=args.congestion, mpi=mpi,
                           mpich_yield=args.mpich_yield)
        finally:
            if held is not None:
                os.close(held)
    return launch.run(sp, program, np=args.np, hosts=args.hosts,
                      mptcp=args.mptcp or args.mptcp_subflows is not None,
                      timeout=timeout, rails=rails, fault_grace=grace,
                      congestion=args.congestion, mpi=mpi, subflows=args.mptcp_subflows,
                      like_mptcp=args.like_mptcp, mpich_yield=args.mpich_yield)


def cmd_fail(args: argparse.Namespace) -> int:
    if args.random is not None:  # seeded random faults (python/mpilab/pathmig/inject.py)
        from mpilab.pathmig.inject import cli_random, random_args
        random_args(args)  # before the testbed is looked at
        print(cli_random(net.current_spec(_prefix(args)), args))
        return 0
    if not args.target:
        raise MpilabError("fail: NODE:RAIL required (or --random SEED)")
    at, at_epoch = faults.parse_at(args.at) if args.at is not None else (None, None)
    dur = faults.parse_seconds(args.duration, "--for") if args.duration is not None else None
    sp = net.current_spec(_prefix(args))
    print(faults.fail(sp, args.target, args.mode, at, dur, at_epoch=at_epoch))
    return 0


def cmd_heal(args: argparse.Namespace) -> int:
    sp = net.current_spec(_prefix(args))
    done = faults.heal(sp, args.target)
    print("healed: " + (", ".join(done) if done else "nothing was failed"))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    if args.json:
        check_output(args.json)  # before minutes of measuring, not after
    if not (0 < args.time <= 3600) or args.parallel < 1:
        raise MpilabError("--time must be positive (at most 3600 s) and --parallel at least 1")
    sp = net.current_spec(_prefix(args))
    rows = checkmod.check(sp, seconds=args.time, parallel=args.parallel, rail=args.rail,
                          lan=not args.no_lan, per_node=not args.total_only)
    print(checkmod.format_rows(rows))
    if args.json:
        doc = checkmod.rows_json(sp, rows, " ".join(shlex.quote(a) for a in sys.argv),
                                 {"seconds": args.time, "parallel": args.parallel,
                                  "rail": args.rail, "lan": not args.no_lan,
                                  "per_node": not args.total_only})
        atomic_write_text(args.json, json.dumps(doc, indent=1) + "\n")
    if args.tolerance is not None:
        bad = [r for r in rows if not r.kind.startswith("rtt") and abs(r.rel_err) > args.tolerance]
        if bad:
            sys.stderr.write(f"mpilab: check: {bad[0].path} measured "
                             f"{format_rate(bad[0].measured)} vs {format_rate(bad[0].configured)}"
                             f" configured (beyond {args.tolerance:.0%})\n")
            return 1
    return 0


def register(subparsers: Any) -> None:
    add = actions.group(subparsers, "testbed", "emulated cluster: namespaces, rails, WAN, faults",
                        "name prefix (default $MPILAB_TESTBED_PREFIX or mlt)")

    p = add("up", cmd_up, "build the testbed from SPEC (default: 2 sites x 4 nodes)")
    p.add_argument("spec", nargs="?", help="TOML spec file (see examples/testbed/)")
    p.add_argument("--delay-backend", choices=specmod.DELAY_BACKENDS,
                   help="WAN delay by netem or the delay line (default: the spec's "
                        "wan.delay_backend, else auto = netem where the kernel has it)")
    p.add_argument("--require-delay", action="store_true",
                   help="refuse (exit 1, testbed taken down) when the delay line does not "
                        "hold the configured delay within its tolerance for lone packets "
                        "(default: a warning, and the flag delay_off in the state)")
    add("down", cmd_down, "remove everything carrying the prefix")
    p = add("status", cmd_status, "show the testbed, active faults and the fault log")
    p.add_argument("--json", action="store_true", help="machine-readable")
    p = add("run", cmd_run, "run an MPI program inside the testbed")
    p.add_argument("--mptcp", action="store_true", help="ranks over MPTCP on all rails")
    p.add_argument("--mptcp-subflows", metavar="N", type=argtypes.positive,
                   help="MPTCP (implies --mptcp) with at most N subflows per connection, on "
                        "the job's rail and the next N-1; 1: plain MPTCP with one subflow "
                        "(the cost of MPTCP itself, no second path)")
    p.add_argument("--pathmig", action="store_true",
                   help="MPTCP with a path migration agent per node (docs/pathmig.md)")
    p.add_argument("--like-mptcp", action="store_true",
                   help="plain TCP with the socket settings of an --mptcp/--pathmig job "
                        "(cubic under --congestion auto, the routes' quickack metric, the "
                        "1 MiB default send buffer): the like-for-like baseline")
    p.add_argument("--pathmig-events", metavar="FILE",
                   help="with --pathmig: write the agents' merged event log here")
    p.add_argument("--congestion", metavar="ALGO", default="auto",
                   type=argtypes.wrap(_congestion, "congestion control"),
                   help="TCP congestion control of the job's nodes: auto (cubic under "
                        "--mptcp/--pathmig, BBR paces MPTCP subflows too slowly; else the "
                        "namespaces' default), default, or a name such as cubic or bbr")
    p.add_argument("--mpi", choices=launch.MPIS, default="auto",
                   help="the launcher: Open MPI's mpirun or MPICH's mpiexec (default auto: "
                        "the MPI the program is linked with, else Open MPI)")
    p.add_argument("--mpich-yield", action="store_true",
                   help="MPICH's ranks yield their CPU when their progress finds nothing "
                        "(libmpilab_ucx_yield.so preloaded), as Open MPI's do under mpirun "
                        "here: for nodes whose cores other work keeps busy")
    p.add_argument("--np", type=argtypes.positive, help="ranks (default: one per host)")
    p.add_argument("--hosts", type=argtypes.wrap(specmod.parse_node_list, "nodes"),
                   help="comma-separated nodes (default: all), e.g. s0n0,s1n0")
    p.add_argument("--rails", type=argtypes.wrap(specmod.parse_rail_list, "rails"),
                   help="rails Open MPI may use, e.g. 0,1 (default 0)")
    p.add_argument("--timeout", metavar="SECONDS",
                   help="end the job after this long (seconds, or with a unit ns, us, ms, s); "
                        f"default ${jobctl.TIMEOUT_ENV} or "
                        f"{jobctl.DEFAULT_TIMEOUT:g} s; 'none' for no limit")
    p.add_argument("--fault-grace", metavar="SECONDS",
                   help="end the job when a link it uses stays failed this long (fault log "
                        f"of 'testbed fail'); default {jobctl.DEFAULT_FAULT_GRACE:g} s; "
                        "'none' to wait for the time limit")
    p.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS")
    p = add("fail", cmd_fail, "fail a node's rail now or later, or random faults (--random)")
    p.add_argument("target", metavar="NODE:RAIL", nargs="?",
                   type=argtypes.wrap(specmod.parse_target_text, "target"))
    p.add_argument("--random", type=argtypes.count, metavar="SEED",
                   help="random faults from this seed: --count at random times --within S "
                        "seconds from now, on --nodes/--fault-rails, --modes, each healed "
                        "after --fault-duration MIN:MAX seconds; never two at once")
    p.add_argument("--count", type=argtypes.count, default=1,
                   help="with --random: number of faults")
    p.add_argument("--within", default="60", help="with --random: seconds (default 60)")
    p.add_argument("--nodes", help="with --random: candidate nodes (default all)")
    p.add_argument("--fault-rails", help="with --random: candidate rails (default all)")
    p.add_argument("--modes", help="with --random: the fault kinds drawn, comma-separated "
                   f"(default: every kind: {','.join(faults.kind_names())})")
    p.add_argument("--fault-duration", default="1:3",
                   help="with --random: MIN:MAX seconds each fault lasts (default 1:3)")
    p.add_argument("--at", help="seconds from now (e.g. 2, 1.5s, 500ms), or an absolute "
                   "time: ISO 8601 with zone (2026-11-21T12:00:00Z) or @EPOCH seconds")
    p.add_argument("--for", dest="duration", help="heal after this long")
    p.add_argument("--mode", choices=faults.kind_names(), default="down",
                   help="; ".join(f"{k.name}: {k.summary}" for k in faults.kinds()))
    p = add("heal", cmd_heal, "heal one rail, or every failed rail")
    p.add_argument("target", metavar="NODE:RAIL", nargs="?",
                   type=argtypes.wrap(specmod.parse_target_text, "target"))
    p = add("check", cmd_check, "measure links with iperf3 and ping vs the spec")
    p.add_argument("--time", type=argtypes.duration, default=3.0,
                   help="seconds per iperf3 run")
    p.add_argument("--parallel", type=argtypes.count, default=1, help="TCP flows per iperf3 run")
    p.add_argument("--rail", type=argtypes.count, default=0)
    p.add_argument("--no-lan", action="store_true", help="skip LAN links")
    p.add_argument("--total-only", action="store_true",
                   help="one per-node WAN run instead of one per node")
    p.add_argument("--tolerance", type=argtypes.tolerance,
                   help="exit 1 if a rate is off by more than this fraction")
    p.add_argument("--json", metavar="FILE",
                   help="also write a results file (mpilab.results/1, one measurement per "
                        "link: op 'link', impl iperf3/ping)")
