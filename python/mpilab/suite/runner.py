"""Running the suite for one transport: the C runner under mpirun (this host) or under the
testbed's launcher (emulated nodes), and the wavefront application for scaling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpilab import launch as mpi_launch
from mpilab import results, units
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.suite.transports import Transport
from mpilab.tools import find_tool, mpi_env

# Latency-type entries (family "latency" in `mpilab-bench --list --json`) are timed as IMB
# and OSU time them (the paper's numbers come from those suites): back-to-back iterations,
# one sample = a chunk of LAT_DEPTH iterations. A barrier before every single round trip
# would add the partner's wake-up to each sample.
LAT_DEPTH = 20
# The native collectives the comparison measures at --np ranks (the study's Figs. 5-7).
COLLECTIVES = "bcast,allreduce,alltoall"


def _is_count(text: str) -> bool:
    try:
        units.parse_size(text)
    except ValueError:
        return False
    return True


@dataclass
class Plan:
    """What to measure (the same for every transport of one comparison)."""
    sizes: str = "1:1M:x4"
    comb_bytes: str = "100K"
    window: int = 160
    pairs: int = 0
    poll_sweep: str = "0,100,1000,10000,100000,1000000"
    comb_msgs: int = 16
    np: int = 4
    max_reps: int = 50
    # each benchmark part runs in this many separate launches, merged into launch-level
    # figures (mpilab.launches): the comparison's verdicts include launch-to-launch variation
    launches: int = 3
    scaling: list[int] = field(default_factory=lambda: [1, 2, 4])
    wf_rows: int = 512
    wf_cols: int = 512
    wf_iters: int = 4
    timeout: float = 600.0
    launcher: str | None = None  # mpilab.launch: None = the runner's MPI's launcher
    launcher_args: list[str] = field(default_factory=list)
    # user entries: plugins mpilab-bench loads (--entries FILE.so), absolute paths
    entries: list[str] = field(default_factory=list)

    def check(self) -> None:
        from mpilab.launches import MAX_LAUNCHES
        if not 1 <= self.launches <= MAX_LAUNCHES:
            raise MpilabError(f"--launches {self.launches}: must be 1..{MAX_LAUNCHES}")
        if self.window < 1:
            raise MpilabError("--window: window must be >= 1")
        if self.pairs < 0:
            raise MpilabError("--pairs: must be >= 0")
        if self.np < 2:
            raise MpilabError("--np: the suite needs at least 2 ranks")
        items = self.poll_sweep.split(",")
        if not self.poll_sweep or not all(_is_count(x) for x in items):
            raise MpilabError(f"--poll-sweep: malformed list '{self.poll_sweep}' "
                              "(comma list of counts, e.g. 0,100,1K)")
        if len(set(items)) != len(items):
            raise MpilabError(f"--poll-sweep: '{self.poll_sweep}' names an interval twice")
        if len(items) > 16:
            raise MpilabError("--poll-sweep: more than 16 intervals")
        for f in self.entries:
            if not Path(f).is_file():
                raise MpilabError(f"--entries {f}: no such file (a plugin built from "
                                  "MPILAB_PLUGIN_ENTRIES, docs/architecture.md)")
        if self.pairs and 2 * self.pairs > self.np:
            raise MpilabError(f"--pairs {self.pairs}: needs {2 * self.pairs} ranks, --np is "
                              f"{self.np}")

    def suite_args(self) -> list[str]:
        plugins = [a for f in self.entries for a in ("--entries", f)]
        return ["--window", str(self.window), "--pairs", str(self.pairs),
                "--poll-sweep", self.poll_sweep, "--comb-msgs", str(self.comb_msgs), *plugins]


def suite_tool() -> str:
    """The runner: mpilab-bench registers the suite's entries itself."""
    return find_tool("mpilab-bench")


