"""`mpilab sim platform spec --wan-nic`: a node's WAN traffic over its LAN link (shared, the
testbed's network) or over a second NIC (separate, the multilane paper's nodes), and the
TCP window limit a lane gets from --tcp-gamma (docs/sim.md, docs/multilane.md "Where the
optimum comes from").

The routes are checked by the independent reader of test_sim_platform; SimGrid's smpirun
then runs a small program (compiled here by smpicc) in which node s0n0 sends to a node of
its own site and to a node of the other site at once: with a shared NIC the two flows
share the sender's LAN link, with a separate one the local flow has it alone.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mpilab.sim import platform as plat
from test_sim_platform import Reader

SPEC = """prefix = "wn"
[cluster]
sites = 2
nodes_per_site = 2
rails = 1
[lan]
rate = "1Gbit"
[wan]
node_rate = "{node_rate}"
total_rate = "1Gbit"
delay = "5ms"
"""

# rank 0 (s0n0) sends BYTES to rank 1 (s0n1, same site) and to rank 2 (s1n0, other site)
# at once; each receiver prints when its message was complete, from a common barrier
PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define BYTES 8000000
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char *buf = calloc(BYTES, 1);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (rank == 0) {
    MPI_Request r[2];
    MPI_Isend(buf, BYTES, MPI_CHAR, 1, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(buf, BYTES, MPI_CHAR, 2, 0, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  } else if (rank == 1 || rank == 2) {
    MPI_Recv(buf, BYTES, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("received %d %.9f\n", rank, MPI_Wtime() - t0);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
"""
BITS = 8 * 8e6
L = 5e-3


def _platform(tmp: Path, run_cli: Any, node_rate: str, *args: str) -> bytes:
    (tmp / "s.toml").write_text(SPEC.format(node_rate=node_rate))
    p = run_cli("sim", "platform", "spec", "s.toml", "-o", "p.xml", *args)
    assert p.returncode == 0, p.stderr
    return (tmp / "p.xml").read_bytes()


@pytest.mark.parametrize("nic", ["shared", "separate"])
def test_routes(tmp_path: Path, run_cli: Any, nic: str) -> None:
    r = Reader(_platform(tmp_path, run_cli, "250Mbit", "--wan-nic", nic))
    hosts = [f"wn-s{s}n{j}" for s in range(2) for j in range(2)]
    for a in hosts:
        for b in hosts:
            if a == b:
                continue
            path = r.path(a, b)  # asserts a unique shortest route
            lan = {x for x in path if x.endswith(("-lan_UP", "-lan_DOWN"))}
            if a[4] == b[4]:  # same site: the two LAN links, nothing else
                assert path == [f"{a}-lan_UP", f"{b}-lan_DOWN"]
            elif nic == "shared":
                assert lan == {f"{a}-lan_UP", f"{b}-lan_DOWN"}
                assert r.end_to_end(a, b) == (250e6, pytest.approx(L))
            else:  # the WAN NICs and uplinks only
                assert not lan, path
                assert f"{a}-wan_UP" in path and f"{b}-wan_DOWN" in path
                assert r.end_to_end(a, b) == (250e6, pytest.approx(L))


def test_bad_wan_nic_is_one_line(tmp_path: Path, run_cli: Any) -> None:
    (tmp_path / "s.toml").write_text(SPEC.format(node_rate="250Mbit"))
    for bad in ("both", "", "SEPARATE"):
        p = run_cli("sim", "platform", "spec", "s.toml", "-o", "p.xml", "--wan-nic", bad)
        assert p.returncode == 2
        assert len(p.stderr.strip().splitlines()) == 1 and "--wan-nic" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr
        assert not (tmp_path / "p.xml").exists()
    with pytest.raises(plat.MpilabError, match="wan-nic 'x'"):
        sp, keys = plat.load_spec(str(tmp_path / "s.toml"))
        plat.from_spec(sp, keys, plat.SpecOptions(wan_nic="x"))


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for tool in ("smpicc", "smpirun"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found (SimGrid SMPI not installed: apt libsimgrid-dev)")
    d = tmp_path_factory.mktemp("wan_nic")
    (d / "two.c").write_text(PROGRAM)
    p = subprocess.run(["smpicc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-o",
                        str(d / "two"), str(d / "two.c")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return d / "two"


def _received(exe: Path, data: bytes, tmp: Path) -> dict[int, float]:
    (tmp / "run.xml").write_bytes(data)
    (tmp / "hosts").write_text("wn-s0n0\nwn-s0n1\nwn-s1n0\nwn-s1n1\n")
    p = subprocess.run(["smpirun", "-np", "4", "-platform", str(tmp / "run.xml"),
                        "-hostfile", str(tmp / "hosts"), str(exe)], cwd=tmp,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    got = {int(r): float(t) for r, t in re.findall(r"received (\d) (\S+)", p.stdout)}
    assert sorted(got) == [1, 2], p.stdout
    return got


def test_smpirun_shared_and_separate_nic(program: Path, tmp_path: Path,
                                        run_cli: Any) -> None:
    # b_WAN 1 Gbit/s: nothing but the sender's own link can slow the local flow down
    shared = _received(program, _platform(tmp_path, run_cli, "1Gbit"), tmp_path)
    sep = _received(program, _platform(tmp_path, run_cli, "1Gbit", "--wan-nic", "separate"),
                    tmp_path)
    # shared: both messages cross s0n0's 1 Gbit/s LAN link, 2 x 64 Mbit; SimGrid serves the
    # remote flow first, so the local one completes after twice its time alone
    assert shared[1] == pytest.approx(2 * BITS / 1e9, rel=0.01)
    assert shared[2] == pytest.approx(L + BITS / 1e9, rel=0.01)
    # separate: each flow has its own NIC: the local message at the full LAN rate, the
    # remote one at b_WAN, at the same time
    assert sep[1] == pytest.approx(BITS / 1e9, rel=0.01)
    assert sep[2] == pytest.approx(L + BITS / 1e9, rel=0.01)
    assert sep[1] < 0.6 * shared[1]


def test_smpirun_window_limits_a_lane(program: Path, tmp_path: Path, run_cli: Any) -> None:
    # --tcp-gamma W: a flow gets at most W / (2 x its route's latency) = W / RTT; the local
    # flow (latency 0) is not limited
    data = _platform(tmp_path, run_cli, "1Gbit", "--wan-nic", "separate",
                     "--tcp-gamma", "64K")
    got = _received(program, data, tmp_path)
    lane = 65536 * 8 / (2 * L)  # 52.4 Mbit/s
    assert got[2] == pytest.approx(L + BITS / lane, rel=0.02)
    assert got[1] == pytest.approx(BITS / 1e9, rel=0.01)
