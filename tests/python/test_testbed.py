"""The emulated cluster on this machine (root, network namespaces, Open MPI).

One 2x2 dual-rail testbed per module (its own prefix and state root); every test leaves it
healed. A second, tiny testbed checks that `down` removes exactly its own things."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import livetb
import pytest
from livetb import have_netns
from mpilab.pair_matrix import expand_all
from mpilab.testbed import faults, net
from mpilab.testbed import spec as specmod
from mpilab.tools import find_tool

REPO = Path(__file__).resolve().parents[2]


pytestmark = [pytest.mark.root, pytest.mark.mpi,
              pytest.mark.skipif(not have_netns(), reason="needs root and ip netns")]

SPEC = (REPO / "tests" / "data" / "testbed" / "two-sites.toml").read_text()


mpilab = functools.partial(livetb.mpilab, timeout=120)


@pytest.fixture(scope="module")
def tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    prefix = f"t{os.getpid() % 100000}"
    # the trim fixed (measuring it at up takes 10-50 s): the default spec's measurement at up
    # and an up again that measures nothing are test_testbed_truth_live.py's
    for env in livetb.live_testbed(tmp_path_factory.mktemp("tbstate"), prefix,
                                  livetb.fixed_trim(SPEC), 120):
        yield prefix, env


def _spec(prefix: str) -> specmod.Spec:
    return net.current_spec(prefix)


def _delayline_packets(prefix: str) -> int:
    st = net.load_state(prefix)
    assert st and st["delayline_pid"]
    stats = net.state_dir(prefix) / "delayline.json"
    before = stats.stat().st_mtime_ns if stats.exists() else 0
    os.kill(int(st["delayline_pid"]), signal.SIGUSR1)
    # wait for the fresh count (a loaded machine may take seconds to schedule the delay
    # line; reading the old file would undercount): a hang guard, not a timing check
    deadline = time.monotonic() + 300
    while not (stats.exists() and stats.stat().st_mtime_ns != before):
        assert time.monotonic() < deadline, "the delay line never wrote its statistics"
        time.sleep(0.02)
    return int(json.loads(stats.read_text())["packets"])


def test_up_is_idempotent_and_builds_the_grid(tb: tuple[str, dict[str, str]]) -> None:
    prefix, env = tb
    sp = _spec(prefix)
    assert set(sp.namespaces()) <= set(net.list_namespaces(prefix))
    f = net.state_root() / "spec.toml"
    p = mpilab("testbed", "up", str(f), env=env)
    assert p.returncode == 0 and "already up" in p.stdout, p.stdout + p.stderr
    assert p.stderr == ""
    p = mpilab("testbed", "status", "--json", env=env)
    info = json.loads(p.stdout)
    assert info["up"] and info["delayline"]["alive"] and not info["missing_namespaces"]


def test_mpi_job_across_sites(tb: tuple[str, dict[str, str]]) -> None:
    prefix, env = tb
    before = _delayline_packets(prefix)
    pp = find_tool("mpilab-tb-pingpong")
    # ranks 0 and 1 on different sites; ranks 2 and 3 only join the final reduction
    p = mpilab("testbed", "run", "--hosts", "s0n0,s1n0,s0n1,s1n1", "--np", "4",
               "--timeout", "600", "--", pp, "--count", "30", "--bytes", "200000",
               env=env, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "pingpong ok: 30 round trips of 200000 bytes verified" in p.stdout
    # the traffic really crossed the WAN router: 30 x 2 x 200 kB went through the delay line
    assert _delayline_packets(prefix) - before >= 2 * 30 * 200000 // 65536


def test_shaping_and_delay_within_ten_percent(tb: tuple[str, dict[str, str]],
                                              tmp_path: Path) -> None:
    from mpilab import results

    prefix, env = tb
    out = tmp_path / "check.json"
    p = mpilab("testbed", "check", "--no-lan", "--total-only", "--time", "3", "--json",
               str(out), env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "wan-node" in p.stdout and "rtt-wan" in p.stdout  # the human table
    r = results.load(out)  # a proper results file, one measurement per link
    table = p.stdout
    by_kind = {m.raw["link"]["kind"]: m for m in r.measurements}
    assert set(by_kind) == {"wan-node", "wan-total", "rtt-wan"}
    assert all(m.op == "link" for m in r.measurements)
    node, total, rtt = by_kind["wan-node"], by_kind["wan-total"], by_kind["rtt-wan"]
    assert (node.impl, total.impl, rtt.impl) == ("iperf3", "iperf3", "ping")
    assert node.raw["derived"]["configured_bps"] == 50e6
    assert total.raw["derived"]["configured_bps"] == 80e6
    for m in (node, total):
        d = m.raw["derived"]
        assert abs(d["wire_bps"] / d["configured_bps"] - 1) <= 0.10, table
        # the goodput is what the recorded bytes and duration give
        assert m.bytes * 8 / m.stats.mean == pytest.approx(d["goodput_bps"], rel=0.02)
    assert rtt.raw["derived"]["configured_rtt_s"] == pytest.approx(0.010)
    # the median: one ping stalled by the VM's vCPU steal (14-26 ms seen) must not decide
    assert abs(rtt.stats.median - 0.010) <= 0.1 * 0.010, table
    assert rtt.stats.min >= 0.010 - 0.0005, table  # the delay line never releases early
    assert rtt.stats.reps == len(rtt.samples) >= 10
    assert r.provenance["hosts"] == ["s0n0", "s1n0"]


def _progress_times(out: str) -> list[float]:
    return [float(m.group(1)) for m in re.finditer(r"^pingpong (\d+\.\d+) iteration", out, re.M)]


class _Job:
    """`mpilab testbed run` in the background, its stdout read line by line, so a test can
    act on the job's observed progress instead of on the wall clock."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mpilab.cli", "testbed", "run",
                                      *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=REPO)
        self.lines: list[str] = []

    def wait_for(self, pattern: str, limit: float = 300) -> str:
        """The first stdout line matching pattern (a hang guard, not a timing check)."""
        import selectors

        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if sel.select(timeout=1.0):
                line = self.proc.stdout.readline()
                if not line:
                    break
                self.lines.append(line)
                if re.search(pattern, line):
                    return line
        self.proc.kill()
        raise AssertionError(f"no line matching {pattern!r}: {''.join(self.lines)}")

    def finish(self, limit: float = 300) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=limit)
        return self.proc.returncode, "".join(self.lines) + out, err


