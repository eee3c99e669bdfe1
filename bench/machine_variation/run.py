#!/usr/bin/env python3
"""How much this machine itself varies from launch to launch, without mpilab's code.

Builds two tiny independent programs (corelat.c: two pinned threads handing a cache line
back and forth; minpp.c: the plainest MPI_Send/MPI_Recv ping-pong) and runs each N times
as separate processes / mpirun launches: shared memory and TCP loopback at 1 KiB and 1 MiB,
and with --testbed (root) across a 2-site testbed's WAN (--delay, --rate) at 0 bytes.
Prints, per case, the launch medians' range and spread ((max - min) / median), the same
statistic as issue 9's reproducibility target, and the spread of the launch minimums.

Example, in an exclusive slot:
  MPILAB_BIN=build/bin python3 bench/machine_variation/run.py --launches 10 --testbed
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the harness
import harness  # noqa: E402
from harness import mpi_env, mpilab_cmd, mpirun  # noqa: E402

HERE = Path(__file__).resolve().parent


def build(tmp: Path) -> tuple[Path, Path]:
    cl, pp = tmp / "corelat", tmp / "minpp"
    flags = ["-O2", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror"]
    for cmd in (["cc", *flags, "-pthread", "-o", str(cl), str(HERE / "corelat.c")],
                ["mpicc", *flags, "-o", str(pp), str(HERE / "minpp.c")]):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise SystemExit(f"{cmd[0]}: {e.strerror}") from None
        if p.returncode != 0:
            raise SystemExit(f"{cmd[0]} failed: {p.stderr.strip()[-300:]}")
    return cl, pp


def two_numbers(out: str, what: str) -> tuple[float, float]:
    """The first two numbers of the program's last line: median, minimum (both programs)."""
    lines = [ln for ln in out.splitlines() if ln.strip()]
    try:
        f = lines[-1].split()
        return float(f[0]), float(f[1])
    except (IndexError, ValueError):
        raise SystemExit(f"{what}: unexpected output {out!r}") from None


def run(cmd: list[str], what: str) -> tuple[float, float]:
    p = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{what} failed ({p.returncode}): {p.stderr.strip()[-300:]}")
    return two_numbers(p.stdout, what)


def spread(xs: list[float]) -> float:
    return (max(xs) - min(xs)) / statistics.median(xs) * 100.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--testbed", action="store_true", help="also across a testbed WAN (root)")
    ap.add_argument("--delay", default="2ms")
    ap.add_argument("--rate", default="100Mbit")
    ap.add_argument("--prefix", default="mv")
    ap.add_argument("--json", help="write every launch's numbers here")
    a = ap.parse_args()
    if a.launches < 2:
        raise SystemExit("--launches: at least 2")
    cases: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="machvar-") as t:
        tmp = Path(t)
        cl, pp = build(tmp)
        # pinned, no yielding: as this script measured before the launcher was shared
        launch = mpirun(2, ["--bind-to", "core", "--mca", "mpi_yield_when_idle", "0"])
        for _ in range(a.launches):  # interleaved, so a slow phase of the machine hits all
            cases.setdefault("core-to-core round trip (ns)", []).append(run([str(cl)], "corelat"))
            for size, label in ((1024, "1 KiB"), (1 << 20, "1 MiB")):
                cases.setdefault(f"shm {label} (us)", []).append(
                    run([*launch, str(pp), str(size)], "minpp"))
                cases.setdefault(f"TCP loopback {label} (us)", []).append(
                    run([*launch, "--mca", "btl", "tcp,self", str(pp), str(size)], "minpp"))
        if a.testbed:
            from mpilab.commands import selftest

            spec = tmp / "wan.toml"
            spec.write_text(selftest._spec(a.prefix, a.delay, a.rate))
            cli = mpilab_cmd()
            up = subprocess.run([*cli, "testbed", "up", str(spec)], capture_output=True,
                                text=True)
            if up.returncode != 0:
                last = (up.stderr.strip().splitlines() or ["exit status"])[-1]
                raise SystemExit(f"--testbed: mpilab testbed up failed: {last}")
            try:
                for _ in range(a.launches):
                    cases.setdefault(f"WAN {a.delay} 0 B (us)", []).append(run(
                        [*cli, "testbed", "run", "--prefix", a.prefix, "--np", "2", "--",
                         str(pp), "0", "300"], "minpp"))
            finally:
                subprocess.run([*cli, "testbed", "down", "--prefix", a.prefix],
                               stdout=subprocess.DEVNULL)
    print(f"{a.launches} launches each; spread = (max - min) / median of the launch values")
    print(f"{'case':34} {'launch medians':>22} {'spread':>8} {'launch minimums':>22} {'spread':>8}")
    for name, v in cases.items():
        med, mn = [x for x, _ in v], [y for _, y in v]
        print(f"{name:34} {min(med):10.3f}..{max(med):<10.3f} {spread(med):7.1f}% "
              f"{min(mn):10.3f}..{max(mn):<10.3f} {spread(mn):7.1f}%")
    if a.json:
        harness.write_json(a.json, cases, newline=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
