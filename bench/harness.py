"""The shared harness of the bench/ scripts: where things are, running mpilab, launching MPI
jobs (through mpilab.launch.Launcher, the launcher every mpilab command uses), testbed up and
down, writing JSON, the machine's load. A script in bench/ starts with

    import harness  (or: from harness import REPO, mpilab, mpirun, ...)

and needs nothing else to find this checkout's package and tools: importing the harness puts
python/ on the import path (the one place that does), so the scripts run with any Python 3
without installing. bench/harness.sh is the same for the shell scripts (it asks this file for
the launcher's command line: `python3 bench/harness.py mpirun NP [ARGS...]`).

What moved here (issue 27): the REPO/ROOT constants and `sys.path.insert` lines of the
scripts, their private `mpilab()` helpers, their mpirun command builders (and
`mpilab.tools.mpirun_prefix`, now mpilab.launch.mpirun_command), pathmig_pause.testbed
(testbed_up_in)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "python") not in sys.path:
    sys.path.insert(0, str(REPO / "python"))

from mpilab import launch  # noqa: E402
from mpilab.fsutil import atomic_write_text  # noqa: E402
from mpilab.testbed import net  # noqa: E402
from mpilab.tools import find_tool, mpi_env  # noqa: E402

#: the default build's directory and its tools (MPILAB_BIN chooses another build's bin/)
BUILD = REPO / "build"
BIN = Path(os.environ.get("MPILAB_BIN", BUILD / "bin"))
#: the test helpers' folder (synthetic results documents: conftest.make_results)
TESTS_PY = REPO / "tests" / "python"

__all__ = ["BIN", "BUILD", "REPO", "TESTS_PY", "TIE", "env", "find_tool", "loadavg", "mpi_env",
           "mpilab", "mpilab_cmd", "mpirun", "prediction_counts", "prediction_words",
           "predictions", "start_mpilab", "test_helpers", "testbed",
           "testbed_down", "testbed_up", "testbed_up_in", "tool", "write_json"]


def tool(name: str) -> str:
    """The path of a C tool of this checkout (mpilab.tools.find_tool: $MPILAB_BIN, build/bin,
    then PATH)."""
    return find_tool(name)


def env(base: dict[str, str] | None = None, package: str | os.PathLike[str] | None = None,
        **extra: str) -> dict[str, str]:
    """The environment for mpilab and MPI jobs: this checkout's package (or the package
    folder given) first on PYTHONPATH, Open MPI allowed to run as root, plus extra."""
    e = mpi_env() if base is None else dict(base)
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    py = str(REPO / "python" if package is None else package)
    if py not in e.get("PYTHONPATH", "").split(os.pathsep):
        e["PYTHONPATH"] = os.pathsep.join(p for p in (py, e.get("PYTHONPATH", "")) if p)
    e.update(extra)
    return e


def mpilab_cmd(*args: str) -> list[str]:
    """The command line of `mpilab ARGS` from this checkout (the running interpreter)."""
    return [sys.executable, "-m", "mpilab.cli", *args]


def mpilab(*args: str, check: bool = True, capture: bool = False, echo: bool = False,
           timeout: float | None = None, environ: dict[str, str] | None = None,
           cwd: str | os.PathLike[str] | None = None,
           package: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `mpilab ARGS` and wait. check: a failure ends the script with mpilab's own last
    stderr line (SystemExit naming the command; its exit status when not captured, the
    lines having passed through), not a traceback. capture: stdout and stderr
    are kept in the result (else they pass through). echo: print '+ mpilab ARGS' first.
    package: run another copy of the package (a python/ folder) than this checkout's."""
    if echo:
        print("+ mpilab " + " ".join(args), flush=True)
    p = subprocess.run(mpilab_cmd(*args), env=env(environ, package), cwd=cwd, text=True,
                       capture_output=capture, timeout=timeout, check=False)
    if check and p.returncode != 0:
        last = ((p.stderr or "").strip().splitlines() or [f"exit {p.returncode}"])[-1]
        raise SystemExit(f"mpilab {' '.join(args[:3])}: {last}")
    return p


