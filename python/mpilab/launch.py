"""Starting MPI jobs: Open MPI's mpirun, MPICH's mpiexec (Hydra) and Slurm's srun.

The launcher is chosen from the MPI the C tool is linked with (its ELF NEEDED entries), or
srun inside a Slurm allocation; `--launcher NAME` overrides the choice and
`--launcher-arg ARG` (repeatable) adds arguments. Each launcher gets its own flags:

- mpirun (Open MPI): -q -np N --oversubscribe --bind-to none --mca mpi_yield_when_idle 1
  (ranks may outnumber cores; idle ranks yield), root allowed;
- mpiexec.hydra (MPICH): -n N (MPICH busy-polls: more ranks than cores is slow,
  docs/mpi-stacks.md);
- srun: -n N --mpi=pmix (Open MPI) or --mpi=pmi2 (MPICH); N defaults to the allocation's
  task count, or the CPUs of the node outside an allocation, and is never more than the
  allocation or node offers (unless --launcher-arg=--overcommit).

A default flag is left out when --launcher-arg gives the same option (e.g.
--launcher-arg=--bind-to --launcher-arg=core replaces --bind-to none). The ranks learn
the launcher and its arguments from MPILAB_LAUNCHER / MPILAB_LAUNCHER_ARGS and record
them in their results' provenance.

A job placed on other hosts (the testbed's nodes) is described by a Placement: the hosts,
the rsh agent that reaches them, the hostfile, the interfaces and transport of the MPI
traffic, the variables every rank gets. Launcher.command(np, placement) writes it in the
launcher's own syntax; every mpirun / mpiexec / srun command line of mpilab is built here.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from mpilab import argtypes
from mpilab.errors import MpilabError

# canonical names and what users may call them
LAUNCHERS = ("mpirun", "mpiexec.hydra", "srun")
ALIASES = {"mpirun": "mpirun", "mpirun.openmpi": "mpirun", "mpiexec.openmpi": "mpirun",
           "openmpi": "mpirun",
           "mpiexec.hydra": "mpiexec.hydra", "hydra": "mpiexec.hydra",
           "mpiexec.mpich": "mpiexec.hydra", "mpich": "mpiexec.hydra",
           "srun": "srun", "slurm": "srun"}
MPI_NAMES = {"openmpi": "Open MPI", "mpich": "MPICH"}
# executables tried for each launcher, first found wins; checked with --version
_EXES = {"mpirun": ("mpirun.openmpi", "mpiexec.openmpi", "mpirun", "mpiexec"),
         "mpiexec.hydra": ("mpiexec.mpich", "mpiexec.hydra", "mpiexec", "mpirun"),
         "srun": ("srun",)}
_SRUN_MPI = {"openmpi": "pmix", "mpich": "pmi2"}
_NEEDED_RE = re.compile(r"\(NEEDED\).*\[(lib[^\]]+)\]")


@dataclass
class Launcher:
    name: str            # one of LAUNCHERS
    exe: str             # path of the launcher executable
    mpi: str             # "openmpi" or "mpich": the MPI of the program it starts
    extra: list[str] = field(default_factory=list)  # --launcher-arg values

    def command(self, np: int, placement: Placement | None = None) -> list[str]:
        """The command prefix that starts np ranks (the program and its arguments follow):
        on this node, or (`placement`) on the placement's hosts; the --launcher-arg values
        come last."""
        if np < 1:
            raise MpilabError(f"--np {np}: need at least 1 rank")
        if self.name == "mpirun":
            cmd = [self.exe, "-q", "-np", str(np)]
            for opt in (["--oversubscribe"], ["--bind-to", "none"],
                        ["--mca", "mpi_yield_when_idle", "1"]):
                if not _has_option(self.extra, opt):
                    cmd += opt
            placed = _openmpi_placement(placement) if placement else []
        elif self.name == "mpiexec.hydra":
            cmd = [self.exe, "-n", str(np)]
            placed = _mpich_placement(placement) if placement else []
        else:
            cmd = [self.exe, "-n", str(np)]
            if not any(a == "--mpi" or a.startswith("--mpi=") for a in self.extra):
                cmd.append(f"--mpi={_SRUN_MPI[self.mpi]}")
            if placement:
                raise MpilabError("--launcher srun: Slurm places the ranks itself; a job on "
                                  "a testbed's nodes needs mpirun or mpiexec")
            placed = []
        return cmd + placed + self.extra

    def env(self, np: int, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment for the job: root allowed for Open MPI, and the launcher's name and
        command line for the ranks' provenance."""
        env = dict(os.environ if base is None else base)
        if self.mpi == "openmpi":
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        env["MPILAB_LAUNCHER"] = self.name
        env["MPILAB_LAUNCHER_ARGS"] = json.dumps(self.command(np))
        return env

    def default_np(self, fallback: int) -> int:
        """Ranks when --np is not given: under srun the allocation's (or the node's)."""
        if self.name == "srun":
            return slurm_slots()
        return fallback

    def check_np(self, np: int) -> None:
        """Refuse a rank count that the launcher could never start: beyond srun's slots
        (it would wait forever), or, for mpirun/mpiexec on this node only (no host list
        in the launcher arguments), beyond what this machine can start (it would fork
        until memory or process ids run out)."""
        if np < 1:
            return
        if self.name != "srun":
            hosts = ("--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f",
                     "--host", "-host", "-H", "-hosts", "--hosts")
            if any(a.split("=", 1)[0] in hosts for a in self.extra):
                return
            from mpilab.hostlimits import max_ranks

            most, why = max_ranks(1)
            if np > most:
                raise MpilabError(f"--np {np}: this machine can start at most {most} ranks "
                                  f"({why})")
            return
        if any(a in ("--overcommit", "-O") for a in self.extra):
            return
        slots = slurm_slots()
        if np > slots:
            where = ("the allocation has" if os.environ.get("SLURM_JOB_ID")
                     else "the Slurm node(s) offer")
            raise MpilabError(f"--np {np}: {where} {slots} CPU(s); use --np {slots} or "
                              "--launcher-arg=--overcommit")