def entry_list(plan: Plan) -> list[dict[str, Any]]:
    """The runner's operation table with each entry's knowledge (name, impl, family, needs,
    timing, derived, model, suite), from `mpilab-bench --list --json`."""
    cmd = [suite_tool(), *plan.suite_args(), "--list", "--json"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=120,
                           check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MpilabError(f"mpilab-bench --list --json: {e}") from None
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["no message"])[-1]
        raise MpilabError(f"mpilab-bench --list --json failed: {last}")
    try:
        doc = json.loads(p.stdout)
        entries = doc["entries"]
        for e in entries:
            if not (isinstance(e["name"], str) and isinstance(e["family"], str)
                    and isinstance(e["needs"], list) and isinstance(e["suite"], bool)):
                raise TypeError
    except (ValueError, KeyError, TypeError):
        raise MpilabError("mpilab-bench --list --json: not an entry list") from None
    return list(entries)


def _names(entries: list[dict[str, Any]]) -> str:
    return ",".join(dict.fromkeys(e["name"] for e in entries))


def _is_user(e: dict[str, Any]) -> bool:
    """An entry a plugin (or a program) brought, not a built-in or suite one."""
    return e.get("origin") not in (None, "builtin", "suite")


def op_groups(entries: list[dict[str, Any]]) -> dict[str, str]:
    """The suite's entries by how they are run, from what each entry declares:
    lat (family latency, 2 ranks, pipelined), pair (only ranks 0 and 1 take part),
    nrank (every rank takes part; plus COLLECTIVES), comb (family availability).
    User entries (plugins, --entries) join the group their family and needs say, by
    name:impl (their name alone would select the built-in implementations too)."""
    suite = [e for e in entries if e["suite"]]
    user = [e for e in entries if _is_user(e)]
    avail = [e for e in suite if e["family"] == "availability"]

    def named(es: list[dict[str, Any]]) -> list[str]:
        return [f"{e['name']}:{e['impl']}" for e in es]

    u_lat = [e for e in user if e["family"] == "latency"]
    u_avail = [e for e in user if e["family"] == "availability"]
    u_pair = [e for e in user if "pair" in e["needs"] and e not in u_lat and e not in u_avail]
    u_rest = [e for e in user if e not in u_lat and e not in u_avail and e not in u_pair]

    def join(*parts: str | list[str]) -> str:
        items: list[str] = []
        for p in parts:
            items += [x for x in (p.split(",") if isinstance(p, str) else p) if x]
        return ",".join(dict.fromkeys(items))

    return {
        "lat": join(_names([e for e in suite if e["family"] == "latency"]), named(u_lat)),
        "pair": join(_names([e for e in suite if "pair" in e["needs"]
                             and e["family"] not in ("latency", "availability")]), named(u_pair)),
        "nrank": join(_names([e for e in suite if "pair" not in e["needs"] and e not in avail]),
                      COLLECTIVES, named(u_rest)),
        "comb": join(_names(avail), named(u_avail)),
    }


def _launch(t: Transport, np: int, program: list[str], plan: Plan) -> None:
    timeout = plan.timeout
    if not t.networked:
        lr = mpi_launch.choose(program[0], plan.launcher, plan.launcher_args)
        lr.check_np(np)
        env = lr.env(np)
        env["MPILAB_TRANSPORT"] = t.name
        env.update(t.env(lr.mpi))
        cmd = lr.command(np) + program
        try:
            p = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise MpilabError(f"{t.name}: job did not finish within {timeout:g} s") from None
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise MpilabError(f"{t.name}: {Path(program[0]).name} failed (exit "
                              f"{p.returncode}): {last}")
        return
    if mpi_launch.program_mpi(program[0]) != "openmpi":
        raise MpilabError(f"{t.name}: testbed transports start Open MPI jobs; "
                          f"{Path(program[0]).name} is built with another MPI")
    from mpilab.testbed import launch
    old = os.environ.get("MPILAB_TRANSPORT")
    os.environ["MPILAB_TRANSPORT"] = t.name  # the launcher passes os.environ on
    try:
        with open(os.devnull, "wb") as devnull:
            rc = launch.run(testbed_spec(t), program, np=np, mptcp=t.mptcp, timeout=timeout,
                            rails=list(t.rails), stdout=devnull.fileno())
    finally:
        if old is None:
            os.environ.pop("MPILAB_TRANSPORT", None)
        else:
            os.environ["MPILAB_TRANSPORT"] = old
    if rc != 0:
        raise MpilabError(f"{t.name}: {Path(program[0]).name} failed in the testbed (exit {rc})")


