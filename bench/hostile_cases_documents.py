"""Hostile cases over documents and outputs (bench/hostile_inputs.py runs them): FIFO
outputs of every writer, malformed multilane documents, impossible values, a full disk,
arguments before the environment, spec files, and every number of a tune choice file
mutated for `tune export`."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness
from harness import REPO
from hostile_cases import (
    BIN,
    PY,
    Case,
    Post,
    Setup,
    _first,
    _good,
    _good_text,
    _keep,
    _no_output,
    _write,
    report_case,
)
from hostile_generated import CHOICE


def _ml_good() -> dict[str, Any]:
    run = {"op": "scatter", "impl": "single", "lanes": 1, "bytes": 1024, "times": [1e-3]}
    return {"schema": "mpilab.multilane/1", "root": 0,
            "grid": {"nranks": 4, "nsites": 2, "site_of_rank": [0, 0, 1, 1], "P_sup": 2},
            "runs": [run, dict(run, bytes=4096)]}


def _fifo(name: str) -> Setup:
    return lambda d: os.mkfifo(d / name)


def _tmpfs(d: Path) -> None:
    (d / "full").mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d / "full")],
                   check=True)


def _full_post(name: str) -> Post:
    def post(d: Path) -> str | None:
        left = sorted(os.listdir(d / "full"))
        subprocess.run(["umount", "-l", str(d / "full")], capture_output=True)
        return f"left {left} on the full disk" if name in left else None
    return post


def _multilane_document_cases() -> list[Case]:
    """multilane report on a hostile document: one line, nothing written."""
    rep = PY + ["multilane", "report", "m.json", "-o", "out.html"]

    def ml(mut: Callable[[dict[str, Any]], None]) -> str:
        d = _ml_good()
        mut(d)
        return json.dumps(d)

    mls: dict[str, str] = {
        "garbage wan_samples": ml(lambda d: d.update(wan_samples={"t": "zz",
                                                                  "tx_bytes": {"a": 5}})),
        "wan_samples.t shorter than the counters": ml(lambda d: d.update(
            wan_samples={"t": [1.0], "tx_bytes": {"s1r0": [1, 2, 3]}})),
        "a string root": ml(lambda d: d.update(root="a")),
        "a root of 10^30": ml(lambda d: d.update(root=10**30)),
        "a root beyond the grid": ml(lambda d: d.update(root=9)),
        "grid nranks -3": ml(lambda d: d["grid"].update(nranks=-3)),
        "grid a list": ml(lambda d: d.update(grid=[1, 2])),
        "site map shorter than nranks": ml(lambda d: d["grid"].update(nranks=8)),
        "10^12 lanes": ml(lambda d: d["runs"][0].update(lanes=10**12)),
        "lanes beyond P_sup": ml(lambda d: d["runs"][0].update(lanes=3)),
        "model sizes garbage": ml(lambda d: d.update(model={
            "L": 0, "l": 0, "alpha": 0, "b_lan": 1, "b": [1], "sizes": [{"bytes": 1, "T": "x"}]})),
        "alpha_calibration a list": ml(lambda d: d.update(model={
            "L": 0, "l": 0, "alpha": 0, "b_lan": 1, "b": [1], "alpha_calibration": [5]})),
        "a time of 1e308": ml(lambda d: d["runs"][0].update(times=[1e308])),
        "deep nesting": '{"schema": "mpilab.multilane/1", "runs": ' + "[" * 5000 + "]" * 5000
                        + "}",
        "a string document": '"mpilab.multilane/1"', "a number document": "1" + "0" * 30,
    }
    cases = [Case(f"29 multilane report: {n}", "F", rep, setup=_write("m.json", t),
                  post=_no_output) for n, t in mls.items()]
    return cases


def _argument_and_spec_cases() -> list[Case]:
    """Arguments checked before the environment (no testbed named zz9 is up), and hostile
    testbed and disk spec files."""
    cases = []
    for args in (["multilane", "run", "--testbed", "zz9", "--lanes", "many", "-o", "o.json"],
                 ["multilane", "run", "--testbed", "zz9", "--np", "0", "-o", "o.json"],
                 ["multilane", "run", "--testbed", "zz9", "--reps", "0", "-o", "o.json"],
                 ["testbed", "run", "--prefix", "zz9", "--pathmig", "--np", "0", "--", "true"],
                 ["testbed", "run", "--prefix", "zz9", "--mptcp", "--np", "0", "--", "true"],
                 ["testbed", "run", "--prefix", "zz9", "--pathmig-events", "e", "--", "true"]):
        cases.append(Case(f"29 {' '.join(args)}", "C", PY + args))
    # spec files: testbed and disk
    tb = (REPO / "examples" / "testbed" / "dual-rail-2x2.toml").read_text()
    specs = {
        "two [[link]] for one node and rail": tb + '\n[[link]]\nnode = "s0n1"\nrail = 1\n'
                                                   'wan_rate = "30Mbit"\n',
        "node_rate 1bit": tb.replace('node_rate = "50Mbit"', 'node_rate = "1bit"'),
        "a 5000-digit site count": tb.replace("sites = 2", "sites = " + "9" * 5000),
        "arrays nested 5000 deep": tb + "\nx = " + "[" * 5000 + "]" * 5000 + "\n",
        "tables nested 5000 deep": tb + "\ny = " + "{a=" * 5000 + "1" + "}" * 5000 + "\n",
    }
    for n, text in specs.items():
        cases.append(Case(f"29 testbed up SPEC: {n}", "C",
                          PY + ["testbed", "up", "s.toml", "--prefix", "zz9"],
                          setup=_write("s.toml", text), limit=120))
    dk = (REPO / "examples" / "disk" / "hdd.toml").read_text()
    for n, text in {"a 5000-digit iops": dk.replace("read_iops = 200",
                                                    "read_iops = " + "9" * 5000),
                    "arrays nested 5000 deep": dk + "\nx = " + "[" * 5000 + "]" * 5000 + "\n"
                    }.items():
        cases.append(Case(f"29 disk up SPEC: {n}", "D",
                          PY + ["disk", "up", "d.toml", "--prefix", "zz9"],
                          setup=_write("d.toml", text), limit=120))
    return cases


def document_cases() -> list[Case]:
    cases = _multilane_document_cases()
    t = _good_text()
    good = _good()

    def res(mut: Callable[[dict[str, Any]], None]) -> str:
        d = json.loads(json.dumps(good))
        mut(d)
        return json.dumps(d, indent=1)

    def coll(d: dict[str, Any]) -> dict[str, Any]:
        return _first(d, p2p=False)

    impossible: dict[str, str] = {
        "partial 'yes'": res(lambda d: d.update(partial="yes")),
        "a negative mean": res(lambda d: coll(d)["stats"].update(mean=-1e-6)),
        "a negative median": res(lambda d: coll(d)["stats"].update(median=-1e-6)),
        "a mean of 1e308": res(lambda d: coll(d)["stats"].update(mean=1e308)),
        "a median of 1e308": res(lambda d: coll(d)["stats"].update(median=1e308)),
        "reps 10^18 beside 5 samples": res(lambda d: coll(d)["stats"].update(reps=10**18)),
        "a key given twice": '{"partial": false, ' + t.lstrip()[1:].replace(
            '"schema"', '"partial": true, "schema"', 1),
        "op teleport": res(lambda d: coll(d).update(op="teleport")),
        "timing psychic": res(lambda d: coll(d).update(timing="psychic")),
        "provenance.ranks 10^9": res(lambda d: d["provenance"].update(
            ranks=10**9, mapping=[{"rank": 0, "host": "a"}, {"rank": 1, "host": "a"}])),
        "a mapping host not in the hosts": res(lambda d: d["provenance"].update(
            ranks=2, hosts=["a"], mapping=[{"rank": 0, "host": "a"}, {"rank": 1, "host": "b"}])),
        "an interval missing its median": res(lambda d: coll(d)["stats"].update(med_lo=1.0)),
        "min above max": res(lambda d: coll(d)["stats"].update(min=1.0)),
        "more invalid than repetitions": res(lambda d: coll(d)["stats"].update(invalid=10**9)),
        "a lone surrogate in the command": t.replace('"command": "', '"command": "\\ud800', 1),
        "ci_half 1e300": res(lambda d: coll(d)["stats"].update(ci_half=1e300)),
    }
    cases += [report_case(f"29 {n}", x) for n, x in impossible.items()]

    def nul_html(d: Path) -> str | None:
        p = d / "out.html"
        if p.exists() and b"\x00" in p.read_bytes():
            return "a NUL copied raw into the HTML"
        return None

    nul = res(lambda d: d["provenance"].update(command="a\u0000b\u001bc"))
    cases.append(Case("29 report: NUL and ESC in provenance (escaped, must succeed)", "C",
                      PY + ["report", "r.json", "-o", "out.html"], setup=_write("r.json", nul),
                      post=nul_html, expect_ok=True, limit=300))
    # a FIFO output per writer (no reader): refused at once
    cases += [
        Case("29 multilane report -o a FIFO", "F", PY + ["multilane", "report", "m.json", "-o",
                                                        "f.html"],
             setup=lambda d: (_write("m.json", json.dumps(_ml_good()))(d), _fifo("f.html")(d)),
             post=_keep("f.html", "fifo"), limit=60),
        Case("29 report --format csv -o a FIFO", "C", PY + ["report", "r.json", "--format",
                                                            "csv", "-o", "f.csv"],
             setup=lambda d: (_write("r.json", t)(d), _fifo("f.csv")(d)),
             post=_keep("f.csv", "fifo"), limit=60),
        Case("29 mpilab-bench --out a FIFO (refused before measuring)", "C",
             [*harness.mpirun(2), str(BIN / "mpilab-bench"), "--ops", "p2p", "--sizes", "1",
              "--out", "f.json"], setup=_fifo("f.json"),
             post=_keep("f.json", "fifo"), lenient_stderr=True, limit=120),
        Case("29 mpilab-bench --inject-clock offset twice", "A",
             [str(BIN / "mpilab-bench"), "--ops", "barrier", "--sizes", "0", "--inject-clock",
              "offset=1ms,offset=2ms"]),
        Case("29 mpilab-bench --format xml", "A", [str(BIN / "mpilab-bench"), "--format", "xml"]),
        Case("29 report --format csv --static", "C", PY + ["report", "r.json", "--format", "csv",
                                                           "--static"],
             setup=_write("r.json", t)),
    ]
    if os.geteuid() == 0:  # a full disk: a small tmpfs
        cases += [
            Case("29 mpilab-bench on a full disk leaves nothing at --out", "C",
                 [*harness.mpirun(2), str(BIN / "mpilab-bench"), "--ops", "p2p,bcast,scatter",
                  "--sizes", "1:64K:x4", "--quiet", "--out", "full/r.json"],
                 setup=_tmpfs, post=_full_post("r.json"),
                 lenient_stderr=True, limit=300),
            Case("29 mpilab bench on a full disk leaves nothing at --out", "C",
                 PY + ["bench", "--np", "2", "--quiet-launches", "--out", "full/b.json", "--",
                       "--ops", "p2p,bcast,scatter", "--sizes", "1:64K:x4", "--quiet"],
                 setup=_tmpfs, post=_full_post("b.json"), lenient_stderr=True, limit=600),
        ]
    return cases + _argument_and_spec_cases()


def document_testbed_cases(prefix: str) -> list[Case]:
    """On the running testbed: hosts and rails checked before agents start; the event log
    on a FIFO refused before the job."""
    cases = []
    for args in (["pathmig", "start", "--prefix", prefix, "--hosts", "s9n9"],
                 ["pathmig", "start", "--prefix", prefix, "--hosts", "s0n0;id"],
                 ["testbed", "run", "--prefix", prefix, "--pathmig", "--rails", "5", "--",
                  "true"],
                 ["testbed", "run", "--prefix", prefix, "--pathmig", "--np", "100000", "--",
                  "true"]):
        cases.append(Case(f"29 {' '.join(args)}", "E", PY + args, testbed=True, limit=120))
    cases.append(Case("29 testbed run --pathmig --pathmig-events a FIFO", "E",
                      PY + ["testbed", "run", "--prefix", prefix, "--pathmig",
                            "--pathmig-events", "ev", "--np", "2", "--", "true"],
                      setup=_fifo("ev"), post=_keep("ev", "fifo"), testbed=True, limit=120))
    return cases


def _numbers(v: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every number in a document."""
    if isinstance(v, dict):
        return [q for k, x in v.items() for q in _numbers(x, path + (k,))]
    if isinstance(v, list):
        return [q for k, x in enumerate(v) for q in _numbers(x, path + (k,))]
    return [path] if isinstance(v, (int, float)) and not isinstance(v, bool) else []


