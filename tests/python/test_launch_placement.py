"""Jobs placed on other hosts: mpilab.launch writes a Placement (hosts, rsh agent, hostfile,
interfaces, transport, the ranks' variables) in Open MPI's and MPICH's syntax, and the
testbed's job command lines (Open MPI and MPICH, with and without MPTCP) are pinned token
by token. Nothing is started: the launchers' paths, mptcpize and the root-only steps of
job_prefix (congestion control, MPTCP endpoints) are stood in for."""

from __future__ import annotations

from pathlib import Path

import pytest
from mpilab import launch
from mpilab.errors import MpilabError
from mpilab.pathmig import congestion, rails
from mpilab.testbed import launch as tb
from mpilab.testbed import net
from mpilab.testbed import spec as specmod

SPEC = """\
prefix = "upl"
[cluster]
sites = 2
nodes_per_site = 2
rails = 2
"""

DEFAULTS = ["-q", "-np", "4", "--oversubscribe", "--bind-to", "none",
            "--mca", "mpi_yield_when_idle", "1"]


def test_a_placement_in_open_mpi_syntax() -> None:
    where = launch.Placement(("10.0.0.1", "10.0.0.2"), "/a/agent.sh", "/a/hosts", 2,
                             ("r1", "r0"), True, (("K", "v w"),))
    lr = launch.Launcher("mpirun", "/x/mpirun", "openmpi", ["--bind-to", "core"])
    assert lr.command(4, where) == [
        "/x/mpirun", "-q", "-np", "4", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1",
        "--hostfile", "/a/hosts", "--map-by", "node",
        "--mca", "plm_rsh_agent", "/a/agent.sh", "--mca", "plm_rsh_no_tree_spawn", "1",
        "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "r1,r0",
        "--mca", "oob_tcp_if_include", "r1", "-x", "K=v w", "--bind-to", "core"]
    # no hostfile: the hosts and their slots on the command line; nothing else asked for
    bare = launch.Placement(("a", "b"), slots=3)
    assert launch.Launcher("mpirun", "/x/mpirun", "openmpi").command(4, bare) == [
        "/x/mpirun", *DEFAULTS, "--host", "a:3,b:3", "--map-by", "node"]
    assert launch.hostfile_text(["a", "b"], 3) == "a slots=3\nb slots=3\n"


def test_a_placement_in_mpich_syntax() -> None:
    where = launch.Placement(("10.0.0.1", "10.0.0.2"), "/a/agent.sh", "/a/hosts", 2,
                             ("r1", "r0"), True, (("LD_PRELOAD", "/l/k.so"),))
    lr = launch.Launcher("mpiexec.hydra", "/x/mpiexec.mpich", "mpich", ["-v"])
    assert lr.command(4, where) == [
        "/x/mpiexec.mpich", "-n", "4", "-launcher", "rsh", "-launcher-exec", "/a/agent.sh",
        "-iface", "r1", "-hosts", "10.0.0.1,10.0.0.2", "-ppn", "1",
        "-genv", "UCX_TLS", "tcp,self", "-genv", "UCX_NET_DEVICES", "r1,r0",
        "-genv", "LD_PRELOAD", "/l/k.so", "-v"]
    assert launch.Launcher("mpiexec.hydra", "/x/mpiexec", "mpich").command(
        1, launch.Placement(("h",))) == ["/x/mpiexec", "-n", "1", "-hosts", "h", "-ppn", "1"]


def test_variables_for_every_rank_in_each_launchers_syntax() -> None:
    env = {"A": "1", "B": "x y"}
    assert launch.rank_env_args("openmpi", env) == ["-x", "A=1", "-x", "B=x y"]
    assert launch.rank_env_args("mpich", env) == ["-genv", "A", "1", "-genv", "B", "x y"]
    assert launch.rank_env_args("mpich", {}) == []
    with pytest.raises(MpilabError, match="--mpi lam"):
        launch.rank_env_args("lam", env)


