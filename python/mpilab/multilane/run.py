"""`mpilab multilane run`: mpilab-multilane inside the testbed, optionally with the WAN
sampled on the router, merged into one mpilab.multilane/1 document."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import mpilab
from mpilab import procs
from mpilab.errors import AlreadyReported, MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.testbed import launch, net
from mpilab.tools import find_tool


def _start_sampler(prefix: str, ifaces: list[str], interval: float, out: Path
                   ) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    pkg_root = str(Path(mpilab.__file__).resolve().parents[1])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                    else "")
    # real-time priority 5 (below the delay line's 10): a loaded machine would otherwise
    # stretch the sampling interval
    rt = ["chrt", "-f", "5"] if shutil.which("chrt") and os.geteuid() == 0 else []
    cmd = ["ip", "netns", "exec", f"{prefix}-wan", *rt, sys.executable, "-m",
           "mpilab.multilane.sampler", "--interval", str(interval), "--out", str(out)]
    for i in ifaces:
        cmd += ["--iface", i]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    if proc.stdout.readline() != b"sampling\n":  # started (or died: empty line)
        proc.wait()
        raise MpilabError(f"WAN sampler did not start (status {proc.returncode})")
    return proc


def _stop_reason(status: int, timeout: float) -> str:
    """Why a testbed job ended, from launch.run's exit status."""
    if status == 124:
        return f"time limit of {timeout:g} s reached"
    if status == 125:
        return "a link the job used stayed failed"
    if status > 128:
        try:
            return f"{signal.Signals(status - 128).name} received"
        except ValueError:
            pass
    return f"mpilab-multilane failed (exit {status})"


def _keep_partial(partial: Path, target: Path, reason: str, status: int,
                  extra: dict[str, Any]) -> AlreadyReported:
    """The run stopped before its plan was complete: write the completed measurements that
    mpilab-multilane checkpointed (--partial) to target, marked partial with reason, and say
    so in one line. Returns the error to raise (exit status `status`, at least 1)."""
    try:
        data = json.loads(partial.read_text())
        runs = data["runs"]
        assert isinstance(runs, list)
    except (OSError, ValueError, KeyError, TypeError, AssertionError):
        sys.stderr.write(f"mpilab: multilane run stopped ({reason}) before any measurement "
                         f"completed: nothing written to {target}\n")
        return AlreadyReported(max(status, 1))
    for k, v in extra.items():  # objects merged (provenance), anything else set
        old = data.get(k)
        data[k] = {**old, **v} if isinstance(old, dict) and isinstance(v, dict) else v
    data["partial"] = True
    data["partial_reason"] = reason
    atomic_write_text(target, json.dumps(data, indent=1))
    sys.stderr.write(f"mpilab: multilane run stopped ({reason}): {len(runs)} completed "
                     f"measurements kept in {target} (marked partial)\n")
    return AlreadyReported(max(status, 1))


def check_job(spec: Any, np: int | None, root: int, lanes: str) -> None:
    """The root and a lane count checked against the testbed before the job starts: the
    root a rank of the job, P at most the nodes of a site (P_sup is at most that)."""
    ranks = len(spec.node_names()) if np is None else np
    if root >= ranks:
        raise MpilabError(f"--root {root}: not a rank of the job (0..{ranks - 1})")
    if lanes not in ("opt", "all") and int(lanes) > spec.nodes_per_site:
        raise MpilabError(f"--lanes {lanes}: more lanes than the {spec.nodes_per_site} nodes "
                          f"of a site of testbed '{spec.prefix}'")


