"""`mpilab pathmig ...`: the path migration agents of a testbed (docs/pathmig.md), and the
`testbed run --pathmig` integration."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from typing import Any

from mpilab import actions, argtypes
from mpilab.errors import MpilabError
from mpilab.fsutil import write_stdout
from mpilab.pathmig import agents, rails
from mpilab.pathmig.watch import ArmWatch, LogTail, finish, run_watch
from mpilab.testbed import launch, net
from mpilab.testbed import spec as specmod
from mpilab.testbed.spec import Spec


def _spec(args: argparse.Namespace) -> Spec:
    # an explicit --prefix '' is refused, not replaced by the environment's or the default
    p = (args.prefix if args.prefix is not None
         else os.environ.get("MPILAB_TESTBED_PREFIX") or specmod.DEFAULT_PREFIX)
    if not specmod.PREFIX_RE.match(p):
        raise MpilabError(f"prefix {p!r}: must be 1-6 characters a-z0-9, starting with a letter")
    return net.current_spec(p)


def _nodes(sp: Spec, node: str | None) -> list[str]:
    if node is None:
        found = sorted(agents.running(sp))
        if not found:
            raise MpilabError(f"pathmig: no agent running on testbed '{sp.prefix}' "
                              "(mpilab pathmig start)")
        return found
    if node not in sp.node_names():
        raise MpilabError(f"--node {node}: no such node in testbed '{sp.prefix}'")
    return [node]


def _paths(sub: list[dict[str, Any]]) -> str:
    return ", ".join(f"r{s['rail']} {'backup' if s['backup'] else 'active'}"
                     f"{'' if s['established'] else ' (loading)'}" for s in sub) or "-"


def format_status(st: list[dict[str, Any]]) -> str:
    lines = [f"{'node':6} {'token':8} {'peer':6} {'side':6} {'state':9} paths"]
    for node in st:
        for c in node["connections"]:
            lines.append(f"{node['node']:6} {c['token']:8} {c['peer'] or '-':6} "
                         f"{'server' if c['server_side'] else 'client':6} {c['state']:9} "
                         f"{_paths(c['subflows'])}")
    down = [f"{n['node']}->{p['peer']}:r{p['rail']}" for n in st for p in n["paths"]
            if not p["up"]]
    lines.append("dead paths: " + (", ".join(down) or "none"))
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    sp = _spec(args)
    st = [agents.request(sp, n, "status") for n in _nodes(sp, args.node)]
    write_stdout(json.dumps(st, indent=1) if args.json else format_status(st))
    return 0


def _token(text: str) -> str:
    """A connection's token (8 hex digits, as status and the event log show it) or all."""
    if text != "all" and not re.fullmatch(r"[0-9a-fA-F]{1,8}", text, re.ASCII):
        raise ValueError("expected a connection token (8 hex digits, see pathmig status) "
                         "or all")
    return text


def _request(args: argparse.Namespace, verb: str) -> int:
    sp = _spec(args)
    target = args.target
    nodes = _nodes(sp, args.node)
    if target != "all" and args.node is None:
        # the node holding that connection
        nodes = [n for n in nodes if any(c["token"] == target.lower() for c in
                                         agents.request(sp, n, "status")["connections"])]
        if not nodes:
            raise MpilabError(f"pathmig {verb}: no connection with token {target} on any node")
    done, errors = 0, []
    for n in nodes:
        ans = agents.request(sp, n, f"{verb} {target}")
        if "error" in ans:
            raise MpilabError(f"pathmig {verb}: {n}: {ans['error']}")
        done += ans.get("done", 0)
        errors += [f"{n}: {e}" for e in ans.get("errors", [])]
    write_stdout(f"{verb}: {done} connection(s)" +
                 (f"; refused: {'; '.join(errors)}" if errors else ""))
    return 2 if errors else 0  # a refusal, as for a single connection


def cmd_start(args: argparse.Namespace) -> int:
    sp = _spec(args)
    if args.hosts is not None and not args.hosts.strip():
        raise MpilabError("--hosts '': no node given (omit --hosts for every node)")
    # the names against the testbed's nodes first: never a raw `ip netns` error
    hosts = launch.choose_hosts(sp, args.hosts) if args.hosts else None
    pids = agents.start(sp, hosts, manual=args.manual, alt=args.alt)
    write_stdout("pathmig agents: " + ", ".join(f"{n} (pid {p})" for n, p in sorted(pids.items())))
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    sp = _spec(args)
    stopped = agents.stop(sp)
    write_stdout("pathmig agents stopped: " + (", ".join(stopped) or "none were running"))
    return 0


def cmd_auto(args: argparse.Namespace) -> int:
    sp = _spec(args)
    for n in _nodes(sp, args.node):
        ans = agents.request(sp, n, f"auto {args.onoff}")
        if "error" in ans:
            raise MpilabError(f"pathmig auto: {n}: {ans['error']}")
    write_stdout(f"automatic migration {args.onoff}")
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    sp = _spec(args)
    lines = [json.dumps(e) for e in agents.events(sp)
             if args.all or e["event"] in ("state", "path", "link", "action", "command")]
    if lines:
        write_stdout("\n".join(lines))
    return 0


