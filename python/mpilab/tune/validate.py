"""`mpilab tune validate`: the exported file against the library's default, side by side,
before the file is handed out; cells and collectives that do not pay off are taken out and
the file is exported and measured again.

Why a last step measured through the file itself: the sweep forces each candidate through
the library's own parameters (Open MPI: coll_tuned_<coll>_algorithm with dynamic rules on in
every launch; MPICH: MPIR_CVAR_<COLL>_INTRA_ALGORITHM, which skips the selection tree), so it
cannot see what the file costs per call. Measured on 2 ranks (docs/tune.md): Open MPI's
dynamic decision (a rule look-up on every call of a collective the file names) made reduce
8 and 32 B 6% slower at sizes kept at the default; the selection tree MPICH reads from a file
made scatter 8 B..4 KiB 8 to 33% slower, and the sweep's binomial bcast gains did not
reproduce through it.

One round: per pair k one launch with the file and one without (the library as a user gets
it), in ABBA order, of mpilab-bench (`measure`) or of an unmodified benchmark
(`measure_peer`); one figure per launch and cell (mpilab-bench: the median of the launch's
samples; IMB-MPI1 or OSU: its headline time). Every cell is judged by `decide`, which is the
confirmation's verdict (mpilab.tune.confirm): the signed-rank test on the per-pair log
ratios, a LOSS family-wise (Holm over every cell) and beyond the minimum effect, a GAIN
family-wise (Holm over the cells the file gives an algorithm) with the interval below 1; too
few pairs for the family to reach significance at all leaves the round undecided. Keeping,
dropping and the final verdict use that one statistic, so a file validate writes is judged
by the rule it is confirmed by afterwards.

Pruning (`prune`), conservative on purpose (a cell taken out only falls back to the
library's own choice):
* a cell given an algorithm stays only when it is a family-wise GAIN through the file; a tie
  or a loss goes back to the default;
* a cell kept at the default that is a family-wise LOSS with the file (`costly`) is what the
  file costs the whole collective (Open MPI's look-up, MPICH's tree): that collective leaves
  the file entirely.

Rounds (`run`): measure, prune; when something was dropped, export the pruned choice and
measure that file with fresh launches (never the launches its pruning was decided on); stop
when a round drops nothing or after `rounds`. The verdict handed out is the last round's, a
measurement of exactly the file written: decidable, 0 family-wise losses, and the last round
pruned nothing, or not validated (exit 1)."""

from __future__ import annotations

import copy
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpilab import launch as mpi_launch
from mpilab import units
from mpilab.commands.bench import DEFAULT_NP, runner_job
from mpilab.errors import MpilabError
from mpilab.tune import choose, confirm, peer, stats, sweep

DEFAULT = choose.DEFAULT