@dataclass(frozen=True)
class Placement:
    """Where a job's ranks start when the launcher itself places them on other hosts: round
    robin over `hosts` (one rank a host, then the next round), reached through the rsh
    agent. Launcher.command turns it into Open MPI's or MPICH's syntax."""
    hosts: tuple[str, ...]            # the addresses the launcher reaches the hosts by
    agent: str | None = None          # rsh agent, called as `AGENT HOST COMMAND...`
    hostfile: str | None = None       # Open MPI: the hosts' file (write_hostfile); else --host
    slots: int = 1                    # ranks a host may hold (Open MPI's slots)
    interfaces: tuple[str, ...] = ()  # MPI traffic's interfaces; the first carries the control
    tcp_only: bool = False            # MPI traffic over TCP only (and self): no shared memory
    env: tuple[tuple[str, str], ...] = ()  # variables every rank gets

    def __post_init__(self) -> None:
        if not self.hosts:
            raise MpilabError("placement: no hosts")
        if self.slots < 1:
            raise MpilabError(f"placement: {self.slots} slots a host: need at least 1")


def hostfile_text(hosts: list[str] | tuple[str, ...], slots: int) -> str:
    """Open MPI's hostfile: one `HOST slots=N` line a host."""
    return "".join(f"{h} slots={slots}\n" for h in hosts)


def rank_env_args(mpi: str, env: dict[str, str]) -> list[str]:
    """Launcher arguments that give every rank these variables: Open MPI's `-x NAME=VALUE`,
    MPICH's `-genv NAME VALUE`."""
    out: list[str] = []
    for k, v in env.items():
        if mpi == "openmpi":
            out += ["-x", f"{k}={v}"]
        elif mpi == "mpich":
            out += ["-genv", k, v]
        else:
            raise MpilabError(f"--mpi {mpi}: expected openmpi or mpich")
    return out


