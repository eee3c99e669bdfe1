"""The cases of bench/hostile_inputs.py, part one: results files, report options and output
paths, the top-level command, the testbed and the C tools; with the Case and Outcome they are
made of. A library of bench/, not a script (moved unchanged from hostile_inputs.py, which
was 992 lines, issue 27; hostile_inputs.py keeps the later entry points, the runner and
main)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import harness
from harness import BIN, mpilab_cmd, mpirun

harness.test_helpers()
from conftest import make_results  # noqa: E402

PY = mpilab_cmd()
Setup = Callable[[Path], None]
Post = Callable[[Path], str | None]


@dataclass
class Case:
    name: str
    owner: str
    argv: list[str]
    setup: Setup | None = None
    post: Post | None = None  # returns a clobber description, or None
    expect_ok: bool = False  # an output case that must succeed
    limit: float = 120.0
    testbed: bool = False  # needs --testbed
    stdin: bytes | None = None
    env: dict[str, str] = field(default_factory=dict)
    lenient_stderr: bool = False  # output passed through from MPI: only exit status counts
    stdout: str = "pipe"  # pipe, full (/dev/full) or closed (a pipe nobody reads)
    leftovers: bool = False  # a failed command must leave no new file in its folder
    # a mutated document its kind's schema still accepts (an optional field left out, a
    # number the schema does not bound): taking it is right, as is a one-line refusal
    schema_valid: bool = False
    # an outcome the documentation gives for this input (an output to a character device or
    # into a missing folder is written; `slurm status` exits 1 when Slurm is not running):
    # that exit status, stdout matching design_stdout and design_check finding nothing
    # wrong in the case's folder make it "ok" with design_why as its detail
    design_exit: int | None = None
    design_why: str = ""
    design_stdout: str = ""
    design_check: Post | None = None


@dataclass
class Outcome:
    case: Case
    kind: str
    detail: str = ""
    seconds: float = 0.0


# ---------------------------------------------------------------------------------------
# results files


def _unmount_under(d: Path) -> str | None:
    """Post for FUSE cases: a case must not leave a mount (unmounted here if it did)."""
    with open("/proc/self/mounts") as f:
        mounted = [ln.split()[1] for ln in f if ln.split()[1].startswith(str(d))]
    for m in mounted:
        subprocess.run(["umount", "-l", m], capture_output=True)
    return f"left a mount at {mounted[0]}" if mounted else None


def _good() -> dict[str, Any]:
    return make_results(ranks=2, sizes=(0, 1024))


def _good_text() -> str:
    return json.dumps(_good(), indent=1)


def _write(name: str, data: str | bytes) -> Setup:
    def f(d: Path) -> None:
        p = d / name
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            p.write_text(data)
    return f


def _mutated(mut: Callable[[dict[str, Any]], None]) -> str:
    doc = _good()
    mut(doc)
    return json.dumps(doc, indent=1)


def _first(doc: dict[str, Any], op: str | None = None, p2p: bool | None = None) -> dict[str, Any]:
    for m in doc["measurements"]:
        if (p2p is None or (m["op"] == "p2p") == p2p) and (op is None or m["op"] == op):
            return m
    raise KeyError(op)


def _no_output(d: Path) -> str | None:
    return "out.html written although the command failed" if (d / "out.html").exists() else None


def report_case(name: str, data: str | bytes, owner: str = "C") -> Case:
    return Case(f"report: {name}", owner, PY + ["report", "r.json", "-o", "out.html"],
                setup=_write("r.json", data), post=_no_output)


def _results_mutations() -> list[tuple[str, Callable[[dict[str, Any]], None]]]:
    """A good results document changed in one place: each (name, change)."""
    return [
        ("provenance missing", lambda d: d.pop("provenance")),
        ("measurements missing", lambda d: d.pop("measurements")),
        ("measurements an object", lambda d: d.update(measurements={"a": 1})),
        ("measurement a number", lambda d: d["measurements"].__setitem__(0, 5)),
        ("op missing", lambda d: d["measurements"][1].pop("op")),
        ("op empty", lambda d: d["measurements"][1].update(op="")),
        ("op a number", lambda d: d["measurements"][1].update(op=3)),
        ("timing null", lambda d: d["measurements"][1].update(timing=None)),
        ("bytes negative", lambda d: d["measurements"][1].update(bytes=-1)),
        ("bytes a string", lambda d: d["measurements"][1].update(bytes="4K")),
        ("bytes true", lambda d: d["measurements"][1].update(bytes=True)),
        ("bytes 2.5", lambda d: d["measurements"][1].update(bytes=2.5)),
        ("stats missing", lambda d: d["measurements"][1].pop("stats")),
        ("stats a list", lambda d: d["measurements"][1].update(stats=[1])),
        ("mean a string", lambda d: d["measurements"][1]["stats"].update(mean="fast")),
        ("mean an object", lambda d: d["measurements"][1]["stats"].update(mean={"v": 1})),
        ("reps negative", lambda d: d["measurements"][1]["stats"].update(reps=-3)),
        ("converged a string", lambda d: d["measurements"][1]["stats"].update(converged="y")),
        ("stdev negative", lambda d: d["measurements"][1]["stats"].update(stdev=-1.0)),
        ("ci_half negative", lambda d: d["measurements"][1]["stats"].update(ci_half=-1e-6)),
        ("samples a number", lambda d: d["measurements"][1].update(samples=3)),
        ("sample a string", lambda d: d["measurements"][1].update(samples=["x"])),
        ("valid of wrong length", lambda d: d["measurements"][1].update(valid=[True])),
        ("valid a number", lambda d: d["measurements"][1].update(valid=[1, 0])),
        ("pair missing", lambda d: _first(d, p2p=True).pop("pair")),
        ("pair of one", lambda d: _first(d, p2p=True).update(pair=[0])),
        ("pair of three", lambda d: _first(d, p2p=True).update(pair=[0, 1, 1])),
        ("pair with itself", lambda d: _first(d, p2p=True).update(pair=[1, 1])),
        ("pair beyond the ranks", lambda d: _first(d, p2p=True).update(pair=[0, 7])),
        ("pair negative", lambda d: _first(d, p2p=True).update(pair=[-1, 0])),
        ("root beyond the ranks", lambda d: _first(d, p2p=False).update(root=9)),
        ("eps 5", lambda d: _first(d, p2p=False)["precision"].update(eps=5)),
        ("eps 0", lambda d: _first(d, p2p=False)["precision"].update(eps=0)),
        ("cl 1", lambda d: _first(d, p2p=False)["precision"].update(cl=1)),
        ("cl -0.5", lambda d: _first(d, p2p=False)["precision"].update(cl=-0.5)),
        ("min_reps above max_reps", lambda d: _first(d, p2p=False)["precision"].update(
            min_reps=100, max_reps=5)),
        ("ranks 0", lambda d: d["provenance"].update(ranks=0)),
        ("ranks a string", lambda d: d["provenance"].update(ranks="2")),
        ("hosts a string", lambda d: d["provenance"].update(hosts="node0")),
        ("host empty", lambda d: d["provenance"].update(hosts=[""])),
        ("mapping entry a number", lambda d: d["provenance"].update(mapping=[1])),
        ("clock_sync a list", lambda d: d["provenance"].update(clock_sync=[1])),
        ("clock_sync.ranks a number", lambda d: d["provenance"].update(
            clock_sync={"method": "skampi", "max_residual_s": 1e-7, "ranks": 5})),
        ("clock_sync residual a string", lambda d: d["provenance"].update(
            clock_sync={"method": "skampi", "max_residual_s": "small"})),
        ("models a list", lambda d: d.update(models=[1])),
        ("hockney pairs an object", lambda d: d["models"]["hockney"].update(pairs={"i": 0})),
        ("hockney alpha a string", lambda d: d["models"]["hockney"]["pairs"][0].update(
            alpha="fast")),
        ("hockney pair beyond the ranks", lambda d: d["models"]["hockney"]["pairs"][0].update(
            j=5)),
        ("hockney range reversed", lambda d: d["models"]["hockney"]["pairs"][0].update(
            ranges=[{"from": 100, "to": 1, "alpha": 0, "beta": 0}])),
        ("prediction without predicted", lambda d: d["models"]["predictions"][0].pop(
            "predicted")),
        ("loggp without pairs", lambda d: d["models"].update(loggp={})),
        ("loggp L negative", lambda d: d["models"].update(loggp={"pairs": [{
            "i": 0, "j": 1, "L": -1, "os": 0, "or": 0, "g": 0, "G": 0, "per_size": []}]})),
        ("loggp unknown flag", lambda d: d["models"].update(loggp={"pairs": [{
            "i": 0, "j": 1, "L": 0, "os": 0, "or": 0, "g": 0, "G": 0, "per_size": [],
            "flags": ["bogus"]}]})),
    ]


def _results_file_cases() -> list[Case]:
    """The results file is not a regular file (or not there): refused before it is read."""
    cases: list[Case] = []

    def fifo(d: Path) -> None:
        os.mkfifo(d / "r.json")

    def sparse(d: Path) -> None:
        with open(d / "r.json", "wb") as f:
            f.truncate(600 << 20)

    def dangling(d: Path) -> None:
        (d / "r.json").symlink_to("missing.json")

    def a_dir(d: Path) -> None:
        (d / "r.json").mkdir()

    for n, s, target in (("a FIFO", fifo, "r.json"), ("600 MB sparse file", sparse, "r.json"),
                         ("a dangling link", dangling, "r.json"), ("a directory", a_dir,
                                                                   "r.json"),
                         ("missing", None, "nope.json"), ("/dev/zero", None, "/dev/zero"),
                         ("/dev/null", None, "/dev/null"), ("/dev/stdin", None, "/dev/stdin")):
        cases.append(Case(f"report: results file is {n}", "C",
                          PY + ["report", target, "-o", "out.html"], setup=s, post=_no_output,
                          limit=60))
    return cases


def results_cases() -> list[Case]:
    t = _good_text()
    mean0 = json.dumps(_good()["measurements"][0]["stats"]["mean"])
    cases = [
        report_case("empty file", ""),
        report_case("only blanks", " \n\t\n"),
        report_case("null", "null"),
        report_case("an array", "[1, 2]"),
        report_case("a number", "42"),
        report_case("a string", '"mpilab.results/1"'),
        report_case("an empty object", "{}"),
        report_case("schema 2", t.replace('"mpilab.results/1"', '"mpilab.results/2"')),
        report_case("schema a number", t.replace('"mpilab.results/1"', "1")),
        report_case("trailing garbage", t + "xyz"),
        report_case("two documents", t + t),
        report_case("a comment", "// results\n" + t),
        report_case("BOM", "\ufeff" + t),
        report_case("UTF-16", t.encode("utf-16")),
        report_case("latin-1 byte", t.encode()[:50] + b"\xe9" + t.encode()[50:]),
        report_case("NUL byte", t[:100] + "\x00" + t[100:]),
        report_case("deep nesting", '{"schema": "mpilab.results/1", "x": ' + "[" * 100000
                    + "]" * 100000 + "}"),
        report_case("unclosed nesting", "[" * 100000),
        report_case("NaN mean", t.replace(f'"mean": {mean0}', '"mean": NaN', 1)),
        report_case("Infinity mean", t.replace(f'"mean": {mean0}', '"mean": Infinity', 1)),
        report_case("-Infinity mean", t.replace(f'"mean": {mean0}', '"mean": -Infinity', 1)),
        report_case("1e400 mean", t.replace(f'"mean": {mean0}', '"mean": 1e400', 1)),
        report_case("-1e400 sample", t.replace('"samples": [', '"samples": [-1e400, ', 1)),
        report_case("5000-digit integer", t.replace('"reps": ', '"reps": ' + "9" * 5000
                                                    + ', "x": ', 1)),
        report_case("bytes 10**400", t.replace('"bytes": 0', '"bytes": 1' + "0" * 400, 1)),
        report_case("bytes 2**63", t.replace('"bytes": 0', '"bytes": 9223372036854775808', 1)),
        report_case("NaN in provenance", t.replace('"ranks": 2', '"ranks": NaN', 1)),
        report_case("NaN in models", t.replace('"alpha": ', '"alpha": NaN, "y": ', 1)),
    ]
    for n in (1, 10, 100, len(t) // 3, len(t) // 2, len(t) - 2):
        cases.append(report_case(f"truncated at {n}", t[:n]))
    cases += [report_case(n, _mutated(m)) for n, m in _results_mutations()]
    return cases + _results_file_cases()


# ---------------------------------------------------------------------------------------
# report options, output paths, the top-level command


def _keep(name: str, kind: str) -> Post:
    def post(d: Path) -> str | None:
        p = d / name
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return f"{name} disappeared"
        ok = {"link": stat.S_ISLNK, "fifo": stat.S_ISFIFO, "dir": stat.S_ISDIR}[kind](st.st_mode)
        return None if ok else f"{name} is no longer a {kind}"
    return post


def _both(*posts: Post) -> Post:
    def post(d: Path) -> str | None:
        for p in posts:
            r = p(d)
            if r:
                return r
        return None
    return post


def _no_dash(d: Path) -> str | None:
    return "a file named '-' was created" if (d / "-").exists() else None


def cli_cases() -> list[Case]:
    good = _write("r.json", _good_text())
    cases = []
    for sizes in ("0,\u00b2", "-1", "1e3", "nan", "", " 1", "1\n2", "4Q", "99999999999999999999G",
                  "0x10", "\u0663", "1,,2"):
        cases.append(Case(f"report --matrix-sizes {sizes!r}", "C",
                          PY + ["report", "r.json", "-o", "out.html", f"--matrix-sizes={sizes}"],
                          setup=good, post=_no_output))
    cases.append(Case("report --matrix-sizes of a size not measured", "C",
                      PY + ["report", "r.json", "-o", "out.html", "--matrix-sizes=64K"],
                      setup=good, post=_no_output))

    def link_null(d: Path) -> None:
        good(d)
        (d / "null").symlink_to("/dev/null")

    def dangling_out(d: Path) -> None:
        good(d)
        (d / "out.html").symlink_to("nowhere/x.html")

    def fifo_out(d: Path) -> None:
        good(d)
        os.mkfifo(d / "fifo")
        # a reader, so writing the FIFO does not block
        subprocess.Popen(["sh", "-c", f"cat '{d}/fifo' > '{d}/from-fifo'"])

    def dir_out(d: Path) -> None:
        good(d)
        (d / "outdir").mkdir()

    cases += [
        Case("report -o a directory", "C", PY + ["report", "r.json", "-o", "outdir"],
             setup=dir_out, post=_keep("outdir", "dir")),
        Case("report -o a dangling link", "C", PY + ["report", "r.json", "-o", "out.html"],
             setup=dangling_out, post=_keep("out.html", "link")),
        Case("report -o /proc/version", "C", PY + ["report", "r.json", "-o", "/proc/version"],
             setup=good),
        # these render a whole report: minutes on a loaded machine
        Case("report -o a link to /dev/null", "C", PY + ["report", "r.json", "-o", "null"],
             setup=link_null, post=_keep("null", "link"), expect_ok=True, limit=600),
        Case("report -o -", "C", PY + ["report", "r.json", "-o", "-"], setup=good,
             post=_no_dash, expect_ok=True, limit=600),
        Case("report -o a FIFO", "C", PY + ["report", "r.json", "-o", "fifo"], setup=fifo_out,
             post=_keep("fifo", "fifo"), expect_ok=True, limit=600),
        Case("mpilab (no command)", "C", PY),
        Case("mpilab bogus", "C", PY + ["bogus"]),
        Case("mpilab --bogus", "C", PY + ["--bogus"]),
        Case("mpilab report (no file)", "C", PY + ["report"]),
        Case("mpilab report two files", "C", PY + ["report", "a.json", "b.json"]),
        Case("mpilab testbed bogus", "C", PY + ["testbed", "bogus"]),
        Case("mpilab testbed (no action)", "C", PY + ["testbed"]),
    ]
    for args, owner in ((["--np", "0"], "C"), (["--np", "-1"], "C"), (["--np", "x"], "C"),
                        (["--np", "\u0663"], "A"), (["--launcher", "bogus"], "B"),
                        (["--testbed", "rb\n"], "C"), (["--out", "outdir"], "C")):
        cases.append(Case(f"mpilab bench {' '.join(args)!r}", owner,
                          PY + ["bench", *args, "--", "--ops", "p2p", "--sizes", "1"],
                          setup=dir_out if "outdir" in args else None, limit=180))
    return cases


# ---------------------------------------------------------------------------------------
# testbed


def _spec(text: str) -> Setup:
    return _write("s.toml", text)


def testbed_cases(prefix: str) -> list[Case]:
    cases = []
    for p in ("rb\n", "rb\n\n", "RB", "1ab", "abcdefg", "", "a b", "../x", "ab;rm", "\nab"):
        cases.append(Case(f"testbed up --prefix {p!r}", "C", PY + ["testbed", "up", "--prefix", p],
                          testbed=True, limit=180))
    for p in ("rb\n", "RB", ""):
        for action in ("down", "status"):
            cases.append(Case(f"testbed {action} --prefix {p!r}", "C",
                              PY + ["testbed", action, "--prefix", p], testbed=True))
    specs = {
        "TOML syntax error": "[cluster\nsites = 2\n",
        "unknown key": "[cluster]\nsitez = 2\n",
        "unknown table": "[bogus]\na = 1\n",
        "sites 0": "[cluster]\nsites = 0\n",
        "sites 1000": "[cluster]\nsites = 1000\n",
        "sites a string": "[cluster]\nsites = \"two\"\n",
        "sites 2.5": "[cluster]\nsites = 2.5\n",
        "nodes 100000": "[cluster]\nnodes_per_site = 100000\n",
        "rails 0": "[cluster]\nrails = 0\n",
        "negative rate": "[wan]\nnode_rate = \"-1Mbit\"\n",
        "rate nan": "[wan]\nnode_rate = \"nanMbit\"\n",
        "rate without unit": "[lan]\nrate = \"100\"\n",
        "rate 1e400": "[lan]\nrate = 1e400\n",
        "delay nan": "[wan]\ndelay = \"nan\"\n",
        "delay inf": "[wan]\ndelay = inf\n",
        "delay -5ms": "[wan]\ndelay = \"-5ms\"\n",
        "delay 1h": "[wan]\ndelay = \"1h\"\n",
        "delay beyond the buffer": "[wan]\ntotal_rate = \"1Gbit\"\ndelay = \"9s\"\n",
        "prefix with newline": "prefix = \"rb\\n\"\n",
        "prefix too long": "prefix = \"abcdefgh\"\n",
        "link to a missing node": "[[link]]\nnode = \"s9n9\"\nrail = 0\nwan_rate = \"1Mbit\"\n",
        "link rail 7": "[[link]]\nnode = \"s0n0\"\nrail = 7\nwan_rate = \"1Mbit\"\n",
        "link not an array": "[link]\nnode = \"s0n0\"\n",
        "delay backend bogus": "[wan]\ndelay_backend = \"bogus\"\n",
        "binary file": "\x00\x01\x02",
        # the keys added later ([[node]] cpu limits, per-node WAN delay, the delay trim,
        # slow start after idle)
        "cpu_quota negative": "[[node]]\nname = \"s0n0\"\ncpu_quota = -0.5\n",
        "cpu_quota zero": "[[node]]\nname = \"s0n0\"\ncpu_quota = 0\n",
        "cpu_quota nan": "[[node]]\nname = \"s0n0\"\ncpu_quota = nan\n",
        "cpu_quota 1e300": "[[node]]\nname = \"s0n0\"\ncpu_quota = 1e300\n",
        "cpu_quota 5000 digits": "[[node]]\nname = \"s0n0\"\ncpu_quota = " + "9" * 5000 + "\n",
        "cpu_quota a string": "[[node]]\nname = \"s0n0\"\ncpu_quota = \"half\"\n",
        "cpu_period 0": "[[node]]\nname = \"s0n0\"\ncpu_quota = 0.5\ncpu_period = \"0ms\"\n",
        "cpu_period -1ms": "[[node]]\nname = \"s0n0\"\ncpu_quota = 0.5\ncpu_period = \"-1ms\"\n",
        "node unknown": "[[node]]\nname = \"s9n9\"\ncpu_quota = 0.5\n",
        "node twice": "[[node]]\nname = \"s0n0\"\ncpu_quota = 0.5\n"
                      "[[node]]\nname = \"s0n0\"\ncpu_quota = 0.25\n",
        "node without a name": "[[node]]\ncpu_quota = 0.5\n",
        "link wan_delay -1ms": "[[link]]\nnode = \"s0n0\"\nwan_delay = \"-1ms\"\n",
        "link wan_delay nan": "[[link]]\nnode = \"s0n0\"\nwan_delay = \"nan\"\n",
        "link wan_delay 1e300s": "[[link]]\nnode = \"s0n0\"\nwan_delay = 1e300\n",
        "link wan_delay with netem": "[wan]\ndelay_backend = \"netem\"\n"
                                     "[[link]]\nnode = \"s0n0\"\nwan_delay = \"2ms\"\n",
        "delay_trim above 1 ms": "[wan]\ndelay = \"5ms\"\ndelay_trim = \"2ms\"\n",
        "delay_trim bogus": "[wan]\ndelay_trim = \"sometimes\"\n",
        "slow_start_after_idle a string": "[wan]\nslow_start_after_idle = \"no\"\n",
    }
    for n, text in specs.items():
        cases.append(Case(f"testbed up SPEC: {n}", "C",
                          PY + ["testbed", "up", "s.toml", "--prefix", "zz9"], setup=_spec(text),
                          testbed=True, limit=180))
    cases.append(Case("testbed up SPEC that is a FIFO", "C",
                      PY + ["testbed", "up", "fifo.toml", "--prefix", "zz9"],
                      setup=lambda d: os.mkfifo(d / "fifo.toml"), testbed=True, limit=60))
    pp = str(BIN / "mpilab-tb-pingpong")
    run = PY + ["testbed", "run", "--prefix", prefix]
    for args in (["--timeout", "nan"], ["--timeout", "inf"], ["--timeout", "0"],
                 ["--timeout", "-1"], ["--timeout", "1e999"], ["--timeout", "abc"],
                 ["--timeout", ""], ["--timeout", " 5"], ["--fault-grace", "nan"],
                 ["--fault-grace", "-3"], ["--np", "100000"], ["--np", "0"], ["--np", "-1"],
                 ["--np", "1e3"], ["--np", "\u0663"], ["--hosts", "nosuch"],
                 ["--hosts", "s0n0,s0n0"], ["--hosts", "s0n0\n"], ["--hosts", ""],
                 ["--rails", "5"], ["--rails", "-1"], ["--rails", "x"], ["--rails", "0,,1"],
                 ["--mptcp", "--rails", "0,1", "--hosts", "s9n0"]):
        owner = "A" if args[1] in ("\u0663", "1e3") else "C"
        cases.append(Case(f"testbed run {' '.join(args)!r}", owner,
                          run + [*args, "--", pp, "--count", "1"], testbed=True, limit=180))
    cases += [
        Case("testbed run without a program", "C", run + ["--"], testbed=True),
        Case("testbed run of a missing program", "C",
             run + ["--hosts", "s0n0,s1n0", "--timeout", "60", "--", "/nonexistent/prog"],
             testbed=True, limit=180, lenient_stderr=True),
        Case("testbed run of a program that hangs (time limit)", "C",
             run + ["--hosts", "s0n0", "--timeout", "3", "--", "sleep", "600"], testbed=True,
             limit=180),
    ]
    fail = PY + ["testbed", "fail", "--prefix", prefix]
    for args in (["s9n9:0"], ["s0n0:9"], ["x"], ["s0n0:-1"], ["s0n0"], ["s0n0:0", "--at", "nan"],
                 ["s0n0:0", "--at", "-1"], ["s0n0:0", "--at", "2026-01-01T00:00:00"],
                 ["s0n0:0", "--at", "@0"], ["s0n0:0", "--at", "@1e999"],
                 ["s0n0:0", "--for", "0"], ["s0n0:0", "--for", "nan"],
                 ["s0n0:0", "--mode", "bogus"], ["s0n0:0\n"]):
        cases.append(Case(f"testbed fail {' '.join(args)!r}", "C", fail + args, testbed=True))
    for t in ("s9n9:0", "s0n0:5", "rubbish"):
        cases.append(Case(f"testbed heal {t!r}", "C",
                          PY + ["testbed", "heal", t, "--prefix", prefix], testbed=True))

    def dir_out(d: Path) -> None:
        (d / "outdir").mkdir()

    chk = PY + ["testbed", "check", "--prefix", prefix]
    for args in (["--json", "outdir"], ["--time", "nan"], ["--time", "0"], ["--time", "-1"],
                 ["--time", "1e9"], ["--parallel", "0"], ["--rail", "9"],
                 ["--json", "nowhere/deeper/x.json", "--time", "nan"]):
        cases.append(Case(f"testbed check {' '.join(args)!r}", "C", chk + args,
                          setup=dir_out if "outdir" in args else None, testbed=True,
                          post=_keep("outdir", "dir") if "outdir" in args else None))
    return cases


# ---------------------------------------------------------------------------------------
# the C tools


def bench_tool_cases() -> list[Case]:
    b = str(BIN / "mpilab-bench")
    cases = []
    bad = [["--sizes", "1:8: -1"], ["--sizes", " -1"], ["--sizes", "1:8:0"], ["--sizes", "x"],
           ["--sizes", ""], ["--sizes", "1:0:x2"], ["--sizes", "1:1M:x1"],
           ["--sizes", "18446744073709551616"], ["--sizes", "0,\u00b2"], ["--sizes", "1,,2"],
           ["--sizes", "0:1G:1"], ["--cl", "1.5"], ["--cl", "nan"], ["--eps", "5"],
           ["--eps", "-1"], ["--min-reps", "-1"], ["--max-reps", "0"], ["--root", "-1"],
           ["--timing", "bogus"], ["--isolation", "bogus"], ["--ops", "bogus"],
           ["--ops", "p2p:bogus"], ["--ops", ""], ["--warmup", "-1"], ["--models", "bogus"],
           ["--loggp-burst", "0"], ["--p2p-back", "x"], ["--sync", "bogus"], ["--sizes"],
           ["--bogus"], ["extra-argument"], ["--min-reps", "5", "--max-reps", "2"]]
    for args in bad:
        cases.append(Case(f"mpilab-bench {' '.join(args)!r}", "A", [b, *args], limit=120))

    def dir_out(d: Path) -> None:
        (d / "outdir").mkdir()

    def link_null(d: Path) -> None:
        (d / "null").symlink_to("/dev/null")

    run2 = mpirun(2, ["--mca", "btl", "self,vader,tcp"]) + [
        b, "--ops", "p2p", "--sizes", "1", "--max-reps", "5", "--quiet"]
    cases += [
        Case("mpilab-bench --out a directory", "C", run2 + ["--out", "outdir"], setup=dir_out,
             post=_keep("outdir", "dir"), limit=180, lenient_stderr=True),
        Case("mpilab-bench --out a link to /dev/null (as /dev/stdout is)", "C",
             run2 + ["--out", "null"], setup=link_null, post=_keep("null", "link"),
             expect_ok=True, limit=180),
        Case("mpilab-bench --out -", "C", run2 + ["--out", "-"], post=_no_dash, expect_ok=True,
             limit=180),
    ]
    return cases


def wavefront_cases() -> list[Case]:
    w = str(BIN / "mpilab-wavefront")
    cases = []
    for args in (["create", "--rows", "0", "--cols", "4", "d", "c"],
                 ["create", "--rows", "-1", "--cols", "4", "d", "c"],
                 ["create", "--rows", "x", "--cols", "4", "d", "c"],
                 ["create", "--rows", "4", "--cols", "1e3", "d", "c"],
                 ["create", "--rows", "4"],
                 ["convert", "--layout", "bogus", "a", "b"],
                 ["convert", "--layout", "block", "--mb", "0", "--nb", "2", "a", "b"],
                 ["run", "--data", "missing", "--coef", "missing", "--iterations", "1"],
                 ["run", "--data", "d", "--coef", "c", "--iterations", "-1"],
                 ["verify", "--initial", "missing", "--coef", "c", "--iterations", "1", "r"],
                 ["bounds", "--size", "x"], ["bogus"], []):
        cases.append(Case(f"mpilab-wavefront {' '.join(args)!r}", "D", [w, *args]))

    def fifo_data(d: Path) -> None:
        os.mkfifo(d / "d")
        (d / "c").write_bytes(b"")

    def dir_data(d: Path) -> None:
        (d / "d").mkdir()
        (d / "c").write_bytes(b"")

    def rowmajor_t(d: Path) -> None:
        import struct
        hdr = b"MPILABWF" + struct.pack("<4I8Q", 1, 0, 1, 1, 4, 4, 0, 4, 0, 0,
                                        (1 << 40) + 1, 128)
        (d / "d").write_bytes(hdr + bytes(4096 - len(hdr)) + bytes(128))
        hdr5 = b"MPILABWF" + struct.pack("<4I8Q", 1, 0, 1, 5, 4, 4, 0, 4, 0, 0, 0, 640)
        (d / "c").write_bytes(hdr5 + bytes(4096 - len(hdr5)) + bytes(640))

    for n, s in (("data file a FIFO", fifo_data), ("data file a directory", dir_data),
                 ("row-major header with t = 2^40+1", rowmajor_t)):
        cases.append(Case(f"mpilab-wavefront run: {n}", "D",
                          [w, "run", "--data", "d", "--coef", "c", "--iterations", "1"],
                          setup=s, limit=60))
    def dev_null_kept(d: Path) -> str | None:
        return None if stat.S_ISCHR(os.stat("/dev/null").st_mode) else "/dev/null replaced"

    cases += [
        Case("mpilab-wavefront create onto a FIFO", "D",
             [w, "create", "--rows", "64", "--cols", "64", "d", "c"],
             setup=lambda d: os.mkfifo(d / "d"), post=_keep("d", "fifo"), limit=60),
        Case("mpilab-wavefront create onto a link to /dev/null", "D",
             [w, "create", "--rows", "64", "--cols", "64", "d", "c"],
             setup=lambda d: (d / "d").symlink_to("/dev/null"),
             post=_both(_keep("d", "link"), dev_null_kept), limit=60),
    ]
    cases.append(Case("mpilab-wavefront run: /dev/zero as data", "D",
                      [w, "run", "--data", "/dev/zero", "--coef", "/dev/zero", "--iterations",
                       "1"], limit=60))
    for args in (["--rows", "0"], ["bogus"]):
        cases.append(Case(f"mpilab wavefront {' '.join(args)!r}", "D",
                          PY + ["wavefront", *args]))
    return cases


def delayline_cases() -> list[Case]:
    dl = ["unshare", "-n", str(BIN / "mpilab-delayline")]  # a private namespace: no side effects
    cases = [Case("mpilab-delayline --dev nosuch0 --delay 1ms", "C",
                  dl + ["--dev", "nosuch0", "--delay", "1ms", "--no-realtime"], limit=20)]
    for args in (["--dev", "tun0", "--delay", "nan"], ["--dev", "tun0", "--delay", "-1ms"],
                 ["--dev", "tun0", "--delay", "1e999"], ["--dev", "tun0", "--delay", "5h"],
                 ["--dev", "tun0", "--delay", "1ms", "--buffer", "0"],
                 ["--dev", "tun0", "--delay", "1ms", "--buffer", "x"],
                 ["--dev", "tun0", "--delay", "1ms", "--rt-priority", "0"],
                 ["--dev", "tun0", "--delay", "1ms", "--rt-priority", "100"],
                 ["--delay", "1ms"], ["--dev", "tun0", "--delay"],
                 ["--dev", "tun0", "--delay", "1ms", "--rt-priority", "5", "--no-realtime"]):
        cases.append(Case(f"mpilab-delayline {' '.join(args)!r}", "A", dl + args, limit=20))
    pp = str(BIN / "mpilab-tb-pingpong")
    for args in (["--count", "0"], ["--bytes", "-1"], ["--stall", "99999"], ["--bytes", "x"],
                 ["--bogus"], ["--count", " 5"]):
        cases.append(Case(f"mpilab-tb-pingpong {' '.join(args)!r}", "C", [pp, *args]))
    return cases
