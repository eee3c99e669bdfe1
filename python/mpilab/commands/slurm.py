"""`mpilab slurm up|down|status [--dir DIR]`: a single-node Slurm on this machine.

Slurm's daemons (munged, slurmctld, slurmd) run from one folder (default
$MPILAB_SLURM_DIR or /tmp/mpilab-slurm) with their own configuration, munge key, state,
logs and pid files, on a free port pair; nothing outside the folder is changed. `up` waits
until the node is idle and prints the one line that points Slurm's commands at it
(`export SLURM_CONF=DIR/slurm.conf`); `down` stops only the daemons `up` recorded in the
folder's pid files (PID, start time and program, checked against /proc before any signal;
a PID below 2 or a process that is not the one recorded is refused in one line) and removes
the folder. The tests' Slurm fixture uses the same functions. Needs root
(slurmd) and Debian's slurmctld, slurmd and munge (scripts/install-deps).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from mpilab import argtypes, pidfile
from mpilab.errors import MpilabError

TOOLS = ("munged", "slurmctld", "slurmd", "srun", "sinfo")
DAEMONS = ("slurmd", "slurmctld", "munged")  # stopped in this order
CLUSTER = "mpilabtest"

_CONF = """ClusterName={cluster}
SlurmctldHost={host}
SlurmctldPort={port}
SlurmdPort={port1}
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def default_dir() -> Path:
    return Path(os.environ.get("MPILAB_SLURM_DIR") or "/tmp/mpilab-slurm")


def conf_path(d: Path) -> Path:
    return d / "slurm.conf"


def env_for(d: Path) -> dict[str, str]:
    """The environment that points Slurm's commands at the Slurm in `d`."""
    return dict(os.environ, SLURM_CONF=str(conf_path(d)))


def pid_path(d: Path, daemon: str) -> Path:
    """mpilab's pid file of `daemon` (PID, start time, command: mpilab.pidfile); the
    daemon's own pid file (DAEMON.pid) is read once, when it has just been started."""
    return d / f"mpilab-{daemon}.pid"


def _pid(d: Path, daemon: str) -> int | None:
    return pidfile.verified(pid_path(d, daemon), daemon)