def start_mpilab(*args: str, environ: dict[str, str] | None = None,
                 **popen: Any) -> subprocess.Popen[str]:
    """Start `mpilab ARGS` without waiting (stdout and stderr piped unless given)."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    popen.setdefault("cwd", REPO)
    return subprocess.Popen(mpilab_cmd(*args), env=env(environ), text=True, **popen)


def mpirun(np: int, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The command prefix that starts np local ranks with Open MPI's mpirun, as every mpilab
    command starts them (mpilab.launch.mpirun_command, i.e. Launcher.command: -q,
    --oversubscribe, --bind-to none and mpi_yield_when_idle 1 unless extra sets them), then
    extra."""
    return launch.mpirun_command(np, extra)


def write_json(path: str | os.PathLike[str], doc: Any, indent: int | None = None,
               newline: bool = True) -> None:
    """Write a JSON document whole or not at all (temporary name + rename; '-' is stdout), on
    one line unless indent is given (the results kept in docs/data stay small)."""
    atomic_write_text(path, json.dumps(doc, indent=indent) + ("\n" if newline else ""))


def nstat(sp: Any, node: str) -> dict[str, int]:
    """The kernel's absolute network counters (`nstat -asz`) of a testbed node's namespace;
    {} when they cannot be read."""
    p = subprocess.run(["ip", "netns", "exec", sp.ns(node), "nstat", "-asz", "--json"],
                       capture_output=True, text=True, timeout=30)
    try:
        d = json.loads(p.stdout)
    except ValueError:
        return {}
    k = d.get("kernel", d)
    return {n: int(v) for n, v in k.items() if isinstance(v, int)}


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages, as a bench slot records them at its start."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def test_helpers() -> None:
    """Make the test helpers importable (conftest.make_results: synthetic results files)."""
    if str(TESTS_PY) not in sys.path:
        sys.path.insert(0, str(TESTS_PY))


def testbed_up(prefix: str, spec: str | os.PathLike[str],
               state_root: str | os.PathLike[str] | None = None) -> Any:
    """`mpilab testbed up --prefix PREFIX SPEC` (state under state_root when given: it is
    exported as MPILAB_TESTBED_STATE_ROOT for the rest of the script); returns the running
    testbed's spec (mpilab.testbed.net.current_spec). A failure ends the script."""
    if state_root is not None:
        Path(state_root).mkdir(parents=True, exist_ok=True)
        os.environ["MPILAB_TESTBED_STATE_ROOT"] = str(state_root)
    mpilab("testbed", "up", "--prefix", prefix, str(spec), capture=True)
    return net.current_spec(prefix)


def testbed_up_in(work: str | os.PathLike[str], prefix: str, spec_text: str) -> Any:
    """A testbed whose state and spec live in WORK/state (the spec file written from
    spec_text): testbed_up with that state root. What bench/pathmig_pause.py's testbed()
    was, for the pathmig scripts."""
    state = Path(work) / "state"
    state.mkdir(parents=True, exist_ok=True)
    (state / "spec.toml").write_text(spec_text)
    return testbed_up(prefix, state / "spec.toml", state)


def testbed_down(prefix: str) -> None:
    """`mpilab testbed down --prefix PREFIX` (nothing to do is not a failure)."""
    mpilab("testbed", "down", "--prefix", prefix, check=False, capture=True)


@contextlib.contextmanager
def testbed(prefix: str, spec: str | os.PathLike[str],
            state_root: str | os.PathLike[str] | None = None) -> Iterator[Any]:
    """A testbed for the duration of a with block: up, the spec, down (also on error)."""
    try:
        yield testbed_up(prefix, spec, state_root)
    finally:
        testbed_down(prefix)


# ---- the LMO scripts' comparison of predictions (bench/lmo_sim.py, bench/lmo_testbed.py)

#: |error| differences within half a percentage point count as a tie
TIE = 0.005


