"""Path migration over MPTCP on a live testbed (root, network namespaces): agents, manual
arm/migrate, automatic migration on link-down and silent-drop faults, re-arming after a
heal and a second fault, refusals, `testbed run --pathmig` and jobs started with rail 0
down. Every fault is scheduled after observed progress of the job (never by the clock),
every byte of every ping-pong is checked by the program, and no test asserts a time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from livetb import LETTER, fresh_state, have_netns, have_tools, mpilab, pathmig_testbed
from mpilab.pathmig import agents, congestion
from mpilab.pathmig import pingpong as ppm
from mpilab.pathmig.pingpong import Step
from mpilab.testbed import faults, net
from mpilab.testbed.spec import Spec
from mpilab.tools import find_tool

REPO = Path(__file__).resolve().parents[2]


pytestmark = [pytest.mark.root, pytest.mark.mpi,
              pytest.mark.skipif(not have_netns("mptcpize"),
                                 reason="needs root, ip netns, mptcpize"),
              pytest.mark.skipif(not have_tools("mpilab-pathmigd"),
                                 reason="mpilab-pathmigd not built")]

SPEC = ppm.SPEC_2X1


@pytest.fixture(scope="module")
def tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Spec, dict[str, str]]]:
    yield from pathmig_testbed(tmp_path_factory.mktemp("pmstate"), "q", SPEC)


@pytest.fixture
def fresh(tb: tuple[Spec, dict[str, str]]) -> Iterator[tuple[Spec, dict[str, str]]]:
    """No agent, no fault, empty logs before and after each test."""
    for _ in fresh_state(tb[0]):
        yield tb


def _states(sp: Spec, node: str | None = None) -> list[dict[str, object]]:
    return [e for e in agents.events(sp) if e["event"] == "state"
            and (node is None or e["node"] == node)]


def _wait_all(sp: Spec, node: str, state: str, n: int) -> dict[str, object]:
    """Poll the agent until n managed connections are in `state` (a readiness wait, bounded
    generously; not a timing check)."""
    import time
    deadline = time.monotonic() + 60
    while True:
        st = agents.request(sp, node, "status")
        conns = [c for c in st["connections"] if c["state"] == state]
        if len(conns) >= n:
            return st
        assert time.monotonic() < deadline, \
            f"{node}: never {n} x {state}: {st} {agents.events(sp, [node])[-8:]}"
        time.sleep(0.05)


def _stats_steps(sp: Spec, first: int,
                 second: int) -> tuple[dict[str, dict[str, object]], list[Step]]:
    """Ping-pong steps that read both agents' counters (status `stats`) once both sides
    armed 2 connections (at round trip `first`: keys NODE0) and again at `second` (NODE1)."""
    seen: dict[str, dict[str, object]] = {}

    def armed() -> None:
        _wait_all(sp, "s0n0", "ARMED", 2)
        _wait_all(sp, "s1n0", "ARMED", 2)
        for n in ("s0n0", "s1n0"):
            seen[n + "0"] = agents.request(sp, n, "status")["stats"]

    def later() -> None:
        for n in ("s0n0", "s1n0"):
            seen[n + "1"] = agents.request(sp, n, "status")["stats"]

    return seen, [Step(first, "call", fn=armed), Step(second, "call", fn=later)]


def _tx_bytes(sp: Spec, node: str, rail: int) -> int:
    p = net.sh(["ip", "netns", "exec", sp.ns(node), "cat",
                f"/sys/class/net/r{rail}/statistics/tx_bytes"])
    return int(p.stdout)


def test_arm_and_manual_migrate_moves_the_traffic(fresh: tuple[Spec, dict[str, str]],
                                                  tmp_path: Path) -> None:
    """--manual agents: nothing happens until `arm`; after `migrate` the data goes over
    rail 1 (interface counters), every byte checked."""
    sp, env = fresh
    agents.start(sp, manual=True)
    seen: dict[str, object] = {}

    def check_unarmed() -> None:
        st = agents.request(sp, "s0n0", "status")
        seen["before"] = [c["state"] for c in st["connections"]]

    def arm() -> None:
        seen["arm"] = agents.request(sp, "s0n0", "arm all")
        seen["armed"] = _wait_all(sp, "s0n0", "ARMED", 4)
        _wait_all(sp, "s1n0", "ARMED", 4)  # the server side sees the joins too

    def migrate() -> None:
        seen["migrate"] = agents.request(sp, "s0n0", "migrate all")
        seen["tx0"] = (_tx_bytes(sp, "s0n0", 0), _tx_bytes(sp, "s0n0", 1))

    def after() -> None:
        seen["tx1"] = (_tx_bytes(sp, "s0n0", 0), _tx_bytes(sp, "s0n0", 1))
        seen["status"] = agents.request(sp, "s0n0", "status")

    steps = [Step(100, "call", fn=check_unarmed), Step(200, "call", fn=arm),
             Step(400, "call", fn=migrate), Step(1400, "call", fn=after)]
    r = ppm.run(sp, "s0n0", "s1n0", tmp_path, connections=4, nbytes=16384, iters=1600,
                steps=steps)
    assert r.rc == 0 and r.summary.get("verified") is True, r.stderr
    assert seen["before"] == ["MIGRATED"] * 4
    assert seen["arm"] == {"ok": True, "done": 4, "refused": 0, "errors": []}
    assert seen["migrate"]["done"] == 4  # type: ignore[index]
    # ~1000 round trips of 16 KiB after the migration (steps follow progress lines, so a
    # few less): the payload left on rail 1
    sent0 = seen["tx1"][0] - seen["tx0"][0]  # type: ignore[index]
    sent1 = seen["tx1"][1] - seen["tx0"][1]  # type: ignore[index]
    assert sent1 >= 900 * 16384 and sent0 < 0.05 * sent1, (sent0, sent1)
    for c in seen["status"]["connections"]:  # type: ignore[index]
        if c["peer"] == "s1n0":
            paths = {s["rail"]: s["backup"] for s in c["subflows"]}
            assert paths == {0: True, 1: False}, c
    # the manual agents re-arm only on request
    assert all(e["cause"] != "fault on the primary path" for e in _states(sp))


@pytest.mark.parametrize("mode", ["down", "drop"])
@pytest.mark.parametrize("nbytes", [1024, 65536])
def test_automatic_migration(fresh: tuple[Spec, dict[str, str]], tmp_path: Path, mode: str,
                             nbytes: int) -> None:
    """A fault on rail 0 of the client mid-run: both agents migrate the connection (a
    transition logged by each) and the run finishes with every byte verified."""
    sp, env = fresh
    agents.start(sp)
    armed = [lambda: (_wait_all(sp, "s0n0", "ARMED", 2), _wait_all(sp, "s1n0", "ARMED", 2))]
    r = ppm.run(sp, "s0n0", "s1n0", tmp_path, connections=2, nbytes=nbytes, iters=1200,
                steps=[Step(350, "call", fn=armed[0]), Step(400, "fail", "s0n0:0", mode)])
    assert r.rc == 0 and r.summary.get("verified") is True, r.stderr
    _both_sides_migrated(sp, r.steps[1].t0, 2)


def _both_sides_migrated(sp: Spec, fault_t: float, nconn: int,
                         evs: list[dict[str, object]] | None = None) -> None:
    """Each node left ARMED for MIGRATED and closed its rail-0 subflow of every connection
    after the fault began. (The cause each side logs depends on which news came first:
    its own view of the path, or the peer's priority change.)"""
    evs = evs if evs is not None else agents.events(sp)
    for node in ("s0n0", "s1n0"):
        mine = [e for e in evs if e["node"] == node and e["time"] >= fault_t]  # type: ignore
        migr = {e["token"] for e in mine if e["event"] == "state" and e["from"] == "ARMED"
                and e["to"] == "MIGRATED"}
        closed = {e["token"] for e in mine if e["event"] == "action" and e["ok"]
                  and e["action"] == "destroy" and e["subflow"]["rail"] == 0}  # type: ignore
        assert len(migr) == nconn and closed == migr, (node, mine)
    bad = [e for e in evs if e["event"] == "action" and not e["ok"] and not e.get("moot")]
    assert not bad, [(e["node"], e["action"], e["subflow"], e.get("error")) for e in bad]


def test_probing_one_prober_per_pair_and_idle_alternates_slow(
        fresh: tuple[Spec, dict[str, str]], tmp_path: Path) -> None:
    """The agents' probing cost: of a node pair only the decider (s0n0, the lower index)
    probes while its probes arrive; the follower answers. The idle alternate (rail 1,
    carrying only backup subflows) is probed less often than the primary rail. Counted by
    the agents (status `stats`, and the same counters in the `stop` record). Passive
    liveness is off here (--no-passive), so that the traffic does not replace the probes
    whose schedule this checks (see the next test)."""
    sp, env = fresh
    agents.start(sp, extra=["--no-passive"])
    seen, steps = _stats_steps(sp, 200, 1400)
    r = ppm.run(sp, "s0n0", "s1n0", tmp_path, connections=2, nbytes=1024, iters=1500,
                steps=steps)
    assert r.rc == 0 and r.summary.get("verified") is True, r.stderr

    def diff(node: str, key: str) -> int:
        return int(seen[node + "1"][key]) - int(seen[node + "0"][key])  # type: ignore

    def rail(node: str, k: int) -> int:
        return (seen[node + "1"]["probes_sent_per_rail"][k]  # type: ignore[index]
                - seen[node + "0"]["probes_sent_per_rail"][k])  # type: ignore[index]

    decider, follower = diff("s0n0", "probes_sent"), diff("s1n0", "probes_sent")
    assert decider > 0 and diff("s1n0", "replies_sent") > 0, seen
    assert follower < decider, seen  # the follower answers, it does not probe
    assert rail("s0n0", 1) < rail("s0n0", 0), seen  # idle alternate: slowly
    agents.stop(sp)
    stops = [e for e in agents.events(sp) if e["event"] == "stop"]
    assert len(stops) == 2 and all(e["probes_sent"] >= 0 and e["cpu_user_s"] >= 0
                                   and e["wakeups"] > 0 for e in stops), stops


def test_passive_liveness_replaces_probes_during_traffic(
        fresh: tuple[Spec, dict[str, str]], tmp_path: Path) -> None:
    """While a connection's traffic flows, the path's TCP subflows prove it alive (the peer
    acknowledges new data: tcp_info over sock_diag), and the agents leave out the probes on
    it: of the probe periods on the primary rail during steady traffic, the decider probes
    in few (it counts the ones it left out as probes_skipped), passive proofs grow, and
    the follower, which sees the traffic too, does not start probing in their place.
    Counts only: how many periods pass depends on the machine, their split does not."""
    sp, env = fresh
    agents.start(sp)
    seen, steps = _stats_steps(sp, 200, 1500)
    r = ppm.run(sp, "s0n0", "s1n0", tmp_path, connections=2, nbytes=16384, iters=1600,
                steps=steps)
    assert r.rc == 0 and r.summary.get("verified") is True, r.stderr

    def rail(node: str, key: str, k: int) -> int:
        return (seen[node + "1"][key][k]  # type: ignore[index]
                - seen[node + "0"][key][k])  # type: ignore[index]

    def diff(node: str, key: str) -> int:
        return int(seen[node + "1"][key]) - int(seen[node + "0"][key])  # type: ignore

    probes = rail("s0n0", "probes_sent_per_rail", 0)
    skipped = rail("s0n0", "probes_skipped_per_rail", 0)
    proofs = rail("s0n0", "passive_proofs_per_rail", 0)
    blind = probes + skipped  # the periods in which a probe without evidence was due
    assert seen["s0n0" + "1"]["passive"] is True, seen
    assert diff("s0n0", "diag_dumps") > 0 and proofs > 0, seen
    assert blind >= 20, seen  # enough periods passed to judge
    assert probes * 5 <= blind, seen  # at most a fifth of the periods still probed
    assert proofs * 2 >= blind, seen  # most periods were proven passively
    # the follower sees the traffic as well: it does not take over the probing
    assert rail("s1n0", "probes_sent_per_rail", 0) * 5 <= blind, seen
    agents.stop(sp)
    stops = [e for e in agents.events(sp) if e["event"] == "stop"]
    assert len(stops) == 2 and all("passive_proofs" in e and "probes_skipped" in e
                                   and "diag_dumps" in e for e in stops), stops


@pytest.mark.parametrize("client", ["s0n0", "s1n0"])
def test_idle_connections_are_not_probed_and_a_fault_while_idle_is_survived(
        fresh: tuple[Spec, dict[str, str]], tmp_path: Path, client: str) -> None:
    """While its connections are idle (nothing of ours unacknowledged, nothing arriving) a
    path in use is settled: neither agent probes it, and the decider counts the settled
    periods (paths_settled). A silent drop then hits the client's rail 0 while the
    connections are still idle; when the client sends again its data stalls, and the
    connections migrate with every byte verified. With client s0n0 the decider's own data
    stalls; with s1n0 the follower's does, and the decider, which sees nothing arrive and
    nothing of its own outstanding, learns of it from the follower (DOWN notice)."""
    sp, env = fresh
    agents.start(sp)
    seen: dict[str, dict[str, object]] = {}
    fault: dict[str, float] = {}

    def rail(node: str, key: str, k: int) -> int:
        return (seen[node + "1"][key][k]  # type: ignore[index]
                - seen[node + "0"][key][k])  # type: ignore[index]

    def armed() -> None:
        _wait_all(sp, "s0n0", "ARMED", 2)
        _wait_all(sp, "s1n0", "ARMED", 2)

    def idle_window() -> None:  # runs as the client's 3 s wait begins
        import time
        for n in ("s0n0", "s1n0"):
            seen[n + "0"] = agents.request(sp, n, "status")["stats"]
        # a second, and then on until the decider has counted 20 settled periods (about
        # 100 in a second at the 10 ms period on an idle machine; a loaded machine's late
        # wake-ups count fewer per second), at most 2 s: still inside the client's 3 s
        # wait, so the fault comes while the connections are idle
        t0 = time.monotonic()
        time.sleep(1.0)
        while True:
            for n in ("s0n0", "s1n0"):
                seen[n + "1"] = agents.request(sp, n, "status")["stats"]
            if (rail("s0n0", "paths_settled_per_rail", 0) >= 20
                    or time.monotonic() - t0 > 2.0):
                break
            time.sleep(0.05)
        fault["t"] = time.time()
        faults.fail(sp, f"{client}:0", "drop")

    server = "s1n0" if client == "s0n0" else "s0n0"
    r = ppm.run(sp, client, server, tmp_path, connections=2, nbytes=1024, iters=600,
                idle=(300, 3.0), steps=[Step(200, "call", fn=armed),
                                        Step(300, "call", fn=idle_window)])
    assert r.rc == 0 and r.summary.get("verified") is True, r.stderr
    settled = rail("s0n0", "paths_settled_per_rail", 0)
    assert settled >= 20, seen  # the decider dumped and found rail 0 settled, period after period
    for node in ("s0n0", "s1n0"):  # and nobody probed it (a probe costs every hop a packet)
        assert rail(node, "probes_sent_per_rail", 0) * 5 <= settled, (node, seen)
    _both_sides_migrated(sp, fault["t"], 2)


def test_rearm_after_heal_and_second_fault_on_the_other_rail(
        fresh: tuple[Spec, dict[str, str]], tmp_path: Path) -> None:
    sp, env = fresh
    agents.start(sp)
    steps = [Step(300, "fail", "s0n0:0", "down"),
             Step(600, "heal", "s0n0:0"),
             Step(900, "call", fn=lambda: _wait_all(sp, "s0n0", "ARMED", 1)),
             Step(1000, "fail", "s1n0:1", "drop"),
             Step(1300, "heal", "s1n0:1")]
    r = ppm.run(sp, "s0n0", "s1n0", tmp_path, connections=1, nbytes=4096, iters=1600,
                steps=steps)
    assert r.rc == 0 and r.summary.get("verified") is True, r.stderr
    seq = [(e["from"], e["to"]) for e in _states(sp, "s0n0") if e["to"] != "CLOSED"]
    # loaded; migrated on the fault; re-armed on the healed rail; migrated again
    assert seq[:2] == [("MIGRATED", "REARM"), ("REARM", "ARMED")], seq
    i = seq.index(("ARMED", "MIGRATED"))
    assert ("MIGRATED", "REARM") in seq[i:] and seq.count(("ARMED", "MIGRATED")) >= 2, seq
    subs = [e for e in agents.events(sp) if e["event"] == "action" and e["node"] == "s0n0"
            and e["action"] == "create"]
    assert [a["subflow"]["rail"] for a in subs][:2] == [1, 0]  # alternate, then old primary


def _neigh_slow(sp: Spec, retrans_ms: int, probe_delay_s: int) -> None:
    """ARP timers of s0n0's rail 0 and of the WAN router's port towards it: the retry
    interval of an unresolved entry, and the delay before a stale one is probed (the
    router's probe of s0n0 would otherwise resolve s0n0's entry as well)."""
    for ns, dev in ((sp.ns("s0n0"), "r0"), (sp.router_ns(), "s0r0")):
        net.sh(["ip", "netns", "exec", ns, "sysctl", "-qw",
                f"net.ipv4.neigh.{dev}.retrans_time_ms={retrans_ms}",
                f"net.ipv4.neigh.{dev}.delay_first_probe_time={probe_delay_s}"])


def test_healed_link_resolves_its_neighbours_at_once(
        fresh: tuple[Spec, dict[str, str]]) -> None:
    """While a rail's carrier is gone, the probes sent there leave an INCOMPLETE neighbour
    whose ARP request the kernel repeats only every retrans_time; the agent forgets such
    entries when the link comes back and probes at once. With the ARP timers set to 10
    minutes, the path comes back only through the agent's renewal."""
    import time
    sp, env = fresh
    _neigh_slow(sp, 600000, 600)
    try:
        agents.start(sp)
        faults.fail(sp, "s0n0:0", "down")

        def incomplete() -> bool:
            p = net.sh(["ip", "-n", sp.ns("s0n0"), "neigh", "show", "dev", "r0"])
            return "INCOMPLETE" in p.stdout or "FAILED" in p.stdout
        deadline = time.monotonic() + 60
        while not incomplete():  # the agent's probes into the dead rail left one
            assert time.monotonic() < deadline, "no unresolved neighbour on the failed rail"
            time.sleep(0.05)
        healed_at = time.time()
        faults.heal(sp, "s0n0:0")

        def back() -> list[dict[str, object]]:
            return [e for e in agents.events(sp, ["s0n0"]) if e["event"] == "path"
                    and e["rail"] == 0 and e["up"] and float(e["time"]) >= healed_at - 0.1]
        deadline = time.monotonic() + 60  # a readiness bound, far below the ARP retry
        while not back():
            assert time.monotonic() < deadline, agents.events(sp, ["s0n0"])[-10:]
            time.sleep(0.05)
        ren = [e for e in agents.events(sp, ["s0n0"]) if e["event"] == "neighbours"]
        assert ren and int(ren[-1]["renewed"]) >= 1 and ren[-1]["rail"] == 0, ren
        assert int(agents.request(sp, "s0n0", "status")["stats"]["neighbours_renewed"]) >= 1
    finally:
        _neigh_slow(sp, 1000, 5)


def test_agent_refuses_bad_requests(fresh: tuple[Spec, dict[str, str]],
                                    tmp_path: Path) -> None:
    sp, env = fresh
    faults.fail(sp, "s1n0:1", "down")  # no alternate for the connection below
    agents.start(sp)
    seen: dict[str, object] = {}

    def ask() -> None:
        import time
        deadline = time.monotonic() + 60
        # the agent has seen that rail 1 is dead and has found the job's connection
        # (readiness, not timing: on a busy machine the status can come before the agent has
        # seen the connection, 100 round trips into the job)
        while True:
            st = agents.request(sp, "s0n0", "status")
            tok = next((c["token"] for c in st["connections"] if c["peer"] == "s1n0"), None)
            if tok is not None and not next(p["up"] for p in st["paths"] if p["rail"] == 1):
                break
            assert time.monotonic() < deadline, st
            time.sleep(0.05)
        seen["arm"] = agents.request(sp, "s0n0", f"arm {tok}")
        seen["migrate"] = agents.request(sp, "s0n0", f"migrate {tok}")
        seen["unknown"] = agents.request(sp, "s0n0", "migrate deadbeef")
        seen["garbage"] = agents.request(sp, "s0n0", "migrate xyz")
        seen["verb"] = agents.request(sp, "s0n0", "explode")
        seen["cli"] = mpilab("pathmig", "migrate", "deadbeef", env=env)

    r = ppm.run(sp, "s0n0", "s1n0", tmp_path, nbytes=1024, iters=400,
                steps=[Step(100, "call", fn=ask)])
    assert r.rc == 0, r.stderr
    assert "no alternate path available" in seen["arm"]["error"]  # type: ignore[index]
    assert "no loaded alternate" in seen["migrate"]["error"]  # type: ignore[index]
    assert "no connection with token deadbeef" in seen["unknown"]["error"]  # type: ignore
    assert "8 hex digits" in seen["garbage"]["error"]  # type: ignore[index]
    assert "unknown command" in seen["verb"]["error"]  # type: ignore[index]
    cli = seen["cli"]
    assert cli.returncode == 2 and len(cli.stderr.strip().splitlines()) == 1, cli.stderr  # type: ignore
    assert "no connection with token deadbeef" in cli.stderr  # type: ignore[union-attr]


def test_agent_refuses_mptcp_disabled(fresh: tuple[Spec, dict[str, str]]) -> None:
    sp, env = fresh
    ns = sp.ns("s0n0")
    d = agents.agent_dir(sp)
    d.mkdir(parents=True, exist_ok=True)
    (d / "peers").write_text(agents.peers_text(sp))
    net.sh(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.mptcp.enabled=0"])
    try:
        p = subprocess.run(["ip", "netns", "exec", ns, find_tool("mpilab-pathmigd"), "--node",
                            "s0n0", "--peers", str(d / "peers")], capture_output=True,
                           text=True, timeout=60)
    finally:
        net.sh(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.mptcp.enabled=1"])
    assert p.returncode == 2
    assert p.stderr.strip() == ("mpilab-pathmigd: MPTCP is disabled in this network "
                                "namespace (net.mptcp.enabled = 0)")


def test_cli_status_and_down_removes_agents(fresh: tuple[Spec, dict[str, str]],
                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    sp, env = fresh
    p = mpilab("pathmig", "status", env=env)
    assert p.returncode == 2 and "no agent running" in p.stderr
    p = mpilab("pathmig", "start", env=env)
    assert p.returncode == 0, p.stderr
    p = mpilab("pathmig", "status", "--json", env=env)
    assert p.returncode == 0, p.stderr
    st = json.loads(p.stdout)
    assert [n["node"] for n in st] == ["s0n0", "s1n0"]
    assert all(path["up"] for n in st for path in n["paths"])
    table = mpilab("pathmig", "status", env=env).stdout
    assert "dead paths: none" in table
    # a second, tiny testbed: `down` ends its agents (and only its own)
    prefix = f"{LETTER}r{os.getpid() % 10000}"
    root = tmp_path_factory.mktemp("pmdown")
    env2 = dict(env, MPILAB_TESTBED_STATE_ROOT=str(root), MPILAB_TESTBED_PREFIX=prefix)
    (root / "spec.toml").write_text(SPEC.replace('delay = "1ms"', 'delay = "0ms"'))
    assert mpilab("testbed", "up", str(root / "spec.toml"), env=env2).returncode == 0
    try:
        assert mpilab("pathmig", "start", env=env2).returncode == 0
        sp2 = Spec.from_dict(json.loads((root / f"{prefix}-testbed" / "state.json")
                                        .read_text())["spec"])
        pids = [int((root / f"{prefix}-testbed" / "pathmig" / f"{n}.pid").read_text().split()[0])
                for n in sp2.node_names()]
        assert all(net.pid_alive(pid) for pid in pids)
    finally:
        p = mpilab("testbed", "down", env=env2)
    assert p.returncode == 0, p.stderr
    assert not any(net.pid_alive(pid) for pid in pids)
    assert len(agents.running(sp)) == 2  # the other testbed's agents are untouched


def _run_job(env: dict[str, str], args: list[str], fault: tuple[str, str] | None,
             sp: Spec, at: str = "iteration 200") -> tuple[int, str, str]:
    """`mpilab testbed run ...` with an optional fault applied once the job has printed
    `at` (progress of the running job)."""
    proc = subprocess.Popen([sys.executable, "-m", "mpilab.cli", "testbed", "run", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=REPO)
    assert proc.stdout is not None and proc.stderr is not None
    out = []
    for line in proc.stdout:
        out.append(line)
        if fault and at in line:
            faults.fail(sp, fault[0], fault[1])
            fault = None
    rc = proc.wait(timeout=300)
    return rc, "".join(out), proc.stderr.read()


def test_testbed_run_pathmig_open_mpi_survives_fault(fresh: tuple[Spec, dict[str, str]],
                                                    tmp_path: Path) -> None:
    sp, env = fresh
    pp = find_tool("mpilab-tb-pingpong")
    ev = tmp_path / "events.jsonl"
    rc, out, err = _run_job(env, ["--pathmig", "--timeout", "240", "--pathmig-events", str(ev),
                                  "--", pp, "--count", "1000", "--bytes", "65536",
                                  "--progress", "100", "--stall", "60"], ("s0n0:0", "drop"), sp)
    assert rc == 0, out + err
    assert "pingpong ok: 1000 round trips of 65536 bytes verified" in out
    assert "migration(s)" in err and str(ev) in err
    evs = [json.loads(x) for x in ev.read_text().splitlines()]
    fault_t = next(e["time"] for e in faults.read_log(sp)[::-1] if e["event"] == "fail")
    # Open MPI's connections between the two nodes: out-of-band and one BTL connection
    _both_sides_migrated(sp, fault_t - 1.0, 2, evs)
    assert not agents.running(sp)  # stopped after the job
    # the job ran under cubic on every route of its nodes (BBR makes MPTCP slow)
    assert all(congestion.current(sp, n) == {"cubic"} for n in sp.node_names())


MPICH_PP = REPO / "build-mpich" / "bin" / "mpilab-tb-pingpong"


@pytest.mark.skipif(not (MPICH_PP.exists() and shutil.which("mpiexec.mpich")),
                    reason="needs MPICH and build-mpich (scripts/build --mpich)")
def test_testbed_run_starts_mpich_jobs_over_the_rails(fresh: tuple[Spec, dict[str, str]],
                                                      ) -> None:
    """A program built with MPICH: `testbed run` picks MPICH's mpiexec (--mpi auto), one
    rank per node, and the data crosses the testbed's rail (UCX's TCP transport, not shared
    memory between the namespaces): rail 0 of s1n0 carries at least the ping-pong's bytes."""
    sp, env = fresh
    before = _tx_bytes(sp, "s1n0", 0)
    rc, out, err = _run_job(env, ["--timeout", "240", "--hosts", "s0n0,s1n0", "--",
                                  str(MPICH_PP), "--count", "200", "--bytes", "65536"],
                            None, sp)
    assert rc == 0, out + err
    assert "pingpong ok: 200 round trips of 65536 bytes verified" in out, out + err
    assert _tx_bytes(sp, "s1n0", 0) - before >= 200 * 65536


@pytest.mark.skipif(not (MPICH_PP.exists() and shutil.which("mpiexec.mpich")),
                    reason="needs MPICH and build-mpich (scripts/build --mpich)")
def test_testbed_run_pathmig_mpich_survives_fault(fresh: tuple[Spec, dict[str, str]],
                                                  tmp_path: Path) -> None:
    """MPICH (ch4:ucx) under --pathmig. UCX binds its listener to the rail-0 address, so a
    join to the peer's rail-1 address finds a listener only because the peer's agent opened
    one there (a join listener, at the port the connection was accepted on): every
    connection between the two nodes is armed, and a silent drop of rail 0 mid-run
    migrates all of them on both sides, every byte checked."""
    sp, env = fresh
    ev = tmp_path / "events.jsonl"
    rc, out, err = _run_job(env, ["--pathmig", "--timeout", "240", "--hosts", "s0n0,s1n0",
                                  "--pathmig-events", str(ev), "--", str(MPICH_PP),
                                  "--count", "600", "--bytes", "65536", "--progress", "100",
                                  "--stall", "60"], ("s0n0:0", "drop"), sp)
    assert rc == 0, out + err
    assert "pingpong ok: 600 round trips of 65536 bytes verified" in out, out + err
    evs = [json.loads(x) for x in ev.read_text().splitlines()]
    fault_t = next(e["time"] for e in faults.read_log(sp)[::-1] if e["event"] == "fail")
    opened = [e for e in evs if e["event"] == "join_listener" and e["result"] == "open"]
    assert opened and all(e["addr"] == sp.addr(e["node"], 1) for e in opened), opened
    # the connections s0n0 held armed when the fault began (Hydra's and UCX's)
    armed: set[str] = set()
    for e in evs:
        if e["node"] == "s0n0" and e["event"] == "state" and e["time"] < fault_t:
            (armed.add if e["to"] == "ARMED" else armed.discard)(e["token"])  # type: ignore
    assert len(armed) >= 2, [e for e in evs if e["event"] == "state"]
    _both_sides_migrated(sp, fault_t - 1.0, len(armed), evs)


def test_congestion_control_per_run(fresh: tuple[Spec, dict[str, str]]) -> None:
    sp, env = fresh
    rc, out, err = _run_job(env, ["--congestion", "reno", "--timeout", "120", "--", "true"],
                            None, sp)
    assert rc == 0, out + err
    assert all(congestion.current(sp, n) == {"reno"} for n in sp.node_names())
    # the namespaces' default too: MPTCP gives a server's joined subflows its listener's
    assert all(congestion.ns_default(sp, n) == "reno" for n in sp.node_names())
    rc, out, err = _run_job(env, ["--timeout", "120", "--", "true"], None, sp)
    assert rc == 0, out + err  # a plain run: the namespaces' own default again
    assert all(congestion.current(sp, n) == {""} for n in sp.node_names())
    assert all(congestion.ns_default(sp, n) == congestion.host_default()
               for n in sp.node_names())


def _sndbuf(sp: Spec, node: str) -> int:
    p = net.sh(["ip", "netns", "exec", sp.ns(node), "sysctl", "-n", "net.ipv4.tcp_wmem"])
    return int(p.stdout.split()[1])


def test_mptcp_runs_get_a_send_buffer_that_survives_migration(
        fresh: tuple[Spec, dict[str, str]]) -> None:
    """Under MPTCP a connection's send buffer is the sum of its subflows'; a backup subflow
    keeps the default, so after a migration closed the first subflow a 16 KiB default left
    every larger message waiting a round trip. --mptcp/--pathmig runs set a 1 MiB default
    (the cubic default as well); a plain run gives the kernel's back."""
    sp, env = fresh
    for mode in ("--pathmig", "--mptcp"):
        rc, out, err = _run_job(env, [mode, "--timeout", "120", "--", "true"], None, sp)
        assert rc == 0, out + err
        assert all(_sndbuf(sp, n) == congestion.MPTCP_SNDBUF for n in sp.node_names())
        assert all(congestion.ns_default(sp, n) == "cubic" for n in sp.node_names())
    rc, out, err = _run_job(env, ["--timeout", "120", "--", "true"], None, sp)
    assert rc == 0, out + err
    assert all(_sndbuf(sp, n) == congestion.KERNEL_SNDBUF for n in sp.node_names())
    rc, out, err = _run_job(env, ["--congestion", "nosuchcc", "--", "true"], None, sp)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "argument --congestion: 'nosuchcc': not a congestion control" in err


@pytest.mark.parametrize("mode", ["--pathmig", "--mptcp"])
def test_job_starts_with_rail0_down(fresh: tuple[Spec, dict[str, str]], mode: str) -> None:
    sp, env = fresh
    faults.fail(sp, "s0n0:0", "down")
    pp = find_tool("mpilab-tb-pingpong")
    rc, out, err = _run_job(env, [mode, "--timeout", "240", "--", pp, "--count", "200",
                                  "--bytes", "65536", "--stall", "60"], None, sp)
    assert rc == 0, out + err
    assert "pingpong ok: 200 round trips of 65536 bytes verified" in out
    hostfile = (net.state_dir(sp.prefix) / "hostfile").read_text()
    assert sp.addr("s0n0", 1) in hostfile and sp.addr("s0n0", 0) not in hostfile