def _mutated(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> str:
    d = json.loads(json.dumps(doc))
    at = d
    for k in path[:-1]:
        at = at[k]
    at[path[-1]] = value
    return json.dumps(d, indent=1)


def choice_cases() -> list[Case]:
    """Generated from the choice document (every number of a good choice file: negative,
    not a number, 1e30, nested lists) for `tune export`; the sweep's --dir and limits."""
    cases = []
    export = PY + ["tune", "export", "c.json", "--openmpi", "out.conf"]
    gone: Post = lambda d: ("out.conf written although the command failed"  # noqa: E731
                            if (d / "out.conf").exists() else None)
    for path in _numbers(CHOICE):
        where = ".".join(map(str, path))
        for label, value in (("-1", -1), ("'x'", "x"), ("1e30", 1e30), ("[[[]]]", [[[]]])):
            cases.append(Case(f"53 tune export: {where} = {label}", "C", export,
                              setup=_write("c.json", _mutated(CHOICE, path, value)),
                              post=gone))
    dup = json.loads(json.dumps(CHOICE))
    dup["ranges"].append(dup["ranges"][0])
    mpich = json.loads(json.dumps(CHOICE))
    mpich["ranges"][0]["ranges"][0]["winner"] = "mpich_binomial"
    cases += [Case("53 tune export: a collective twice", "C", export,
                   setup=_write("c.json", json.dumps(dup)), post=gone),
              Case("53 tune export: an MPICH choice as Open MPI rules", "C", export,
                   setup=_write("c.json", json.dumps(mpich)), post=gone),
              Case("53 tune export: nested 10^5 deep", "C", export,
                   setup=_write("c.json", '{"schema": "mpilab.tune-choice/1", "cells": [], '
                                '"ranges": ' + "[" * 100000 + "]" * 100000 + "}"), post=gone)]
    sweep = PY + ["tune", "sweep", "--dir", "sw", "--np", "2", "--colls", "bcast"]
    cases += [Case("53 tune sweep --dir a file", "C", sweep, setup=_write("sw", "x")),
              Case("53 tune sweep --dir a FIFO", "C", sweep, setup=_fifo("sw"))]
    for opt in ("--timeout", "--rounds", "--min-effect"):
        cases.append(Case(f"53 tune sweep {opt} -1", "C", sweep + [opt, "-1"]))
    return cases
