#!/usr/bin/env python3
"""A hostile new user's campaign: distinct bad inputs to every entry point of mpilab (the
`mpilab` command and its subcommands, results files, testbed spec files, the C tools), each
run as a user would run it, classified by outcome:

  clean       non-zero exit, exactly one line on stderr, no traceback
  messy       non-zero exit, but stderr is not one line (or empty)
  traceback   a Python traceback, an internal error (exit 70) or an abort (exit 134)
  signal      ended by a signal
  hang        did not end within the case's limit (killed)
  accepted    exit 0 on bad input (a silent misreading), or an impossible value on show
              in what it wrote (a model parameter below 0 as a plain number)
  clobbered   a file, link, FIFO or device that must survive did not (or an output file
              was written although the command failed, or a failed generated case left
              any new file in its folder)
  orphan      processes of a testbed job left running afterwards
  ok          an output case that must succeed did (writing '-', a FIFO, through a link)

Each case names the helper area that owns the entry point (C: hardening, A: architecture
and parsers, D: wavefront, E: path migration), so results can be read per owner.

    python3 bench/hostile_inputs.py [--testbed PREFIX] [--jobs 3] [--only REGEX] [--list]
                                    [--slice]

The cases named 'G ...' are generated from the interfaces (bench/hostile_generated.py):
every option of every mpilab subcommand and C tool, every field of every document kind.
--slice: only the fixed subset the pytest suite runs (tests/python/test_hostile_generated.py).

--testbed: a running testbed (mpilab testbed up) for the testbed cases (root); without it
those cases are skipped. Prints one line per case that is not clean/ok, then the counts.
Exit 0 when nothing but clean/ok outcomes were seen.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness
from hostile_cases import (
    BIN,
    PY,
    Case,
    Outcome,
    Post,
    _both,
    _keep,
    _no_output,
    _unmount_under,
    _write,
    bench_tool_cases,
    cli_cases,
    delayline_cases,
    results_cases,
    testbed_cases,
    wavefront_cases,
)
from hostile_cases_cli_models import SHOWN, cli_and_model_cases
from hostile_cases_documents import choice_cases, document_cases, document_testbed_cases
from hostile_cases_options import option_cases
from hostile_generated import ci_slice, generated_cases

# ---------------------------------------------------------------------------------------
# entry points: mpilab selftest, disk, multilane, pathmig; the C tools
# mpilab-multilane, mpilab-pathmigd, mpilab-seekfs, mpilab-selftest; mpilab-bench's
# newer options


def selftest_cases() -> list[Case]:
    st = PY + ["selftest"]
    cases = []
    for args in (["--np", "0"], ["--np", "-2"], ["--np", "x"], ["--np", "\u0663"],
                 ["--np", "100000"], ["--syncs", "0"], ["--syncs", "-1"], ["--syncs", "1e3"],
                 ["--inject", "bogus"], ["--inject", "offset=nan"],
                 ["--inject", "offset=10ms,drift=1e999"], ["--inject", "offset=-1ms"],
                 ["--inject", "offset=10ms,seed=x"], ["--inject", ""], ["--trials", "0"],
                 ["--trials", "x"], ["--launcher", "bogus"], ["--launcher-arg"],
                 ["--testbed", "--delay", "nan"], ["--testbed", "--delay", "-1ms"],
                 ["--testbed", "--rate", "0"], ["--testbed", "--rate", "x"],
                 ["--testbed", "--runs", "0"], ["--testbed", "--sizes", "1:8: -1"],
                 ["--testbed", "--prefix", "rb\n"], ["--testbed", "--prefix", "../x"],
                 ["extra"]):
        cases.append(Case(f"selftest {' '.join(args)!r}", "G", st + args, limit=300))

    def dir_out(d: Path) -> None:
        (d / "outdir").mkdir()

    for args in (["--np", "100000"], ["--np", "100000", "--launcher", "mpirun"]):
        cases.append(Case(f"bench {' '.join(args)!r} (this node)", "C",
                          PY + ["bench", *args, "--", "--ops", "p2p"], limit=120))
    cases.append(Case("selftest --json a directory (refused before measuring)", "G",
                      st + ["--json", "outdir"], setup=dir_out, post=_keep("outdir", "dir"),
                      limit=300))
    tool = str(BIN / "mpilab-selftest")
    for args in ([], ["bogus"], ["clock", "--inject", "nan"], ["clock", "--syncs", "0"],
                 ["clock", "--syncs", " 5"], ["clock", "--sync", "bogus"],
                 ["clock", "--inject", "offset=1e999"], ["fit", "--trials", "0"],
                 ["fit", "--trials", "-1"], ["fit", "--seed", "x"], ["fit", "--delayed", "1"],
                 ["fit", "--delayed", "nan"], ["fit", "--delayed", "-0.1"],
                 ["fit", "--out", "/nonexistent/dir/x.json"], ["fit", "extra"],
                 ["link", "--sizes", "1:8: -1"], ["link", "--min-reps", "5", "--max-reps", "2"],
                 ["link", "--eps", "5"], ["link", "--burst", "0"], ["fit", "--trials"]):
        cases.append(Case(f"mpilab-selftest {' '.join(args)!r}", "G", [tool, *args],
                          limit=120))
    cases.append(Case("mpilab-selftest fit --out a directory", "G",
                      [tool, "fit", "--trials", "1", "--out", "outdir"], setup=dir_out,
                      post=_keep("outdir", "dir"), limit=120))
    return cases


DISK_PREFIX = "zh9"  # made only if a bad spec were accepted; `disk down` after each case
#: a periodic line of a running stage on a non-terminal output (python/mpilab/stage.py)
PROGRESS = re.compile(r"^  [\w .-]+: \d+ s(, .*)?$")


def _disk_down(d: Path) -> str | None:
    p = subprocess.run(PY + ["disk", "down", "--prefix", DISK_PREFIX], capture_output=True,
                       text=True, env=harness.env())
    return (f"disk down found something to remove: {p.stdout.strip()[:100]}"
            if p.returncode == 0 and "nothing" not in p.stdout else None)


def disk_cases() -> list[Case]:
    up = PY + ["disk", "up", "--prefix", DISK_PREFIX, "d.toml"]
    disk = "[[disk]]\nname = \"a\"\n"
    specs = {
        "empty": "",
        "TOML syntax error": "[[disk]\nname = \"a\"\n",
        "no disk": "prefix = \"zh9\"\n",
        "unknown key": disk + "sise = \"1G\"\n",
        "name too long": "[[disk]]\nname = \"abcdefg\"\n",
        "duplicate names": disk + disk,
        "size 0": disk + "size = \"0\"\n",
        "size a Unicode digit": disk + "size = \"\u0663G\"\n",
        "size with a blank": disk + "size = \" 1G\"\n",
        "size 1e400": disk + "size = 1e400\n",
        "size beyond memory": disk + "size = \"99999999G\"\n",
        "model bogus": disk + "model = \"bogus\"\n",
        "read_iops 0": disk + "read_iops = 0\n",
        "read_iops 2.5": disk + "read_iops = 2.5\n",
        "read_bw nan": disk + "read_bw = \"nanMB\"\n",
        "read_bw negative": disk + "read_bw = \"-1MB\"\n",
        "read_bw a Unicode digit": disk + "read_bw = \"\u0663MB\"\n",
        "seek_min inf": disk + "model = \"seek\"\nseek_min = inf\n",
        "seek_max < seek_min": disk + "model = \"seek\"\nseek_min = \"8ms\"\nseek_max = \"1ms\"\n",
        "rpm -1": disk + "model = \"seek\"\nrpm = -1\n",
        "elevator a string": disk + "model = \"seek\"\nelevator = \"yes\"\n",
        "memory_limit 1": "memory_limit = \"1\"\n" + disk,

        "binary": "\x00\x01\x02",
    }
    cases = [Case("mpilab-seekfs --stats a FIFO", "D",
                  [str(BIN / "mpilab-seekfs"), "--backing", "b", "--size", "1073741824",
                   "--stats", "st", "--foreground", "m"],
                  setup=lambda d: ((d / "b").mkdir(), (d / "m").mkdir(), os.mkfifo(d / "st")),
                  post=_both(_unmount_under, _keep("st", "fifo")), limit=30)]
    cases += [Case(f"disk up SPEC: {n}", "D", up, setup=_write("d.toml", t), post=_disk_down,
                  limit=120) for n, t in specs.items()]
    cases += [
        Case("disk up SPEC that is a FIFO", "D", up, setup=lambda d: os.mkfifo(d / "d.toml"),
             post=_disk_down, limit=60),
        Case("disk up SPEC that is a directory", "D", up,
             setup=lambda d: (d / "d.toml").mkdir(), post=_disk_down),
        Case("disk up SPEC /dev/zero", "D", PY + ["disk", "up", "--prefix", DISK_PREFIX,
                                                  "/dev/zero"], post=_disk_down, limit=60),
        Case("disk up missing SPEC", "D", up, post=_disk_down),
    ]
    for args in (["up", "--prefix", "rb\n", "d.toml"], ["up", "--prefix", "", "d.toml"],
                 ["up", "--prefix", "../x", "d.toml"], ["down", "--prefix", "rb\n"],
                 ["down", "--prefix", ""], ["status", "--prefix", "A/B"],
                 ["run", "--prefix", DISK_PREFIX, "--", "true"],
                 ["run", "--prefix", DISK_PREFIX, "--timeout", "nan", "--", "true"],
                 ["run", "--prefix", DISK_PREFIX, "--timeout", "-1", "--", "true"],
                 ["run", "--prefix", DISK_PREFIX],
                 ["check", "--prefix", DISK_PREFIX, "--seconds", "0"],
                 ["check", "--prefix", DISK_PREFIX, "--seconds", "nan"],
                 ["check", "--prefix", DISK_PREFIX, "--tolerance", "-1"],
                 ["bogus"], []):
        cases.append(Case(f"disk {' '.join(args)!r}", "D", PY + ["disk", *args],
                          setup=_write("d.toml", disk), post=_disk_down, limit=120))
    sfs = str(BIN / "mpilab-seekfs")

    def backing(d: Path) -> None:
        (d / "b").mkdir()
        (d / "m").mkdir()

    for args in ([], ["m"], ["--backing", "b", "m"], ["--backing", "b", "--size", "0", "m"],
                 ["--backing", "b", "--size", "x", "m"], ["--backing", "b", "--size", " 1G", "m"],
                 ["--backing", "b", "--size", "1G", "--seek-min", "nan", "m"],
                 ["--backing", "b", "--size", "1G", "--seek-min", "-1", "m"],
                 ["--backing", "b", "--size", "1G", "--seek-min", "0.008", "--seek-max",
                  "0.001", "m"],
                 ["--backing", "b", "--size", "1G", "--rpm", "-5", "m"],
                 ["--backing", "b", "--size", "1G", "--rpm", "x", "m"],
                 ["--backing", "b", "--size", "1G", "--rate", "0", "m"],
                 ["--backing", "b", "--size", "1G", "--rate", "1e999", "m"],
                 ["--backing", "missing", "--size", "1G", "m"],
                 ["--backing", "b", "--size", "1G", "missing-mountpoint"],
                 ["--backing", "b", "--size", "1G", "--stats", "b", "m"],
                 ["--backing", "b", "--size", "1G", "m", "extra"],
                 ["--backing", "b", "--size", "1G", "--bogus", "m"], ["--size"]):
        cases.append(Case(f"mpilab-seekfs {' '.join(args)!r}", "D", [sfs, *args],
                          setup=backing, post=_unmount_under, limit=30))
    return cases


def multilane_cases() -> list[Case]:
    rep = PY + ["multilane", "report", "m.json", "-o", "out.html"]
    good = {"schema": "mpilab.multilane/1", "runs": [
        {"op": "scatter", "impl": "single", "lanes": None, "bytes": 1024, "times": [1e-3]}]}

    def doc(mut: Callable[[dict[str, Any]], None]) -> str:
        d = json.loads(json.dumps(good))
        mut(d)
        return json.dumps(d)

    def run0(**kv: Any) -> Callable[[dict[str, Any]], None]:
        return lambda d: d["runs"][0].update(kv)

    docs: dict[str, str | bytes] = {
        "empty": "", "not JSON": "{", "an array": "[]", "schema 2":
        doc(lambda d: d.update(schema="mpilab.multilane/2")),
        "runs not a list": doc(lambda d: d.update(runs={})),
        "times empty": doc(run0(times=[])), "times NaN": doc(run0(times=[float("nan")])),
        "time negative": doc(run0(times=[-1.0])), "times strings": doc(run0(times=["1"])),
        "bytes negative": doc(run0(bytes=-1)), "bytes 1e400": doc(run0(bytes=10**400)),
        "lanes 0": doc(run0(lanes=0)), "op bogus": doc(run0(op="bogus")),
        "wall_start a string": doc(run0(wall_start="noon")),
        "wall_start NaN": doc(run0(wall_start=float("nan"))),
        "wall_end 1e400": doc(run0(wall_end=10**400)),
        "predicted_paper a list": doc(run0(predicted_paper=[1])),
        "model not an object": doc(lambda d: d.update(model=[1])),
        "testbed a number": doc(lambda d: d.update(testbed=5)),
        "5000-digit integer": doc(run0(bytes=0)).replace('"bytes": 0', '"bytes": ' + "9" * 5000),
        "not UTF-8": b"\xff\xfe{}",
    }
    cases = [Case(f"multilane report: {n}", "F", rep, setup=_write("m.json", t),
                  post=_no_output) for n, t in docs.items()]
    cases += [
        Case("multilane report: a FIFO", "F", rep, setup=lambda d: os.mkfifo(d / "m.json"),
             post=_no_output, limit=60),
        Case("multilane report: a directory", "F", rep,
             setup=lambda d: (d / "m.json").mkdir(), post=_no_output),
        Case("multilane report: /dev/zero", "F",
             PY + ["multilane", "report", "/dev/zero", "-o", "out.html"], post=_no_output,
             limit=60),
        Case("multilane report: missing file", "F", rep, post=_no_output),
        Case("multilane report -o a directory", "F",
             PY + ["multilane", "report", "m.json", "-o", "outdir"],
             setup=lambda d: (_write("m.json", json.dumps(good))(d), (d / "outdir").mkdir()),
             post=_keep("outdir", "dir")),
    ]
    ml = str(BIN / "mpilab-multilane")
    for args in (["--sites", "bogus"], ["--sites", "hostfile:/nonexistent"], ["--root", "-1"],
                 ["--root", "x"], ["--ops", "bogus"], ["--ops", ""], ["--impls", "bogus"],
                 ["--sizes", "1:8: -1"], ["--sizes", "0,\u00b2"], ["--lanes", "0"],
                 ["--lanes", "x"], ["--reps", "0"], ["--reps", "-1"], ["--model-bytes", "nan"],
                 ["--model-reps", "0"], ["--no-model"], ["--json", "/nonexistent/d/x.json"],
                 ["--bogus"], ["extra"], ["--sizes"]):
        cases.append(Case(f"mpilab-multilane {' '.join(args)!r}", "F", [ml, *args], limit=120))
    return cases


def multilane_testbed_cases(prefix: str) -> list[Case]:
    run = PY + ["multilane", "run", "--testbed", prefix, "-o", "o.json"]
    cases = []
    for args in (["--np", "0"], ["--np", "100000"], ["--sizes", "1:8: -1"], ["--lanes", "0"],
                 ["--reps", "0"], ["--interval", "nan"], ["--interval", "0"],
                 ["--timeout", "nan"], ["--timeout", "-1"], ["--sites", "bogus"],
                 ["--root", "99"]):
        cases.append(Case(f"multilane run {' '.join(args)!r}", "F", run + args,
                          post=lambda d: "o.json written" if (d / "o.json").exists() else None,
                          testbed=True, limit=300))
    cases.append(Case("multilane run --testbed nosuch", "F",
                      PY + ["multilane", "run", "--testbed", "nosuch", "-o", "o.json"],
                      testbed=True))
    return cases


def _pathmig_stop(prefix: str) -> Post:
    def post(d: Path) -> str | None:
        env = harness.env()
        subprocess.run(PY + ["pathmig", "stop", "--prefix", prefix], capture_output=True,
                       env=env)
        return None
    return post


def pathmig_cases(prefix: str) -> list[Case]:
    pm = PY + ["pathmig"]
    cases = []
    for args in (["status", "--prefix", "nosuch"], ["status", "--prefix", "rb\n"],
                 ["status", "--prefix", prefix, "--node", "s9n9"],
                 ["arm", "--prefix", prefix, "bogus-token"],
                 ["arm", "--prefix", prefix, "--node", "s9n9"],
                 ["migrate", "--prefix", prefix, "-1"], ["migrate", "--prefix", prefix, ""],
                 ["auto", "--prefix", prefix, "maybe"], ["auto", "--prefix", prefix],
                 ["events", "--prefix", "nosuch"], ["bogus"],
                 ["start", "--prefix", prefix, "--hosts", "s9n9"],
                 ["start", "--prefix", prefix, "--hosts", ""],
                 ["start", "--prefix", prefix, "--alt", "missing.map"],
                 ["start", "--prefix", prefix, "--alt", "bad.map"],
                 ["start", "--prefix", prefix, "--alt", "fifo.map"]):
        def setup(d: Path) -> None:
            (d / "bad.map").write_text("s0n0 zero one\n")
            os.mkfifo(d / "fifo.map")
        cases.append(Case(f"pathmig {' '.join(args)!r}", "E", pm + args, setup=setup,
                          post=_pathmig_stop(prefix), testbed=True, limit=120))
    pmd = ["unshare", "-n", str(BIN / "mpilab-pathmigd")]  # a private namespace

    def peers(d: Path) -> None:
        (d / "peers").write_text("n0 10.0.0.1 10.1.0.1\nn1 10.0.0.2 10.1.0.2\n")
        (d / "badpeers").write_text("n0 not-an-address\n")
        (d / "sub").mkdir()
        os.mkfifo(d / "fifo")

    for args in ([], ["--node", "n0"], ["--node", "n0", "--peers", "missing"],
                 ["--node", "n0", "--peers", "fifo"],
                 ["--node", "n0", "--peers", "peers", "--alt", "fifo"],
                 ["--node", "n9", "--peers", "peers"], ["--node", "", "--peers", "peers"],
                 ["--node", "n0", "--peers", "badpeers"], ["--node", "n0", "--peers", "sub"],
                 ["--node", "n0", "--peers", "/dev/zero"],
                 ["--node", "n0", "--peers", "peers", "--probe-interval", "0"],
                 ["--node", "n0", "--peers", "peers", "--probe-interval", "nan"],
                 ["--node", "n0", "--peers", "peers", "--probe-timeout", "-5"],
                 ["--node", "n0", "--peers", "peers", "--port", "70000"],
                 ["--node", "n0", "--peers", "peers", "--port", "x"],
                 ["--node", "n0", "--peers", "peers", "--alt", "missing.map"],
                 ["--node", "n0", "--peers", "peers", "--log", "/nonexistent/d/log"],
                 ["--node", "n0", "--peers", "peers", "--control", "/nonexistent/d/sock"],
                 ["--node", "n0", "--peers", "peers", "extra"], ["--bogus"], ["--node"]):
        cases.append(Case(f"mpilab-pathmigd {' '.join(args)!r}", "E", pmd + args,
                          setup=peers, limit=30))
    return cases


def bench_new_option_cases() -> list[Case]:
    b = str(BIN / "mpilab-bench")
    cases = []
    for args in (["--p2p-schedule", "bogus"], ["--pipeline-depth", "0"],
                 ["--pipeline-depth", "x"], ["--pipeline-depth", "-1"],
                 ["--loggp-or-wait", "-1"], ["--loggp-or-wait", "nan"], ["--window", "0"],
                 ["--window", "x"], ["--pairs", "0"], ["--pairs", "1e3"],
                 ["--poll-sweep", "bogus"], ["--poll-sweep", ""], ["--comb-msgs", "0"],
                 ["--comb-msgs", " 4"], ["--sync", "nan"], ["--ops", "p2p", "--models", ""],
                 ["--json", "--list", "extra"], ["--timing", ""],
                 ["--eps-for", ""], ["--eps-for", "p2p"], ["--eps-for", "p2p@1K=0.1"],
                 ["--eps-for", "p2p@1024=2"], ["--eps-for", "p2p@1024=0.1,"],
                 ["--eps-for", "p$@1=0.1"]):
        cases.append(Case(f"mpilab-bench {' '.join(args)!r}", "A", [b, *args], limit=120))
    return cases + variation_store_cases()


def variation_store_cases() -> list[Case]:
    """`mpilab bench` and `mpilab survey` --variation-store: a store that is not one is
    refused in one line before anything runs."""
    def fifo(d: Path) -> None:
        os.mkfifo(d / "lv.json")

    def a_dir(d: Path) -> None:
        (d / "lv.json").mkdir()

    def deep(d: Path) -> None:
        (d / "lv.json").write_text("[" * 100000)

    def other(d: Path) -> None:
        (d / "lv.json").write_text('{"format": "mpilab.launch-variation/1", "contexts": '
                                   '{"k": {"series": {"x": [["d", "fast"]]}}}}')

    cases = []
    for what, setup in (("a FIFO", fifo), ("a directory", a_dir), ("nested 10^5 deep", deep),
                        ("a malformed series", other)):
        for cmd in (["bench", "--np", "2", "--variation-store", "lv.json", "--", "--ops",
                     "p2p", "--sizes", "1K"],
                    ["survey", "--quick", "--out", "sv", "--variation-store", "lv.json"]):
            cases.append(Case(f"{cmd[0]} --variation-store is {what}", "A", PY + cmd,
                              setup=setup, post=_no_output, limit=120))
    return cases


# ---------------------------------------------------------------------------------------
# running


def _job_pids(prefix: str) -> list[int]:
    from mpilab.testbed import jobctl

    return jobctl.job_pids(f"{prefix}-", prefix_only=True)


def _namespaces() -> set[str]:
    p = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return {ln.split()[0] for ln in p.stdout.splitlines() if ln.strip()}


def _ns_procs(prefix: str | None) -> set[int]:
    """Processes in the node namespaces of the campaign's testbed (agents, jobs)."""
    if not prefix:
        return set()
    from mpilab.testbed import net

    return {pid for ns in _namespaces() if ns.startswith(f"{prefix}-")
            for pid in net.ns_pids(ns)}