def predictions(doc: dict[str, Any], lm: dict[str, Any], min_bytes: int) -> list[dict[str, Any]]:
    """The LMO and Hockney predictions beside measured at >= min_bytes per rank, printed as
    a table and returned as rows (bench/lmo_sim.py and bench/lmo_testbed.py)."""
    rows: list[dict[str, Any]] = []
    hock = {(p["op"], p["impl"], p["bytes"], p.get("timing")): p
            for p in (doc["models"].get("predictions") or [])}
    print(f"\n{'op':8} {'impl':9} {'bytes':>8} {'measured us':>12} {'LMO us':>10} {'err':>8} "
          f"{'Hockney us':>11} {'err':>8}")
    for p in sorted(lm.get("predictions") or [], key=lambda p: (p["op"], p["impl"], p["bytes"])):
        if p["bytes"] < min_bytes or p.get("measured") is None:
            continue
        h = hock.get((p["op"], p["impl"], p["bytes"], p.get("timing")))
        m = p["measured"]
        e_l = (p["predicted"] - m) / m
        e_h = None if h is None else (h["predicted"] - m) / m
        rows.append({"op": p["op"], "impl": p["impl"], "bytes": p["bytes"], "measured": m,
                     "lmo": p["predicted"], "lmo_err": e_l, "hockney": h and h["predicted"],
                     "hockney_err": e_h})
        print(f"{p['op']:8} {p['impl']:9} {p['bytes']:8d} {m * 1e6:12.1f} "
              f"{p['predicted'] * 1e6:10.1f} {e_l * 100:+7.1f}% "
              f"{'-' if h is None else format(h['predicted'] * 1e6, '11.1f'):>11} "
              f"{'-' if e_h is None else format(e_h * 100, '+7.1f') + '%':>8}")
    return rows


def prediction_counts(pe: list[dict[str, Any]]) -> dict[str, int]:
    """Of the prediction rows: how many LMO has within 10% of measured, better than Hockney
    by more than TIE, and as good (within TIE)."""
    return {"pred_within_10": sum(abs(r["lmo_err"]) <= 0.10 for r in pe),
            "pred_beats_hockney": sum(r["hockney_err"] is not None
                                      and abs(r["lmo_err"]) < abs(r["hockney_err"]) - TIE
                                      for r in pe),
            "pred_ties_hockney": sum(r["hockney_err"] is not None
                                     and abs(abs(r["lmo_err"]) - abs(r["hockney_err"])) <= TIE
                                     for r in pe), "pred_n": len(pe)}


def prediction_words(s: dict[str, Any]) -> str:
    """prediction_counts in words, for the scripts' last line."""
    n = s["pred_n"]
    return (f"predictions within 10%: {s['pred_within_10']}/{n}, better than Hockney by more "
            f"than {TIE:.1%}: {s['pred_beats_hockney']}/{n}, as good (within {TIE:.1%}): "
            f"{s['pred_ties_hockney']}/{n}")


def _main(argv: list[str]) -> int:
    """For bench/harness.sh: `harness.py mpirun NP [ARGS...]` prints the launcher's command
    line, one word a line."""
    if len(argv) >= 2 and argv[0] == "mpirun":
        try:
            np = int(argv[1])
        except ValueError:
            print(f"harness.py mpirun: NP must be a whole number, not {argv[1]!r}",
                  file=sys.stderr)
            return 2
        print("\n".join(mpirun(np, argv[2:])))
        return 0
    print("usage: harness.py mpirun NP [ARGS...]", file=sys.stderr)
    return 2


def second_address() -> str | None:
    """An IPv4 address of this machine other than loopback's (for a program that wants one
    address per rail on its own interfaces, as mpilab-pathmigd), or None."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True,
                         timeout=30).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) > 3 and f[1] != "lo":
            return f[3].split("/")[0]
    return None



#: Watch: the sampler's period (s) and SCHED_FIFO priority (above the testbed's delay line)
SAMPLE_S = 0.002
WATCH_PRIORITY = 20


def long_summary(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The long round trips of a run in short (pure): how many; the two ranks' wait for a
    CPU during each as a share of it (median, least, most: 2.0 means both ranks waited
    throughout); the delay line's wait (ms, median and most); the five longest in full."""
    ok = [x for x in items if None not in x["ranks_wait_ms"]]
    share = [sum(x["ranks_wait_ms"]) / x["rtt_ms"] for x in ok]
    dl = [x["delayline_wait_ms"] for x in ok]
    return {"count": len(items),
            "ranks_wait_share": ([round(statistics.median(share), 3), round(min(share), 3),
                                  round(max(share), 3)] if share else None),
            "delayline_wait_ms": [round(statistics.median(dl), 2), max(dl)] if dl else None,
            "longest": sorted(items, key=lambda x: -x["rtt_ms"])[:5]}