def _record(d: Path, daemon: str, wait_s: float = 60.0) -> None:
    """Record the daemon just started (its own pid file names it) in mpilab's pid file."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            first = (d / f"{daemon}.pid").read_text().split()
        except OSError:
            first = []
        if first and first[0].isdigit():
            pidfile.record(pid_path(d, daemon), int(first[0]), daemon)
            return
        if time.monotonic() > deadline:
            raise MpilabError(f"slurm: {daemon} wrote no pid file within {wait_s:g} s "
                              f"(logs in {d})")
        time.sleep(0.05)


def running(d: Path) -> list[str]:
    """The daemons of the Slurm in `d` that are alive."""
    return [n for n in DAEMONS if _pid(d, n) is not None]


def _free_port_pair() -> int:
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("", 0))
            port: int = s.getsockname()[1]
        if port < 65000:
            with socket.socket() as s2:
                try:
                    s2.bind(("", port + 1))
                    return port
                except OSError:
                    continue
    raise MpilabError("slurm: no free pair of TCP ports for slurmctld and slurmd")


def check_can_run() -> None:
    """One line when this machine cannot run the single-node Slurm."""
    if os.geteuid() != 0:
        raise MpilabError("slurm: needs root (slurmd runs jobs as their users)")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise MpilabError(f"slurm: {', '.join(missing)} not installed (scripts/install-deps "
                          "installs Debian's slurmctld, slurmd and munge)")


def _run(cmd: list[str], env: dict[str, str], d: Path, log: str) -> None:
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    if p.returncode != 0:
        tail = ""
        try:
            tail = (d / log).read_text().strip().splitlines()[-1]
        except (OSError, IndexError):
            tail = (p.stderr.strip().splitlines() or ["no message"])[-1]
        raise MpilabError(f"slurm: {cmd[0]} failed to start: {tail}")


def up(d: Path, wait_s: float = 300.0) -> dict[str, str]:
    """Start the single-node Slurm in `d` (or find it running) and wait until its node is
    idle; returns env_for(d). On failure, what was started is stopped again."""
    check_can_run()
    alive = running(d)
    if alive == list(DAEMONS):
        return env_for(d)
    if alive:
        down(d)
    try:
        d.mkdir(parents=True, exist_ok=True)
        for sub in ("state", "spool"):
            (d / sub).mkdir(exist_ok=True)
    except OSError as e:
        raise MpilabError(f"{d}: cannot make Slurm's folder: {e.strerror}") from None
    key = d / "munge.key"
    if not key.exists():
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        try:
            os.write(fd, os.urandom(1024))
        finally:
            os.close(fd)
    port = _free_port_pair()
    tmp = conf_path(d).with_suffix(".conf.tmp")
    tmp.write_text(_CONF.format(cluster=CLUSTER, host=socket.gethostname().split(".")[0],
                                port=port, port1=port + 1, d=d, cpus=os.cpu_count()))
    tmp.replace(conf_path(d))
    env = env_for(d)
    for name in DAEMONS:  # a stale pid of an earlier run is not taken for the new daemon
        (d / f"{name}.pid").unlink(missing_ok=True)
    try:
        _run(["munged", "-f", f"--socket={d}/munge.sock", f"--key-file={key}",
              f"--log-file={d}/munged.log", f"--pid-file={d}/munged.pid",
              f"--seed-file={d}/munged.seed"], env, d, "munged.log")
        _record(d, "munged")
        _run(["slurmctld", "-i"], env, d, "slurmctld.log")
        _record(d, "slurmctld")
        _run(["slurmd"], env, d, "slurmd.log")
        _record(d, "slurmd")
        deadline = time.monotonic() + wait_s  # against a hang only: waits on progress
        while True:
            p = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=env, capture_output=True,
                               text=True, check=False, timeout=60)
            if p.stdout.strip() == "idle":
                return env
            if time.monotonic() > deadline:
                raise MpilabError(f"slurm: the node never became idle (state "
                                  f"'{p.stdout.strip() or p.stderr.strip()}'; logs in {d})")
            time.sleep(0.5)
    except BaseException:
        down(d, remove=False)
        raise


def down(d: Path, remove: bool = True) -> list[str]:
    """Stop the daemons mpilab started in `d` (and only those: each pid file's process is
    checked against /proc, start time and program, before any signal; mpilab.pidfile),
    waiting until each has exited; then remove `d` if it holds the single-node Slurm's
    configuration. Returns the daemons stopped."""
    stopped = []
    for name in DAEMONS:
        if pidfile.stop([(pid_path(d, name), name)], grace=60.0):
            stopped.append(name)
    if remove and conf_path(d).exists() and (d / "munge.key").exists():
        shutil.rmtree(d, ignore_errors=True)
    return stopped


def _cmd(args: argparse.Namespace) -> int:
    d = Path(args.dir) if args.dir else default_dir()
    if d.exists() and not d.is_dir():  # the argument before anything is started or stopped
        raise MpilabError(f"--dir {d}: not a directory")
    if args.action == "up":
        up(d)
        print(f"export SLURM_CONF={conf_path(d)}")
        print(f"# single-node Slurm up in {d} (cluster {CLUSTER}); `mpilab slurm down` stops "
              "it", flush=True)
    elif args.action == "down":
        stopped = down(d)
        print(f"stopped {', '.join(stopped)}" if stopped else f"no Slurm of ours running in {d}")
    else:
        alive = running(d)
        print(f"{d}: " + (", ".join(alive) + " running" if alive else "not running"))
        return 0 if alive == list(DAEMONS) else 1
    return 0


def _slurm_dir(t: str) -> str:
    """out_dir, and a path Slurm's configuration lines can hold: no blank or control
    character (slurm.conf names files in the folder; slurmctld refuses such lines only once
    started)."""
    t = argtypes.out_dir(t)
    bad = next((c for c in os.path.abspath(t) if c.isspace() or not c.isprintable()), None)
    if bad is not None:
        raise argparse.ArgumentTypeError(f"{t!r}: {bad!r} in the path (Slurm's configuration "
                                         "cannot name files there)")
    return t


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("slurm", help="start/stop a single-node Slurm on this machine",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("up", "down", "status"))
    p.add_argument("--dir", type=_slurm_dir,
                   help="its folder (default $MPILAB_SLURM_DIR or /tmp/mpilab-slurm)")
    p.set_defaults(func=_cmd)
