"""The cases of bench/hostile_inputs.py, part four: tool options (mpilab-bench
--budget-floor, --lmo-wait, --lmo-bytes, --lmo-rendezvous, --loggp-pairs; `mpilab tune
--min-samples`; mpilab-delayline --spin-last), the testbed spec's per-node `msg_cost`, the
results' provenance.cpu_idle, and the logs the C daemons and tools stream to (a FIFO with
no reader: one line, never a wait for ever).

A library of bench/ (hostile_inputs.py imports it), not a script."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness import BIN, REPO, second_address
from hostile_cases import PY, Case, Setup, _good, _keep, _write, report_case


def _fifo(name: str) -> Setup:
    return lambda d: os.mkfifo(d / name)


def _bench_option_cases() -> list[Case]:
    b = str(BIN / "mpilab-bench")
    bad = [["--budget-floor", "0"], ["--budget-floor", "-1"], ["--budget-floor", "abc"],
           ["--budget-floor", "1e999"], ["--budget-floor", "9", "--max-reps", "8",
                                         "--min-reps", "2"],
           ["--lmo-wait", "nap"], ["--lmo-wait", "sleep:0"], ["--lmo-wait", "sleep:1s"],
           ["--lmo-wait", "sleep:nan"], ["--lmo-wait", ""], ["--lmo-bytes", "0"],
           ["--lmo-bytes", "-1"], ["--lmo-bytes", "1e30"], ["--lmo-bytes", "9" * 400],
           ["--lmo-rendezvous", "-1"], ["--lmo-rendezvous", "x"], ["--loggp-pairs", "some"],
           ["--loggp-pairs", ""], ["--idle-poll", "--ops", "nosuchop"]]
    return [Case(f"23 mpilab-bench {' '.join(a)[:60]!r}", "A", [b, *a], limit=120) for a in bad]


def _tune_cases() -> list[Case]:
    cases = []
    for v in ("0", "-1", "x", "1e9", ""):
        cases.append(Case(f"23 tune sweep --min-samples {v!r}", "B",
                          PY + ["tune", "sweep", "--dir", "t", "--np", "2", "--min-samples", v],
                          post=lambda d: "t/ made" if (d / "t").exists() else None, limit=60))
        cases.append(Case(f"23 tune validate --min-samples {v!r}", "B",
                          PY + ["tune", "validate", "c.json", "--min-samples", v],
                          setup=_write("c.json", "{}"), limit=60))
    return cases


def _spec_cases() -> list[Case]:
    tb = (REPO / "examples" / "testbed" / "dual-rail-2x2.toml").read_text()
    values = {"-1ms": '"-1ms"', "nan": '"nan"', "abc": '"abc"', "5 (a number)": "5",
              "10s": '"10s"', "1e400s": '"1e400s"', "0ms": '"0ms"', "empty": '""',
              "a table": "{a = 1}", "5000 digits": '"' + "9" * 5000 + 'us"'}
    cases = []
    for n, v in values.items():
        text = tb + f'\n[[node]]\nname = "s0n0"\nmsg_cost = {v}\n'
        cases.append(Case(f"23 testbed up SPEC: msg_cost {n}", "C",
                          PY + ["testbed", "up", "s.toml", "--prefix", "zz9"],
                          setup=_write("s.toml", text), limit=120))
    cases.append(Case("23 testbed up SPEC: msg_cost on an unknown node", "C",
                      PY + ["testbed", "up", "s.toml", "--prefix", "zz9"],
                      setup=_write("s.toml", tb + '\n[[node]]\nname = "s9n9"\n'
                                   'msg_cost = "1ms"\n'), limit=120))
    for n, v in {"WALL": '"WALL"', "a number": "1", "empty": '""', "a list": '["wall"]',
                 "without msg_cost": None}.items():
        body = (f'msg_cost = "1ms"\nmsg_cost_clock = {v}\n' if v is not None
                else 'cpu_quota = 0.5\nmsg_cost_clock = "wall"\n')
        cases.append(Case(f"25 testbed up SPEC: msg_cost_clock {n}", "C",
                          PY + ["testbed", "up", "s.toml", "--prefix", "zz9"],
                          setup=_write("s.toml", tb + f'\n[[node]]\nname = "s0n0"\n{body}'),
                          limit=120))
    cases.append(Case("23 sim platform spec with msg_cost", "C",
                      PY + ["sim", "platform", "spec", "s.toml", "-o", "p.xml"],
                      setup=_write("s.toml", tb + '\n[[node]]\nname = "s0n0"\n'
                                   'msg_cost = "1ms"\n'),
                      post=lambda d: "p.xml written" if (d / "p.xml").exists() else None,
                      limit=120))
    return cases


def _delayline_cases() -> list[Case]:
    dl = ["unshare", "-n", str(BIN / "mpilab-delayline")]
    cases = []
    for v in ("10us", "2s", "autox", "", "nan"):
        cases.append(Case(f"23 mpilab-delayline --spin-last {v!r}", "A",
                          dl + ["--dev", "tun0", "--delay", "1ms", "--spin-last", v], limit=20))
    return cases


def _stream_cases() -> list[Case]:
    """Streamed logs on a FIFO with no reader: one line and a non-zero exit, the FIFO kept."""
    pp = str(BIN / "mpilab-pm-pingpong")
    cases = [Case("23 mpilab-pm-pingpong --rtt-log a FIFO with no reader", "E",
                  [pp, "--connect", "127.0.0.1:9", "--tcp", "--iters", "3", "--rtt-log", "f"],
                  setup=_fifo("f"), post=_keep("f", "fifo"), limit=30)]
    seekfs = BIN / "mpilab-seekfs"
    if seekfs.exists():
        cases.append(Case("23 mpilab-seekfs --trace a FIFO with no reader", "D",
                          [str(seekfs), "--backing", "b", "--size", "1048576", "--trace", "f",
                           "--foreground", "m"],
                          setup=lambda d: (os.mkfifo(d / "f"), (d / "b").mkdir(),
                                           (d / "m").mkdir()),
                          post=_keep("f", "fifo"), limit=30))
    addr = second_address()
    if addr:
        cases.append(Case("23 mpilab-pathmigd --log a FIFO with no reader", "E",
                          [str(BIN / "mpilab-pathmigd"), "--node", "n0", "--peers", "p",
                           "--log", "f", "--no-realtime", "--port", "47993"],
                          setup=lambda d: (os.mkfifo(d / "f"),
                                           (d / "p").write_text(f"n0 127.0.0.1 {addr}\n")),
                          post=_keep("f", "fifo"), limit=30))
    return cases


def _cpu_idle_cases() -> list[Case]:
    cases = []
    for n, v in {"may_halt a string": {"may_halt": "yes"},
                 "latency_limit_us negative": {"latency_limit_us": -5},
                 "deepest_exit_latency_us 1e30": {"deepest_exit_latency_us": 10 ** 30},
                 "driver a number": {"driver": 7},
                 "not an object": None}.items():
        d = _good()
        d["provenance"]["cpu_idle"] = "x" if v is None else {"driver": "haltpoll",
                                                             "may_halt": True, **v}
        cases.append(report_case(f"23 provenance.cpu_idle {n}", json.dumps(d, indent=1)))
    # a control character is shown escaped, never copied raw into the page
    d = _good()
    d["provenance"]["cpu_idle"] = {"driver": "halt\u0000poll", "may_halt": True}
    cases.append(Case("23 report: provenance.cpu_idle driver with a NUL", "C",
                      PY + ["report", "r.json", "-o", "out.html"],
                      setup=_write("r.json", json.dumps(d, indent=1)), expect_ok=True,
                      post=_no_raw_nul, limit=60))
    return cases


def _no_raw_nul(d: Path) -> str | None:
    page = d / "out.html"
    if not page.exists():
        return "no out.html"
    return "a raw NUL in out.html" if b"\x00" in page.read_bytes() else None


def option_cases() -> list[Case]:
    return (_bench_option_cases() + _tune_cases() + _spec_cases() + _delayline_cases()
            + _stream_cases() + _cpu_idle_cases())


__all__ = ["option_cases"]