def schedstat(pid: int) -> tuple[int, int] | None:
    """(ns on a CPU, ns runnable and waiting) of a process, None when it has gone."""
    try:
        run, wait, _ = Path(f"/proc/{pid}/schedstat").read_text().split()
        return int(run), int(wait)
    except (OSError, ValueError):
        return None


def autogroup(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/autogroup").read_text().strip()
    except OSError:
        return ""


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


class Watch(threading.Thread):
    """Samples every SAMPLE_S the run-queue wait (/proc/PID/schedstat) of the program
    `prog`'s `nranks` ranks (found in the node namespaces `netns` by name) and of the
    delay lines `lines`, from a thread at SCHED_FIFO (it is not starved by what it
    measures; its children, none, would not inherit it). `samples`: (CLOCK_REALTIME s,
    {pid: (ns on a CPU, ns waiting)})."""

    def __init__(self, netns: list[str], lines: list[int], prog: str = "mpilab-tb-pingpong",
                 nranks: int = 2) -> None:
        super().__init__(daemon=True)
        self.prog, self.nranks = prog, nranks
        self.inodes = {os.stat(f"/run/netns/{n}").st_ino for n in netns}
        self.lines, self.stop = lines, threading.Event()
        self.ranks: list[int] = []
        self.groups: dict[int, str] = {}
        self.samples: list[tuple[float, dict[int, tuple[int, int]]]] = []

    def find_ranks(self) -> None:
        for d in Path("/proc").iterdir():
            if d.name.isdigit() and int(d.name) not in self.ranks \
                    and comm(int(d.name)) == self.prog[:15]:
                try:
                    if os.stat(d / "ns" / "net").st_ino in self.inodes:
                        self.ranks.append(int(d.name))
                        self.groups[int(d.name)] = autogroup(int(d.name))
                except OSError:
                    pass

    def run(self) -> None:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK,
                                  os.sched_param(WATCH_PRIORITY))
        last_scan = 0.0
        while not self.stop.wait(SAMPLE_S):
            now = time.time()
            if len(self.ranks) < self.nranks and now - last_scan > 0.1:
                self.find_ranks()
                last_scan = now
            row = {p: s for p in self.ranks + self.lines if (s := schedstat(p)) is not None}
            self.samples.append((now, row))

    def waited(self, pid: int, t0: float, t1: float) -> float | None:
        """Seconds pid waited runnable between t0 and t1 (the samples around them)."""
        before = [r[pid][1] for t, r in self.samples if t <= t0 and pid in r]
        after = [r[pid][1] for t, r in self.samples if t >= t1 and pid in r]
        if not before or not after:
            return None
        return (after[0] - before[-1]) / 1e9

    def attribution(self, ends: list[float], rtts: list[float], over_s: float
                    ) -> list[dict[str, Any]]:
        """For each round trip longer than over_s: how long each rank and the delay line
        waited for a CPU during it (ms; the sampling period's slack at both ends)."""
        out = []
        for e, r in zip(ends, rtts, strict=True):
            if r <= over_s:
                continue
            w = {p: self.waited(p, e - r, e) for p in self.ranks + self.lines}
            out.append({"rtt_ms": round(r * 1e3, 2),
                        "ranks_wait_ms": [round(1e3 * w[p], 2) if w[p] is not None else None
                                          for p in self.ranks],
                        "delayline_wait_ms": round(1e3 * sum(w[p] or 0.0 for p in self.lines),
                                                   2)})
        return out


def delayline_pids(prefix: str) -> list[int]:
    st = net.load_state(prefix) or {}
    return [int(p) for p in (st.get("delayline_pids") or [st.get("delayline_pid")]) if p]


