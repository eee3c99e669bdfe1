"""`mpilab tune sweep|choose|export|verify` (docs/tune.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mpilab import argtypes, units
from mpilab.errors import MpilabError, no_action

CHOICE_SCHEMA = "mpilab.tune-choice/1"
CHOICE_SCHEMA_FILE = "tune-choice-1.schema.json"


def _ints(text: str, what: str) -> list[int]:
    try:
        vals = [units.parse_int(x) for x in text.split(",")]
    except (ValueError, MpilabError):
        raise MpilabError(f"{what}: '{text}' is not a comma list of counts") from None
    if not vals or any(v < 1 for v in vals):
        raise MpilabError(f"{what}: '{text}': every value must be at least 1")
    return sorted(set(vals))


def _sizes(text: str) -> list[int]:
    try:
        out = sorted({int(units.parse_size(x)) for x in text.split(",")})
    except (ValueError, MpilabError):
        raise MpilabError(f"--sizes: '{text}' is not a comma list of sizes (4,1K,64K)") from None
    if not out or out[0] < 1:
        raise MpilabError("--sizes: sizes must be at least 1 byte")
    return out


def _colls(text: str) -> list[str]:
    from mpilab.tune.algorithms import COLLS

    out = [c for c in text.split(",") if c]
    bad = [c for c in out if c not in COLLS]
    if bad or not out:
        raise MpilabError(f"--colls: unknown collective '{(bad or [text])[0]}' (known: "
                          f"{', '.join(COLLS)})")
    return out


def _testbed(prefix: str) -> str:
    """A running testbed's prefix (checked before anything is measured), or one line."""
    from mpilab.testbed import net

    net.current_spec(prefix)  # one line when no such testbed is up
    return prefix


def _min_samples(args: argparse.Namespace) -> int | None:
    """--min-samples, checked against --max-reps (the cap still ends a measurement)."""
    n = args.min_samples
    if n is not None and args.max_reps is not None and n > args.max_reps:
        raise MpilabError(f"--min-samples {n} is greater than --max-reps {args.max_reps}")
    return n


