"""The launcher layer (mpilab.launch) and the provenance the ranks record: launcher choice
for each MPI stack, flags, rank counts under Slurm, one-line errors; real runs under Open
MPI's mpirun (unbound and --bind-to core), MPICH's mpiexec and a single-node Slurm that the
test starts itself (root, slurmctld/slurmd/munge installed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, cli_env
from mpilab import launch
from mpilab.commands import slurm as slurmlocal
from mpilab.errors import MpilabError

OMPI_BUILD = REPO / "build" / "bin"
MPICH_BUILD = REPO / "build-mpich" / "bin"


def _tool(d: Path, name: str = "mpilab-bench") -> str | None:
    p = d / name
    return str(p) if p.is_file() and os.access(p, os.X_OK) else None


needs_ompi = pytest.mark.skipif(_tool(OMPI_BUILD) is None or shutil.which("mpirun.openmpi")
                                is None, reason="no Open MPI build (build/bin/mpilab-bench)")
needs_mpich = pytest.mark.skipif(_tool(MPICH_BUILD) is None or shutil.which("mpiexec.mpich")
                                 is None, reason="no MPICH build (scripts/build --mpich)")


@pytest.fixture(autouse=True)
def _no_slurm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(os.environ):
        if k.startswith("SLURM_"):
            monkeypatch.delenv(k)


# ------------------------------------------------------------------------ selection

@needs_ompi
def test_open_mpi_program_gets_mpirun() -> None:
    prog = _tool(OMPI_BUILD)
    assert prog is not None
    assert launch.program_mpi(prog) == "openmpi"
    lr = launch.choose(prog)
    assert lr.name == "mpirun" and lr.mpi == "openmpi"
    assert launch._launcher_mpi(lr.exe) == "openmpi"
    cmd = lr.command(3)
    assert cmd[1:4] == ["-q", "-np", "3"]  # -q: no multi-line banners under one-line errors
    assert "--oversubscribe" in cmd and cmd[cmd.index("--bind-to") + 1] == "none"
    assert cmd[cmd.index("mpi_yield_when_idle") + 1] == "1"
    env = lr.env(3, {})
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert env["MPILAB_LAUNCHER"] == "mpirun" and json.loads(env["MPILAB_LAUNCHER_ARGS"]) == cmd
    # a user's --bind-to replaces the default one, other defaults stay
    lr = launch.choose(prog, "mpirun", ["--bind-to", "core"])
    cmd = lr.command(2)
    assert cmd.count("--bind-to") == 1 and cmd[-2:] == ["--bind-to", "core"]
    assert "--oversubscribe" in cmd
    # Hydra cannot start an Open MPI program (it would start singletons)
    with pytest.raises(MpilabError, match=r"--launcher mpiexec.mpich: starts MPICH programs, "
                       r"but mpilab-bench is built with Open MPI \(use --launcher mpirun\)"):
        launch.choose(prog, "mpiexec.mpich")


@needs_mpich
def test_mpich_program_gets_hydra() -> None:
    prog = _tool(MPICH_BUILD)
    assert prog is not None
    assert launch.program_mpi(prog) == "mpich"
    lr = launch.choose(prog)
    assert lr.name == "mpiexec.hydra" and lr.mpi == "mpich"
    assert launch._launcher_mpi(lr.exe) == "mpich"
    assert lr.command(3) == [lr.exe, "-n", "3"]  # none of Open MPI's flags
    assert lr.command(2) + ["-bind-to", "core"] == launch.choose(
        prog, "hydra", ["-bind-to", "core"]).command(2)
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in lr.env(2, {})
    with pytest.raises(MpilabError, match=r"built with MPICH \(use --launcher mpiexec.hydra\)"):
        launch.choose(prog, "mpirun")


@pytest.mark.parametrize("mpi, plugin", [("openmpi", "pmix"), ("mpich", "pmi2")])
def test_srun_flags_and_rank_count(monkeypatch: pytest.MonkeyPatch, mpi: str,
                                   plugin: str) -> None:
    lr = launch.Launcher("srun", "/opt/slurm/bin/srun", mpi)
    assert lr.command(2) == ["/opt/slurm/bin/srun", "-n", "2", f"--mpi={plugin}"]
    lr.extra = ["--mpi=none"]
    assert lr.command(2) == ["/opt/slurm/bin/srun", "-n", "2", "--mpi=none"]
    # inside an allocation: its task count is the default and the limit
    monkeypatch.setenv("SLURM_JOB_ID", "17")
    monkeypatch.setenv("SLURM_NTASKS", "3")
    lr.extra = []
    assert launch.resolve_np(lr, None, 4) == 3
    assert launch.resolve_np(lr, 2, 4) == 2
    with pytest.raises(MpilabError, match=r"^--np 5: the allocation has 3 CPU\(s\); use --np 3 "
                                          r"or --launcher-arg=--overcommit$"):
        launch.resolve_np(lr, 5, 4)
    lr.extra = ["--overcommit"]
    assert launch.resolve_np(lr, 5, 4) == 5
    # mpirun and Hydra keep the command's default and any count
    assert launch.resolve_np(launch.Launcher("mpirun", "mpirun", "openmpi"), None, 4) == 4


def test_srun_chosen_inside_an_allocation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    prog = _tool(OMPI_BUILD) or _tool(MPICH_BUILD)
    if prog is None:
        pytest.skip("no build of mpilab-bench")
    fake = tmp_path / "srun"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "5")
    lr = launch.choose(prog)
    assert lr.name == "srun" and lr.exe == str(fake)
    monkeypatch.delenv("SLURM_JOB_ID")
    assert launch.choose(prog).name != "srun"


def test_unknown_launcher_one_line(run_cli: Callable[..., Any]) -> None:
    for args in (["bench", "--launcher", "mpirun2", "--", "--ops", "p2p"],
                 ["survey", "--launcher", "mpirun2", "--quick"],
                 ["compare", "--launcher", "mpirun2", "--quick"],
                 ["wavefront", "run", "--data", "d", "--coef", "c", "-k", "1", "--np", "2",
                  "--launcher", "mpirun2"]):
        p = run_cli(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stderr.splitlines() == [
            "mpilab: --launcher mpirun2: unknown launcher (known: mpirun, mpiexec.hydra, srun)"
        ], args


# ---------------------------------------------------------------- real runs, provenance

def _bench(run_cli: Callable[..., Any], tmp_path: Path, name: str, *launch_args: str,
           env: dict[str, str] | None = None, np: str = "2",
           bench_args: tuple[str, ...] = ()) -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    p = run_cli("bench", "--np", np, *launch_args, "--", "--ops", "bcast", "--sizes", "8",
                "--min-reps", "2", "--max-reps", "3", "--quiet", "--out", str(out),
                *bench_args, env=env or cli_env(), timeout=600)
    assert p.returncode == 0, p.stderr
    prov: dict[str, Any] = json.loads(out.read_text())["provenance"]
    return prov


def _git_head() -> str | None:
    p = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                       text=True, check=False)
    return p.stdout.strip() if p.returncode == 0 else None


@pytest.mark.mpi
@needs_ompi
def test_provenance_open_mpi_binding(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    ncpu = len(os.sched_getaffinity(0))
    if ncpu < 2:
        pytest.skip("needs 2 CPUs to tell bound from unbound")
    # --placement keep: mpilab-bench leaves the launcher's (absent) binding as it is
    prov = _bench(run_cli, tmp_path, "unbound", bench_args=("--placement", "keep"))
    assert prov["launcher"]["name"] == "mpirun" and prov["launcher"]["source"] == "mpilab"
    args = prov["launcher"]["args"]
    assert args[args.index("--bind-to") + 1] == "none" and "-np" in args
    assert "slurm" not in prov
    assert prov["placement"]["mode"] == "keep" and prov["placement"]["pinned"] is False
    for m in prov["mapping"]:  # unbound: every rank may use every CPU we may use
        assert not m["bound"] and _cpus(m["cpus"]) == os.sched_getaffinity(0)
    # the default (auto) pins unbound ranks where there is a CPU for each: the mapping
    # records what it did, one CPU per rank
    prov = _bench(run_cli, tmp_path, "auto")
    pl = prov["placement"]
    assert pl["mode"] == "auto"
    if pl["pinned"]:
        sets = [_cpus(m["cpus"]) for m in prov["mapping"]]
        assert all(m["bound"] for m in prov["mapping"]) and all(len(c) == 1 for c in sets)
    else:
        assert not any(m["bound"] for m in prov["mapping"])
    prov = _bench(run_cli, tmp_path, "bound", "--launcher-arg=--bind-to",
                  "--launcher-arg=core")
    args = prov["launcher"]["args"]
    assert args[-2:] == ["--bind-to", "core"] and "none" not in args
    sets = [_cpus(m["cpus"]) for m in prov["mapping"]]
    assert all(len(s) == 1 for s in sets) and len(set().union(*sets)) == 2  # one core each
    assert all(m["bound"] and m["pu"] in _cpus(m["cpus"]) for m in prov["mapping"])
    # the report shows the binding and the launcher
    from mpilab.report.html import render_report
    from mpilab.results import load

    html = render_report(load(tmp_path / "bound.json"))
    assert " bound" in html and "--bind-to core" in html
    # the MPI library and the build
    assert prov["mpi"].startswith("Open MPI") and "Open MPI" in prov["mpi_library"]
    b = prov["build"]
    assert b["mpi"]["impl"] == "openmpi" and prov["mpi"].endswith(b["mpi"]["version"])
    assert b["compiler"].startswith("GNU ") and "-Wall" in b["flags"]
    if _git_head() is not None:  # the commit built from: HEAD or one of its ancestors
        p = subprocess.run(["git", "-C", str(REPO), "merge-base", "--is-ancestor",
                            b["git_commit"], "HEAD"], capture_output=True, check=False)
        assert p.returncode == 0, f"build commit {b['git_commit']} is not in HEAD's history"


def _cpus(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


@pytest.mark.mpi
@needs_mpich
def test_survey_mpich(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    env = cli_env()
    env["MPILAB_BIN"] = str(MPICH_BUILD)
    # 2 ranks: MPICH busy-polls, more ranks than cores take minutes (docs/mpi-stacks.md)
    p = run_cli("survey", "--quick", "--np", "2", "-q", "--out", "sv", env=env, timeout=900)
    assert p.returncode == 0, p.stderr
    prov = json.loads((tmp_path / "sv" / "results.json").read_text())["provenance"]
    assert prov["launcher"]["name"] == "mpiexec.hydra"
    assert Path(prov["launcher"]["args"][0]).name in ("mpiexec.mpich", "mpiexec.hydra")
    assert prov["ranks"] == 2 and prov["mpi"].startswith("MPICH")
    assert prov["build"]["mpi"]["impl"] == "mpich"


# ------------------------------------------------------------------- a one-node Slurm


@pytest.mark.mpi
@pytest.mark.root
@needs_ompi
def test_survey_under_srun(slurm: dict[str, str], run_cli: Callable[..., Any],
                           tmp_path: Path) -> None:
    env = dict(cli_env(), **slurm)
    cpus = str(os.cpu_count())
    # more ranks than the node has: refused at once, not queued forever
    p = run_cli("survey", "--launcher", "srun", "--np", str(int(cpus) + 1), "--quick", "-q",
                env=env)
    assert p.returncode == 2
    assert p.stderr.splitlines() == [f"mpilab: --np {int(cpus) + 1}: the Slurm node(s) offer "
                                     f"{cpus} CPU(s); use --np {cpus} or "
                                     "--launcher-arg=--overcommit"]
    # the default rank count is the node's, the run completes
    p = run_cli("survey", "--launcher", "srun", "--quick", "-q", "--sizes", "0,1K",
                "--out", "sv", env=env, timeout=900)
    assert p.returncode == 0, p.stderr
    prov = json.loads((tmp_path / "sv" / "results.json").read_text())["provenance"]
    assert prov["ranks"] == int(cpus)
    assert prov["launcher"]["name"] == "srun"
    assert prov["launcher"]["args"][1:] == ["-n", cpus, "--mpi=pmix"]
    s = prov["slurm"]
    assert s["job_id"].isdigit() and s["step_id"].isdigit() and s["cluster"] == "mpilabtest"


@pytest.mark.mpi
@pytest.mark.root
@needs_mpich
def test_mpich_under_srun(slurm: dict[str, str], run_cli: Callable[..., Any],
                          tmp_path: Path) -> None:
    env = dict(cli_env(), **slurm, MPILAB_BIN=str(MPICH_BUILD))
    prov = _bench(run_cli, tmp_path, "srun-mpich", "--launcher", "srun", env=env)
    assert prov["launcher"]["args"][1:] == ["-n", "2", "--mpi=pmi2"]
    assert prov["ranks"] == 2 and prov["mpi"].startswith("MPICH")
    assert prov["slurm"]["job_id"].isdigit()


@pytest.mark.mpi
@pytest.mark.root
@needs_ompi
def test_plain_srun_pins_from_slurm_variables_and_records_pmi(slurm: dict[str, str],
                                                              tmp_path: Path) -> None:
    """`srun --mpi=pmix mpilab-bench ...` straight from the shell (no mpilab launcher): the
    local rank and size come from SLURM_LOCALID and SLURM_STEP_TASKS_PER_NODE (srun sets no
    SLURM_NTASKS_PER_NODE), so the ranks are pinned, and provenance names the PMI plugin."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs to pin 2 ranks")
    out = tmp_path / "srun.json"
    env = {k: v for k, v in dict(cli_env(), **slurm).items()
           if k not in ("MPILAB_LAUNCHER", "MPILAB_LAUNCHER_ARGS")}
    p = subprocess.run(["srun", "-n", "2", "--mpi=pmix", str(REPO / "build" / "bin" /
                                                            "mpilab-bench"),
                        "--ops", "bcast", "--sizes", "8", "--min-reps", "2", "--max-reps", "3",
                        "--quiet", "--out", str(out)], env=env, capture_output=True, text=True,
                       timeout=600, check=False)
    assert p.returncode == 0, p.stderr
    prov = json.loads(out.read_text())["provenance"]
    assert prov["launcher"] == {"name": "srun", "source": "environment", "pmi": "pmix"}
    assert prov["slurm"]["mpi_type"] == "pmix" and prov["slurm"]["tasks_per_node"] == "2"
    assert prov["placement"]["pinned"] is True, prov["placement"]
    sets = [_cpus(m["cpus"]) for m in prov["mapping"]]
    assert all(len(c) == 1 for c in sets) and len(set().union(*sets)) == 2


def test_slurm_command_refuses_without_root_or_tools(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(MpilabError, match="^slurm: needs root"):
        slurmlocal.up(tmp_path / "s")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda t: None if t == "slurmd" else "/x")
    with pytest.raises(MpilabError, match="slurmd not installed"):
        slurmlocal.up(tmp_path / "s")
    assert not (tmp_path / "s").exists()  # refused before touching anything
    assert slurmlocal.running(tmp_path / "none") == []


@pytest.mark.parametrize("action", ["up", "down", "status"])
def test_slurm_dir_that_is_a_file_is_one_line(run_cli: Callable[..., Any], tmp_path: Path,
                                              action: str) -> None:
    """`mpilab slurm up --dir F` with F a regular file was an internal error (FileExistsError,
    found by bench/hostile_inputs.py); every action refuses it first, F untouched."""
    f = tmp_path / "f"
    f.write_text("x")
    p = run_cli("slurm", action, "--dir", str(f), timeout=60)
    assert p.returncode == 2, p.stderr  # refused while the arguments are parsed
    (line,) = p.stderr.strip().splitlines()
    assert "--dir" in line and str(f) in line and line.endswith("not a directory"), line
    assert f.read_text() == "x"
