"""Simulated runs: mpilab's MPI tools started by SimGrid's smpirun on a platform file.

`job(program, args, np, platform)` checks everything before anything starts (smpirun and
the SMPI build of the program exist, the platform is a readable SimGrid platform with
enough hosts) and returns the command line, the hostfile it needs and what provenance
records: `provenance.simulated` = engine and version, platform path and sha256, hosts,
the SMPI configuration passed. `annotate(results_file, info)` adds that object to a results
file the simulated runner wrote (atomically).

The SMPI build is build-smpi/ (scripts/build --smpi), or $MPILAB_SMPI_BIN.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text, read_regular
from mpilab.sim import platform as plat
from mpilab.tools import REPO

# deterministic simulated time: only communication advances the clock; SimGrid's own
# notices only when they matter (not the per-rank "SMPI process did not return 0" when a
# tool refuses its input: the tool's own line says why)
# Messages up to 64 KiB are delivered eagerly (smpi/async-small-thresh, as SMPI's sends are
# detached up to smpi/send-is-detached-thresh, 64 KiB): with SimGrid's default 0 a message
# starts moving only once its receive is posted, so a receive posted late waits a whole
# latency, the LogGP receive overhead came out as the link latency (10.02 us on a 10 us
# route) and L as 0. Real MPIs' eager protocols deliver small messages ahead of the receive.
# MPI_Allgather is Bruck's algorithm (smpi/allgather:bruck): SimGrid 3.32's default posts
# every send and receive at once and completes them through MPI_Waitany, whose cost in the
# simulator grows with the requests outstanding: one 64-byte allgather of 256 ranks took
# 48 s of CPU to simulate; a 1024-rank run with Bruck's (start-up and a check included)
# took 1.3 s. The runner's start-up (placement) calls one.
SMPI_CONFIG = ["--cfg=smpi/simulate-computation:no", "--cfg=smpi/async-small-thresh:65536",
               "--cfg=smpi/allgather:bruck",
               "--log=root.thres:warning", "--log=smpi_kernel.thres:error"]
MAX_PLATFORM = 1 << 30

# What decides a simulated message's time besides the platform's links, with SimGrid 3.32's
# values when neither the platform's <config> nor a --cfg option sets them: smpirun sets the
# SMPI network model, whose piecewise factors (by message size, "size:factor;...") were
# calibrated on a real TCP cluster (a 0-byte latency x2.01, a 64 KiB+ rate x0.94), and
# flows in the other direction share a link (cross traffic) unless it is turned off.
SIMGRID_NETWORK_DEFAULTS = {
    "network/model": "SMPI",
    "smpi/bw-factor": "65472:0.940694;15424:0.697866;9376:0.58729;5776:1.08739;3484:0.77493;"
                      "1426:0.608902;732:0.341987;257:0.338112;0:0.812084",
    "smpi/lat-factor": "65472:11.6436;15424:3.48845;9376:2.59299;5776:2.18796;3484:1.88101;"
                       "1426:1.61075;732:1.9503;257:1.95341;0:2.01467",
    "network/crosstraffic": "1",
}
FACTOR_KEYS = ("smpi/bw-factor", "smpi/lat-factor")
FLAG_CALIBRATED = "calibrated_factors"  # the SMPI model ran with factors other than 1
FLAG_CROSSTRAFFIC = "crosstraffic"      # reverse flows share links: fits are not exact


def _factor_identity(value: str) -> bool:
    """A piecewise factor "size:factor;..." that is 1 at every size."""
    try:
        return all(float(part.split(":", 1)[1]) == 1.0 for part in value.split(";") if part)
    except (IndexError, ValueError):
        return False


def network_in_effect(platform_cfg: dict[str, str], options: list[str]) -> dict[str, Any]:
    """The network model and factors a simulated run has: SimGrid's defaults, then the
    platform's <config> (not for network/model, which smpirun sets), then the --cfg options
    (which SimGrid lets override the platform), each with where its value came from, and
    the flags: FLAG_CALIBRATED when the SMPI model runs with correction factors other than 1
    (fits then describe SimGrid's calibration, not the platform's links), FLAG_CROSSTRAFFIC
    when cross traffic is on."""
    cmdline: dict[str, str] = {}
    for o in options:
        if o.startswith("--cfg=") and ":" in o[6:]:
            key, value = o[6:].split(":", 1)
            cmdline[key] = value
    values: dict[str, str] = {}
    source: dict[str, str] = {}
    for key, default in SIMGRID_NETWORK_DEFAULTS.items():
        values[key], source[key] = default, ("smpirun" if key == "network/model"
                                             else "SimGrid default")
        # smpirun sets network/model on its own command line, and SimGrid keeps a command
        # line's value over the platform's <config>: a platform cannot choose the model
        if key in platform_cfg and key != "network/model":
            values[key], source[key] = platform_cfg[key], "platform <config>"
        if key in cmdline:
            values[key], source[key] = cmdline[key], "--cfg"
    flags = []
    if values["network/model"] == "SMPI" and not all(_factor_identity(values[k])
                                                      for k in FACTOR_KEYS):
        flags.append(FLAG_CALIBRATED)
    if values["network/crosstraffic"].lower() not in ("0", "no", "false", "off"):
        flags.append(FLAG_CROSSTRAFFIC)
    return {"model": values["network/model"],
            "factors": {k: values[k] for k in (*FACTOR_KEYS, "network/crosstraffic")},
            "source": source, "flags": flags}


def calibrated_warning(info: dict[str, Any]) -> str | None:
    """One line for stderr when a simulated run fitted its models on SimGrid's calibrated
    factors (provenance.simulated.network.flags), else None."""
    net = info.get("network") if isinstance(info.get("network"), dict) else {}
    if FLAG_CALIBRATED not in (net.get("flags") or []):
        return None
    return (f"mpilab: warning: --sim {info.get('platform')}: the fit ran on SimGrid's "
            "calibrated SMPI factors (smpi/bw-factor, smpi/lat-factor not 1: a 0-byte latency "
            "about x2, a large message's rate x0.94), so its parameters are SimGrid's TCP "
            "calibration, not the platform's links; write the platform with `mpilab sim "
            "platform ... --factors exact` or add its <config> (docs/sim.md, \"Your own "
            "platform\") [calibrated_factors]")
# what smpirun -quiet still prints on standard output when the program fails
_SMPIRUN_FAILED = re.compile(r"^Execution failed with code \d+\.\n?$")


class SimTimeout(MpilabError):
    """The simulation did not finish within its time limit and was stopped."""


@dataclass
class SimJob:
    """A simulated launch: the command, the hostfile it names (to remove afterwards), and
    the provenance object."""

    cmd: list[str]
    hostfile: str
    np: int
    info: dict[str, Any] = field(default_factory=dict)

    def annotate(self, results_file: str) -> None:
        """Record this simulation in the results file the run wrote (module annotate)."""
        annotate(results_file, self.info)

    def cleanup(self) -> None:
        try:
            os.unlink(self.hostfile)
        except OSError:
            pass


def smpi_tool(name: str) -> str:
    """Path of the SMPI build of a C tool: $MPILAB_SMPI_BIN, then build-smpi/bin."""
    d = os.environ.get("MPILAB_SMPI_BIN")
    c = (Path(d) if d else REPO / "build-smpi" / "bin") / name
    if c.is_file():
        return str(c)
    raise MpilabError(f"--sim: {name} has no SMPI build (run 'scripts/build --smpi', or set "
                      "MPILAB_SMPI_BIN)")


def cfg_options(items: list[str]) -> list[str]:
    """NAME:VALUE items (a command's --sim-cfg) as smpirun's --cfg=NAME:VALUE options; one
    line naming a malformed item."""
    for c in items:
        if not re.fullmatch(r"[A-Za-z0-9_/.-]+:\S+", c):
            raise MpilabError(f"--sim-cfg {c!r}: expected NAME:VALUE, e.g. "
                              "smpi/send-is-detached-thresh:1048576")
    return [f"--cfg={c}" for c in items]


def check_options(launches: int | None, testbed: str | None, launcher: str | None) -> None:
    """What a simulated run refuses, before anything starts: more than one launch (simulated
    time is deterministic) and a testbed or launcher (smpirun starts the ranks)."""
    if launches is not None and launches > 1:
        raise MpilabError("--sim: simulated runs are deterministic, --launches must be 1")
    for flag, v in (("--testbed", testbed), ("--launcher", launcher)):
        if v is not None:
            raise MpilabError(f"--sim: {flag} does not apply (smpirun starts the ranks)")


def smpirun() -> str:
    found = shutil.which("smpirun")
    if not found:
        raise MpilabError("--sim: smpirun not found (SimGrid's SMPI: apt install "
                          "libsimgrid-dev, or scripts/install-deps)")
    return found


def simgrid_version(runner: str) -> str:
    try:
        p = subprocess.run([runner, "-version"], capture_output=True, text=True, timeout=30,
                           check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = (p.stdout + p.stderr).strip().splitlines()
    return text[0] if text else "unknown"


def job(program: str, args: list[str], np: int | None, platform_path: str,
        ppn: int = 1, config: list[str] | None = None) -> SimJob:
    """The simulated launch of the SMPI build of `program` with `args` on np ranks (default:
    ppn per host of the platform), ppn consecutive ranks per host (block placement: ranks
    0..ppn-1 on the first host). Bad input (a platform that is not one, more ranks than
    hosts x ppn; then no smpirun, no SMPI build) raises MpilabError with one line, before
    anything is started or written. `config`: more --cfg=... options for smpirun (after
    SMPI_CONFIG, so they override it), recorded in provenance."""
    extra = list(config or [])
    for c in extra:
        if not c.startswith("--cfg="):
            raise MpilabError(f"SMPI option {c!r}: expected --cfg=NAME:VALUE")
    if ppn < 1:
        raise MpilabError(f"ranks per host {ppn}: need at least 1")
    # the input (the platform and the rank count) before the environment (smpirun, the
    # SMPI build): a wrong platform is named even where SMPI is not installed
    data = read_regular(platform_path, "--sim platform", MAX_PLATFORM)
    hosts = plat.hosts_of(data, platform_path)
    if not hosts:
        raise MpilabError(f"--sim {platform_path}: the platform has no hosts")
    n = len(hosts) * ppn if np is None else np
    if n < 1:
        raise MpilabError(f"--np {n}: need at least 1 rank")
    if n > len(hosts) * ppn:
        raise MpilabError(f"--np {n}: the platform {platform_path} has {len(hosts)} hosts "
                          f"({'one simulated rank' if ppn == 1 else f'{ppn} ranks'} per host)")
    runner = smpirun()
    exe = smpi_tool(program)
    fd, hostfile = tempfile.mkstemp(prefix="mpilab-sim-", suffix=".hosts")
    with os.fdopen(fd, "w") as f:
        f.write("".join(h + "\n" for h in hosts[:(n + ppn - 1) // ppn] for _ in range(ppn))
                if ppn > 1 else "".join(h + "\n" for h in hosts[:n]))
    cmd = [runner, "-quiet", "-np", str(n), "-platform", platform_path, "-hostfile", hostfile,
           *SMPI_CONFIG, *extra, exe, *args]
    info = {"engine": "SimGrid SMPI", "version": simgrid_version(runner),
            "platform": os.path.abspath(platform_path),
            "platform_sha256": hashlib.sha256(data).hexdigest(),
            "hosts": len(hosts), "ranks": n, "ranks_per_host": ppn,
            "smpi_config": [*SMPI_CONFIG, *extra],
            "network": network_in_effect(plat.configs_of(data, platform_path),
                                         [*SMPI_CONFIG, *extra]),
            "program": exe}
    return SimJob(cmd, hostfile, n, info)


def annotate(results_file: str, info: dict[str, Any]) -> None:
    """Record the simulation in a results file's provenance (rewritten atomically)."""
    p = Path(results_file)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise MpilabError(f"{results_file}: the simulated run left no readable results "
                          f"({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("provenance"), dict):
        raise MpilabError(f"{results_file}: not a results document")
    doc["provenance"]["simulated"] = info
    atomic_write_text(results_file, json.dumps(doc, indent=1) + "\n")
    # a fit on calibrated factors: the file says so (network.flags) and so does stderr
    if doc.get("models"):
        line = calibrated_warning(info)
        if line:
            sys.stderr.write(line + "\n")


def describe(info: dict[str, Any]) -> str:
    """One sentence for the top of a report: what simulated the times, on which platform."""
    sha = str(info.get("platform_sha256") or "")[:12]
    net = info.get("network") if isinstance(info.get("network"), dict) else {}
    flags = [f for f in net.get("flags") or [] if isinstance(f, str)]
    says = {FLAG_CALIBRATED: "SimGrid's calibrated SMPI correction factors in effect (times "
                             "are not the platform's links' own)",
            FLAG_CROSSTRAFFIC: "cross traffic on (flows in the other direction share a link)"}
    extra = "".join(f" {says.get(f, f)} [{f}]." for f in flags)
    model = f" Network model {net.get('model')}." if net.get("model") else ""
    return (f"SIMULATED: every time here is {info.get('engine', 'SimGrid SMPI')}'s "
            f"({info.get('version', '')}), {info.get('ranks')} ranks on the platform "
            f"{info.get('platform')} (sha256 {sha}..., {info.get('hosts')} hosts), not a "
            f"measurement on hardware.{model}{extra}")


def check_sim(sim: str | None, **refused: Any) -> None:
    """With --sim, the options that do not apply (given as flag=value; a value that is not
    None or False is refused), one line before anything starts."""
    if sim is None:
        return
    for flag, v in refused.items():
        if v is not None and v is not False and v != []:
            raise MpilabError(f"--sim: --{flag.replace('_', '-')} does not apply to a "
                              "simulated run (smpirun starts the ranks on the platform)")


# SimGrid's refusal of a platform file: "[0.000000] ./src/xbt/exception.cpp:95:
# [xbt_exception/ERROR] Parse error at FILE:LINE: ...", then "Exiting now." and the shell's
# "Aborted"
_SG_PARSE = re.compile(r"\[xbt_exception/ERROR\] (Parse error at .*?)\s*$")
_SG_EXITING = re.compile(r"\[xbt_exception/ERROR\] Exiting now\.\s*$")
# "[0.000000] FILE:LINE: [CATEGORY/CRITICAL] Uncaught exception TYPE by ACTOR: MESSAGE" or
# "... [root/CRITICAL] MESSAGE": SimGrid aborts (exit 134) after its backtrace
_SG_CRITICAL = re.compile(r"\[[\w.]+/CRITICAL\] (?:Uncaught exception \S+(?: by \S+)?: )?(.*)$")


def _forward(src: Any) -> None:
    for line in src:
        if not _SMPIRUN_FAILED.match(line):
            sys.stdout.write(line)
            sys.stdout.flush()


def _forward_err(src: Any, rejected: list[str], stopped: list[str]) -> None:
    """The run's standard error, live, except SimGrid's lines refusing the platform (kept in
    `rejected`) and, from SimGrid's first critical error on (an undefined link, a duplicate
    host, no route between two hosts, an unknown --cfg key), everything it prints while it
    aborts: its option list and backtrace (the error kept in `stopped`); each for one line
    of our own."""
    for line in src:
        if stopped:
            continue
        m = _SG_PARSE.search(line)
        c = _SG_CRITICAL.search(line)
        if m:
            rejected.append(m.group(1))
        elif c and c.group(1).strip() not in ("Backtrace:", "Current backtrace:"):
            stopped.append(c.group(1).strip())
        elif not (rejected and (_SG_EXITING.search(line) or line.strip() == "Aborted")):
            sys.stderr.write(line)
            sys.stderr.flush()


def _stop(p: subprocess.Popen[str]) -> None:
    """End the simulation's process group: SIGTERM, then SIGKILL after 10 s."""
    os.killpg(p.pid, signal.SIGTERM)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def run(j: SimJob, timeout: float | None = None) -> int:
    """Run the simulated job in the foreground; its exit status (shell style). smpirun's own
    "Execution failed with code N." line is left out (the caller names a failure itself;
    a tool that refused its input has said why in one line). Past `timeout` seconds the
    simulation is stopped and a one-line error raised."""
    try:
        p = subprocess.Popen(j.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        assert p.stdout is not None and p.stderr is not None
        rejected: list[str] = []
        stopped: list[str] = []
        fwd = threading.Thread(target=_forward, args=(p.stdout,), daemon=True)
        fwe = threading.Thread(target=_forward_err, args=(p.stderr, rejected, stopped),
                               daemon=True)
        fwd.start()
        fwe.start()
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(p)
            raise SimTimeout(f"--sim: the simulation did not finish in {timeout:g} s "
                             "(stopped)") from None
        except KeyboardInterrupt:  # smpirun runs in a session of its own: end it too
            _stop(p)
            raise
        finally:
            fwd.join(timeout=10)
            fwe.join(timeout=10)
    finally:
        j.cleanup()
    if rc != 0 and rejected:
        raise MpilabError(f"--sim {j.info.get('platform')}: SimGrid rejects the platform: "
                          f"{rejected[0]}")
    if rc != 0 and stopped:
        raise MpilabError(f"--sim {j.info.get('platform')}: SimGrid stopped: {stopped[0]}")
    return 128 - rc if rc < 0 else rc