def _fail_now(prefix: str, target: str) -> None:
    from mpilab.testbed import faults

    assert faults.fail(_spec(prefix), target) == f"{target} down"


def _left_in(prefix: str) -> list[int]:
    """Processes in the testbed's node namespaces (the delay line runs elsewhere)."""
    sp = _spec(prefix)
    return [pid for n in sp.node_names() for pid in net.ns_pids(sp.ns(n))]


def _tagged(prefix: str) -> list[int]:
    """Processes of any `testbed run` job on this testbed (tagged in their environment)."""
    from mpilab.testbed import jobctl

    return jobctl.job_pids(f"{prefix}-", prefix_only=True)


def test_fault_under_mptcp_does_not_kill_the_job(tb: tuple[str, dict[str, str]]) -> None:
    prefix, env = tb
    pp = find_tool("mpilab-tb-pingpong")
    job = _Job(env, "--mptcp", "--hosts", "s0n0,s1n0", "--timeout", "300", "--", pp,
               "--count", "300", "--bytes", "100000", "--progress", "10")
    try:
        # fail rail 0 once the job is measurably running (MPI wired up, data flowing), in
        # this process (no interpreter start-up in between): the 290 round trips left need
        # >= 9 s at the WAN's 50 Mbit/s, so the fault lands mid-job however loaded the
        # machine is
        job.wait_for(r"^pingpong \S+ iteration 10$")
        _fail_now(prefix, "s0n0:0")
        rc, out, err = job.finish()
        assert rc == 0, out + err
        assert "pingpong ok: 300 round trips of 100000 bytes verified" in out
        events = [e for e in json.loads(mpilab("testbed", "status", "--json", env=env).stdout)
                  ["fault_log"] if e["event"] == "fail" and e["target"] == "s0n0:0"]
        assert events, "the fault was not logged"
        stamps = _progress_times(out)
        # the link went down while the job was running, and stayed down
        assert stamps[0] < events[-1]["time"] < stamps[-1]
        assert "s0n0:0 down" in json.loads(
            mpilab("testbed", "status", "--json", env=env).stdout)["faults_active"]
    finally:
        if job.proc.poll() is None:
            job.proc.kill()
        mpilab("testbed", "heal", env=env)