def run(prefix: str, tool_args: list[str], out: str, np: int | None = None,
        sample: bool = False, interval: float = 0.005, timeout: float = 1800,
        root: int = 0, lanes: str = "opt") -> Path:
    """Run mpilab-multilane with tool_args on testbed `prefix`; write the document to out.
    A job stopped on time-out, signal or failure leaves, in out, every measurement it
    completed, marked "partial" with the reason."""
    spec = net.current_spec(prefix)
    check_job(spec, np, root, lanes)
    target = Path(out)
    if target.is_dir():
        raise MpilabError(f"{out}: is a directory, expected an output file name")
    tool = find_tool("mpilab-multilane")
    with tempfile.TemporaryDirectory(prefix="mpilab-multilane.") as tmp:
        doc_path = Path(tmp) / "doc.json"
        samples_path = Path(tmp) / "samples.json"
        partial = Path(tmp) / "partial.json"
        # every rank and the sampler can reach tmp (same filesystem, other namespaces)
        os.chmod(tmp, 0o755)
        ifaces = [f"s{s}r0" for s in range(spec.sites)]
        sampler = _start_sampler(prefix, ifaces, interval, samples_path) if sample else None
        try:
            status = launch.run(spec, [tool, *tool_args, "--json", str(doc_path),
                                       "--partial", str(partial)], np=np, timeout=timeout)
        finally:
            if sampler is not None:
                procs.end(sampler, signal.SIGTERM, grace=30)
        if status == 2:  # the tool refused its input, in its own one line
            raise AlreadyReported(2)
        if status != 0:
            raise _keep_partial(partial, target, _stop_reason(status, timeout), status,
                                {"testbed": spec.to_dict()})
        try:
            data = json.loads(doc_path.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise MpilabError(f"mpilab-multilane wrote no readable document: {e}") from None
        data["testbed"] = spec.to_dict()
        if sample:
            try:
                data["wan_samples"] = json.loads(samples_path.read_text())
                data["wan_samples"]["ifaces_into_site"] = {i: k for k, i in enumerate(ifaces)}
            except (OSError, json.JSONDecodeError) as e:
                raise MpilabError(f"the WAN sampler wrote nothing readable: {e}") from None
    atomic_write_text(target, json.dumps(data, indent=1))
    return target




def run_sim(platform: str, tool_args: list[str], out: str, np: int | None = None,
            timeout: float = 1800, config: list[str] | None = None
            ) -> tuple[Path, dict[str, Any]]:
    """Run the SMPI build of mpilab-multilane with tool_args on a SimGrid platform (one
    launch: simulated time is deterministic); write the document, with
    provenance.simulated, to out. Returns the path and the provenance object. A simulation
    stopped on time-out, interrupt or failure leaves, in out, every measurement it completed,
    marked "partial" with the reason. config: more --cfg=NAME:VALUE options for smpirun."""
    from mpilab.sim import run as simrun

    target = Path(out)
    if target.is_dir():
        raise MpilabError(f"{out}: is a directory, expected an output file name")
    with tempfile.TemporaryDirectory(prefix="mpilab-multilane.") as tmp:
        doc_path = Path(tmp) / "doc.json"
        partial = Path(tmp) / "partial.json"
        j = simrun.job("mpilab-multilane", [*tool_args, "--json", str(doc_path),
                                            "--partial", str(partial)], np, platform,
                           config=config)
        sim = {"simulated": j.info}
        try:
            status = simrun.run(j, timeout=timeout)
        except simrun.SimTimeout:
            raise _keep_partial(partial, target, f"time limit of {timeout:g} s reached", 124,
                                {"provenance": sim}) from None
        except KeyboardInterrupt:
            raise _keep_partial(partial, target, "interrupted", 130,
                                {"provenance": sim}) from None
        if status == 2:  # the tool refused its input, in its own one line
            raise AlreadyReported(2)
        if status != 0:
            raise _keep_partial(partial, target, f"simulated mpilab-multilane failed on "
                                f"{platform} (exit {status})", status, {"provenance": sim})
        try:
            data = json.loads(doc_path.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise MpilabError(f"mpilab-multilane wrote no readable document: {e}") from None
    prov = data.get("provenance")
    data["provenance"] = {**(prov if isinstance(prov, dict) else {}), "simulated": j.info}
    atomic_write_text(target, json.dumps(data, indent=1))
    return target, j.info