def _openmpi_placement(p: Placement) -> list[str]:
    """mpirun's options for a placement: the hosts, ranks by node, the rsh agent (called
    from the first host only: no tree spawn), the byte transfer layers and interfaces."""
    hosts = (["--hostfile", p.hostfile] if p.hostfile
             else ["--host", ",".join(f"{h}:{p.slots}" for h in p.hosts)])
    out = [*hosts, "--map-by", "node"]
    if p.agent:
        out += ["--mca", "plm_rsh_agent", p.agent, "--mca", "plm_rsh_no_tree_spawn", "1"]
    if p.tcp_only:
        out += ["--mca", "btl", "self,tcp"]
    if p.interfaces:
        out += ["--mca", "btl_tcp_if_include", ",".join(p.interfaces),
                "--mca", "oob_tcp_if_include", p.interfaces[0]]
    return out + rank_env_args("openmpi", dict(p.env))


def _mpich_placement(p: Placement) -> list[str]:
    """Hydra's options for a placement: the rsh agent, the control interface, the hosts
    one rank each round (as Open MPI's --map-by node), UCX's transports and devices
    (Debian's MPICH is ch4:ucx) and the ranks' variables."""
    out = ["-launcher", "rsh", "-launcher-exec", p.agent] if p.agent else []
    if p.interfaces:
        out += ["-iface", p.interfaces[0]]
    out += ["-hosts", ",".join(p.hosts), "-ppn", "1"]
    ucx = {"UCX_TLS": "tcp,self"} if p.tcp_only else {}
    if p.interfaces:
        ucx["UCX_NET_DEVICES"] = ",".join(p.interfaces)
    return out + rank_env_args("mpich", {**ucx, **dict(p.env)})


def _has_option(extra: list[str], opt: list[str]) -> bool:
    """Whether the user's launcher arguments already give this option (same flag, and for
    --mca the same parameter name)."""
    key = opt[0]
    for k, a in enumerate(extra):
        if a == key or a.startswith(key + "="):
            if key != "--mca":
                return True
            if k + 1 < len(extra) and extra[k + 1] == opt[1]:
                return True
    return False


def _identity(path: str) -> tuple[str, int, int, int]:
    """A file's identity for the caches below (a rebuilt or replaced file is another one)."""
    try:
        st = os.stat(path)
    except OSError:
        return (path, -1, -1, -1)
    return (path, st.st_ino, st.st_size, st.st_mtime_ns)


def program_mpi(path: str) -> str | None:
    """The MPI a program is linked with, from its ELF NEEDED entries: "openmpi" (libmpi.so.40
    and other Open MPI sonames) or "mpich" (libmpich.so, MPICH-ABI libmpi.so.12); None for
    a program that is not an ELF file (a script standing in for a tool). Read once per
    process and file."""
    return _program_mpi(_identity(path))


def program_mpi_of(program: list[str]) -> str:
    """The MPI a job's program is linked with ("openmpi" or "mpich"), from its ELF file
    (the command's first word, looked up on PATH); Open MPI for a program that is not
    linked with an MPI (a script, `hostname`)."""
    exe = shutil.which(program[0]) if program else None
    if not exe:
        return "openmpi"
    try:
        return program_mpi(exe) or "openmpi"
    except MpilabError:
        return "openmpi"


PROBES_FILE = "mpi-probes.json"  # in mpilab.tools.data_dir(): what readelf and --version said
_PROBES_MAX = 256                # entries kept (files rebuilt or replaced leave old ones)


def _probes_path() -> str:
    from mpilab.tools import data_dir

    return str(data_dir() / PROBES_FILE)


def _read_probes() -> dict[str, str]:
    """The remembered probes ({} when there are none or the file is not one)."""
    try:
        with open(_probes_path(), "rb") as f:
            doc = json.loads(f.read(1 << 20))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: v for k, v in doc.items() if v in ("openmpi", "mpich")}


