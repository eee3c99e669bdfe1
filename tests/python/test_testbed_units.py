"""Testbed pieces that need neither root nor a running testbed: the netem backend's tc
commands and its choice, absolute fault times, and `check` results documents."""

from __future__ import annotations

import calendar
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mpilab.errors import MpilabError
from mpilab.testbed import faults, net
from mpilab.testbed import spec as specmod

REPO = Path(__file__).resolve().parents[2]

SPEC = """\
prefix = "unt"
[cluster]
sites = 2
nodes_per_site = 2
rails = 2
[wan]
node_rate = "50Mbit"
total_rate = "80Mbit"
delay = "5ms"
queue = "512K"
[[link]]
node = "s0n1"
rail = 1
wan_rate = "20Mbit"
"""


def _spec(extra: str = "") -> specmod.Spec:
    return specmod.load_text(SPEC + extra, "u.toml")


def _opt(argv: list[str], key: str) -> str:
    return argv[argv.index(key) + 1]


def test_netem_commands_put_a_netem_leaf_under_every_node_class() -> None:
    sp = _spec()
    cmds = net.netem_commands(sp)
    assert cmds and all(c[:3] == ["tc", "-n", "unt-wan"] for c in cmds)
    for s in range(2):
        for r in range(2):
            dev = f"s{s}r{r}"
            mine = [c for c in cmds if _opt(c, "dev") == dev]
            roots = [c for c in mine if c[3] == "qdisc" and "root" in c]
            assert len(roots) == 1 and "htb" in roots[0]
            filters = [c for c in mine if c[3] == "filter"]
            leaves = {_opt(c, "parent"): c for c in mine if c[3] == "qdisc" and "parent" in c}
            # every node of the destination site has a class, found by destination address
            for j in range(2):
                addr = sp.addr(f"s{s}n{j}", r)
                f = [c for c in filters if f"{addr}/32" in c]
                assert len(f) == 1 and _opt(f[0], "match") == "ip" and "dst" in f[0]
                leaf = leaves[_opt(f[0], "flowid")]
                assert "netem" in leaf and "bfifo" not in leaf
                assert _opt(leaf, "delay") == "5000us"
                # netem's packet limit holds L at the class ceiling plus the byte queue
                ceil = int(re.sub("bit$", "", _opt(
                    [c for c in mine if c[3] == "class" and _opt(c, "classid")
                     == _opt(f[0], "flowid")][0], "ceil")))
                assert int(_opt(leaf, "limit")) * 1500 >= ceil / 8 * 0.005 + 512 * 1024
    # the slower override on s0n1 rail 1 is kept as the class ceiling under netem too
    lines = net.router_tc_lines(sp, "netem")
    assert any("ceil 20000000bit" in ln for ln in lines if "dev s0r1" in ln)


def test_delayline_backend_keeps_bfifo_leaves_and_no_netem() -> None:
    lines = net.router_tc_lines(_spec(), "delayline")
    assert not any("netem" in ln for ln in lines)
    assert sum("bfifo" in ln for ln in lines) == 4 * 3  # 4 legs x (2 nodes + default)


def test_netem_limit_grows_with_rate_and_delay() -> None:
    assert net.netem_limit(10**6, 0.001, 1500) == 1000
    big = net.netem_limit(10**10, 0.1, 4 << 20)
    assert big * 1500 >= 10**10 / 8 * 0.1 + (4 << 20)


@pytest.mark.parametrize("requested,delay,ok,expected", [
    ("auto", 0.005, True, "netem"),
    ("auto", 0.005, False, "delayline"),
    ("delayline", 0.005, True, "delayline"),
    ("netem", 0.005, True, "netem"),
    ("auto", 0.0, None, "none"),
    ("netem", 0.0, None, "none"),
])
def test_delay_backend_choice(requested: str, delay: float, ok: bool | None,
                              expected: str) -> None:
    assert net.choose_delay_backend(requested, delay, ok) == expected


def test_netem_on_a_kernel_without_it_is_refused() -> None:
    with pytest.raises(MpilabError) as e:
        net.choose_delay_backend("netem", 0.005, False, "x.toml")
    assert "\n" not in str(e.value) and "no netem" in str(e.value)
    assert str(e.value).startswith("x.toml: ")