def file_args(mpi: str, file: str | None) -> list[str]:
    """Launcher arguments that load the exported file (none: the library as shipped)."""
    if not file:
        return []
    if mpi == "openmpi":
        return ["--mca", "coll_tuned_use_dynamic_rules", "1",
                "--mca", "coll_tuned_dynamic_rules_filename", file]
    return mpi_launch.rank_env_args(mpi, {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": file})


def one_launch(np: int, ops: str, sizes: list[int], budget: str, mpi: str, file: str | None,
                out: Path, timeout: float, testbed: str | None = None,
                extra: list[str] | None = None, max_reps: int | None = None,
                min_samples: int | None = None) -> int:
    args = ["--ops", ops, "--sizes", ",".join(map(str, sizes)), "--time-budget", budget,
            "--no-fit", "--quiet", "--out", str(out) + ".part", *sweep.placement_args(testbed),
            *sweep.max_reps_args(max_reps), *sweep.min_samples_args(min_samples)]
    j = runner_job(np, DEFAULT_NP, args, None, file_args(mpi, file) + (extra or []), testbed)
    env = dict(j.env)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    rc = sweep.run_job(j.cmd, env, timeout, out.with_suffix(".log"), testbed)
    part = Path(str(out) + ".part")
    if rc == 0 and part.is_file():
        part.rename(out)
    return rc


def _series(cells: list[dict[str, Any]]) -> list[tuple[str, str, list[int]]]:
    ops = sorted({c["op"] for c in cells})
    sized = [o for o in ops if o != "barrier"]
    out = []
    if sized:
        out.append(("sized", ",".join(f"{o}:native" for o in sized),
                    sorted({int(c["bytes"]) for c in cells if c["op"] != "barrier"})))
    if "barrier" in ops:
        out.append(("barrier", "barrier:native", [0]))
    return out


def measure(choice: dict[str, Any], np: int, mpi: str, file: str, d: Path, pairs: int,
            budget: str, timeout: float,
            log: Callable[[str], None] = lambda s: None,
            testbed: str | None = None, extra: list[str] | None = None,
            max_reps: int | None = None, min_samples: int | None = None
            ) -> list[dict[str, Any]]:
    """Pairs of launches with and without `file` (resumable: a launch file already in d is
    kept), then `compare`. `testbed`: a testbed's prefix, the launches run inside it;
    `extra`: launcher arguments of every launch (both sides); `max_reps`: the runner's cap;
    `min_samples`: the budget ends no measurement before this many samples."""
    cells = [c for c in choice["cells"] if int(c["np"]) == np and c["winner"]]
    if not cells:
        raise MpilabError(f"the choice has no cell for {np} ranks")
    d.mkdir(parents=True, exist_ok=True)
    d = d.resolve()  # the ranks write the launch files (from the node namespaces on a testbed)
    series = _series(cells)
    for k in range(1, pairs + 1):
        order = ("rules", "default") if k % 2 else ("default", "rules")
        for name, opl, sizes in series:
            for label in order:
                f = d / f"{name}.{label}.{k}.json"
                if f.is_file():
                    continue
                t0 = time.monotonic()
                rc = one_launch(np, opl, sizes, budget, mpi,
                                file if label == "rules" else None, f, timeout, testbed,
                                extra, max_reps, min_samples)
                log(f"pair {k} {name} {label}: exit {rc}, {time.monotonic() - t0:.0f} s")
                if rc != 0:
                    raise MpilabError(f"validate: a launch failed (exit {rc}; log "
                                      f"{f.with_suffix('.log')})")
    docs: dict[str, list[dict[str, Any]]] = {"rules": [], "default": []}
    for label in docs:
        for k in range(1, pairs + 1):
            parts = [json.loads((d / f"{n}.{label}.{k}.json").read_text(encoding="utf-8"))
                     for n, _, _ in series]
            docs[label].append({"measurements": [m for x in parts for m in x["measurements"]],
                                "provenance": parts[0]["provenance"]})
    return compare(choice, np, docs["rules"], docs["default"])


def _peer_launch(mpi: str) -> Any:
    """The real launcher for an unmodified benchmark: the launcher of the MPI it is linked
    with, the file's arguments, the program."""
    from mpilab import launch

    def cmd(np: int, fargs: list[str], prog: list[str]) -> list[str]:
        lr = launch.choose(prog[0])
        if lr.mpi != mpi:
            raise MpilabError(f"--with: {prog[0]} is linked with {lr.mpi}, the file is for "
                              f"{mpi}")
        return lr.command(np) + fargs + prog
    return cmd


def measure_peer(choice: dict[str, Any], np: int, mpi: str, file: str, d: Path, pairs: int,
                 bench: peer.Peer, timeout: float, budget_s: float = 15.0,
                 log: Callable[[str], None] = lambda s: None,
                 launch: peer.Launch | None = None) -> list[dict[str, Any]]:
    """Pairs of launches of an unmodified benchmark with and without `file` (peer_figures),
    judged by `decide` (the confirmation's family-wise verdict)."""
    cells = [c for c in choice["cells"] if int(c["np"]) == np and c["winner"]]
    per = peer_figures(choice, np, mpi, file, d, pairs, bench, timeout, budget_s, log, launch)
    return decide(cells, per, float(choice.get("min_effect") or stats.MIN_EFFECT))


def decide(cells: list[dict[str, Any]], per: confirm.Figures,
           min_effect: float = stats.MIN_EFFECT) -> list[dict[str, Any]]:
    """One row per cell with the confirmation's family-wise verdict (mpilab.tune.confirm:
    one figure per launch, the signed-rank test on the per-pair log ratios, a LOSS by Holm
    over every cell and beyond the minimum effect, a GAIN by Holm over the cells the file
    gives an algorithm): the one statistic validate keeps, drops and judges a file by, and
    the one the file is confirmed by afterwards. `decidable`: the pairs can reach
    family-wise significance over these cells at all."""
    listed = {(c["op"], int(c["bytes"])) for c in cells if c["winner"] != DEFAULT}
    fw = confirm.verdicts({(c["op"], int(c["bytes"])): per[(c["op"], int(c["bytes"]))]
                           for c in cells}, listed, min_effect)
    by = {(r["op"], r["bytes"]): r for r in fw["rows"]}
    rows = []
    for c in cells:
        v = by[(c["op"], int(c["bytes"]))]
        rows.append({"op": c["op"], "np": int(c["np"]), "bytes": int(c["bytes"]),
                     "winner": c["winner"], "sweep_ratio": c.get("ratio"),
                     "comparison": v["comparison"], "verdict": v["verdict"],
                     "per_cell": v["per_cell"], "decidable": fw["outcome"] != "UNDECIDED"})
    return rows


def peer_figures(choice: dict[str, Any], np: int, mpi: str, file: str, d: Path, pairs: int,
                 bench: peer.Peer, timeout: float, budget_s: float = 15.0,
                 log: Callable[[str], None] = lambda s: None,
                 launch: peer.Launch | None = None
                 ) -> dict[tuple[str, int], tuple[list[float], list[float]]]:
    """Pairs of launches of an unmodified benchmark with and without `file` (ABBA order,
    resumable: a launch's figures already in d are kept); per cell of the choice on np ranks
    (op, bytes) -> (the default's figures, the file's), pair by pair (pairs where both
    launches gave the cell)."""
    import os

    from mpilab import launch as launch_mod
    from mpilab.fsutil import atomic_write_text

    cells = [c for c in choice["cells"] if int(c["np"]) == np and c["winner"]]
    if not cells:
        raise MpilabError(f"the choice has no cell for {np} ranks")
    ops = sorted({c["op"] for c in cells})
    sizes = sorted({int(c["bytes"]) for c in cells})
    peer.check_ops(bench, ops)
    lf = launch or _peer_launch(mpi)
    seconds = max(0.05, min(10.0, budget_s / len(cells)))  # IMB's -time: per size
    d.mkdir(parents=True, exist_ok=True)
    figs: dict[str, list[peer.Figures]] = {"rules": [], "default": []}
    for k in range(1, pairs + 1):
        for label in (("rules", "default") if k % 2 else ("default", "rules")):
            f = d / f"peer.{label}.{k}.json"
            if not f.is_file():
                got: peer.Figures = {}
                fargs = file_args(mpi, file if label == "rules" else None)
                for cmd in peer.commands(bench, np, ops, sizes, fargs, lf, d / "msglen.txt",
                                         seconds):
                    out = f.with_suffix(".log")
                    out.unlink(missing_ok=True)
                    env = dict(os.environ)
                    if launch is None:
                        env = launch_mod.choose(cmd[-1] if bench.kind == "osu" else
                                                bench.path).env(np)
                    rc = sweep.run_logged(cmd, env, timeout, out)
                    if rc != 0:
                        raise MpilabError(f"validate: {bench.describe()} failed (exit {rc}; "
                                          f"log {out})")
                    text = out.read_text(encoding="utf-8", errors="replace")
                    if bench.kind == "imb":
                        got.update(peer.parse_imb(text, np))
                    else:
                        op = next(o for o in ops if peer.OSU_NAMES[o] in " ".join(cmd))
                        got.update(peer.parse_osu(text, op))
                atomic_write_text(f, json.dumps([[o, b, t] for (o, b), t in got.items()]))
                log(f"pair {k} {label} ({bench.describe()}): {len(got)} figures")
            figs[label].append({(o, int(b)): float(t) for o, b, t in
                                json.loads(f.read_text(encoding="utf-8"))})
    per = {}
    for c in cells:
        key = (c["op"], int(c["bytes"]))
        both = [(dd[key], rr[key]) for dd, rr in zip(figs["default"], figs["rules"], strict=True)
                if key in dd and key in rr]
        per[key] = ([x for x, _ in both], [y for _, y in both])
    return per


def compare(choice: dict[str, Any], np: int, rules: list[dict[str, Any]],
            default: list[dict[str, Any]], min_effect: float | None = None
            ) -> list[dict[str, Any]]:
    """Per cell of the choice: with the file against without, paired by launch pair
    (rules[k] and default[k] from pair k), one figure per launch (the median of its
    samples), judged by `decide` as an unmodified benchmark's figures are."""
    tr = [choose.table([d]) for d in rules]
    td = [choose.table([d]) for d in default]
    cells = [c for c in choice["cells"] if int(c["np"]) == np and c["winner"]]
    per: confirm.Figures = {}
    for c in cells:
        key = (c["op"], np, int(c["bytes"]))
        both = [(statistics.median(a), statistics.median(b)) for a, b in
                ((x.get(key, {}).get(DEFAULT, [[]])[0], y.get(key, {}).get(DEFAULT, [[]])[0])
                 for x, y in zip(td, tr, strict=True)) if a and b]
        per[(c["op"], int(c["bytes"]))] = ([x for x, _ in both], [y for _, y in both])
    me = min_effect if min_effect is not None else float(choice.get("min_effect")
                                                         or stats.MIN_EFFECT)
    return decide(cells, per, me)


def costly(r: dict[str, Any]) -> bool:
    """A cell kept at the default that the file made slower (family-wise LOSS, `decide`), so
    that the collective leaves the file. A per-cell test took every collective out of MPICH's
    2-rank file: loaded, MPICH's own selection tree as a file and the export's gaps ran the
    same algorithm as without a file (docs/tune.md)."""
    return r["winner"] == DEFAULT and r["verdict"] == "LOSS"


def prune(choice: dict[str, Any], rows: list[dict[str, Any]], np: int
          ) -> tuple[dict[str, Any], list[str]]:
    """The choice with what did not pay off through the file set back to the default (see
    the module's text), and one line per change."""
    out = copy.deepcopy(choice)
    by = {(r["op"], r["bytes"]): r for r in rows}
    in_file = {r["op"] for r in rows if r["winner"] != DEFAULT}
    costs = sorted({r["op"] for r in rows if r["op"] in in_file and costly(r)})
    notes = []
    for op in costs:
        where = [f"{r['bytes']} B x{r['comparison']['ratio']:.3f}" for r in rows
                 if r["op"] == op and costly(r)]
        notes.append(f"{op}: left out of the file (cells kept at the default ran slower "
                     f"with it: {', '.join(where)})")
    for c in out["cells"]:
        if int(c["np"]) != np or c["winner"] in (DEFAULT, ""):
            continue
        r = by.get((c["op"], int(c["bytes"])))
        why = None
        if c["op"] in costs:
            why = None  # said once per collective above
        elif r is None:
            why = "not measured through the file"
        elif r["verdict"] != "GAIN":
            ratio = r["comparison"].get("ratio")
            what = "slower" if r["verdict"] == "LOSS" else "no family-wise gain"
            why = (f"{what} through the file (x{ratio:.3f})" if ratio is not None
                   else "no comparison")
        if c["op"] in costs or why:
            if why:
                notes.append(f"{c['op']} {c['bytes']} B: {c['winner']} back to the default "
                             f"({why})")
            c["validated"] = {"was": c["winner"], "reason": why or "collective left out"}
            c["winner"], c["ratio"], c["lo"], c["hi"] = DEFAULT, 1.0, 1.0, 1.0
    regroup(out)
    return out, notes


def regroup(choice: dict[str, Any]) -> None:
    """The choice's ranges rebuilt from its cells (after pruning)."""
    groups: dict[tuple[str, int], list[choose.Cell]] = {}
    for c in choice["cells"]:
        if c["winner"]:
            groups.setdefault((c["op"], int(c["np"])), []).append(
                choose.Cell(c["op"], int(c["np"]), int(c["bytes"]), c["winner"]))
    choice["ranges"] = [{"op": op, "np": np, "ranges": choose.ranges(cs)}
                        for (op, np), cs in sorted(groups.items())]


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def line(r: dict[str, Any]) -> str:
        c = r["comparison"]
        iv = f" [{c['lo']:.3f}, {c['hi']:.3f}]" if c.get("lo") is not None else ""
        ra = f"x{c['ratio']:.3f}" if c.get("ratio") is not None else "x-"
        return f"{r['op']} {r['bytes']} B {r['winner']} {ra}{iv}"
    return {"cells": len(rows),
            "gains": [line(r) for r in rows if r["verdict"] == "GAIN"],
            "losses": [line(r) for r in rows if r["verdict"] == "LOSS"],
            "per_cell_losses": sum(r["per_cell"] == "LOSS" for r in rows)}


def tuned(choice: dict[str, Any], np: int) -> bool:
    return any(int(c["np"]) == np and c["winner"] not in (DEFAULT, "") for c in choice["cells"])


def run(choice: dict[str, Any], np: int, mpi: str, d: Path, pairs: int, budget: str,
        timeout: float, rounds: int, export: Callable[[dict[str, Any], Path], None],
        log: Callable[[str], None] = lambda s: sys.stderr.write(s + "\n"),
        testbed: str | None = None, extra: list[str] | None = None,
        max_reps: int | None = None, min_samples: int | None = None,
        bench: peer.Peer | None = None) -> dict[str, Any]:
    """Rounds of measure and prune (measured by mpilab-bench, or by the unmodified
    benchmark `bench`: measure_peer); `export(choice, path)` writes a choice's file. Returns
    the report: rounds (each with its file, notes, summary, rows), the last measured file
    and choice (`final_file`, `final_choice`), and `validated`: that file's own measurement
    found no family-wise loss. With nothing left to tune, `final_file` is None: the library's
    default is the result."""
    report: dict[str, Any] = {"np": np, "mpi": mpi, "pairs": pairs, "budget": budget,
                              "benchmark": bench.describe() if bench else "mpilab-bench",
                              "min_samples": min_samples,
                              "rounds": [], "final_file": None, "final_choice": choice}
    cur = choice
    for r in range(1, rounds + 1):
        if not tuned(cur, np):
            log(f"validate round {r}: nothing left that beats the default; no file")
            report.update(final_file=None, final_choice=cur)
            break
        f = d / f"round{r}.{'conf' if mpi == 'openmpi' else 'json'}"
        if not f.is_file():
            export(cur, f)
        log(f"validate round {r}: {f}")
        if bench is not None:
            rows = measure_peer(cur, np, mpi, str(f.resolve()), d / f"round{r}", pairs, bench,
                                timeout, units.parse_duration(budget), log)
        else:
            rows = measure(cur, np, mpi, str(f.resolve()), d / f"round{r}", pairs, budget,
                           timeout, log, testbed, extra, max_reps, min_samples)
        nxt, notes = prune(cur, rows, np)
        report["rounds"].append({"round": r, "file": str(f), "notes": notes,
                                 "summary": summary(rows), "rows": rows})
        report.update(final_file=str(f), final_choice=cur)
        for n in notes:
            log(f"  {n}")
        if not notes:
            break
        cur = nxt
    last = report["rounds"][-1] if report["rounds"] else None
    # the family-wise verdict needs enough pairs for its family (mpilab.tune.confirm)
    decidable = last is None or all(r["decidable"] for r in last["rows"])
    if not decidable:
        log(f"validate: {pairs} pairs cannot reach family-wise significance over "
            f"{len(last['rows']) if last else 0} cells (need "
            f"{confirm.pairs_needed(len(last['rows']) if last else 0)}): not validated")
    report["decidable"] = decidable
    # the rounds ran out while the last one still pruned: the file measured holds rules that
    # round found without gain, and the pruned file was never measured
    pending = list(last["notes"]) if last is not None and report["final_file"] is not None \
        else []
    if pending:
        log(f"validate: the round limit ({rounds}) was reached with {len(pending)} rule "
            "change(s) still unmeasured: not validated (more --rounds)")
    report["pending"] = pending
    report["validated"] = report["final_file"] is None or \
        (last is not None and not last["summary"]["losses"] and decidable and not pending)
    return report
