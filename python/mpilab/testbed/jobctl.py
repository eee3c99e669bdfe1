"""Job control of `mpilab testbed run`: a job always has a time limit, ends early when a
link it depends on has failed and stayed failed, and is ended completely (mpirun, the orted
daemons and the ranks in the node namespaces) on a time-out, a stall, SIGTERM, SIGHUP or
SIGINT.

Every process of a job carries `MPILAB_TESTBED_JOB=<tag>` in its environment (mpirun passes
its environment to the rsh agent, `ip netns exec` and orted keep it, the ranks inherit it),
so ending a job finds exactly its own processes in /proc, whatever namespace they are in,
and never touches another job's. Where a cgroup v2 hierarchy is writable (root; the
unified hierarchy of a hybrid cgroup v1 system counts), a job is also started in its own
cgroup (`<v2 root>/mpilab/<tag>`): listing the job is then one read of cgroup.procs
instead of a scan of every process's environment (seconds on a loaded machine), and the
final kill is one write to cgroup.kill, which the kernel applies to every process of the
cgroup at once, forks in flight included. Signals: SIGTERM to the daemons and ranks, then
SIGKILL to everything left after a grace period; mpirun gets only SIGKILL (while an abort
is in progress, Open MPI's mpirun takes SIGINT or SIGTERM as "terminate forcibly" and
crashes). `testbed down` ends and removes any job cgroup of its prefix left by an mpilab
that was itself killed (SIGKILL cannot be caught).

$MPILAB_JOBCTL_TRACE=FILE appends a timeline of each supervised job (CLOCK_BOOTTIME
seconds, one event a line: start, limit/stall/signal, each step of ending it, exit) to
FILE: bench/testbed_faults.py prints it for any job that missed its bound.

Stalls are found from the fault log (faults.jsonl, written by `testbed fail`/`heal` and the
fault schedulers): a link the job uses (rail 0 carries Open MPI's out-of-band channel, plus
the rails given with --rails) that is failed and stays failed for `fault_grace` seconds ends
the job with one line naming the link and the time it failed. With --mptcp a job uses every
rail; it is ended only when every rail of one of its nodes has failed. Faults made by hand
(not through mpilab) are not in the log; the time limit still ends such a job.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from mpilab.errors import MpilabError
from mpilab.fsutil import pid_alive

JOB_ENV = "MPILAB_TESTBED_JOB"
TIMEOUT_ENV = "MPILAB_TESTBED_TIMEOUT"
# A testbed job that runs longer than this was almost always hung; pass --timeout to
# change it, --timeout none for no limit.
DEFAULT_TIMEOUT = 1800.0
# TCP survives short outages (retransmission); a used link failed for longer than this
# ends the job. --fault-grace changes it, --fault-grace none disables the check.
DEFAULT_FAULT_GRACE = 30.0
KILL_GRACE = 2.0  # SIGTERM -> SIGKILL
POLL = 0.25
TRACE_ENV = "MPILAB_JOBCTL_TRACE"
CGROUP_DIR = "mpilab"  # job cgroups: <cgroup v2 root>/mpilab/<tag>


def trace(tag: str, event: str) -> None:
    """One timeline line to $MPILAB_JOBCTL_TRACE (nothing when unset; never fails)."""
    path = os.environ.get(TRACE_ENV)
    if not path:
        return
    try:
        with open(path, "a") as f:
            f.write(f"{time.clock_gettime(time.CLOCK_BOOTTIME):.3f} {tag} {event}\n")
    except OSError:
        pass


def cgroup2_root() -> Path | None:
    """The mount point of the cgroup v2 hierarchy if this process may make cgroups in it
    (root; /sys/fs/cgroup on a v2 system, /sys/fs/cgroup/unified on a hybrid one)."""
    try:
        with open("/proc/self/mounts") as f:
            mounts = [ln.split() for ln in f]
    except OSError:
        return None
    for m in mounts:
        if len(m) > 2 and m[2] == "cgroup2":
            root = Path(m[1])
            if os.access(root, os.W_OK) and (root / "cgroup.procs").exists():
                return root
    return None


def job_cgroup(tag: str) -> Path | None:
    """A new, empty cgroup for the job `tag`, or None where none can be made (the job
    is then found through its environment tag alone). The kill file (cgroup.kill, Linux
    5.14) is required: without it a cgroup would not shorten the ending of a job."""
    root = cgroup2_root()
    if root is None:
        return None
    cg = root / CGROUP_DIR / tag
    try:
        cg.mkdir(parents=True)
    except OSError:
        return None
    if not (cg / "cgroup.kill").exists():
        _remove_cgroup(cg)
        return None
    return cg


def cgroup_pids(cg: Path) -> list[int]:
    try:
        return [int(x) for x in (cg / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _populated(cg: Path) -> bool:
    try:
        return "populated 1" in (cg / "cgroup.events").read_text()
    except OSError:
        return False


def _remove_cgroup(cg: Path) -> bool:
    try:
        cg.rmdir()
        return True
    except OSError:
        return False


def kill_cgroup(cg: Path, wait: float = 5.0) -> bool:
    """SIGKILL every process of the cgroup at once (cgroup.kill), wait until it is empty
    (at most `wait` seconds) and remove it. True when it is gone."""
    try:
        (cg / "cgroup.kill").write_text("1")
    except FileNotFoundError:
        return True
    except OSError:
        pass
    end = time.monotonic() + wait
    while _populated(cg) and time.monotonic() < end:
        time.sleep(0.02)
    return _remove_cgroup(cg)


def prefix_cgroups(prefix: str, stale_only: bool = True) -> list[Path]:
    """Job cgroups of testbed `prefix` (tags `prefix-PID-hex`): those whose mpilab is gone,
    or all of them."""
    root = cgroup2_root()
    if root is None or not (root / CGROUP_DIR).is_dir():
        return []
    out = []
    for cg in sorted((root / CGROUP_DIR).iterdir()):
        rest = cg.name[len(prefix) + 1:].split("-")
        if (cg.name.startswith(prefix + "-") and len(rest) == 2 and rest[0].isdecimal()
                and rest[0].isascii() and not (stale_only and pid_alive(int(rest[0])))):
            out.append(cg)
    return out


def reap_cgroups(prefix: str, stale_only: bool = True) -> int:
    """End and remove the job cgroups of `prefix` (by default only stale ones: an mpilab
    killed by SIGKILL leaves its job running there). Returns how many processes were in
    them."""
    n = 0
    for cg in prefix_cgroups(prefix, stale_only):
        n += len(cgroup_pids(cg))
        kill_cgroup(cg)
    return n


def start(cmd: list[str], tag: str, env: dict[str, str], **popen: object
          ) -> tuple[subprocess.Popen[bytes], Path | None]:
    """Start a job's first process in its own session (and its own cgroup where one can
    be made: the process moves itself into it before exec'ing CMD, so nothing it starts
    is outside). Returns the process and the cgroup (None without one)."""
    cg = job_cgroup(tag)
    if cg is not None:
        cmd = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cg / "cgroup.procs"),
               *cmd]
    try:
        proc = subprocess.Popen(cmd, env=dict(env, **{JOB_ENV: tag}), start_new_session=True,
                                **popen)  # type: ignore[call-overload]
    except BaseException:
        if cg is not None:
            _remove_cgroup(cg)
        raise
    trace(tag, f"start pid {proc.pid} cgroup {cg if cg is not None else '-'}")
    return proc, cg


def new_tag(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def default_timeout() -> float:
    """DEFAULT_TIMEOUT, or $MPILAB_TESTBED_TIMEOUT (seconds, or 'none')."""
    text = os.environ.get(TIMEOUT_ENV)
    if text is None or not text.strip():
        return DEFAULT_TIMEOUT
    return parse_limit(text, f"${TIMEOUT_ENV}")


def parse_limit(text: str, what: str) -> float:
    """A positive, finite duration (mpilab.units.parse_duration: seconds, or with a unit
    ns, us, ms, s), or 'none' for no limit (math.inf)."""
    from mpilab import argtypes, units

    if text == "none":
        return math.inf
    try:
        v = units.parse_duration(text)
    except ValueError as e:
        raise MpilabError(f"{what} {text!r}: {e}") from None
    if not math.isfinite(v) or not 0 < v <= argtypes.MAX_SECONDS:
        raise MpilabError(f"{what} {text!r}: must be a positive number of seconds up to "
                          f"{argtypes.MAX_SECONDS:g}, or none")
    return v


def job_pids(tag: str, prefix_only: bool = False) -> list[int]:
    """Processes whose environment carries this job's tag (with prefix_only, any tag that
    starts with `tag`, e.g. every job of a testbed: `P-`)."""
    needle = f"{JOB_ENV}={tag}".encode()
    out = []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if any(v.startswith(needle) for v in env) if prefix_only else needle in env:
            out.append(int(d))
    return out


EXIT_GRACE = 1.0  # a job's processes still exiting when the launcher is gone


def _left_behind(tag: str, cg: Path | None) -> list[int]:
    """The job's processes still alive once the launcher exited, after EXIT_GRACE seconds
    for those already on their way out: mpirun returns when its daemons have said they are
    done, and a daemon (orted, started in another node's namespace by the rsh agent) may
    still be tearing down then; killing and reporting it was a false alarm (`testbed run`
    said "left 1 process(es) behind" after about 1 in 4 short jobs)."""
    def alive() -> list[int]:
        return [p for p in (cgroup_pids(cg) if cg is not None else job_pids(tag))
                if pid_alive(p)]

    left = alive()
    deadline = time.monotonic() + EXIT_GRACE
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [p for p in left if pid_alive(p)]
    if left:
        trace(tag, f"left behind: {_names(left)}")
    return left


def _names(pids: list[int]) -> str:
    """'orted 1234, mpilab-tb-pingpong 1240' (comm names; '?' for a process gone)."""
    out = []
    for p in pids:
        try:
            with open(f"/proc/{p}/comm") as f:
                out.append(f"{f.read().strip()} {p}")
        except OSError:
            out.append(f"? {p}")
    return ", ".join(out)


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


LAUNCHERS = ("mpirun", "orterun", "mpiexec")


def end_job(proc: subprocess.Popen[bytes], tag: str, grace: float = KILL_GRACE,
            cg: Path | None = None) -> int:
    """End the job started as `proc` (its own session) and every process carrying `tag`
    (or, with `cg`, every process of its cgroup): SIGTERM to the ranks and daemons (they
    may clean up), SIGKILL to whatever is left after `grace` seconds. mpirun itself only
    ever gets SIGKILL: once an abort is in progress it takes any other signal as
    "terminate forcibly" and crashes in PMIx_Finalize. Returns how many processes were
    still left afterwards (0 unless something is stuck in the kernel)."""
    if cg is not None:
        return _end_cgroup(proc, tag, grace, cg)
    def group(sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    # /proc is scanned a few times only (on a loaded machine one scan takes seconds);
    # in between, the known processes are polled
    known = set(job_pids(tag))
    _signal_all([p for p in known if p != proc.pid and _comm(p) not in LAUNCHERS],
                signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None and not [p for p in known if pid_alive(p)]:
            break
        time.sleep(0.05)
    for scan in range(5):  # SIGKILL until a scan finds nothing (ranks may still be forking)
        group(signal.SIGKILL)
        known |= set(job_pids(tag)) if scan else set()
        left = [p for p in known if pid_alive(p)]
        _signal_all(left, signal.SIGKILL)
        end = time.monotonic() + 2.0
        while time.monotonic() < end and [p for p in left if pid_alive(p)]:
            time.sleep(0.02)
        if not left and scan:
            break
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    return len([p for p in known if pid_alive(p)])


def _end_cgroup(proc: subprocess.Popen[bytes], tag: str, grace: float, cg: Path) -> int:
    pids = cgroup_pids(cg)
    _signal_all([p for p in pids if p != proc.pid and _comm(p) not in LAUNCHERS],
                signal.SIGTERM)
    trace(tag, f"SIGTERM to {len(pids)} process(es) but the launcher")
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _populated(cg):
        proc.poll()  # reap the launcher if it ended: a zombie keeps the cgroup populated
        time.sleep(0.05)
    gone = kill_cgroup(cg)
    trace(tag, "cgroup killed" + ("" if gone else "; not empty after 5 s"))
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    return 0 if gone else max(1, len(cgroup_pids(cg)))


def _iso(t: float) -> str:
    return (_dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%H:%M:%S.%f")[:-3] + "Z")


class FaultWatch:
    """Follows the fault log and says when a link the job depends on has been failed for
    longer than `grace` seconds."""

    def __init__(self, log: Path, hosts: list[str], rails: list[int], all_rails: int,
                 mptcp: bool, grace: float, started: float) -> None:
        self.log = log
        self.hosts = hosts
        self.rails = sorted(set(rails) | {0})
        self.all_rails = all_rails
        self.mptcp = mptcp
        self.grace = grace
        self.started = started  # time.time() at the start of the job
        self._stamp: tuple[int, int] | None = None
        self.failed: dict[str, tuple[float, str]] = {}  # target -> (time failed, mode)

    def _read(self) -> None:
        try:
            st = os.stat(self.log)
        except FileNotFoundError:
            self.failed = {}
            return
        stamp = (st.st_size, st.st_mtime_ns)
        if stamp == self._stamp:
            return
        self._stamp = stamp
        modes: dict[str, dict[str, float]] = {}
        try:
            text = self.log.read_text()
        except OSError:
            return
        for line in text.splitlines():
            try:
                ev = json.loads(line)
                target, mode, t = str(ev["target"]), str(ev["mode"]), float(ev["time"])
            except (ValueError, KeyError, TypeError):
                continue  # a record being written; the next poll sees it whole
            if ev.get("event") == "fail":
                modes.setdefault(target, {}).setdefault(mode, t)
            elif ev.get("event") == "heal":
                modes.get(target, {}).pop(mode, None)
        self.failed = {k: (min(v.values()), min(v, key=v.__getitem__))
                       for k, v in modes.items() if v}

    def _describe(self, target: str) -> str:
        t, mode = self.failed[target]
        when = ("before the job started" if t < self.started
                else f"{t - self.started:.1f} s into the job")
        verb = "went down" if mode == "down" else "dropped every packet"
        return f"link {target} {verb} at {_iso(t)} ({when})"

    def check(self, now: float) -> str | None:
        """One line naming the failed link(s), or None while the job may still recover."""
        if math.isinf(self.grace):
            return None
        self._read()
        for host in self.hosts:
            if self.mptcp:
                needed = [f"{host}:{r}" for r in range(self.all_rails)]
                if not all(t in self.failed for t in needed):
                    continue
                since = max(max(self.failed[t][0], self.started) for t in needed)
                if now - since >= self.grace:
                    return ("every rail of " + host + " failed: "
                            + "; ".join(self._describe(t) for t in needed)
                            + f"; not healed within {self.grace:g} s")
                continue
            for r in self.rails:
                t = f"{host}:{r}"
                if t in self.failed and now - max(self.failed[t][0], self.started) >= self.grace:
                    return (f"{self._describe(t)} and was not healed within {self.grace:g} s"
                            + (" (Open MPI's out-of-band channel uses rail 0)" if r == 0
                               and 0 not in self.rails[1:] else ""))
        return None

    def summary(self) -> str:
        """The used links failed right now, for a time-out message ('' if none)."""
        self._read()
        used = {f"{h}:{r}" for h in self.hosts
                for r in (range(self.all_rails) if self.mptcp else self.rails)}
        return "; ".join(self._describe(t) for t in sorted(self.failed) if t in used)


class _Signalled(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise(signum: int, frame: object) -> None:
    raise _Signalled(signum)


HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def supervise(proc: subprocess.Popen[bytes], tag: str, timeout: float,
              watch: FaultWatch | None, started: float | None = None,
              cg: Path | None = None) -> int:
    """Wait for the job; end it on time-out, stall or signal. Returns its exit status, 124
    after a time-out, 125 after a stall, 128+N after signal N; each of those with one line
    on stderr. `started`: time.monotonic() just before the job was started; `cg`: the
    job's cgroup from start()."""
    started = time.monotonic() if started is None else started
    old = {s: signal.signal(s, _raise) for s in HANDLED}
    reason, status = None, 0
    try:
        try:
            while True:
                try:
                    rc = proc.wait(timeout=POLL)
                except subprocess.TimeoutExpired:
                    pass
                else:
                    trace(tag, f"launcher exited {rc}")
                    left = _left_behind(tag, cg)
                    if cg is not None:
                        kill_cgroup(cg)
                    if left:  # mpirun is gone; a daemon or rank of the job is not
                        _signal_all(left, signal.SIGKILL)
                        sys.stderr.write(f"mpilab: run: the job left {len(left)} "
                                         f"process(es) behind ({_names(left)}); killed "
                                         "them\n")
                    return rc
                elapsed = time.monotonic() - started
                if elapsed >= timeout:
                    extra = watch.summary() if watch else ""
                    reason = (f"job did not finish within {timeout:g} s; ended"
                              + (f" ({extra})" if extra else ""))
                    status = 124
                    break
                stall = watch.check(time.time()) if watch else None
                if stall:
                    reason, status = f"{stall}; job ended after {elapsed:.1f} s", 125
                    break
        except _Signalled as s:
            name = signal.Signals(s.signum).name
            reason, status = f"{name} received; job ended", 128 + s.signum
        # cleanup is bounded (a few seconds) and not interrupted by a second signal
        for s in HANDLED:
            signal.signal(s, signal.SIG_IGN)
        trace(tag, f"ending ({status}): {reason}")
        left = end_job(proc, tag, cg=cg)
        if left:
            reason += f"; {left} process(es) of the job could not be killed"
        sys.stderr.write(f"mpilab: run: {reason}\n")
        trace(tag, "ended")
        return status
    finally:
        for s, h in old.items():
            signal.signal(s, h)