def run_job(sp: Spec, program: list[str], events_out: str | None, **kw: Any) -> int:
    """`testbed run --pathmig`: agents on the job's hosts, the job under MPTCP, the agents'
    event logs collected (into events_out, default <state>/pathmig/run-<time>.jsonl) and the
    agents stopped, also when the job fails."""
    hosts = launch.choose_hosts(sp, kw.get("hosts"))
    # every rail: the hosts it does not reach from the first one now (ICMP)
    missing = {r: rails.unreached(sp, hosts[0], hosts[1:], r) if len(hosts) > 1 else []
               for r in range(sp.rails)}
    usable = [r for r in range(sp.rails) if not missing[r]]
    if not usable:
        raise MpilabError(f"no rail connects {hosts[0]} to all of {', '.join(hosts[1:])} "
                          "(every rail is down somewhere)")
    if kw.get("rails") is None:
        kw["rails"] = [usable[0]]  # the job starts on a rail that works now
    notice = rails.start_notice(hosts, missing, kw["rails"][0])
    unprotected = notice is not None
    if notice:
        sys.stderr.write(notice + "\n")
    agents.stop(sp)
    agents.clear_logs(sp)
    agents.start(sp, hosts)
    addr_node = {sp.addr(n, r): n for n in sp.node_names() for r in range(sp.rails)}
    watch = ArmWatch(time.time(), unprotected, addr_node)
    tail = LogTail([agents.agent_dir(sp) / f"{n}.jsonl" for n in hosts])
    stop = threading.Event()
    th = threading.Thread(target=run_watch, daemon=True,
                          args=(watch, tail, stop, lambda ln: sys.stderr.write(ln + "\n")))
    th.start()
    try:
        rc = launch.run(sp, program, mptcp=True, pathmig=True, **kw)
    finally:
        agents.job_done(sp)  # no verdicts once the job is over, before any agent stops
        stop.set()
        th.join(timeout=5)
        agents.stop(sp)
        dest = events_out or str(agents.run_log_path(sp))
        evs = agents.events(sp)
        agents.collect(sp, dest)
        if not events_out:
            agents.rotate_runs(sp)
        states = [e for e in evs if e["event"] == "state"]
        migr = sum(1 for e in states if e["from"] == "ARMED" and e["to"] == "MIGRATED")
        armed = sum(1 for e in states if e["to"] == "ARMED")
        failed, moot = agents.failed_actions(evs)
        also = f" ({moot} moot: connection gone or not ready)" if moot else ""
        sys.stderr.write(f"pathmig: {armed} arm(s), {migr} migration(s), {failed} failed "
                         f"action(s){also}; events in {dest}\n")
        for ln in finish(watch, tail):  # with what the watcher had not read yet
            sys.stderr.write(ln + "\n")
    return rc


def register(subparsers: Any) -> None:
    add = actions.group(subparsers, "pathmig", "path migration over MPTCP on a testbed",
                        "testbed prefix (default $MPILAB_TESTBED_PREFIX or mlt)")

    p = add("start", cmd_start, "start an agent in every node (or --hosts)")
    p.add_argument("--hosts", type=argtypes.wrap(specmod.parse_node_list, "nodes"),
                   help="comma-separated nodes (default: all)")
    p.add_argument("--manual", action="store_true", help="no automatic migration/re-arming")
    p.add_argument("--alt", help="alternate path: default (next rail), auto, or a map file "
                   "of lines 'PEER RAIL ALT_RAIL'")
    add("stop", cmd_stop, "stop every agent")
    p = add("status", cmd_status, "every connection, its paths and state")
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.add_argument("--node", type=argtypes.wrap(specmod.parse_node_name, "node"),
                   help="one node only")
    for verb, what in (("arm", "load an alternate path (MIGRATED -> REARM -> ARMED)"),
                       ("migrate", "move to the alternate path (ARMED -> MIGRATED)")):
        p = add(verb, lambda a, v=verb: _request(a, v), what)
        p.add_argument("target", nargs="?", default="all", metavar="TOKEN|all",
                       type=argtypes.wrap(_token, "token"))
        p.add_argument("--node", type=argtypes.wrap(specmod.parse_node_name, "node"),
                       help="only this node's agent")
    p = add("auto", cmd_auto, "automatic migration and re-arming on or off")
    p.add_argument("onoff", choices=("on", "off"))
    p.add_argument("--node", type=argtypes.wrap(specmod.parse_node_name, "node"),
                   help="only this node's agent")
    p = add("events", cmd_events, "the agents' event logs, merged (JSON lines)")
    p.add_argument("--all", action="store_true", help="also kernel events and probes")