def test_fault_without_mptcp_ends_the_job_naming_the_link(
        tb: tuple[str, dict[str, str]]) -> None:
    prefix, env = tb
    pp = find_tool("mpilab-tb-pingpong")
    job = _Job(env, "--hosts", "s0n0,s1n0", "--timeout", "600", "--fault-grace", "3", "--",
               pp, "--count", "100000000", "--bytes", "100000", "--progress", "10")
    try:
        job.wait_for(r"^pingpong \S+ iteration 10$")
        _fail_now(prefix, "s0n0:0")
        rc, out, err = job.finish()
        assert rc == 125, out + err
        mine = [ln for ln in err.splitlines() if ln.startswith("mpilab:")]
        assert len(mine) == 1, err
        assert re.search(r"link s0n0:0 went down at \d\d:\d\d:\d\d\.\d{3}Z \([0-9.]+ s "
                         r"into the job\) and was not healed within 3 s", mine[0]), mine[0]
        assert "pingpong ok" not in out
        assert not _left_in(prefix) and not _tagged(prefix)
    finally:
        if job.proc.poll() is None:
            job.proc.kill()
        mpilab("testbed", "heal", env=env)


def test_stall_detector_abort_ends_cleanly(tb: tuple[str, dict[str, str]]) -> None:
    """The ping-pong's own stall detector exits one rank; mpirun then hangs in "abort is
    already in progress" (and used to segfault when signalled): the fault watch ends it,
    with no crash report and nothing left behind."""
    prefix, env = tb
    pp = find_tool("mpilab-tb-pingpong")
    job = _Job(env, "--hosts", "s0n0,s1n0", "--timeout", "600", "--fault-grace", "6", "--",
               pp, "--count", "100000000", "--bytes", "100000", "--progress", "10",
               "--stall", "2")
    try:
        job.wait_for(r"^pingpong \S+ iteration 10$")
        _fail_now(prefix, "s0n0:0")
        rc, out, err = job.finish()
        assert rc == 125, out + err
        assert "Segmentation fault" not in err and "Signal:" not in err, err
        assert "link s0n0:0 went down" in err
        assert not _left_in(prefix) and not _tagged(prefix)
    finally:
        if job.proc.poll() is None:
            job.proc.kill()
        mpilab("testbed", "heal", env=env)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_mpilab_ends_the_whole_job(tb: tuple[str, dict[str, str]],
                                               sig: signal.Signals) -> None:
    prefix, env = tb
    pp = find_tool("mpilab-tb-pingpong")
    job = _Job(env, "--hosts", "s0n0,s1n0,s0n1", "--np", "3", "--", pp,
               "--count", "100000000", "--bytes", "1000", "--progress", "50")
    try:
        job.wait_for(r"^pingpong \S+ iteration 50$")
        assert _tagged(prefix), "the job's processes carry no tag"
        job.proc.send_signal(sig)
        rc, out, err = job.finish()
        assert rc == 128 + sig, out + err
        assert f"mpilab: run: {sig.name} received; job ended" in err.splitlines(), err
        assert "Segmentation fault" not in err, err
        assert not _left_in(prefix) and not _tagged(prefix)
    finally:
        if job.proc.poll() is None:
            job.proc.kill()


def test_default_time_limit_and_its_override(tb: tuple[str, dict[str, str]]) -> None:
    prefix, env = tb
    p = mpilab("testbed", "run", "--hosts", "s0n0", "--", "sleep", "600",
               env=dict(env, MPILAB_TESTBED_TIMEOUT="2"), timeout=300)
    assert p.returncode == 124, p.stdout + p.stderr
    assert p.stderr.strip().splitlines()[-1] == "mpilab: run: job did not finish within 2 s; ended"
    assert not _left_in(prefix) and not _tagged(prefix)
    p = mpilab("testbed", "run", "--hosts", "s0n0", "--timeout", "none", "--", "true",
               env=dict(env, MPILAB_TESTBED_TIMEOUT="1e-9"), timeout=300)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("args, words", [
    (["--timeout", "nan"], "--timeout 'nan': not a duration"),
    (["--timeout", "inf"], "--timeout 'inf': not a duration"),
    (["--timeout", "0"], "--timeout '0': must be a positive number of seconds"),
    (["--timeout", "-5"], "--timeout '-5'"),
    (["--fault-grace", "1e999"], "--fault-grace '1e999': not a duration (out of range)"),
    (["--np", "100000"], "--np 100000: this machine can start at most"),
    (["--np", "0"], "--np: '0': must be at least 1"),
])
def test_run_limits_are_checked_before_starting(tb: tuple[str, dict[str, str]],
                                                args: list[str], words: str) -> None:
    prefix, env = tb
    p = mpilab("testbed", "run", *args, "--", "true", env=env)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], p.stderr
    assert not _tagged(prefix)