def testbed_spec(t: Transport) -> Any:
    from mpilab.testbed import spec
    assert t.testbed is not None
    return spec.load_text(t.testbed, f"<transport {t.name}>")


def testbed_up(t: Transport) -> None:
    from mpilab.testbed import net
    net.up(testbed_spec(t))


def testbed_down() -> None:
    from mpilab.suite.transports import TESTBED_PREFIX
    from mpilab.testbed import net
    net.down(TESTBED_PREFIX)


def _progress(t: Transport, what: str) -> None:
    """One line on stderr per step of `mpilab compare` (a part takes tens of seconds)."""
    print(f"[{t.name}] {what}", file=sys.stderr, flush=True)


def run_bench(t: Transport, plan: Plan, np: int, ops: str, sizes: str, out: Path,
              extra: list[str] | None = None, label: str | None = None) -> dict[str, Any]:
    """One part of the suite into OUT: plan.launches separate launches of the runner, merged
    (mpilab.launches) when more than one, each launch's file beside OUT."""
    from mpilab import launches

    tool = suite_tool()
    n = plan.launches
    files = [out] if n == 1 else [out.with_name(f"{out.stem}.launch{k}.json")
                                  for k in range(1, n + 1)]
    docs: list[dict[str, Any]] = []
    walls: list[float] = []
    for k, f in enumerate(files, 1):
        if label:
            _progress(t, f"{label}, {np} ranks" + (f", launch {k} of {n}" if n > 1 else "")
                      + (f" (the last took {walls[-1]:.0f} s)" if walls else ""))
        prog = [tool, "--ops", ops, "--sizes", sizes, "--max-reps", str(plan.max_reps),
                "--quiet", "--no-fit", "--out", str(f), *plan.suite_args(), *(extra or [])]
        t0 = time.monotonic()
        _launch(t, np, prog, plan)
        walls.append(time.monotonic() - t0)
        results.load(f)  # refuse anything that is not a valid results file
        docs.append(json.loads(f.read_text()))
    if n == 1:
        return docs[0]
    merged = launches.merge(docs, [f.name for f in files], n)
    merged["launches"]["cost"] = launches.cost(docs, walls)
    atomic_write_text(out, json.dumps(merged, indent=1) + "\n")
    results.load(out)
    return merged


def run_scaling(t: Transport, plan: Plan, work: Path) -> dict[str, Any]:
    """Wavefront (MPI-distributed) at each rank count: strong (fixed rows x cols) and weak
    (rows grow with the ranks). Returns {"strong": [...], "weak": [...]} points."""
    wf = find_tool("mpilab-wavefront")
    out: dict[str, Any] = {"app": "mpilab-wavefront run --mpi", "iterations": plan.wf_iters,
                           "strong": [], "weak": []}
    for mode in ("strong", "weak"):
        for p in plan.scaling:
            rows = plan.wf_rows if mode == "strong" else plan.wf_rows * p
            d = work / f"wf-{mode}-{p}"
            d.mkdir(parents=True, exist_ok=True)
            blk = ["--mb", "32", "--nb", "32"]
            for c in ([wf, "create", "--rows", str(rows), "--cols", str(plan.wf_cols),
                       "--seed", "1", str(d / "d0"), str(d / "c0")],
                      [wf, "convert", "--quiet", "--layout", "optimized", *blk,
                       "--bands", str(p), str(d / "d0"), str(d / "d")],
                      [wf, "convert", "--quiet", "--layout", "block", *blk,
                       "--bands", str(p), str(d / "c0"), str(d / "c")]):
                r = subprocess.run(c, capture_output=True, text=True, check=False)
                if r.returncode != 0:
                    last = (r.stderr.strip().splitlines() or ["?"])[-1]
                    raise MpilabError(f"wavefront {c[1]} failed: {last}")
            res = d / "r.json"
            _launch(t, p, [wf, "run", "--mpi", "--data", str(d / "d"), "--coef", str(d / "c"),
                           "--iterations", str(plan.wf_iters), "--json", str(res), "--quiet"],
                    plan)
            r = results.load(res)
            m = r.measurements[0]
            out[mode].append({"ranks": p, "rows": rows, "cols": plan.wf_cols,
                              "seconds": m.stats.median, "mean": m.stats.mean,
                              "reps": m.stats.reps})
    return out