def _interrupt(_sig: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _sweep(args: argparse.Namespace) -> int:
    import signal

    from mpilab.tune import sweep

    # a bench slot ends the sweep with SIGTERM: the launch running is stopped (its process
    # group killed) and the state already saved lets the same command continue later
    signal.signal(signal.SIGTERM, _interrupt)

    if not 0 <= args.min_effect < 1:
        raise MpilabError(f"--min-effect {args.min_effect}: need 0 <= x < 1")
    d = Path(args.dir)
    if (d.exists() or d.is_symlink()) and not d.is_dir():
        raise MpilabError(f"--dir {args.dir}: not a directory (a sweep directory holds "
                          "state.json and the launches' files)")
    nps, colls, sizes = _ints(args.np, "--np"), _colls(args.colls), _sizes(args.sizes)
    cfg = {"launches": args.launches, "budget": args.budget, "timeout": args.timeout,
           "min_effect": args.min_effect, "quiet": args.quiet}
    if args.testbed is not None:
        cfg["testbed"] = _testbed(args.testbed)
    if args.mpich_yield:
        cfg["mpich_yield"] = True
    if args.max_reps is not None:
        cfg["max_reps"] = args.max_reps
    if args.min_samples is not None:
        cfg["min_samples"] = _min_samples(args)
    files = sweep.sweep(d, nps, colls, sizes, cfg, args.rounds)
    sys.stdout.write("\n".join(str(f) for f in files) + "\n")
    return 0


def _load_docs(paths: list[str]) -> list[dict[str, Any]]:
    from mpilab import results, samples_file

    docs = []
    for p in paths:
        results.load(p)  # validated: one line on a bad or truncated file
        # a compact file's samples back from its archive: the choice tests them
        docs.append(samples_file.attach(results.read_raw(p), p))
    return docs


def choice_doc(docs: list[dict[str, Any]], paths: list[str], min_effect: float
               ) -> dict[str, Any]:
    from mpilab.tune import choose

    # a cell without the default measured cannot be decided against it: left out
    cells = [c for c in choose.choose_all(docs, min_effect) if c.winner]
    groups: dict[tuple[str, int], list[choose.Cell]] = {}
    for c in cells:
        groups.setdefault((c.op, c.np), []).append(c)
    mpi = str((docs[0].get("provenance") or {}).get("mpi", "")) if docs else ""
    return {"schema": CHOICE_SCHEMA, "source": ", ".join(paths), "mpi": mpi,
            "min_effect": min_effect,
            "test": ("paired by launch: moderated t test (0.05) on the per-launch log ratios "
                     "of the launch medians (variance shrunk towards the candidate's at the "
                     "collective's other sizes), 95% interval entirely below 1, gain at least "
                     "min_effect; else the default"),
            "cells": [c.as_json() for c in cells],
            "ranges": [{"op": op, "np": np, "ranges": choose.ranges(cs)}
                       for (op, np), cs in sorted(groups.items())]}


def _choose(args: argparse.Namespace) -> int:
    from mpilab.fsutil import atomic_write_text, check_output

    paths = list(args.results)
    if args.dir:
        paths += sorted(str(p) for p in Path(args.dir).glob("np*-*.json")
                        if ".launch" not in p.name)
    if not paths:
        raise MpilabError("choose: give results files or --dir of a sweep")
    check_output(args.out)
    doc = choice_doc(_load_docs(paths), paths, args.min_effect)
    atomic_write_text(args.out, json.dumps(doc, indent=1) + "\n")
    for r in doc["ranges"]:
        parts = [f"{x['from']}..{x['to']}: {x['winner']}" for x in r["ranges"]]
        sys.stdout.write(f"{r['op']:<10} {r['np']:>3} ranks  " + "; ".join(parts) + "\n")
    wins = [c for c in doc["cells"] if c["winner"] not in ("native", "")]
    for c in wins:
        sys.stdout.write(f"  {c['op']} {c['np']} ranks {c['bytes']} B: {c['winner']} "
                         f"x{c['ratio']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}] of the default\n")
    sys.stdout.write(f"choice: {args.out} ({len(wins)} of {len(doc['cells'])} cells beat the "
                     "default significantly)\n")
    return 0


def load_choice(path: str) -> dict[str, Any]:
    """A choice file, checked against schemas/tune-choice-1.schema.json (types and ranges
    of every number) and then for what a schema cannot say: per collective and
    communicator size, ranges in increasing order, each from <= to, none overlapping the
    one before; no collective and communicator size twice. One line naming the file."""
    from mpilab import documents
    from mpilab.strict_json import located

    name = str(path)
    doc: dict[str, Any] = documents.load(path, "choice file", CHOICE_SCHEMA_FILE)
    text = Path(path).read_text(encoding="utf-8")
    seen: dict[tuple[str, int], int] = {}
    for k, r in enumerate(doc["ranges"]):
        key = (r["op"], r["np"])
        if key in seen:
            raise located(name, text, ("ranges", k), f"{r['op']} at {r['np']} ranks again "
                          f"(already ranges[{seen[key]}]); one entry per collective and "
                          "communicator size")
        seen[key] = k
        for j, x in enumerate(r["ranges"]):
            if x["from"] > x["to"]:
                raise located(name, text, ("ranges", k, "ranges", j),
                              f"from {x['from']} is above to {x['to']}")
            if j and x["from"] <= r["ranges"][j - 1]["to"]:
                raise located(name, text, ("ranges", k, "ranges", j, "from"),
                              f"{x['from']} is not above the range before it (to "
                              f"{r['ranges'][j - 1]['to']}); ranges must increase")
    return doc


def check_library(choice: dict[str, Any], path: str, lib: str) -> None:
    """Refuse writing a choice made on one MPI library (its winners ompi_* or mpich_*) as
    the other library's file: its algorithms do not exist there."""
    other = "mpich_" if lib == "openmpi" else "ompi_"
    made = "MPICH" if lib == "openmpi" else "Open MPI"
    mpi = choice.get("mpi")
    if isinstance(mpi, str) and made.lower() in mpi.lower():
        want = "Open MPI rules (--openmpi)" if lib == "openmpi" else \
            "an MPICH selection file (--mpich)"
        raise MpilabError(f"{path}: mpi: a choice made on {mpi} cannot be exported as {want}")
    for r in choice["ranges"]:
        for x in r["ranges"]:
            if x["winner"].startswith(other):
                want = "Open MPI rules (--openmpi)" if lib == "openmpi" else \
                    "an MPICH selection file (--mpich)"
                raise MpilabError(f"{path}: {r['op']} at {r['np']} ranks chose {x['winner']}, "
                                  f"an algorithm of {made}: a choice made on {made} cannot "
                                  f"be exported as {want}")


def ompi_defaults(choice: dict[str, Any], nps: list[int] | None = None
                  ) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """The fixed decision's steps (mpilab.tune.verify.ompi_default_steps) for every collective
    the exported file names, at each communicator size of the choice (or `nps`), probed up to
    the choice's largest size."""
    from mpilab.tune import algorithms, export, verify

    algs = algorithms.ompi_algorithms()
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    ranges = export.tuned_ranges(choice)
    for np in sorted({int(r["np"]) for r in ranges} if nps is None else set(nps)):
        ops = sorted({r["op"] for r in ranges if int(r["np"]) == np})
        top = max([int(c["bytes"]) for c in choice["cells"] if int(c["np"]) == np] + [4])
        if ops:
            out.update(verify.ompi_default_steps(np, ops, algs, 1 << (top - 1).bit_length()))
    return out


def _export(args: argparse.Namespace) -> int:
    from mpilab.fsutil import atomic_write_text, check_output
    from mpilab.tools import find_tool
    from mpilab.tune import algorithms, export

    if not args.openmpi and not args.mpich:
        raise MpilabError("export: give --openmpi FILE and/or --mpich FILE")
    choice = load_choice(args.choice)
    for out in (args.openmpi, args.mpich):
        if out:
            check_output(out)
    if args.explicit_default and not args.openmpi:
        raise MpilabError("export: --explicit-default is for the Open MPI file (--openmpi)")
    if args.openmpi:
        check_library(choice, args.choice, "openmpi")
    if args.mpich:
        check_library(choice, args.choice, "mpich")
    if args.openmpi:
        dflt = ompi_defaults(choice) if args.explicit_default else None
        text = export.ompi_rules(choice, algorithms.ompi_algorithms(), dflt)
        atomic_write_text(args.openmpi, text)
        sys.stdout.write(f"Open MPI rules: {args.openmpi} (mpirun --mca "
                         "coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename "
                         f"{args.openmpi})\n")
    if args.mpich:
        lib = args.mpich_library or str(algorithms.mpich_library(
            find_tool("mpilab-bench")))
        tree, names = algorithms.mpich_selection(lib)
        doc = export.mpich_json(choice, tree, names)
        atomic_write_text(args.mpich, json.dumps(doc, indent=1) + "\n")
        sys.stdout.write(f"MPICH selection: {args.mpich} "
                         f"(MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={args.mpich})\n")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from mpilab import launch
    from mpilab.tools import find_tool
    from mpilab.tune import verify

    choice = load_choice(args.choice)
    if not Path(args.file).is_file():
        raise MpilabError(f"{args.file}: no such file")
    mpi = launch.program_mpi(find_tool("mpilab-bench")) or "openmpi"
    rows = verify.verify(choice, args.np, mpi, str(Path(args.file).resolve()))
    proven = sum(r["proven"] for r in rows)
    changed = sum(r["proven"] and r["changed"] for r in rows)
    for r in rows:
        sys.stdout.write(f"{r['op']:<10} {r['bytes']:>8} B  chosen {r['winner']:<28} ran "
                         f"{r['with_file'] or '?':<28} forced {r['expected'] or '?':<28} "
                         f"default {r['default'] or '?':<24} "
                         f"{'PROVEN' if r['proven'] else 'NOT PROVEN'}"
                         f"{' (differs from the default)' if r['changed'] else ''}\n")
    sys.stdout.write(f"verify: {proven} of {len(rows)} cells ran the chosen algorithm with "
                     f"{args.file}; {changed} of them differ from the default's\n")
    return 0 if proven == len(rows) else 1


def _exporter(mpi: str, mpich_library: str | None,
              defaults: dict[tuple[str, int], list[tuple[int, int]]] | None = None) -> Any:
    """export(choice, path): the file of a choice for the library mpilab-bench runs on."""
    from mpilab.fsutil import atomic_write_text
    from mpilab.tools import find_tool
    from mpilab.tune import algorithms, export

    if mpi == "openmpi":
        algs = algorithms.ompi_algorithms()
        return lambda ch, path: atomic_write_text(str(path),
                                                  export.ompi_rules(ch, algs, defaults))
    lib = mpich_library or str(algorithms.mpich_library(find_tool("mpilab-bench")))
    tree, names = algorithms.mpich_selection(lib)
    return lambda ch, path: atomic_write_text(
        str(path), json.dumps(export.mpich_json(ch, tree, names), indent=1) + "\n")


def _validate(args: argparse.Namespace) -> int:
    import shutil
    import signal

    from mpilab import launch
    from mpilab.fsutil import atomic_write_text, check_output
    from mpilab.tools import find_tool
    from mpilab.tune import validate

    signal.signal(signal.SIGTERM, _interrupt)
    choice = load_choice(args.choice)
    if args.rounds < 1 or args.pairs < 2:
        raise MpilabError("validate: --rounds must be at least 1 and --pairs at least 2")
    try:
        units.parse_duration(args.budget)
    except (ValueError, MpilabError):
        raise MpilabError(f"--budget: '{args.budget}' is not a duration (15s)") from None
    min_samples = _min_samples(args)
    check_output(args.out)
    if args.out_choice:
        check_output(args.out_choice)
    mpi = launch.program_mpi(find_tool("mpilab-bench")) or "openmpi"
    if not validate.tuned(choice, args.np) and not any(
            int(c["np"]) == args.np for c in choice["cells"]):
        raise MpilabError(f"{args.choice}: no cell for {args.np} ranks")
    if args.explicit_default and mpi != "openmpi":
        raise MpilabError("validate: --explicit-default is for Open MPI's rules file")
    testbed = _testbed(args.testbed) if args.testbed is not None else None
    if args.explicit_default and testbed is not None:
        raise MpilabError("validate: --explicit-default probes the default on shared memory; "
                          "not with --testbed")
    if args.mpich_yield and mpi != "mpich":
        raise MpilabError("--mpich-yield: mpilab-bench is not linked with MPICH "
                          "(mpilab --mpi mpich tune ...)")
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    dflt = ompi_defaults(choice, [args.np]) if args.explicit_default else None
    extra = None
    if args.mpich_yield:
        from mpilab.tune.sweep import mpich_yield_args

        extra = mpich_yield_args(testbed)
    from mpilab.tune import peer

    bench = peer.find(args.with_)
    if bench is not None and (testbed is not None or args.mpich_yield):
        raise MpilabError("validate: --with an unmodified benchmark runs on this machine "
                          "only (not with --testbed or --mpich-yield)")
    if bench is not None:
        sys.stdout.write(f"validate: measured with {bench.describe()}\n")
    rep = validate.run(choice, args.np, mpi, d, args.pairs, args.budget, args.timeout,
                       args.rounds, _exporter(mpi, args.mpich_library, dflt),
                       testbed=testbed, extra=extra, max_reps=args.max_reps,
                       min_samples=min_samples, bench=bench)
    atomic_write_text(str(d / "validate.json"), json.dumps(rep, indent=1) + "\n")
    for rd in rep["rounds"]:
        s = rd["summary"]
        sys.stdout.write(f"round {rd['round']} ({rd['file']}, {args.pairs} pairs of launches, "
                         f"{s['cells']} cells): family-wise (Holm) {len(s['gains'])} gains, "
                         f"{len(s['losses'])} losses; per cell {s['per_cell_losses']} "
                         "losses\n")
        for g in s["gains"]:
            sys.stdout.write(f"  gain: {g}\n")
        for g in s["losses"]:
            sys.stdout.write(f"  LOSS: {g}\n")
        for n in rd["notes"]:
            sys.stdout.write(f"  pruned: {n}\n")
    if args.out_choice:
        atomic_write_text(args.out_choice, json.dumps(rep["final_choice"], indent=1) + "\n")
    if rep["final_file"] is None:
        sys.stdout.write("validate: nothing beats the default through a file: no file "
                         f"written to {args.out} (keep the library's default)\n")
        return 0
    if not rep["validated"]:
        why = (f"cannot be decided with {args.pairs} pairs (too few for its cells: more "
               "--pairs)" if not rep.get("decidable", True) else
               "holds rules its round found without gain, and the pruned file was not "
               "measured (more --rounds)" if rep.get("pending") else
               "still loses family-wise")
        sys.stdout.write(f"validate: the last file measured ({rep['final_file']}) {why}; "
                         f"nothing written to {args.out}\n")
        return 1
    tmp = f"{args.out}.part"
    shutil.copyfile(rep["final_file"], tmp)
    Path(tmp).replace(args.out)
    sys.stdout.write(f"validate: {args.out} = {rep['final_file']}: measured against the "
                     "default with no family-wise loss\n")
    return 0


def _where(p: argparse.ArgumentParser) -> None:
    """Where and how the launches run: sweep's and validate's options alike."""
    p.add_argument("--testbed", metavar="PREFIX", type=argtypes.testbed_prefix,
                   help="run the launches inside this emulated testbed (mpilab testbed up)")
    p.add_argument("--mpich-yield", action="store_true",
                   help="MPICH: preload libmpilab_ucx_yield.so, waiting ranks yield their CPU "
                        "(more ranks than cores; not MPICH as shipped: docs/tune.md)")
    p.add_argument("--max-reps", type=argtypes.positive, metavar="N",
                   help="at most N repetitions per measurement (the runner's --max-reps; "
                        "where ranks share CPUs, docs/tune.md)")
    p.add_argument("--min-samples", type=argtypes.positive, metavar="N",
                   help="the time budget ends no measurement before N samples (the runner's "
                        "--budget-floor; the choice's test needs 6 a side per launch)")


def register(sub: Any) -> None:
    p = sub.add_parser("tune", help="tune the MPI library's collectives (docs/tune.md)")
    s = p.add_subparsers(dest="tune_command", metavar="ACTION")
    p.set_defaults(func=no_action("tune"))
    sw = s.add_parser("sweep", help="measure every algorithm the MPI library offers")
    sw.add_argument("--dir", required=True, type=argtypes.out_dir,
                    help="sweep directory (state.json: resumable)")
    sw.add_argument("--np", default="2", help="communicator sizes, comma list (default 2)")
    sw.add_argument("--colls", default="bcast,allreduce,reduce,allgather,alltoall,gather,"
                    "scatter,barrier", help="collectives (default: all eight)")
    sw.add_argument("--sizes", default="4,32,256,2K,16K,128K,1M",
                    help="first grid of sizes in bytes (default 4,32,256,2K,16K,128K,1M)")
    sw.add_argument("--launches", type=argtypes.positive, default=3,
                    help="launches per measurement (default 3)")
    sw.add_argument("--budget", type=argtypes.seconds, default=60.0,
                    help="seconds of samples per launch (default 60)")
    sw.add_argument("--rounds", type=argtypes.count, default=2,
                    help="rounds of extra sizes where the winner changes (default 2)")
    sw.add_argument("--min-effect", type=argtypes.fraction, default=0.05,
                    help="smallest gain that counts, as a fraction (default 0.05)")
    sw.add_argument("--timeout", type=argtypes.seconds, default=900.0,
                    help="seconds per launch")
    sw.add_argument("--quiet", action="store_true")
    _where(sw)
    sw.set_defaults(func=_sweep)
    ch = s.add_parser("choose", help="significance-tested winners per collective and size")
    ch.add_argument("results", nargs="*", help="results files (mpilab-bench --mpi-algorithms)")
    ch.add_argument("--dir", type=argtypes.nonempty, help="a sweep directory")
    ch.add_argument("--out", required=True, type=argtypes.nonempty, help="choice file (JSON)")
    ch.add_argument("--min-effect", type=argtypes.fraction, default=0.05)
    ch.set_defaults(func=_choose)
    ex = s.add_parser("export", help="write Open MPI rules / MPICH selection JSON")
    ex.add_argument("choice")
    ex.add_argument("--openmpi", metavar="FILE", type=argtypes.nonempty)
    ex.add_argument("--mpich", metavar="FILE", type=argtypes.nonempty)
    ex.add_argument("--explicit-default", action="store_true",
                    help="Open MPI: sizes kept at the default get the default's own algorithm "
                         "(probed from the library) instead of 0 (docs/tune.md)")
    ex.add_argument("--mpich-library", metavar="LIB",
                    help="the libmpich whose default selection to build on (default: the one "
                         "mpilab-bench is linked with)")
    ex.set_defaults(func=_export)
    ve = s.add_parser("verify", help="prove, without timing, that the library reads the file "
                                     "and runs the chosen algorithms")
    ve.add_argument("choice")
    ve.add_argument("file", help="the exported rules file or selection JSON")
    ve.add_argument("--np", type=argtypes.positive, default=2)
    ve.set_defaults(func=_verify)
    va = s.add_parser("validate", help="measure the exported file against the default, take "
                                       "out what loses, re-export and measure again")
    va.add_argument("choice")
    va.add_argument("--np", type=argtypes.positive, default=2)
    va.add_argument("--dir", required=True, type=argtypes.out_dir,
                    help="launches and round files (resumable)")
    va.add_argument("--out", required=True, help="the validated rules file / selection JSON")
    va.add_argument("--out-choice", help="the pruned choice (JSON)")
    va.add_argument("--pairs", type=argtypes.positive, default=12,
                    help="pairs of launches per round (12: the family-wise verdict can "
                         "decide up to 102 cells)")
    va.add_argument("--budget", default="15s", help="time budget per launch (15s)")
    va.add_argument("--rounds", type=argtypes.positive, default=3,
                    help="at most this many rounds (3)")
    va.add_argument("--timeout", type=argtypes.seconds, default=400.0,
                    help="seconds per launch")
    va.add_argument("--with", dest="with_", default="auto", metavar="BENCH",
                    help="the benchmark that confirms the file: imb, osu, mpilab, a path to "
                         "IMB-MPI1 or to OSU's folder, or auto (default: IMB-MPI1 on PATH, "
                         "else osu_bcast on PATH, else mpilab's own loop)")
    va.add_argument("--mpich-library", metavar="LIB")
    _where(va)
    va.add_argument("--explicit-default", action="store_true",
                    help="Open MPI: export with the default's own algorithm instead of 0")
    va.set_defaults(func=_validate)
