"""Transports of `mpilab compare`: each is named by the MPI parameters it uses."""

from __future__ import annotations

from dataclasses import dataclass, field

from mpilab.errors import MpilabError

TESTBED_PREFIX = "mlcmp"
# rate of the shaped testbed links (the ground truth of the bandwidth validation)
SHAPED_RATE = "200Mbit"


@dataclass(frozen=True)
class Transport:
    name: str
    description: str
    mca: tuple[tuple[str, str], ...]
    testbed: str | None = None  # spec text of the emulated cluster, None = this host
    mptcp: bool = False
    rails: tuple[int, ...] = field(default=(0,))
    ucx: tuple[tuple[str, str], ...] = ()  # the same choice for MPICH (ch4:ucx): UCX_* env

    def env(self, mpi: str) -> dict[str, str]:
        """Environment that selects this transport for the ranks of an `mpi` job
        ("openmpi": OMPI_MCA_* for mpirun and srun alike; "mpich": UCX_*)."""
        if mpi == "openmpi":
            return {f"OMPI_MCA_{k}": v for k, v in self.mca}
        if not self.ucx:
            raise MpilabError(f"--transport {self.name}: defined for Open MPI only")
        return dict(self.ucx)

    @property
    def networked(self) -> bool:
        return self.testbed is not None

    def mca_args(self) -> list[str]:
        out: list[str] = []
        for k, v in self.mca:
            out += ["--mca", k, v]
        return out


def _spec(rate: str, rails: int) -> str:
    return (f'prefix = "{TESTBED_PREFIX}"\n[cluster]\nsites = 1\nnodes_per_site = 4\n'
            f'rails = {rails}\n[lan]\nrate = "{rate}"\n[wan]\ndelay = "0ms"\n')


TRANSPORTS: dict[str, Transport] = {t.name: t for t in [
    Transport("shm", "shared memory on one host (Open MPI vader, MPICH UCX sm)",
              (("btl", "self,vader"),), ucx=(("UCX_TLS", "self,sm"),)),
    Transport("tcp-loopback", "TCP over the loopback interface of one host",
              (("btl", "self,tcp"), ("btl_tcp_if_include", "lo")),
              ucx=(("UCX_TLS", "self,tcp"), ("UCX_NET_DEVICES", "lo"))),
    Transport("tcp-testbed", "TCP between emulated nodes (veth, 10 Gbit/s shaper)",
              (("btl", "self,tcp"), ("btl_tcp_if_include", "r0")), testbed=_spec("10Gbit", 1)),
    Transport("tcp-testbed-shaped", f"TCP between emulated nodes, links shaped to {SHAPED_RATE}",
              (("btl", "self,tcp"), ("btl_tcp_if_include", "r0")), testbed=_spec(SHAPED_RATE, 1)),
    Transport("mptcp-testbed", f"Multipath TCP over two rails of {SHAPED_RATE} each (mptcpize)",
              (("btl", "self,tcp"), ("btl_tcp_if_include", "r0")), testbed=_spec(SHAPED_RATE, 2),
              mptcp=True),
]}

DEFAULT = ["shm", "tcp-loopback"]


def parse(names: list[str] | None) -> list[Transport]:
    """Transports by name (default shm and tcp-loopback); one-line error on an unknown one."""
    out: list[Transport] = []
    for n in names or DEFAULT:
        if n not in TRANSPORTS:
            raise MpilabError(f"--transport: unknown transport '{n}' "
                              f"(known: {', '.join(TRANSPORTS)})")
        if TRANSPORTS[n] not in out:
            out.append(TRANSPORTS[n])
    return out