def run_transport(t: Transport, plan: Plan, outdir: Path, scaling: bool = True) -> Path:
    """Measure everything for one transport into OUTDIR/<name>.json (atomically)."""
    with tempfile.TemporaryDirectory(prefix="mpilab-compare-", dir=_tmpdir(t)) as tmp:
        w = Path(tmp)
        g = op_groups(entry_list(plan))
        parts = [
            run_bench(t, plan, 2, g["lat"], plan.sizes, w / "lat.json",
                      ["--isolation", "none", "--pipeline-depth", str(LAT_DEPTH)],
                      label="part 1 of 4: latency (pipelined)"),
            run_bench(t, plan, 2, g["pair"], plan.sizes, w / "p2p.json",
                      label="part 2 of 4: pair measurements (ranks 0 and 1)"),
            run_bench(t, plan, plan.np, g["nrank"], plan.sizes, w / "nrank.json",
                      label="part 3 of 4: measurements over every rank"),
            run_bench(t, plan, 2, g["comb"], plan.comb_bytes, w / "comb.json",
                      label="part 4 of 4: CPU availability (COMB)"),
        ]
        a = parts[1]
        doc: dict[str, Any] = {
            "schema": "mpilab.results/1",
            "provenance": dict(a["provenance"]),
            "measurements": [m for p in parts for m in p["measurements"]],
            "suite": dict(a.get("suite", {})),
        }
        doc["provenance"]["tool"] = "mpilab compare"
        doc["provenance"]["parts"] = [p["provenance"] for p in parts]
        doc["suite"]["transport"] = {"name": t.name, "description": t.description,
                                     "mca": dict(t.mca), "mptcp": t.mptcp,
                                     "testbed": t.testbed}
        doc["suite"]["np"] = plan.np
        if plan.launches > 1:
            from mpilab import launches
            costs = [p["launches"]["cost"] for p in parts]
            doc["launches"] = {
                "n": plan.launches, "asked": plan.launches, "method": launches.METHOD,
                "files": [],  # the launches' own files lived in a temporary directory
                "models": "none",
                "cost": {"wall_s": [w for c in costs for w in c["wall_s"]],
                         "total_s": sum(c["total_s"] for c in costs),
                         "single_launch_estimate_s": sum(c["single_launch_estimate_s"]
                                                         for c in costs),
                         "extra_s": sum(c["extra_s"] for c in costs)}}
            single = doc["launches"]["cost"]["single_launch_estimate_s"]
            doc["launches"]["cost"]["extra_rel"] = (doc["launches"]["cost"]["extra_s"] / single
                                                    if single > 0 else None)
        if scaling:
            _progress(t, "application scaling (the wavefront at each rank count)")
            doc["scaling"] = run_scaling(t, plan, w)
        path = outdir / f"{t.name}.json"
        atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    return path


def _tmpdir(t: Transport) -> str | None:
    # ranks in testbed namespaces share this file system; /tmp is fine for both
    return None