def _stdout_for(c: Case) -> tuple[Any, Any]:
    """What the case's standard output is: a pipe read here, /dev/full, or the write end
    of a pipe whose read end is already closed. (file to pass, file to close after)."""
    if c.stdout == "full":
        f = open("/dev/full", "wb")
        return f, f
    if c.stdout == "closed":
        r, w = os.pipe()
        os.close(r)
        f = os.fdopen(w, "wb")
        return f, f
    return subprocess.PIPE, None


def _listing(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


def run_case(c: Case, prefix: str | None) -> Outcome:
    d = Path(tempfile.mkdtemp(prefix="mpilab-hostile-"))
    env = harness.env(**c.env)
    if prefix and "MPILAB_TESTBED_PREFIX" not in c.env:  # a case's own prefix wins
        env["MPILAB_TESTBED_PREFIX"] = prefix
    t0 = time.monotonic()
    try:
        if c.setup:
            c.setup(d)
        before = _listing(d) if c.leftovers else set()
        ns_before = _namespaces() if c.testbed else set()
        procs_before = _ns_procs(prefix) if c.testbed else set()
        out_to, close = _stdout_for(c)
        try:
            proc = subprocess.Popen(c.argv, cwd=d, env=env, stdin=subprocess.DEVNULL,
                                    stdout=out_to, stderr=subprocess.PIPE,
                                    start_new_session=True)
        finally:
            if close is not None:
                close.close()
        try:
            out, err = proc.communicate(timeout=c.limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return Outcome(c, "hang", f"killed after {c.limit:g} s", time.monotonic() - t0)
        out = out or b""
        secs = time.monotonic() - t0
        text = err.decode("utf-8", "replace")
        if c.testbed:
            time.sleep(0.5)
            left = sorted(set(_job_pids(prefix) if prefix else [])
                          | (_ns_procs(prefix) - procs_before))
            # namespaces this case could have made (other testbeds come and go meanwhile)
            mine = [f"{prefix}-", "zz9-"] + [f"{a}-" for k, a in enumerate(c.argv)
                                              if k and c.argv[k - 1] == "--prefix"]
            new_ns = sorted(n for n in _namespaces() - ns_before
                            if any(n.startswith(m) for m in mine if m != "-"))
            if left or new_ns:
                subprocess.run(["kill", "-9", *map(str, left)], capture_output=True)
                return Outcome(c, "orphan", f"processes {left}, new namespaces {new_ns}", secs)
        clob = c.post(d) if c.post else None
        if clob:  # a post that found an impossible value on show: a dubious accept
            kind = "accepted" if clob.startswith(SHOWN) else "clobbered"
            return Outcome(c, kind, clob, secs)
        if c.leftovers and proc.returncode != 0:
            new = sorted(_listing(d) - before)
            if new:
                return Outcome(c, "clobbered", f"exit {proc.returncode} but left {new[:3]}",
                               secs)
        if proc.returncode < 0:
            return Outcome(c, "signal", f"killed by signal {-proc.returncode}: "
                           + text.strip()[-120:], secs)
        if ("Traceback (most recent call last)" in text or "internal error (" in text
                or proc.returncode in (70, 134)):
            last = text.strip().splitlines()[-1][:160] if text.strip() else ""
            return Outcome(c, "traceback", f"exit {proc.returncode}: {last}", secs)
        if c.design_exit is not None and proc.returncode == c.design_exit and re.search(
                c.design_stdout, out.decode("utf-8", "replace")):
            prob = c.design_check(d) if c.design_check else None
            if prob is None:
                return Outcome(c, "ok", c.design_why, secs)
        if c.expect_ok:
            if proc.returncode == 0:
                return Outcome(c, "ok", "", secs)
            return Outcome(c, "messy", f"exit {proc.returncode}: {text.strip()[:160]}", secs)
        if c.stdout == "closed" and proc.returncode == 0 and not text.strip():
            return Outcome(c, "ok", "a closed pipe ends it quietly", secs)
        if proc.returncode == 0 and c.schema_valid:
            return Outcome(c, "ok", "a document its schema accepts", secs)
        if proc.returncode == 0:
            return Outcome(c, "accepted", (text.strip() or out.decode()[:100]).replace(
                "\n", " | ")[:160], secs)
        # a long stage's periodic progress lines (mpilab.stage) are not part of the refusal
        lines = [ln for ln in text.splitlines() if ln.strip() and not PROGRESS.match(ln)]
        if c.lenient_stderr or len(lines) == 1:
            return Outcome(c, "clean", lines[-1][:160] if lines else "", secs)
        return Outcome(c, "messy", f"exit {proc.returncode}, {len(lines)} lines: "
                       + " | ".join(lines)[:200], secs)
    finally:
        shutil.rmtree(d, ignore_errors=True)

def all_cases(prefix: str | None) -> list[Case]:
    cases = (results_cases() + cli_cases() + bench_tool_cases() + wavefront_cases()
             + delayline_cases() + selftest_cases() + disk_cases() + multilane_cases()
             + bench_new_option_cases() + document_cases() + cli_and_model_cases()
             + option_cases() + choice_cases() + generated_cases())
    if prefix:
        cases += (testbed_cases(prefix) + multilane_testbed_cases(prefix)
                  + pathmig_cases(prefix) + document_testbed_cases(prefix))
    names = [c.name for c in cases]
    dup = [n for n, k in Counter(names).items() if k > 1]
    assert not dup, f"duplicate case names: {dup}"
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--testbed", metavar="PREFIX", help="a running testbed for its cases")
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--only", help="regex on case names")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--slice", action="store_true", help="only the CI slice")
    ap.add_argument("--json", metavar="FILE", help="every outcome as JSON")
    a = ap.parse_args(argv)
    cases = all_cases(a.testbed)
    if a.slice:
        cases = ci_slice(cases)
    if a.only:
        cases = [c for c in cases if re.search(a.only, c.name)]
    if a.list:
        for c in cases:
            print(f"{c.owner}  {c.name}")
        print(f"{len(cases)} cases")
        return 0
    if not a.testbed:
        print("no --testbed: the testbed cases are skipped", file=sys.stderr)
    t0 = time.monotonic()
    parallel = [c for c in cases if not c.testbed]
    serial = [c for c in cases if c.testbed]  # one at a time: orphans are attributed exactly
    outcomes: list[Outcome] = []
    with cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        outcomes += list(ex.map(lambda c: run_case(c, a.testbed), parallel))
    outcomes += [run_case(c, a.testbed) for c in serial]
    for o in outcomes:
        if o.kind not in ("clean", "ok"):
            print(f"{o.kind:9} [{o.case.owner}] {o.case.name!r}: {o.detail}")
    total = Counter(o.kind for o in outcomes)
    print(f"\n{len(outcomes)} cases in {time.monotonic() - t0:.0f} s: "
          + ", ".join(f"{k} {total[k]}" for k in ("clean", "ok", "messy", "accepted",
                                                     "traceback", "signal", "hang",
                                                     "orphan", "clobbered")))
    for owner in sorted({o.case.owner for o in outcomes}):
        own = Counter(o.kind for o in outcomes if o.case.owner == owner)
        print(f"  owner {owner}: " + ", ".join(f"{k} {v}" for k, v in sorted(own.items())))
    if a.json:
        Path(a.json).write_text(json.dumps([{"case": o.case.name, "owner": o.case.owner,
                                             "outcome": o.kind, "detail": o.detail,
                                             "seconds": round(o.seconds, 2)}
                                            for o in outcomes], indent=1) + "\n")
    return 0 if set(total) <= {"clean", "ok"} else 1


if __name__ == "__main__":
    sys.exit(main())
