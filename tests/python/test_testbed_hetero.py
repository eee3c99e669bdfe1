"""Per-node WAN delays, CPU quotas and slow start after idle in testbed specs (the LMO
testbed, examples/testbed/lmo-hetero4.toml): parsing with file:line errors, the router's
policy rules, the node sysctls, the cpu groups and the rsh agent (no root needed: the cpu
controller's root is a temporary folder)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mpilab.errors import MpilabError
from mpilab.sim import platform as simplat
from mpilab.testbed import launch, net
from mpilab.testbed import spec as specmod

REPO = Path(__file__).resolve().parents[2]
HETERO = REPO / "examples" / "testbed" / "lmo-hetero4.toml"
COST = REPO / "examples" / "testbed" / "lmo-hetero4-cost.toml"
WALL = REPO / "examples" / "testbed" / "lmo-hetero4-wall.toml"

BASE = """\
prefix = "htu"
[cluster]
sites = 4
nodes_per_site = 1
[wan]
node_rate = "100Mbit"
total_rate = "100Mbit"
delay = "1ms"
"""


def _bad(text: str) -> str:
    """The one-line message a bad spec is refused with."""
    try:
        specmod.load_text(text, "bad.toml")
    except MpilabError as e:
        assert "\n" not in str(e)
        return str(e)
    raise AssertionError("accepted: " + text)


def test_example_spec_values() -> None:
    sp = specmod.load(str(HETERO))
    nodes = sp.node_names()
    assert nodes == ["s0n0", "s1n0", "s2n0", "s3n0"]
    assert [min(sp.link_rates(n, 0)) for n in nodes] == [100e6, 100e6, 50e6, 25e6]
    assert [sp.node_delay(n, 0) for n in nodes] == [0.001, 0.002, 0.003, 0.004]
    assert sp.max_delay() == 0.004
    assert sp.delay_groups() == [(0.002, [("s1n0", 0)]), (0.003, [("s2n0", 0)]),
                                 (0.004, [("s3n0", 0)])]
    lim = sp.cpu_limit("s1n0")
    assert lim is not None and (lim.quota_us(), lim.period_us()) == (1000, 4000)
    assert sp.cpu_limit("s0n0") is None
    assert sp.slow_start_after_idle is False
    # the state's round trip keeps every new field (is_up compares it)
    assert specmod.Spec.from_dict(sp.to_dict()) == sp


def test_override_with_the_default_delay_needs_no_line_of_its_own() -> None:
    sp = specmod.load_text(BASE + '[[link]]\nnode = "s1n0"\nwan_delay = "1ms"\n', "x.toml")
    assert sp.delay_groups() == []
    sp = specmod.load_text(BASE + '[[link]]\nnode = "s1n0"\nwan_delay = "2ms"\n'
                           '[[link]]\nnode = "s2n0"\nwan_delay = "2ms"\n', "x.toml")
    assert sp.delay_groups() == [(0.002, [("s1n0", 0), ("s2n0", 0)])]


def test_router_rules_route_each_group_by_source() -> None:
    sp = specmod.load(str(HETERO), "htu")
    assert net.delay_rules(sp, 0) == [f"rule add iif s{s}r0 lookup 100 pref 100"
                                      for s in range(4)]
    # a group's rule matches its node's address on the leg it arrives from, and is looked
    # at before the default line's (pref 90 < 100)
    assert net.delay_rules(sp, 3) == [f"rule add from {sp.addr('s3n0', 0)}/32 iif s3r0 "
                                      "lookup 103 pref 90"]


def test_node_sysctls() -> None:
    assert net.node_sysctls(specmod.load_text(BASE, "x.toml")) == []
    sp = specmod.load(str(HETERO))
    assert net.node_sysctls(sp) == ["net.ipv4.tcp_rmem=4096 4194304 4194304",
                                    "net.ipv4.tcp_wmem=4096 4194304 4194304",
                                    "net.ipv4.tcp_slow_start_after_idle=0"]
    sp = specmod.load_text(BASE + 'socket_buffer = "1M"\nslow_start_after_idle = true\n',
                           "x.toml")
    assert net.node_sysctls(sp)[-1] == "net.ipv4.tcp_slow_start_after_idle=1"
    assert len(net.node_sysctls(sp)) == 3


@pytest.mark.parametrize("extra,line,words", [
    ('[[link]]\nnode = "s1n0"\nwan_delay = "-1ms"\n', 11, "negative"),
    ('[[link]]\nnode = "s1n0"\nwan_delay = "11s"\n', 11, "more than 10 s"),
    ('[[link]]\nnode = "s1n0"\nwan_delay = "9s"\n', 11, "too large for the delay line"),
    ('delay_backend = "netem"\n[[link]]\nnode = "s1n0"\nwan_delay = "2ms"\n', 12,
     "needs the delay line"),
    ('slow_start_after_idle = 0\n', 9, "not a boolean"),
    ('[[node]]\nname = "s9n0"\ncpu_quota = 0.5\n', 10, "no such node"),
    ('[[node]]\ncpu_quota = 0.5\n', 9, "missing key 'name'"),
    ('[[node]]\nname = "s1n0"\n', 9, "missing key 'cpu_quota'"),
    ('[[node]]\nname = "s1n0"\ncpu_quota = 0\n', 11, "above 0"),
    ('[[node]]\nname = "s1n0"\ncpu_quota = "half"\n', 11, "not a number"),
    ('[[node]]\nname = "s1n0"\ncpu_quota = true\n', 11, "not a number"),
    ('[[node]]\nname = "s1n0"\ncpu_quota = 65\n', 11, "at most 64"),
    ('[[node]]\nname = "s1n0"\ncpu_quota = 0.5\ncpu_period = "2s"\n', 12, "between 1ms and 1s"),
    ('[[node]]\nname = "s1n0"\ncpu_quota = 0.1\ncpu_period = "5ms"\n', 11, "below"),
    ('[[node]]\nname = "s1n0"\ncpu_quota = 0.5\ncpus = 2\n', 12, "unknown key"),
    ('[[node]]\nname = "s1n0"\ncpu_quota = 0.5\n[[node]]\nname = "s1n0"\ncpu_quota = 0.2\n',
     13, "second [[node]]"),
    ('[[node]]\nname = "s1n0"\nmsg_cost = "1ms"\ncpu_period = "4ms"\n', 12, "needs cpu_quota"),
    ('[[node]]\nname = "s1n0"\nmsg_cost = "1ms"\n[[node]]\nname = "s1n0"\nmsg_cost = "1ms"\n',
     13, "second [[node]]"),
    ('[[node]]\nname = "s1n0"\ncpu_quota = 0.5\nmsg_cost_clock = "wall"\n', 12,
     "needs msg_cost"),
    ('[[node]]\nname = "s1n0"\nmsg_cost = "1ms"\nmsg_cost_clock = "WALL"\n', 12,
     "expected one of cpu, wall"),
    ('[[node]]\nname = "s1n0"\nmsg_cost = "1ms"\nmsg_cost_clock = 1\n', 12,
     "expected one of cpu, wall"),
])
def test_bad_hetero_keys_name_file_and_line(extra: str, line: int, words: str) -> None:
    msg = _bad(BASE + extra)
    assert msg.startswith(f"bad.toml:{line}: "), msg
    assert words in msg, msg


@pytest.mark.parametrize("value,words", [('"0s"', "above 0"), ('"2s"', "at most 1 s"),
                                         ('"slow"', ""), ("true", "")])
def test_bad_msg_cost(value: str, words: str) -> None:
    msg = _bad(BASE + f'[[node]]\nname = "s1n0"\nmsg_cost = {value}\n')
    assert msg.startswith("bad.toml:11: node.msg_cost: ") and words in msg, msg


def test_node_must_be_an_array_of_tables() -> None:
    msg = _bad("node = 3\n" + BASE)
    assert msg.startswith("bad.toml:1: node: must be an array of tables"), msg


def test_cpu_groups_made_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(net, "CPU_CGROUP_ROOT", tmp_path)
    with pytest.raises(MpilabError, match="cgroup v1 cpu controller"):
        net.check_cpu_controller()
    (tmp_path / "cpu.cfs_quota_us").write_text("-1\n")
    net.check_cpu_controller()
    sp = specmod.load(str(HETERO), "htu")
    net.make_cpu_cgroups(sp)
    # the limited node's group inside the testbed's shared group
    cg = tmp_path / "htu-nodes" / "htu-s1n0"
    assert (cg / "cpu.cfs_period_us").read_text() == "4000"
    assert (cg / "cpu.cfs_quota_us").read_text() == "1000"
    other = tmp_path / "htx-nodes" / "htx-s1n0"  # another prefix's groups are never touched
    other.mkdir(parents=True)
    # a plain folder is not a cgroup: rmdir fails with the files in it (and so does its
    # parent's), and the count says so
    assert net.remove_cpu_cgroups("htu") == 0
    for f in cg.iterdir():
        f.unlink()
    assert net.remove_cpu_cgroups("htu") == 2  # innermost first, then the shared group
    assert not (tmp_path / "htu-nodes").exists() and other.exists()


def test_shared_cpu_group_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # default: shared when a node is limited, not otherwise; the key overrides both ways
    assert specmod.load(str(HETERO), "htu").cpu_group_shared()
    assert not specmod.load_text(BASE, "<t>").cpu_group_shared()
    assert specmod.load_text(BASE.replace("[cluster]", "[cluster]\nshared_cpu_group = true"),
                         "<t>").cpu_group_shared()
    off = HETERO.read_text().replace("[cluster]", "[cluster]\nshared_cpu_group = false")
    sp = specmod.load_text(off, "<t>")
    assert not sp.cpu_group_shared() and sp.node_limits
    msg = _bad(BASE.replace("[cluster]", "[cluster]\nshared_cpu_group = 1"))
    assert "shared_cpu_group" in msg and "not a boolean" in msg, msg
    # an unlimited testbed with the key gets the shared group only
    monkeypatch.setattr(net, "CPU_CGROUP_ROOT", tmp_path)
    net.make_cpu_cgroups(specmod.load_text(BASE.replace("[cluster]", "[cluster]\nshared_cpu_group"
                                                    " = true"), "<t>"))
    assert [p.name for p in tmp_path.iterdir()] == ["htu-nodes"]


def test_agent_joins_the_cpu_group_of_a_limited_node(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPILAB_TESTBED_STATE_ROOT", str(tmp_path))
    monkeypatch.setattr(net, "CPU_CGROUP_ROOT", tmp_path / "cpu")
    sp = specmod.load(str(HETERO), "htu")
    net.state_dir("htu").mkdir(parents=True)
    agent = launch.write_agent(sp, False)
    procs = tmp_path / "cpu" / "htu-nodes" / "htu-s1n0" / "cgroup.procs"
    procs.parent.mkdir(parents=True)
    procs.write_text("")
    # run the agent's host mapping with `ip` replaced by a stub that prints its argv
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "ip").write_text("#!/bin/sh\necho ip \"$@\"\n")
    (stub / "ip").chmod(0o755)
    env = {"PATH": f"{stub}:/usr/bin:/bin"}
    p = subprocess.run([str(agent), sp.addr("s1n0", 0), "true"], capture_output=True,
                       text=True, env=env, timeout=30, check=True)
    assert "htu-s1n0" in p.stdout
    pid = procs.read_text().split()
    assert len(pid) == 1 and pid[0].isdigit()  # the agent's own pid, inherited by the job
    procs.write_text("")
    shared = tmp_path / "cpu" / "htu-nodes" / "cgroup.procs"
    shared.write_text("")
    subprocess.run([str(agent), sp.addr("s0n0", 0), "true"], capture_output=True,
                   text=True, env=env, timeout=30, check=True)
    # an unlimited node's agent leaves the group it may have inherited for the shared one
    assert procs.read_text() == "" and shared.read_text().strip().isdigit()
    # without the shared group (cluster.shared_cpu_group = false): the root group
    off = specmod.load_text(HETERO.read_text().replace("[cluster]",
                                                       "[cluster]\nshared_cpu_group = false"),
                            str(HETERO), "htu")
    agent = launch.write_agent(off, False)
    root = tmp_path / "cpu" / "cgroup.procs"
    root.write_text("")
    shared.write_text("")
    subprocess.run([str(agent), sp.addr("s0n0", 0), "true"], capture_output=True,
                   text=True, env=env, timeout=30, check=True)
    assert shared.read_text() == "" and root.read_text().strip().isdigit()


def test_simulation_refuses_hetero_keys() -> None:
    sp, keys = simplat.load_spec(str(HETERO))
    with pytest.raises(MpilabError) as e:
        simplat.check_spec(sp, keys, simplat.SpecOptions())
    assert str(e.value).startswith(f"{HETERO}:") and "cannot be simulated" in str(e.value)


def test_wan_burst_and_segment_offload() -> None:
    # defaults: the burst of two GSO super-packets, the kernel's segment offload
    sp = specmod.load_text(BASE, "<t>")
    assert sp.wan_burst is None and sp.segment_offload is None
    assert net.node_link_lines(sp, 0) == []
    assert any("burst 134072 cburst 134072" in ln for ln in net.router_tc_lines(sp, "delayline"))
    # wan.burst sets every WAN class's burst and cburst (router legs and site uplinks);
    # cluster.segment_offload = false: one TCP segment per packet on every rail
    sp = specmod.load_text(BASE.replace("[wan]", '[wan]\nburst = "2K"').replace(
        "[cluster]", "[cluster]\nsegment_offload = false"), "<t>")
    assert sp.wan_burst == 2048 and sp.segment_offload is False
    lines = [ln for ln in net.router_tc_lines(sp, "delayline") if "htb rate" in ln
             and "classid 1:2 " not in ln]
    assert lines and all("burst 2048 cburst 2048" in ln for ln in lines), lines
    up = net.htb_wan("up0", sp.wan_total_rate, [("10.0.0.1", 10**8)], "src", 4096,
                     burst=sp.wan_burst)
    assert sum("burst 2048 cburst 2048" in ln for ln in up) == 2
    assert net.node_link_lines(sp, 1) == ["link set dev r1 gso_max_segs 1"]
    for bad, words in (('burst = "1K"', "must be between 1514"), ("burst = true", "")):
        msg = _bad(BASE.replace("[wan]", "[wan]\n" + bad))
        assert msg.startswith("bad.toml:") and "wan.burst" in msg and words in msg, msg
    msg = _bad(BASE.replace("[cluster]", '[cluster]\nsegment_offload = "no"'))
    assert "segment_offload" in msg and "not a boolean" in msg, msg


def test_msg_cost_per_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sp = specmod.load(str(COST), "htu")
    assert sp.msg_costs == {"s1n0": 0.0015, "s2n0": 0.0015}
    # a node with a message cost and no quota is not CPU-limited
    assert [lim.name for lim in sp.node_limits] == ["s1n0"] and sp.cpu_limit("s2n0") is None
    assert specmod.Spec.from_dict(sp.to_dict()) == sp
    assert specmod.load(str(HETERO)).msg_costs == {}
    # no cost anywhere: no wrapper between the launcher and the program
    monkeypatch.setenv("MPILAB_TESTBED_STATE_ROOT", str(tmp_path))
    net.state_dir("htu").mkdir(parents=True)
    assert launch.rank_prefix(specmod.load(str(HETERO), "htu")) == []
    monkeypatch.setattr(launch, "find_tool", lambda name: f"/opt/x/{name}")
    (wrap,) = launch.rank_prefix(sp)
    # the wrapper, run on each node (uname -n is the node's namespace name): the library
    # and the cost in microseconds on s1n0 and s2n0 only, an LD_PRELOAD already set kept
    stub = tmp_path / "bin"
    stub.mkdir()
    show = ["sh", "-c", 'echo "[$LD_PRELOAD] [${MPILAB_MSG_COST_US-unset}] $*"', "x", "a b"]
    seen = {}
    for node in sp.node_names():
        (stub / "uname").write_text(f"#!/bin/sh\necho {sp.ns(node)}\n")
        (stub / "uname").chmod(0o755)
        env = {"PATH": f"{stub}:/usr/bin:/bin", "LD_PRELOAD": "/k.so"}
        seen[node] = subprocess.run([wrap, *show], capture_output=True, text=True, env=env,
                                    timeout=30, check=True).stdout.strip()
    lib = "/opt/x/libmpilab_msgcost.so"
    assert seen == {"s0n0": "[/k.so] [unset] a b", "s1n0": f"[{lib}:/k.so] [1500.000] a b",
                    "s2n0": f"[{lib}:/k.so] [1500.000] a b", "s3n0": "[/k.so] [unset] a b"}


def test_msg_cost_clock_wall_reaches_the_wrapper(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`msg_cost_clock = "wall"`: that node's ranks get MPILAB_MSG_COST_CLOCK=wall, the
    others with a cost "cpu" (the library's default, said explicitly), nodes without a
    cost nothing; the example spec's four nodes all have wall-clock costs."""
    sp = specmod.load(str(WALL), "htw")
    assert sp.msg_costs == {"s0n0": 0.002, "s1n0": 0.004, "s2n0": 0.0025, "s3n0": 0.003}
    assert sorted(sp.msg_cost_wall) == ["s0n0", "s1n0", "s2n0", "s3n0"]
    assert sp.node_limits == [] and specmod.Spec.from_dict(sp.to_dict()) == sp
    assert specmod.load(str(COST)).msg_cost_wall == []
    mixed = specmod.load_text(BASE + '[[node]]\nname = "s1n0"\nmsg_cost = "1ms"\n'
                              'msg_cost_clock = "wall"\n[[node]]\nname = "s0n0"\n'
                              'msg_cost = "2ms"\nmsg_cost_clock = "cpu"\n', "<t>")
    assert mixed.msg_cost_wall == ["s1n0"]
    monkeypatch.setenv("MPILAB_TESTBED_STATE_ROOT", str(tmp_path))
    net.state_dir("htu").mkdir(parents=True)
    monkeypatch.setattr(launch, "find_tool", lambda name: f"/opt/x/{name}")
    (wrap,) = launch.rank_prefix(mixed)
    stub = tmp_path / "bin"
    stub.mkdir()
    show = ["sh", "-c", 'echo "${MPILAB_MSG_COST_US-unset} ${MPILAB_MSG_COST_CLOCK-unset}"']
    seen = {}
    for node in mixed.node_names():
        (stub / "uname").write_text(f"#!/bin/sh\necho {mixed.ns(node)}\n")
        (stub / "uname").chmod(0o755)
        env = {"PATH": f"{stub}:/usr/bin:/bin"}
        seen[node] = subprocess.run([wrap, *show], capture_output=True, text=True, env=env,
                                    timeout=30, check=True).stdout.strip()
    assert seen == {"s0n0": "2000.000 cpu", "s1n0": "1000.000 wall", "s2n0": "unset unset",
                    "s3n0": "unset unset"}, seen


def test_simulation_refuses_msg_cost(tmp_path: Path) -> None:
    path = tmp_path / "cost.toml"
    path.write_text(BASE + '[[node]]\nname = "s1n0"\nmsg_cost = "1ms"\n')
    sp, keys = simplat.load_spec(str(path))
    with pytest.raises(MpilabError) as e:
        simplat.check_spec(sp, keys, simplat.SpecOptions())
    assert str(e.value).startswith(f"{path}:11: node.msg_cost: cannot be simulated"), e.value