def test_delay_backend_in_spec() -> None:
    assert _spec().delay_backend == "auto"
    sp = specmod.load_text(SPEC.replace('delay = "5ms"', 'delay = "5ms"\ndelay_backend = "netem"'),
                           "u.toml")
    assert sp.delay_backend == "netem"
    assert specmod.Spec.from_dict(sp.to_dict()).delay_backend == "netem"
    bad = SPEC.replace('delay = "5ms"', 'delay = "5ms"\ndelay_backend = "fast"')
    with pytest.raises(MpilabError) as e:
        specmod.load_text(bad, "b.toml")
    assert str(e.value).startswith("b.toml:10: wan.delay_backend") and "netem" in str(e.value)
    # the delay line's buffer limit does not apply to netem
    huge = ('[wan]\ntotal_rate = "1Gbit"\ndelay = "300ms"\n')
    with pytest.raises(MpilabError):
        specmod.load_text(huge, "h.toml")
    assert specmod.load_text(huge + 'delay_backend = "netem"\n', "h.toml").wan_delay == 0.3


NOW = calendar.timegm((2026, 11, 21, 10, 0, 0))


def test_fail_at_relative_and_absolute_times() -> None:
    assert faults.parse_at("2", NOW) == (2.0, None)
    assert faults.parse_at("500ms", NOW) == (0.5, None)
    noon = calendar.timegm((2026, 11, 21, 12, 0, 0))
    assert faults.parse_at("2026-11-21T12:00:00Z", NOW) == (None, noon)
    assert faults.parse_at("2026-11-21T13:00:00+01:00", NOW) == (None, noon)
    assert faults.parse_at("2026-11-21T12:00:00.250Z", NOW) == (None, noon + 0.25)
    assert faults.parse_at(f"@{noon}", NOW) == (None, noon)
    assert faults.parse_at(f"@{NOW + 0.5}", NOW) == (None, NOW + 0.5)


@pytest.mark.parametrize("text,words", [
    ("2026-11-21T12:00:00", "no time zone"),
    ("2026-13-01T00:00:00Z", "not an ISO 8601 time"),
    ("2026-11-21T09:59:00Z", "60.0 s in the past"),
    ("@abc", "not a time"),
    ("@-5", "not a time"),
    ("@inf", "not a time"),
    ("@nan", "not a time"),
    (f"@{NOW - 10}", "in the past"),
    ("soon", "not a duration"),
    ("-3", "negative"),
])
def test_fail_at_bad_values(text: str, words: str) -> None:
    with pytest.raises(MpilabError) as e:
        faults.parse_at(text, NOW)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"--at {text}: ") and words in msg, msg


def test_fail_cli_refuses_a_bad_time_in_one_line() -> None:
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", "testbed", "fail", "s0n0:0",
                        "--prefix", "nope", "--at", "2026-11-21T12:00:00"],
                       capture_output=True, text=True, cwd=REPO, timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        "mpilab: --at 2026-11-21T12:00:00: no time zone (add Z for UTC, or +HH:MM)"]