def _probed(kind: str, ident: tuple[str, int, int, int],
            probe: functools.partial[str | None]) -> str | None:
    """What probe() says of the file with this identity, remembered across runs in the data
    folder (keyed by path, inode, size and modification time: a rebuilt or replaced file is
    probed again); the folder or file not writable: probed every run."""
    if ident[1] < 0:
        return probe()
    key = json.dumps([kind, *ident])
    known = _read_probes()
    if key in known:
        return known[key]
    got = probe()
    if got is None:  # not an MPI file, or the launcher did not answer: nothing to remember
        return got
    known[key] = got
    try:
        from mpilab.fsutil import atomic_write_text

        path = _probes_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write_text(path, json.dumps(dict(list(known.items())[-_PROBES_MAX:])) + "\n")
    except (OSError, MpilabError):
        pass
    return got


@functools.lru_cache(maxsize=64)
def _program_mpi(ident: tuple[str, int, int, int]) -> str | None:
    return _probed("program", ident, functools.partial(_program_mpi_read, ident[0]))


def _program_mpi_read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
    except OSError as e:
        raise MpilabError(f"{path}: cannot read: {e.strerror}") from None
    readelf = shutil.which("readelf")
    if not readelf:
        raise MpilabError("readelf not found (binutils): cannot tell which MPI "
                          f"{os.path.basename(path)} uses; give --launcher")
    p = subprocess.run([readelf, "-d", "--wide", path], capture_output=True, text=True,
                       check=False)
    if p.returncode != 0:
        raise MpilabError(f"{path}: not an ELF program ({p.stderr.strip() or 'readelf failed'})")
    needed = _NEEDED_RE.findall(p.stdout)
    for lib in needed:
        if lib.startswith("libmpich") or lib == "libmpi.so.12":
            return "mpich"
        if lib.startswith("libmpi.so") or lib.startswith("libopen-rte"):
            return "openmpi"
    raise MpilabError(f"{path}: linked with no known MPI library (NEEDED: "
                      f"{', '.join(needed) or 'none'})")


def _launcher_mpi(exe: str) -> str | None:
    """Which MPI a launcher executable belongs to, from its --version (asked once per
    process and file)."""
    return _launcher_mpi_of(_identity(exe))


@functools.lru_cache(maxsize=64)
def _launcher_mpi_of(ident: tuple[str, int, int, int]) -> str | None:
    return _probed("launcher", ident, functools.partial(_launcher_mpi_ask, ident[0]))


def _launcher_mpi_ask(exe: str) -> str | None:
    try:
        p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60,
                           check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = p.stdout + p.stderr
    if "Open MPI" in out or "OpenRTE" in out:
        return "openmpi"
    if "HYDRA" in out or "MPICH" in out:
        return "mpich"
    return None


def _found(name: str) -> bool:
    try:
        find_executable(name)
    except MpilabError:
        return False
    return True


def find_executable(name: str) -> str:
    for cand in _EXES[name]:
        exe = shutil.which(cand)
        if not exe:
            continue
        if name == "srun" or _launcher_mpi(exe) == ("openmpi" if name == "mpirun" else "mpich"):
            return exe
    hint = {"mpirun": "Open MPI's mpirun (apt install openmpi-bin)",
            "mpiexec.hydra": "MPICH's mpiexec (apt install mpich)",
            "srun": "srun (Slurm)"}[name]
    raise MpilabError(f"--launcher {name}: {hint} not found")


def for_mpi(mpi: str, extra: list[str] | tuple[str, ...] = ()) -> Launcher:
    """The launcher of an MPI ("openmpi": mpirun, "mpich": MPICH's mpiexec) with extra
    launcher arguments."""
    name = {"openmpi": "mpirun", "mpich": "mpiexec.hydra"}.get(mpi)
    if name is None:
        raise MpilabError(f"--mpi {mpi}: expected openmpi or mpich")
    return Launcher(name, find_executable(name), mpi, list(extra))