def test_placements_that_cannot_be_written_are_refused() -> None:
    with pytest.raises(MpilabError, match="srun: Slurm places the ranks itself"):
        launch.Launcher("srun", "/x/srun", "openmpi").command(2, launch.Placement(("h",)))
    with pytest.raises(MpilabError, match="no hosts"):
        launch.Placement(())
    with pytest.raises(MpilabError, match="0 slots"):
        launch.Placement(("h",), slots=0)
    with pytest.raises(MpilabError, match="--mpi lam"):
        launch.for_mpi("lam")
    # without a placement the command is what it always was
    assert launch.Launcher("mpirun", "/x/mpirun", "openmpi").command(4) == ["/x/mpirun",
                                                                            *DEFAULTS]


@pytest.fixture
def job(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> specmod.Spec:
    """job_prefix with the root-only steps stood in for, its files under tmp_path."""
    monkeypatch.setattr(net, "state_dir", lambda prefix: tmp_path / prefix)
    monkeypatch.setattr(net, "require_root", lambda: None)
    monkeypatch.setattr(congestion, "apply", lambda *a, **k: None)
    monkeypatch.setattr(congestion, "send_buffers", lambda *a, **k: None)
    monkeypatch.setattr(tb, "setup_mptcp", lambda *a, **k: None)
    monkeypatch.setattr(rails, "first_usable_rail", lambda spec, hosts: 1)
    monkeypatch.setattr(launch, "find_executable", lambda name: f"/x/{name}")
    monkeypatch.setattr(tb, "_mptcpize", lambda: "/x/mptcpize")
    monkeypatch.setattr(tb, "mpich_rank_preload", _preload)
    (tmp_path / "upl").mkdir()
    return specmod.load_text(SPEC, "upl.toml")


def _preload(mptcp: bool, mpich_yield: bool = False, keeper: bool = True) -> str | None:
    """mpich_rank_preload's order with stand-in libraries: mptcpize's, the yield library,
    the finalize keeper."""
    libs = ((["/l/wrap.so"] if mptcp else []) + (["/l/yield.so"] if mpich_yield else [])
            + (["/l/keep.so"] if keeper else []))
    return ":".join(libs) or None


def _ns_prefix(state: Path) -> list[str]:
    return ["ip", "netns", "exec", "upl-s0n0", "unshare", "--uts", "sh", "-c",
            'hostname "$1" && shift && exec "$@"', "sh", "upl-s0n0", "env",
            f"TMPDIR={state}/tmp/s0n0"]


@pytest.mark.parametrize("mptcp", [False, True])
def test_open_mpi_testbed_jobs_keep_their_command_line(job: specmod.Spec, tmp_path: Path,
                                                       mptcp: bool) -> None:
    state = tmp_path / "upl"
    cmd = tb.job_prefix(job, 4, "s0n0,s1n1", mptcp=mptcp, mpi="openmpi")
    rail = "r1" if mptcp else "r0"  # under MPTCP the first usable rail (stood in: 1)
    agent = state / ("agent-mptcp.sh" if mptcp else "agent.sh")
    assert cmd == [*_ns_prefix(state), *(["/x/mptcpize", "run"] if mptcp else []),
                   "/x/mpirun", *DEFAULTS, "--hostfile", f"{state}/hostfile",
                   "--map-by", "node", "--mca", "plm_rsh_agent", str(agent),
                   "--mca", "plm_rsh_no_tree_spawn", "1", "--mca", "btl", "self,tcp",
                   "--mca", "btl_tcp_if_include", rail, "--mca", "oob_tcp_if_include", rail]
    addr = [job.addr(h, 1 if mptcp else 0) for h in ("s0n0", "s1n1")]
    assert (state / "hostfile").read_text() == f"{addr[0]} slots=2\n{addr[1]} slots=2\n"
    two = tb.job_prefix(job, 4, "s0n0,s1n1", mptcp=mptcp, rails=[1, 0], mpi="openmpi")
    assert two[two.index("btl_tcp_if_include") + 1] == "r1,r0"
    assert two[two.index("oob_tcp_if_include") + 1] == "r1"


@pytest.mark.parametrize("mptcp", [False, True])
def test_mpich_testbed_jobs_keep_their_command_line(job: specmod.Spec, tmp_path: Path,
                                                    mptcp: bool) -> None:
    state = tmp_path / "upl"
    cmd = tb.job_prefix(job, 3, None, mptcp=mptcp, mpi="mpich")
    r = 1 if mptcp else 0
    hosts = ",".join(job.addr(h, r) for h in job.node_names())
    agent = state / ("agent-mptcp.sh" if mptcp else "agent.sh")
    assert cmd == [*_ns_prefix(state), *(["/x/mptcpize", "run"] if mptcp else []),
                   "/x/mpiexec.hydra", "-n", "3", "-launcher", "rsh", "-launcher-exec",
                   str(agent), "-iface", f"r{r}", "-hosts", hosts, "-ppn", "1",
                   "-genv", "UCX_TLS", "tcp,self", "-genv", "UCX_NET_DEVICES", f"r{r}",
                   "-genv", "LD_PRELOAD",
                   "/l/wrap.so:/l/keep.so" if mptcp else "/l/keep.so"]
    off = tb.job_prefix(job, 3, None, mptcp=mptcp, mpi="mpich", ucx_keeper=False)
    assert off == cmd[:-3]
    # --mpich-yield: the yield library first in the ranks' preload, keeper or not
    y = tb.job_prefix(job, 3, None, mptcp=mptcp, mpi="mpich", mpich_yield=True)
    assert y[:-1] == cmd[:-1]
    assert y[-1] == ("/l/wrap.so:/l/yield.so:/l/keep.so" if mptcp else "/l/yield.so:/l/keep.so")
    y_only = tb.job_prefix(job, 3, None, mptcp=mptcp, mpi="mpich", ucx_keeper=False,
                           mpich_yield=True)
    assert y_only == [*off, "-genv", "LD_PRELOAD",
                      "/l/wrap.so:/l/yield.so" if mptcp else "/l/yield.so"]


def test_mpich_yield_is_refused_for_an_open_mpi_job(job: specmod.Spec) -> None:
    with pytest.raises(MpilabError, match="--mpich-yield: only for an MPICH job"):
        tb.job_prefix(job, 2, None, mpi="openmpi", mpich_yield=True)


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_a_like_mptcp_tcp_job_gets_an_mptcp_jobs_socket_settings_over_plain_tcp(
        job: specmod.Spec, monkeypatch: pytest.MonkeyPatch, mpi: str) -> None:
    """`testbed run --like-mptcp`: the baseline of an MPTCP job has its congestion control,
    quickack metric and send buffer, and is still plain TCP (no mptcpize, no endpoints)."""
    seen: list[tuple[str, object, object]] = []
    monkeypatch.setattr(congestion, "apply",
                        lambda spec, hosts, algo, quickack=False: seen.append(
                            ("apply", algo, quickack)))
    monkeypatch.setattr(congestion, "send_buffers",
                        lambda spec, hosts, mptcp: seen.append(("buffers", mptcp, None)))
    monkeypatch.setattr(tb, "setup_mptcp", lambda *a, **k: seen.append(("endpoints", 0, 0)))
    for like in (False, True):
        seen.clear()
        cmd = tb.job_prefix(job, 2, "s0n0,s1n0", mpi=mpi, like_mptcp=like)
        assert "/x/mptcpize" not in cmd
        assert ("endpoints", 0, 0) not in seen
        assert seen == ([("apply", congestion.MPTCP_DEFAULT, True), ("buffers", True, None)]
                        if like else [("apply", None, False), ("buffers", False, None)])
    # what an MPTCP job gets, compared with the same recorder
    seen.clear()
    tb.job_prefix(job, 2, "s0n0,s1n0", mptcp=True, mpi=mpi)
    assert seen[:2] == [("apply", congestion.MPTCP_DEFAULT, True), ("buffers", True, None)]