# ---- whole-machine stalls, seen through the kernel's trace (tracefs)
# A virtual machine can stop as a whole: the host takes every vCPU away at once, and inside
# nothing runs, not even the timer interrupt, so no program of the guest can tell it from a
# long round trip; the kernel's trace can. With the local timer interrupt and the scheduler's
# switches and wake-ups traced, a CPU that runs anything (a busy loop, a rank) logs an event
# at least every tick (4 ms at HZ=250): beside busy loops, an interval in which no CPU logged
# any event is an interval in which the machine did not run. SchedTrace turns those events
# on (root; tracefs mounted if it is not), stamped by CLOCK_MONOTONIC (time.monotonic()),
# into a ring buffer of `mb` MiB per CPU; machine_silence is the pure part.

TRACEFS = Path("/sys/kernel/tracing")
#: the events that prove a CPU ran: its timer interrupt, the scheduler's switches, wake-ups
TRACE_EVENTS = ("irq_vectors:local_timer_entry", "sched:sched_switch", "sched:sched_waking")

_TRACE_LINE = re.compile(rb"\[(\d+)\]\s+\S+\s+(\d+\.\d+):")


def parse_stamps(lines: list[bytes], lo: float, hi: float) -> list[float]:
    """The stamps (s) of the trace lines (tracefs's `trace` text: `comm-pid [cpu] flags
    stamp: event: ...`) that fall in [lo, hi], any CPU, sorted (pure). Lines of another
    form (the header) are skipped."""
    out = []
    for ln in lines:
        m = _TRACE_LINE.search(ln)
        if m:
            t = float(m.group(2))
            if lo <= t <= hi:
                out.append(t)
    out.sort()
    return out


def machine_silence(stamps: list[float], lo: float, hi: float) -> float:
    """The longest interval of [lo, hi] (s) with no stamp in it (pure): the span's ends count
    as its bounds, so a span without any event is silent throughout."""
    if hi <= lo:
        return 0.0
    edges = [lo, *(t for t in sorted(stamps) if lo <= t <= hi), hi]
    return max(b - a for a, b in zip(edges, edges[1:], strict=False))


class SchedTrace:
    """The kernel's trace of TRACE_EVENTS for one run at a time: start() clears the buffer
    and turns tracing on, stop() off; silence(lo, hi) is machine_silence over the buffer's
    events in [lo, hi] (monotonic seconds); close() turns the events off and gives back the
    buffer size and clock it found."""

    def __init__(self, mb: int = 512) -> None:
        if os.geteuid() != 0:
            raise PermissionError("tracing the kernel needs root")
        if not (TRACEFS / "trace").exists():
            subprocess.run(["mount", "-t", "tracefs", "none", str(TRACEFS)], check=True,
                           capture_output=True)
        # what it found, given back by close(): the buffer's size, the clock in [brackets]
        kb = re.match(r"\d+", (TRACEFS / "buffer_size_kb").read_text())
        clock = re.search(r"\[(\w+)\]", (TRACEFS / "trace_clock").read_text())
        self._found = (kb.group(0) if kb else "1408", clock.group(1) if clock else "local")
        try:
            self._w("tracing_on", "0")
            self._w("trace_clock", "mono")
            self._w("buffer_size_kb", str(mb * 1024))
            self._w("set_event", "\n".join(TRACE_EVENTS) + "\n")
        except OSError:
            with contextlib.suppress(OSError):
                self.close()
            raise

    @staticmethod
    def _w(name: str, text: str) -> None:
        (TRACEFS / name).write_text(text)

    def start(self) -> None:
        self._w("trace", "")
        self._w("tracing_on", "1")

    def stop(self) -> None:
        self._w("tracing_on", "0")

    def silence(self, lo: float, hi: float) -> float:
        lines = (TRACEFS / "trace").read_bytes().splitlines()
        return machine_silence(parse_stamps(lines, lo, hi), lo, hi)

    def close(self) -> None:
        self.stop()
        self._w("set_event", "")
        self._w("trace", "")
        self._w("buffer_size_kb", self._found[0])
        self._w("trace_clock", self._found[1])


def mono_offset() -> float:
    """CLOCK_REALTIME - CLOCK_MONOTONIC now (s): a realtime stamp less this is the trace's."""
    return time.time() - time.monotonic()


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