def mpirun_command(np: int, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The command prefix that starts np local ranks with Open MPI's mpirun, as every mpilab
    command starts them (Launcher.command), then extra: for tests and bench/ scripts that run
    a C program under mpirun directly."""
    return for_mpi("openmpi", extra).command(np)


def canonical(name: str) -> str:
    """Canonical launcher name; one-line error for an unknown one."""
    c = ALIASES.get(name)
    if c is None:
        raise MpilabError(f"--launcher {name}: unknown launcher (known: {', '.join(LAUNCHERS)})")
    return c


def choose(program: str, name: str | None = None, extra: list[str] | None = None) -> Launcher:
    """The launcher for `program`: `name` if given (checked against the program's MPI),
    else srun inside a Slurm allocation, else the launcher of the program's MPI."""
    c = canonical(name) if name is not None else None
    want = {"mpirun": "openmpi", "mpiexec.hydra": "mpich"}.get(c or "")
    mpi = program_mpi(program)
    if mpi is None:  # not a compiled MPI program: the named launcher's MPI, else Open MPI's
        mpi = want or ("openmpi" if _found("mpirun") else "mpich")
    if c is None:
        if os.environ.get("SLURM_JOB_ID") and shutil.which("srun"):
            c = "srun"
        else:
            c = "mpirun" if mpi == "openmpi" else "mpiexec.hydra"
    if want is not None and want != mpi:
        other = "mpirun" if mpi == "openmpi" else "mpiexec.hydra"
        raise MpilabError(f"--launcher {name or c}: starts {MPI_NAMES[want]} programs, but "
                          f"{os.path.basename(program)} is built with {MPI_NAMES[mpi]} "
                          f"(use --launcher {other})")
    return Launcher(c, find_executable(c), mpi, list(extra or []))


def slurm_slots() -> int:
    """Tasks Slurm can start here: the allocation's task count (or CPUs) inside one, else
    the CPUs of the largest node the default partition has."""
    for var in ("SLURM_NTASKS", "SLURM_NPROCS"):
        v = os.environ.get(var, "")
        if v.isdigit() and int(v) > 0:
            return int(v)
    if os.environ.get("SLURM_JOB_ID"):
        v = os.environ.get("SLURM_CPUS_ON_NODE", "")
        if v.isdigit() and int(v) > 0:
            return int(v)
    sinfo = shutil.which("sinfo")
    if not sinfo:
        raise MpilabError("srun: sinfo not found, cannot tell how many CPUs Slurm offers")
    try:
        p = subprocess.run([sinfo, "-h", "-N", "-o", "%c"], capture_output=True, text=True,
                           timeout=60, check=False)
    except subprocess.TimeoutExpired:
        raise MpilabError("srun: sinfo did not answer within 60 s") from None
    cpus = [int(x) for x in p.stdout.split() if x.isdigit()]
    if p.returncode != 0 or not cpus:
        last = (p.stderr.strip().splitlines() or ["no nodes listed"])[-1]
        raise MpilabError(f"srun: cannot tell how many CPUs Slurm offers: {last}")
    return max(cpus)


def add_options(p: argparse.ArgumentParser) -> None:
    """--launcher and --launcher-arg, the same for every command that starts MPI jobs."""
    p.add_argument("--launcher", metavar="NAME",
                   help=f"how to start the ranks: {', '.join(LAUNCHERS)} (default: srun inside "
                        "a Slurm allocation, else the launcher of the MPI the tool is built "
                        "with)")
    p.add_argument("--launcher-arg", action="append", default=[], metavar="ARG",
                   type=argtypes.nonempty,
                   help="extra argument for the launcher (repeatable), e.g. "
                        "--launcher-arg=--bind-to --launcher-arg=core")


def from_args(program: str, args: argparse.Namespace) -> Launcher:
    return choose(program, getattr(args, "launcher", None), getattr(args, "launcher_arg", None))


def resolve_np(launcher: Launcher, np: int | None, fallback: int) -> int:
    """The rank count: --np if given (checked), else the launcher's default."""
    n = launcher.default_np(fallback) if np is None else np
    launcher.check_np(n)
    return n
