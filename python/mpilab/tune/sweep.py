"""`mpilab tune sweep`: every algorithm the MPI library offers (mpilab-bench
--mpi-algorithms: forced through MPI_T, measured in the same launch as the library's default,
the native entry), per communicator size, over a grid of sizes, in N launches merged as
`mpilab bench --launches` merges them; then more sizes only where the winner changes.

Resumable: DIR/state.json (written atomically after every launch) records the settings and
every launch file completed; run the same command again and it continues where it stopped
(a launch cut short is run again; different settings are refused)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mpilab import launch, launches
from mpilab.commands.bench import DEFAULT_NP, runner_job
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.strict_json import read_json
from mpilab.tools import find_tool
from mpilab.tune import choose

STATE = "state.json"
SCHEMA = "mpilab.tune-state/1"


STATE_LIMIT = 64 << 20  # a sweep's state is a few KiB per run


def _load_state(d: Path, config: dict[str, Any]) -> dict[str, Any]:
    p = d / STATE
    if not p.exists():
        return {"schema": SCHEMA, "config": config, "runs": {}}
    # a regular file, RFC 8259, bounded nesting: one line naming the file otherwise
    st, _ = read_json(p, "sweep state", STATE_LIMIT)
    if not isinstance(st, dict) or st.get("schema") != SCHEMA:
        raise MpilabError(f"{p}: not a sweep state (schema {SCHEMA})")
    if st.get("config") != config:
        raise MpilabError(f"{p}: made with other settings; resume with the same options or "
                          "use another --dir")
    return st


def _save(d: Path, st: dict[str, Any]) -> None:
    atomic_write_text(d / STATE, json.dumps(st, indent=1) + "\n")


def _launch(np: int, args: list[str], mpi: str, timeout: float, log: Path,
            extra: list[str], testbed: str | None = None) -> int:
    launcher_args = list(extra)
    if mpi == "openmpi":
        launcher_args += ["--mca", "coll_tuned_use_dynamic_rules", "1"]
    j = runner_job(np, DEFAULT_NP, args + placement_args(testbed), None, launcher_args,
                   testbed)
    return run_job(j.cmd, j.env, timeout, log, testbed)


def max_reps_args(max_reps: int | None) -> list[str]:
    """`--max-reps N` for the runner: a cap on the repetitions of one measurement. The
    runner's budget counts the samples' own time, so a 2 us collective on ranks that share
    CPUs repeats until 10^6 repetitions or its share of the budget in samples, each
    repetition paying its isolation barrier and stop broadcast in wall time (MPICH at 4
    ranks here: minutes per measurement, docs/tune.md)."""
    return ["--max-reps", str(max_reps)] if max_reps else []


def min_samples_args(min_samples: int | None) -> list[str]:
    """`--budget-floor N` for the runner: the time budget ends no measurement before N valid
    samples. The budget's equal share is sample time, so a slow size gets share / call time
    samples: on the testbed's grid 3-4 of a 128 KiB bcast (35-60 ms), under the 6 a side the
    comparison needs (mpilab.tune.stats.MIN_SAMPLES), and those cells stayed undecided
    (docs/tune.md)."""
    return ["--budget-floor", str(min_samples)] if min_samples else []


def placement_args(testbed: str | None) -> list[str]:
    """Runner arguments for a launch on a testbed: `--placement keep`. Every rank is alone
    in its node's namespace, so the runner's automatic placement turns Open MPI's yield when
    idle off before MPI starts, and only then counts 8 ranks on this kernel's 2 CPUs: 8 ranks
    polling without yield (provenance.placement said so in a first trial; a
    64 B bcast took 24 to 104 ms). Kept as launched, the testbed's mpirun
    (mpi_yield_when_idle 1) decides."""
    return ["--placement", "keep"] if testbed is not None else []


def mpich_yield_args(testbed: str | None) -> list[str]:
    """Launcher arguments that preload libmpilab_ucx_yield.so (src/tune/ucx_yield.c) into
    MPICH's ranks: a rank whose UCX progress found nothing yields its CPU. On a testbed the
    finalize keeper the testbed preloads stays in the list (Hydra's last -genv wins)."""
    from mpilab.testbed.launch import mpich_rank_preload

    lib = mpich_rank_preload(False, mpich_yield=True, keeper=testbed is not None)
    return launch.rank_env_args("mpich", {"LD_PRELOAD": lib or ""})


def run_job(cmd: list[str], env: dict[str, str], timeout: float, log: Path,
            testbed: str | None) -> int:
    """run_logged, or inside testbed `testbed` (a prefix) under the testbed's job control
    (mpilab.testbed.jobctl: the job's processes in the node namespaces are found by their tag
    and ended at the time limit or on a signal; 124 after the limit, 128+N after signal N)."""
    if testbed is None:
        return run_logged(cmd, env, timeout, log)
    from mpilab.testbed import jobctl

    with open(log, "ab") as f:
        tag = jobctl.new_tag(testbed)
        proc, cg = jobctl.start(cmd, tag, env, stdin=subprocess.DEVNULL, stdout=f, stderr=f)
        return jobctl.supervise(proc, tag, timeout, None, cg=cg)


def run_logged(cmd: list[str], env: dict[str, str], timeout: float, log: Path) -> int:
    """Run a job in its own process group, output appended to log; 124 after timeout, and
    on an interrupt (a bench slot's SIGTERM) the whole group is killed first."""
    with open(log, "ab") as f:
        proc = subprocess.Popen(cmd, env=env, stdout=f, stderr=f, start_new_session=True)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return 124
        except KeyboardInterrupt:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise


def forced_impls(mpi: str, colls: list[str], timeout: float = 120.0) -> dict[str, list[str]]:
    """{coll: [impl, ...]} of the library's forced algorithms, as mpilab-bench registers them
    (`--mpi-algorithms --list --json` on one rank: the entries of origin "mpi:...")."""
    launcher_args = ["--mca", "coll_tuned_use_dynamic_rules", "1"] if mpi == "openmpi" else []
    j = runner_job(1, DEFAULT_NP, ["--mpi-algorithms", "--list", "--json"], None, launcher_args)
    try:
        p = subprocess.run(j.cmd, env=j.env, capture_output=True, text=True, timeout=timeout,
                           check=False)
        entries = json.loads(p.stdout)["entries"]
    except (subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
        raise MpilabError("mpilab-bench --mpi-algorithms --list --json gave no entry list "
                          "(does this MPI offer MPI_T control variables?)") from None
    out: dict[str, list[str]] = {c: [] for c in colls}
    from mpilab.tune.algorithms import MPICH_IN_PLACE_ONLY

    for e in entries:
        if str(e.get("origin", "")).startswith("mpi:") and e.get("name") in out \
                and (e["name"], e.get("impl")) not in MPICH_IN_PLACE_ONLY:
            out[e["name"]].append(e["impl"])
    return out


_PROBED = re.compile(r"^mpilab-probe: rank \d+ (begin|end|setup-failed) (\w+):(\w+) (\d+)"
                     r"(?: rc (-?\d+)(?: error (.*))?)?$")


def unusable(np: int, ops: str, sizes: list[int], cfg: dict[str, Any], d: Path
             ) -> dict[str, str]:
    """{op:impl: why} of the library's algorithms that fail on np ranks at a size of the
    grid: one call each (mpilab-bench --probe, on a communicator that returns errors). An
    algorithm the library lists but cannot run at this communicator size (Open MPI's
    two_proc barrier or allgather on 4 ranks: MPI_ERR_UNSUPPORTED_OPERATION) would otherwise
    abort the whole launch; a call that began and never ended (a crash) counts too."""
    tmp = Path(tempfile.mkdtemp(prefix="mpilab-tune-probe-"))
    try:
        extra = launch.rank_env_args(cfg["mpi"], {"MPILAB_PROBE_LOG": str(tmp)})
        args = ["--mpi-algorithms", "--probe", "--ops", ops, "--sizes",
                ",".join(map(str, sizes)), "--quiet"]
        rc = _launch(np, args, cfg["mpi"], cfg["timeout"], d / f"np{np}-probe.log",
                     extra + cfg.get("launcher_args", []), cfg.get("testbed"))
        bad: dict[str, str] = {}
        seen = False
        for r in range(np):
            f = tmp / f"probe.{r}.log"
            if not f.is_file():
                continue
            open_: dict[str, str] = {}
            for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                m = _PROBED.match(line)
                if not m:
                    continue
                seen = True
                key = f"{m.group(2)}:{m.group(3)}"
                if m.group(1) == "begin":
                    open_[key] = m.group(4)
                elif m.group(1) == "setup-failed":
                    bad.setdefault(key, f"setup failed at {m.group(4)} B")
                else:
                    open_.pop(key, None)
                    if m.group(5) not in (None, "0"):
                        bad.setdefault(key, f"{m.group(4)} B: {m.group(6) or 'rc ' + m.group(5)}")
            for key, b in open_.items():
                bad.setdefault(key, f"{b} B: the call never returned (exit {rc})")
        if not seen:
            raise MpilabError(f"np{np}: the probe of the algorithms gave no output (exit {rc}; "
                              f"see {d / f'np{np}-probe.log'})")
        return bad
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_series(d: Path, st: dict[str, Any], name: str, np: int, ops: str, sizes: list[int],
               cfg: dict[str, Any]) -> Path:
    """One measurement (ops x sizes on np ranks) in cfg['launches'] launches, merged into
    DIR/NAME.json; launches already done (state) are not repeated."""
    run = st["runs"].setdefault(name, {"np": np, "ops": ops, "sizes": sizes, "files": []})
    merged = d / f"{name}.json"
    n = cfg["launches"]
    args = ["--mpi-algorithms", "--ops", ops, "--sizes", ",".join(map(str, sizes)),
            "--time-budget", f"{cfg['budget']}s", "--no-fit", "--quiet",
            *max_reps_args(cfg.get("max_reps")), *min_samples_args(cfg.get("min_samples"))]
    while len(run["files"]) < n:
        k = len(run["files"]) + 1
        f = d / f"{name}.launch{k}.json"
        t0 = time.monotonic()
        if not cfg.get("quiet"):
            sys.stderr.write(f"mpilab tune: {name}: launch {k} of {n} ({np} ranks, "
                             f"{len(sizes)} sizes)\n")
        try:
            rc = _launch(np, args + ["--out", str(f)], cfg["mpi"], cfg["timeout"],
                         d / f"{name}.log", cfg.get("launcher_args", []), cfg.get("testbed"))
        finally:
            # wall time spent on this communicator size, launches cut short included (the
            # sweep's duration over several bench slots)
            spent = st.setdefault("spent_s", {})
            spent[str(np)] = spent.get(str(np), 0.0) + time.monotonic() - t0
            _save(d, st)
        ok = rc == 0 and f.is_file()
        doc = json.loads(f.read_text(encoding="utf-8")) if ok else None
        if not ok or doc.get("partial"):
            raise MpilabError(f"{name}: launch {k} failed (exit {rc}; see {d / (name + '.log')})"
                              "; run the same command again to continue")
        run["files"].append(f.name)
        run.setdefault("walls", []).append(time.monotonic() - t0)
        _save(d, st)
    if not merged.exists() or run.get("merged") != len(run["files"]):
        docs = [json.loads((d / x).read_text(encoding="utf-8")) for x in run["files"]]
        m = launches.merge(docs, [str(d / x) for x in run["files"]], n)
        atomic_write_text(merged, json.dumps(m) + "\n")
        run["merged"] = len(run["files"])
        _save(d, st)
    return merged


def check_nps(prog: str | None, nps: list[int], launcher_args: list[str],
              testbed: str | None) -> None:
    """Every communicator size the launcher (or the testbed) can start: refused in one line
    before the sweep directory or its state exist."""
    if testbed is not None:
        from mpilab.testbed import launch as tb_launch
        from mpilab.testbed import net

        spec = net.current_spec(testbed)
        for np in nps:
            tb_launch.check_job_args(spec, np, None, None)
        return
    lr = launch.choose(prog or "mpilab-bench", None, launcher_args)
    for np in nps:
        lr.check_np(np)


def sweep(d: Path, nps: list[int], colls: list[str], sizes: list[int], cfg: dict[str, Any],
          rounds: int) -> list[Path]:
    """All series of the sweep; returns the merged files (one or more per comm size)."""
    prog = find_tool("mpilab-bench")
    mpi = launch.program_mpi(prog) or "openmpi"
    if cfg.get("mpich_yield") and mpi != "mpich":
        raise MpilabError("--mpich-yield: mpilab-bench is not linked with MPICH "
                          "(mpilab --mpi mpich tune ...)")
    check_nps(prog, nps, cfg.get("launcher_args", []), cfg.get("testbed"))
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MpilabError(f"--dir {d}: cannot make the sweep directory: {e.strerror}") from None
    # absolute: on a testbed the ranks write their files from the node namespaces
    d = d.resolve()
    cfg = dict(cfg, mpi=mpi)
    config = {"nps": nps, "colls": colls, "sizes": sizes, "launches": cfg["launches"],
              "budget": cfg["budget"], "rounds": rounds, "mpi": mpi,
              "min_effect": cfg["min_effect"]}
    if cfg.get("testbed"):
        # a sweep on a testbed is another machine: resuming it elsewhere is refused
        config["testbed"] = cfg["testbed"]
    if cfg.get("max_reps"):
        config["max_reps"] = cfg["max_reps"]
    if cfg.get("min_samples"):
        config["min_samples"] = cfg["min_samples"]
    if cfg.get("mpich_yield"):
        config["mpich_yield"] = True
        cfg["launcher_args"] = cfg.get("launcher_args", []) + mpich_yield_args(
            cfg.get("testbed"))
    st = _load_state(d, config)
    _save(d, st)
    t_start = time.monotonic()
    files: list[Path] = []
    sized = [c for c in colls if c != "barrier"]
    impls = forced_impls(mpi, colls)

    def ops_of(cs: list[str]) -> str:
        # the default (native) and the library's algorithms; not mpilab's own implementations
        return ",".join(f"{c}:{i}" for c in cs for i in ["native", *impls[c]])
    for np in nps:
        mine: list[Path] = []
        key = str(np)
        if key not in st.setdefault("unusable", {}):
            st["unusable"][key] = unusable(np, ops_of(colls), sizes, cfg, d)
            _save(d, st)
        for what, why in st["unusable"][key].items():
            if not cfg.get("quiet"):
                sys.stderr.write(f"mpilab tune: {np} ranks: {what} left out ({why})\n")
        skip = set(st["unusable"][key])

        def ops_np(cs: list[str], skip: set[str] = skip) -> str:
            return ",".join(x for x in ops_of(cs).split(",") if x not in skip)
        if "barrier" in colls:
            mine.append(run_series(d, st, f"np{np}-barrier", np, ops_np(["barrier"]), [0], cfg))
        if sized:
            mine.append(run_series(d, st, f"np{np}-r0", np, ops_np(sized), sizes, cfg))
        for r in range(1, rounds + 1):
            docs = [json.loads(p.read_text(encoding="utf-8")) for p in mine]
            cells = choose.choose_all(docs, cfg["min_effect"])
            new: set[int] = set()
            ops: set[str] = set()
            for op in sized:
                mc = [c for c in cells if c.op == op and c.np == np]
                more = choose.refine(mc)
                if more:
                    new.update(more)
                    ops.add(f"{op}:native")
                    ops.update(f"{op}:{c.winner}" for c in mc if c.winner != choose.DEFAULT)
            if not new:
                break
            mine.append(run_series(d, st, f"np{np}-r{r}", np, ",".join(sorted(ops)),
                                   sorted(new), cfg))
        files += mine
        st.setdefault("elapsed_s", {})[str(np)] = st.get("elapsed_s", {}).get(str(np), 0.0) \
            + (time.monotonic() - t_start)
        t_start = time.monotonic()
        _save(d, st)
    st["done"] = True
    _save(d, st)
    return files