def test_check_rows_make_a_results_file(tmp_path: Path) -> None:
    from mpilab import results
    from mpilab.testbed import check

    sp = _spec()
    rows = [
        check.Row("wan-node", "s0n0->s1n0:0", 1, 50e6, 49.5e6, 47.4e6, src="s0n0", dst="s1n0",
                  rail=0, bytes=17_775_000, seconds=3.0),
        check.Row("wan-total", "site0->site1:0 (2 nodes)", 2, 80e6, 79e6, 75.6e6, src="s0n0",
                  dst="s1n0", rail=0, nodes=2, bytes=28_350_000, seconds=3.01),
        check.Row("rtt-wan", "s0n0<->s1n0:0", 1, 0.010, 0.0103, max_rtt=0.0107, src="s0n0",
                  dst="s1n0", rail=0, samples=[0.0101, 0.0103, 0.0107, 0.0101]),
    ]
    doc = check.rows_json(sp, rows, "mpilab testbed check --json x", {"seconds": 3})
    f = tmp_path / "check.json"
    f.write_text(json.dumps(doc))
    r = results.load(f)  # the results reader accepts it
    assert r.provenance["hosts"] == ["s0n0", "s1n0"]
    assert [(m.op, m.impl, m.timing) for m in r.measurements] == [
        ("link", "iperf3", "link"), ("link", "iperf3", "link"), ("link", "ping", "rtt")]
    node, total, rtt = r.measurements
    # bytes over the transfer time is the goodput; derived values carry both sides
    assert node.bytes * 8 / node.stats.mean == pytest.approx(47.4e6)
    d = node.raw["derived"]
    assert (d["configured_bps"], d["wire_bps"], d["goodput_bps"]) == (50e6, 49.5e6, 47.4e6)
    assert d["rel_err"] == pytest.approx(-0.01)
    assert total.raw["link"]["nodes"] == 2 and total.raw["link"]["flows"] == 2
    assert rtt.samples == (0.0101, 0.0103, 0.0107, 0.0101)
    assert rtt.stats.mean == pytest.approx(0.0103) and rtt.stats.max == 0.0107
    assert rtt.stats.median == pytest.approx(0.0102) and rtt.stats.reps == 4
    assert rtt.raw["derived"]["configured_rtt_s"] == 0.010
    assert rtt.raw["derived"]["rtt_error_s"] == pytest.approx(0.0003)
    assert rtt.raw["link"]["site_to_site"] and node.raw["link"]["rail"] == 0


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="needs root (a private network namespace)")
def test_delayline_refuses_a_missing_device() -> None:
    """TUNSETIFF creates a device that does not exist: `--dev nosuch0` used to attach to a
    new, unrouted tun device and delay nothing, forever."""
    from mpilab.tools import find_tool

    p = subprocess.run(["unshare", "-n", find_tool("mpilab-delayline"), "--dev", "nosuch0",
                        "--delay", "1ms", "--no-realtime"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode != 0
    assert p.stderr.strip().splitlines() == [
        "mpilab-delayline: --dev nosuch0: no such device (create it first: ip tuntap add "
        "nosuch0 mode tun)"]


@pytest.mark.parametrize("where", ["dir", "fifo", "device", "no folder"])
def test_delayline_refuses_a_stats_file_it_cannot_write_at_start(tmp_path: Path,
                                                                 where: str) -> None:
    """--stats is written at exit and on SIGUSR1 (through a temporary name beside it): a
    directory, a FIFO, a device or a missing folder is one line at start, before the
    device is opened (here no device is given either: the option is refused first)."""
    from mpilab.tools import find_tool

    target = {"dir": tmp_path, "fifo": tmp_path / "f", "device": Path("/dev/null"),
              "no folder": tmp_path / "nosuch" / "s.json"}[where]
    if where == "fifo":
        os.mkfifo(target)
    p = subprocess.run([find_tool("mpilab-delayline"), "--dev", "nosuch0", "--delay", "1ms",
                        "--no-realtime", "--stats", str(target)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mpilab-delayline: --stats {target}: "), \
        p.stderr
    assert "no such device" not in p.stderr


def test_mpich_jobs_start_with_hydra_through_the_rsh_agent(tmp_path: Path) -> None:
    """`testbed run --mpi mpich`: mpiexec.mpich with the testbed's rsh agent, ranks round
    robin over the hosts' addresses on the job's first rail, Hydra's control connections
    and UCX's TCP transport on the job's rails (no shared memory: the namespaces share
    /dev/shm); under MPTCP wrapped by mptcpize."""
    from mpilab.testbed import launch
    if not shutil.which("mpiexec.mpich"):
        pytest.skip("needs MPICH's mpiexec.mpich")
    sp = _spec()
    agent = tmp_path / "agent.sh"
    cmd = launch.mpiexec_mpich_command(sp, ["s0n0", "s1n1"], 4, agent, [1, 0], mptcp=False)
    assert Path(cmd[0]).name == "mpiexec.mpich"
    i = cmd.index("-launcher-exec")
    assert cmd[i - 1] == "rsh" and cmd[i + 1] == str(agent)
    assert cmd[cmd.index("-iface") + 1] == "r1"
    assert cmd[cmd.index("-hosts") + 1] == f"{sp.addr('s0n0', 1)},{sp.addr('s1n1', 1)}"
    assert cmd[cmd.index("-n") + 1] == "4"
    genv = [cmd[k + 1:k + 3] for k, a in enumerate(cmd) if a == "-genv"]
    assert ["UCX_NET_DEVICES", "r1,r0"] in genv and ["UCX_TLS", "tcp,self"] in genv
    if shutil.which("mptcpize"):
        m = launch.mpiexec_mpich_command(sp, ["s0n0"], 1, agent, [0], mptcp=True)
        assert Path(m[0]).name == "mptcpize" and m[1] == "run" and m[2:] != []
    # the finalize keeper is preloaded into the ranks when built (under MPTCP after
    # mptcpize's library, which Hydra's LD_PRELOAD would otherwise replace), and not when
    # the caller says so
    try:
        keeper = launch.find_tool(launch.FINALIZE_KEEPER)
    except Exception:
        keeper = None
    pre = [cmd[i + 2] for i, a in enumerate(cmd) if a == "-genv" and cmd[i + 1] == "LD_PRELOAD"]
    assert pre == ([keeper] if keeper else [])
    off = launch.mpiexec_mpich_command(sp, ["s0n0"], 1, agent, [0], False, ucx_keeper=False)
    assert "LD_PRELOAD" not in off
    if keeper and shutil.which("mptcpize"):
        m = launch.mpiexec_mpich_command(sp, ["s0n0"], 1, agent, [0], mptcp=True)
        lib = m[m.index("LD_PRELOAD") + 1].split(":")
        assert "mptcpwrap" in lib[0] and lib[1:] == [keeper], lib


def test_job_mpi_follows_the_program() -> None:
    """--mpi auto: the MPI the program is linked with; Open MPI for anything else."""
    from mpilab import launch
    assert launch.program_mpi_of(["sh", "-c", "true"]) == "openmpi"
    assert launch.program_mpi_of(["/no/such/program"]) == "openmpi"
    built = {"openmpi": REPO / "build" / "bin" / "mpilab-tb-pingpong",
             "mpich": REPO / "build-mpich" / "bin" / "mpilab-tb-pingpong"}
    seen = 0
    for mpi, exe in built.items():
        if exe.exists():
            assert launch.program_mpi_of([str(exe), "--count", "1"]) == mpi
            seen += 1
    if not seen:
        pytest.skip("no mpilab-tb-pingpong built")


def test_run_refuses_an_unknown_mpi() -> None:
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", "testbed", "run", "--mpi", "lam",
                        "--", "true"], capture_output=True, text=True, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    assert p.returncode == 2 and "--mpi" in p.stderr and "Traceback" not in p.stderr


def test_the_yield_library_goes_before_the_keeper(monkeypatch: pytest.MonkeyPatch) -> None:
    """mpich_rank_preload: the yield library first, then the finalize keeper; without the
    yield library built, --mpich-yield is an error naming it, not a job without it."""
    from mpilab.errors import MpilabError
    from mpilab.testbed import launch
    monkeypatch.delenv("MPILAB_UCX_FINALIZE", raising=False)
    monkeypatch.setattr(launch, "find_tool", lambda name: f"/b/{name}")
    assert launch.mpich_rank_preload(False, True) == \
        f"/b/{launch.YIELD_LIB}:/b/{launch.FINALIZE_KEEPER}"
    assert launch.mpich_rank_preload(False, True, keeper=False) == f"/b/{launch.YIELD_LIB}"
    assert launch.mpich_rank_preload(False) == f"/b/{launch.FINALIZE_KEEPER}"

    def missing(name: str) -> str:
        raise MpilabError(f"{name}: not found")
    monkeypatch.setattr(launch, "find_tool", missing)
    assert launch.mpich_rank_preload(False) is None
    with pytest.raises(MpilabError, match=launch.YIELD_LIB):
        launch.mpich_rank_preload(False, True)