def test_check_json_to_a_directory_is_refused_before_measuring(
        tb: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    prefix, env = tb
    p = mpilab("testbed", "check", "--time", "30", "--json", str(tmp_path), env=env)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.strip().splitlines() == [
        f"mpilab: {tmp_path}: is a directory, expected a file name"]
    assert p.stdout == ""  # no link was measured


def test_drop_fault_and_heal(tb: tuple[str, dict[str, str]]) -> None:
    prefix, env = tb
    sp = _spec(prefix)

    def ping_ok() -> bool:
        return subprocess.run(["ip", "netns", "exec", sp.ns("s0n1"), "ping", "-c", "1", "-W",
                               "1", sp.addr("s1n1", 1)], capture_output=True).returncode == 0

    assert ping_ok()
    assert mpilab("testbed", "fail", "s0n1:1", "--mode", "drop", env=env).returncode == 0
    assert not ping_ok()
    p = mpilab("testbed", "heal", "s0n1:1", env=env)
    assert p.returncode == 0 and "s0n1:1 drop" in p.stdout
    assert ping_ok()
    log = json.loads(mpilab("testbed", "status", "--json", env=env).stdout)["fault_log"]
    last = [e for e in log if e["target"] == "s0n1:1"][-2:]
    assert [e["event"] for e in last] == ["fail", "heal"]
    assert last[0]["time"] <= last[1]["time"] and last[0]["monotonic"] <= last[1]["monotonic"]
    assert abs(last[1]["time"] - time.time()) < 60  # CLOCK_REALTIME, not monotonic


def test_bad_fault_targets_are_refused(tb: tuple[str, dict[str, str]]) -> None:
    _, env = tb
    for target in ("s0n0:5", "s9n0:0", "nonsense"):
        p = mpilab("testbed", "fail", target, env=env)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr


def _ping_ok(sp: specmod.Spec, src: str, dst: str, rail: int) -> bool:
    return subprocess.run(["ip", "netns", "exec", sp.ns(src), "ping", "-c", "1", "-W", "1",
                           sp.addr(dst, rail)], capture_output=True).returncode == 0


@pytest.mark.parametrize("kind", faults.kinds(), ids=faults.kind_names())
def test_every_fault_kind_is_seen_and_healed(tb: tuple[str, dict[str, str]],
                                             kind: faults.FaultKind) -> None:
    """Every registered kind on the real testbed: the fault cuts its rail (a ping across it
    fails), its detect sees it there and nowhere else, heal undoes it, the rail works."""
    prefix, _ = tb
    sp = _spec(prefix)
    assert _ping_ok(sp, "s0n1", "s1n1", 1)
    try:
        faults.fail(sp, "s0n1:1", kind.name)
        assert kind.detect(sp, "s0n1", 1)
        assert faults.active(sp) == [("s0n1", 1, kind.name)]
        assert not _ping_ok(sp, "s0n1", "s1n1", 1)
        assert _ping_ok(sp, "s0n1", "s1n1", 0)  # the other rail is untouched
    finally:
        healed = faults.heal(sp, "s0n1:1")
    assert healed == [f"s0n1:1 {kind.name}"]
    assert not kind.detect(sp, "s0n1", 1) and faults.active(sp) == []
    assert _ping_ok(sp, "s0n1", "s1n1", 1)


def test_the_fault_kind_recipe_gives_a_fault_heal_undoes(
        tb: tuple[str, dict[str, str]]) -> None:
    """docs/architecture.md, "Add a fault kind", followed as written: three functions of
    (spec, node, rail) and one register call; nothing else is edited."""
    def rules(rail: int) -> list[list[str]]:
        return [["PREROUTING", "-i", f"r{rail}", "-j", "DROP"],
                ["OUTPUT", "-o", f"r{rail}", "-j", "DROP"]]

    def raw(sp: specmod.Spec, node: str, *args: str, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
        return net.sh(["ip", "netns", "exec", sp.ns(node), "iptables", "-w", "-t", "raw",
                       *args], check=check)

    def apply(sp: specmod.Spec, node: str, rail: int) -> None:
        for r in rules(rail):
            if raw(sp, node, "-C", *r, check=False).returncode != 0:
                raw(sp, node, "-A", *r)

    def heal(sp: specmod.Spec, node: str, rail: int) -> None:
        for r in rules(rail):
            while raw(sp, node, "-D", *r, check=False).returncode == 0:
                pass

    def detect(sp: specmod.Spec, node: str, rail: int) -> bool:
        return f"-i r{rail} -j DROP" in raw(sp, node, "-S", "PREROUTING").stdout

    faults.register(faults.FaultKind("rawdrop", "packets on the rail dropped before "
                                     "connection tracking (iptables raw table)", apply,
                                     heal, detect))
    prefix, _ = tb
    sp = _spec(prefix)
    try:
        assert "rawdrop" in faults.kind_names()
        faults.fail(sp, "s1n0:0", "rawdrop")
        assert not _ping_ok(sp, "s1n0", "s0n0", 0)
        assert faults.active(sp) == [("s1n0", 0, "rawdrop")]
        assert faults.heal(sp, None) == ["s1n0:0 rawdrop"]  # found by its detect alone
        assert _ping_ok(sp, "s1n0", "s0n0", 0)
    finally:
        faults.heal(sp, None)
        faults._KINDS.pop("rawdrop", None)


def _root_links() -> str:
    return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


def test_down_removes_exactly_its_own_things(tmp_path: Path) -> None:
    prefix = f"d{os.getpid() % 100000}"
    env = dict(os.environ, MPILAB_TESTBED_STATE_ROOT=str(tmp_path),
               MPILAB_TESTBED_PREFIX=prefix)
    env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    other = f"{prefix}x-keep"  # looks alike, is not ours
    subprocess.run(["ip", "netns", "add", other], check=True)
    links_before = _root_links()
    try:
        f = tmp_path / "tiny.toml"
        f.write_text(livetb.fixed_trim(
            "[cluster]\nsites = 2\nnodes_per_site = 1\n[wan]\ndelay = \"1ms\"\n"))
        assert mpilab("testbed", "up", str(f), env=env).returncode == 0
        assert len(net.list_namespaces(prefix)) == 5
        sd = tmp_path / f"{prefix}-testbed"
        dl_pid = json.loads((sd / "state.json").read_text())["delayline_pid"]
        # a scheduled fault that is still pending when the testbed goes away
        assert mpilab("testbed", "fail", "s0n0:0", "--at", "600", env=env).returncode == 0
        # simulate a crash: the state dir is lost, down must work from the system
        shutil.rmtree(sd)
        p = mpilab("testbed", "down", env=env)
        assert p.returncode == 0, p.stderr
        assert net.list_namespaces(prefix) == []
        assert not net.pid_alive(int(dl_pid))
        assert net.scheduler_pids(prefix) == []
        assert not sd.exists()
        assert _root_links() == links_before
        assert prefix not in _root_links()
        assert other in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                       text=True).stdout
        # down twice is fine
        assert mpilab("testbed", "down", env=env).returncode == 0
    finally:
        subprocess.run(["ip", "netns", "del", other])
        mpilab("testbed", "down", env=env)


def _env(prefix: str, root: Path) -> dict[str, str]:
    env = dict(os.environ, MPILAB_TESTBED_STATE_ROOT=str(root), MPILAB_TESTBED_PREFIX=prefix)
    env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_delay_backend_is_chosen_once_and_shown(tb: tuple[str, dict[str, str]]) -> None:
    prefix, env = tb
    st = net.load_state(prefix)
    assert st is not None
    have_netem = st["netem_available"]
    assert st["delay_backend"] == ("netem" if have_netem else "delayline")
    p = mpilab("testbed", "status", env=env)
    if have_netem:
        assert "  delay: netem" in p.stdout and st["delay_io"] is None
    else:
        # the default spec (2 sites, wan.delay_io = "auto"): one line on packet sockets,
        # its trim as the spec fixes it (measured by default: test_testbed_truth_live.py); as
        # root its scheduling is adaptive (normal for lone packets, a lone packet's truth;
        # SCHED_FIFO while it holds a stream; docs/testbed-delayline.md)
        assert st["delay_io"] == "packet" and st["delay_trim"] == {"trim_s": 0.0,
                                                                  "measured": False}
        assert (f"  delay: delay line on packet sockets (pid {st['delayline_pid']}), "
                "adaptive scheduling (SCHED_FIFO while a stream is held; now ") in p.stdout
        assert "hold = delay" not in p.stdout, p.stdout  # trim 0: the hold is the delay
        _delayline_packets(prefix)  # refreshes the statistics file
        stats = json.loads((net.state_dir(prefix) / "delayline.json").read_text())
        assert stats["io"]["mode"] == "packet" and stats["adaptive"]["active"] is True
        assert (stats["rt_priority"], stats["mlocked"]) == (10, True), stats
        assert sum(stats["late_hist"]) == stats["packets"]
        # the router does not forward: the line carries the sites' packets
        fwd = subprocess.run(["ip", "netns", "exec", _spec(prefix).router_ns(), "sysctl",
                              "-n", "net.ipv4.ip_forward"], capture_output=True, text=True)
        assert fwd.stdout.strip() == "0"
    assert prefix + "-probe" not in net.list_namespaces(prefix)


def test_lone_packets_never_leave_early_and_lateness_has_percentiles(
        tb: tuple[str, dict[str, str]]) -> None:
    """Lone ICMP echoes across the WAN (measured by ping, not by the delay line): no round
    trip is shorter than twice the configured 5 ms (the early wake-up, the spin and the
    arrival correction never release a packet before its time); the delay line's
    statistics give per-packet lateness percentiles, ordered, and count every release."""
    prefix, _ = tb
    st = net.load_state(prefix)
    assert st is not None
    if st["delay_backend"] != "delayline":
        pytest.skip("netem carries the delay here")
    sp = _spec(prefix)
    p = subprocess.run(["ip", "netns", "exec", sp.ns("s0n0"), "ping", "-n", "-c", "5", "-i",
                        "0.2", "-W", "5", sp.addr("s1n0", 0)], capture_output=True, text=True,
                       timeout=120, check=False)
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", p.stdout)]
    assert len(rtts) == 5, p.stdout + p.stderr
    assert min(rtts) >= 2 * 5.0, rtts
    _delayline_packets(prefix)
    stats = json.loads((net.state_dir(prefix) / "delayline.json").read_text())
    pct = stats["late_percentiles_s"]
    assert 0 <= pct["p50"] <= pct["p90"] <= pct["p99"]
    assert pct["max"] == stats["late_max_s"] and pct["p99"] <= 1.19 * pct["max"] + 1e-9
    assert stats["spun_releases"] <= stats["packets"]
    assert 0 < stats["wake_margin_s"] <= 300e-6


def test_netem_requested_without_netem_is_refused(tmp_path: Path) -> None:
    prefix = f"n{os.getpid() % 100000}"
    env = _env(prefix, tmp_path)
    try:
        if net.netem_available(prefix):
            pytest.skip("this kernel has netem")
        f = tmp_path / "tiny.toml"
        f.write_text("[cluster]\nsites = 2\nnodes_per_site = 1\n[wan]\ndelay = \"1ms\"\n"
                     "delay_backend = \"netem\"\n")
        p = mpilab("testbed", "up", str(f), env=env)
        assert p.returncode == 2
        assert p.stderr.strip().splitlines() == [
            f"mpilab: {f}: delay backend netem: this kernel has no netem (tc refuses the "
            "qdisc); use 'auto' or 'delayline'"]
        f.write_text("[cluster]\nsites = 2\nnodes_per_site = 1\n[wan]\ndelay = \"1ms\"\n")
        p = mpilab("testbed", "up", "--delay-backend", "netem", str(f), env=env)
        assert p.returncode == 2 and "no netem" in p.stderr
        assert net.list_namespaces(prefix) == []
    finally:
        mpilab("testbed", "down", env=env)


def test_fault_at_an_absolute_time(tb: tuple[str, dict[str, str]]) -> None:
    from mpilab.testbed import faults

    prefix, env = tb
    sp = _spec(prefix)
    # scheduled in this process: no interpreter start between choosing the instant and
    # handing it over (the CLI refuses instants in the past)
    when = round(time.time() + 2.0, 3)
    try:
        msg = faults.fail(sp, "s1n1:1", "drop", None, 1.0, at_epoch=when)
        assert "scheduled at" in msg, msg
        deadline = time.monotonic() + 300  # hang guard only
        events: list[dict[str, object]] = []
        while time.monotonic() < deadline and len(events) < 2:
            time.sleep(0.2)
            events = [e for e in faults.read_log(sp) if e["target"] == "s1n1:1"
                      and e.get("scheduled")]
        assert [e["event"] for e in events[-2:]] == ["fail", "heal"], events
        fail_t, heal_t = float(events[-2]["time"]), float(events[-1]["time"])  # type: ignore[arg-type]
        # applied on the wall clock: not before the requested instant; healed not before
        # the requested duration (how late each came depends on the machine's load)
        assert when <= fail_t
        assert fail_t + 1.0 <= heal_t
    finally:
        mpilab("testbed", "heal", env=env)


def _mptcp_mib(ns: str) -> dict[str, int]:
    """MPTcpExt counters of a namespace (/proc/net/netstat is per network namespace)."""
    text = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/netstat"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    for head, vals in zip(text[::2], text[1::2], strict=True):
        if head.startswith("MPTcpExt:"):
            return dict(zip(head.split()[1:], map(int, vals.split()[1:]), strict=True))
    return {}


def test_mpilab_bench_runs_inside_the_testbed(tmp_path: Path) -> None:
    """`mpilab bench --testbed PREFIX [--mptcp]`: the runner's ranks are on two emulated
    nodes in different sites, the pair is measured across the WAN, and with --mptcp the
    connections are MPTCP with a subflow on the second rail."""
    if not find_tool("mpilab-bench"):
        pytest.skip("mpilab-bench not built")
    prefix = f"b{os.getpid() % 100000}"
    env = _env(prefix, tmp_path)
    f = tmp_path / "b.toml"
    f.write_text(livetb.fixed_trim(
        "[cluster]\nsites = 2\nnodes_per_site = 1\nrails = 2\n[wan]\ndelay = \"2ms\"\n"))
    try:
        assert mpilab("testbed", "up", str(f), env=env).returncode == 0
        sp = specmod.load(str(f), prefix)
        names = [sp.ns("s0n0"), sp.ns("s1n0")]
        for mptcp in (False, True):
            before = [_mptcp_mib(ns) for ns in names]
            out = tmp_path / f"bench-{mptcp}.json"
            p = mpilab("bench", "--np", "2", "--testbed", prefix, *(["--mptcp"] if mptcp else []),
                       "--out", str(out), "--", "--ops", "p2p", "--sizes", "1K",
                       "--max-reps", "10", env=env, timeout=600)
            assert p.returncode == 0, p.stdout + p.stderr
            doc = json.loads(out.read_text())
            prov = doc["provenance"]
            # each node has its own hostname (its namespace's name), as MPI reports it
            assert prov["hosts"] == names and prov["ranks"] == 2
            assert [m["host"] for m in prov["mapping"]] == names
            p2p = [m for m in expand_all(doc["measurements"]) if m["op"] == "p2p"]
            assert [(m["pair"], m["bytes"]) for m in p2p] == [([0, 1], 1024)]
            # the round trip crossed the WAN twice: at least 2L = 4 ms
            assert p2p[0]["stats"]["min"] >= 0.004
            after = [_mptcp_mib(ns) for ns in names]
            grew = [{k: a.get(k, 0) - b.get(k, 0) for k in a} for a, b in zip(after, before,
                                                                                strict=True)]
            accepted = sum(g.get("MPCapableSYNRX", 0) for g in grew)
            joined = sum(g.get("MPJoinSynRx", 0) for g in grew)
            if mptcp:
                assert accepted >= 1 and joined >= 1, grew
            else:
                assert accepted == 0 and joined == 0, grew
    finally:
        mpilab("testbed", "down", env=env)
