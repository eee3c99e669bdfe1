"""The cases of bench/hostile_inputs.py generated from the interfaces, not written by hand:

- every subcommand and option of `mpilab` (its argparse tree, walked): each option gets the
  mutations of its kind (a value: empty, -1, 1e30, not a number, NaN; a choice: an unknown
  one; a path: missing, a FIFO, a directory, /dev/full, /dev/zero, empty; a flag: given a
  value), each positional file the path mutations, and every command's --help is written
  to /dev/full and to a closed pipe;
- every C tool's options, read from its --help (and each subcommand's): the same mutations;
- every document kind (python/mpilab/schemas/*.json), read by the command that loads it:
  every field of a good document mutated (wrong type, missing, negative, huge, NaN, nested
  10^5 deep);
- every column of the history database (mpilab.history.db's schema), given a value that
  mpilab never writes, read by `history show` and `history check`.

A new option, subcommand, C tool or document kind is covered without a case written for it
(a schema without an entry in DOCUMENTS is an error, so a new kind cannot be forgotten).
Commands that would build an environment (a testbed, a disk, Slurm daemons) or run an MPI
job run with a prefix that is not up and with MPILAB_BIN naming an empty directory, so an
accepted mutation ends at the tool look-up rather than in a job.

ci_slice(): a fixed deterministic subset for the pytest suite.
A library of bench/ (hostile_inputs.py imports it), not a script."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import harness
from harness import BIN, REPO
from hostile_cases import PY, Case, Post, Setup, _good, _unmount_under, _write
from mpilab import schemacheck

SCHEMAS = REPO / "python" / "mpilab" / "schemas"
NOBIN = "/nonexistent/mpilab-hostile-bin"  # MPILAB_BIN: no MPI job can start
PREFIX = "zq9"  # a testbed/disk prefix that is never up
VALUE_MUTATIONS = {"empty": "", "-1": "-1", "1e30": "1e30", "not a number": "x!",
                   "NaN": "nan"}
PATH_WORDS = re.compile(r"file|out|dir|path|json|spec|data|coef|html|hostfile|log|pid|entries|"
                        r"results|documents|choice|inputs|result|initial|output|store|"
                        r"platform|stats|trace|backing|peers|control", re.I)


def _fifo(name: str) -> Setup:
    return lambda d: os.mkfifo(d / name)


def _mkdir(name: str) -> Setup:
    return lambda d: (d / name).mkdir(parents=True, exist_ok=True)


PATH_MUTATIONS: dict[str, tuple[str, Setup | None]] = {
    "missing": ("nosuch/x.json", None),
    "a FIFO": ("fifo.in", _fifo("fifo.in")),
    "a directory": ("adir", _mkdir("adir")),
    "/dev/full": ("/dev/full", None),
    "/dev/zero": ("/dev/zero", None),
    "empty": ("", None),
}


# an option that names a file to write: the output layer (docs/hardening.md) writes a
# character device directly and makes a missing folder, so those two mutations succeed by
# design; the missing folder's file must then exist (it was written, not ignored)
OUTPUT_OPTIONS = re.compile(r"^--(out|output|json|html|hostfile|stats|trace|pidfile|log|"
                            r"partial|rtt-log|out-choice)$")
DESIGN_OUTPUT = {"missing": "the output layer makes a missing folder",
                 "/dev/zero": "the output layer writes a character device directly"}


def _written(name: str) -> Post:
    return lambda d: None if (d / name).is_file() else f"{name} was not written"


def _by_design(c: Case, opt: str, label: str) -> Case:
    """Give c the documented outcome of its mutation, if it has one (see OUTPUT_OPTIONS;
    `slurm status` exits 1 with "not running" on stdout, docs/mpi-stacks.md)."""
    if OUTPUT_OPTIONS.match(opt) and label in DESIGN_OUTPUT:
        c.design_exit, c.design_why = 0, DESIGN_OUTPUT[label]
        if label == "missing":
            c.design_check = _written(PATH_MUTATIONS["missing"][0])
    elif "slurm" in c.name and "status" in c.argv:
        c.design_exit, c.design_stdout = 1, r"not running"
        c.design_why = "slurm status: exit 1 when Slurm is not running (docs/mpi-stacks.md)"
    return c


# ---------------------------------------------------------------------------------------
# the mpilab argparse tree

# base arguments that keep a command from acting on anything when a mutation is accepted
SAFE_BASE: dict[str, list[str]] = {
    "slurm": ["status", "--dir", "nosuch-slurm"],
    "pathmig auto": ["on"],
    "disk run": ["--", "true"],
    "testbed run": ["--", "true"],
    "multilane run": ["-o", "m.json"],
}
# commands left out of option mutations: an accepted value would build an environment that
# the mutated option does not stop (compare brings a testbed up by itself)
NOT_MUTATED = {"compare"}
BUILDS = ("testbed up", "disk up", "slurm")  # their specs/dirs must be missing by default


def _walk(p: argparse.ArgumentParser, path: list[str]
          ) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    yield path, p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield from _walk(sp, path + [name])


def _parser() -> argparse.ArgumentParser:
    from mpilab import cli

    return cli.build_parser()


def _options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in p._actions if not isinstance(
        a, (argparse._SubParsersAction, argparse._HelpAction, argparse._VersionAction))]


def _is_path(a: argparse.Action) -> bool:
    words = " ".join(map(str, (a.dest, a.metavar or "", *a.option_strings)))
    # a path option may have a type that checks its name (--db, --history): still a path
    return bool(PATH_WORDS.search(words)) and not a.choices and (
        a.type is None or getattr(a.type, "__name__", "") in ("path", "history"))


def _positionals(p: argparse.ArgumentParser, cmd: str) -> list[str]:
    """Placeholder positionals: a missing file for each (so nothing is read or built)."""
    out: list[str] = []
    for a in p._actions:
        if a.option_strings or isinstance(a, argparse._SubParsersAction):
            continue
        if a.nargs in ("?", "*", argparse.REMAINDER) and cmd not in BUILDS:
            continue
        if a.nargs == argparse.REMAINDER:
            continue
        out.append(a.choices and sorted(a.choices)[0] or f"missing-{a.dest}.json")
    return out


def _env() -> dict[str, str]:
    return {"MPILAB_BIN": NOBIN, "MPILAB_TESTBED_PREFIX": PREFIX,
            "MPILAB_TESTBED_STATE_ROOT": ".", "MPILAB_DISK_STATE_ROOT": ".",
            "MPILAB_VARIATION_STORE": "none"}


def cli_generated_cases() -> list[Case]:
    cases: list[Case] = []
    for path, p in _walk(_parser(), []):
        cmd = " ".join(path)
        named = f"mpilab {cmd}".strip()
        subs = any(isinstance(a, argparse._SubParsersAction) for a in p._actions)
        for mode in ("full", "closed"):
            cases.append(_case(f"G {named} --help > {mode}", PY + path + ["--help"],
                               stdout=mode))
        if subs and not _options(p) or cmd in NOT_MUTATED or not path:
            continue
        base = SAFE_BASE.get(cmd, [])
        pos = [] if base else _positionals(p, cmd)
        prefix = ["--prefix", PREFIX] if "--prefix" in p._option_string_actions else []
        for a in _options(p):
            if not a.option_strings:
                if a.nargs == argparse.REMAINDER or a.choices or base:
                    continue
                k = [x for x in p._actions if not x.option_strings
                     and not isinstance(x, argparse._SubParsersAction)].index(a)
                for label, (value, setup) in PATH_MUTATIONS.items():
                    argv = PY + path + prefix + pos[:k] + [value] + pos[k + 1:]
                    cases.append(_case(f"G mpilab {cmd} <{a.dest}> {label}", argv, setup))
                continue
            opt = a.option_strings[-1]
            if opt == "--prefix":
                muts: dict[str, tuple[str, Setup | None]] = {
                    "empty": ("", None), "a path": ("../x", None), "a newline": ("a\nb", None)}
            elif a.nargs == 0:
                muts = {"given a value": (f"{opt}=x", None)}
            elif a.choices:
                muts = {"an unknown choice": ("bogus", None), "empty": ("", None)}
            elif _is_path(a):
                muts = PATH_MUTATIONS
            else:
                muts = {k: (v, None) for k, v in VALUE_MUTATIONS.items()}
            rest = [x for x in prefix if opt != "--prefix"]
            for label, (value, setup) in muts.items():
                pair = [value] if a.nargs == 0 else [opt, value]
                argv = PY + path + rest + pair + pos + _without(base, opt)
                cases.append(_by_design(_case(f"G mpilab {cmd} {opt} {label}", argv, setup),
                                        opt, label))
    return cases


def _case(name: str, argv: list[str], setup: Setup | None = None, stdout: str = "pipe",
          post: Post | None = None, limit: float = 60.0, env: dict[str, str] | None = None
          ) -> Case:
    return Case(name, "G", argv, setup=setup, post=post, limit=limit, env=env or _env(),
                stdout=stdout, leftovers=True)


# ---------------------------------------------------------------------------------------
# the C tools: options read from their --help

C_BASE: dict[str, list[str]] = {  # arguments that make an accepted mutation end at once
    "mpilab-bench": ["--ops", "barrier", "--sizes", "0", "--max-reps", "5", "--quiet"],
    "mpilab-delayline": ["--dev", "zqnotun0", "--delay", "1ms"],
    "mpilab-pathmigd": ["--node", "zq", "--peers", "nosuch.peers"],
    "mpilab-pm-pingpong": ["--connect", "127.0.0.1:1", "--iters", "1"],
    "mpilab-seekfs": ["--backing", "nosuch-backing", "--size", "1M", "nosuch-mnt"],
    "mpilab-tb-pingpong": ["--count", "1"],
    "mpilab-multilane": ["--sites", "map:nosuch.map", "--no-model", "--lanes", "1"],
    "mpilab-wavefront create": ["--rows", "3", "--cols", "3", "nosuch/d", "nosuch/c"],
    "mpilab-wavefront convert": ["--layout", "block", "nosuch.in", "nosuch/out"],
    "mpilab-wavefront run": ["--data", "nosuch.d", "--coef", "nosuch.c", "--iterations", "1"],
    "mpilab-wavefront verify": ["--initial", "nosuch.d", "--coef", "nosuch.c",
                                "--iterations", "1", "nosuch.r"],
    "mpilab-wavefront bounds": ["--size", "4K", "--threads", "1"],
    "mpilab-selftest fit": ["--trials", "1"],
    "mpilab-selftest link": ["--sizes", "0", "--max-reps", "5"],
    "mpilab-selftest clock": ["--syncs", "1", "--inject", "none"],
}
_OPT = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)(?:(?:=| )(?=[A-Z]|[a-z0-9]+\|)(\S+))?")


def _help_of(argv: list[str]) -> str:
    p = subprocess.run(argv + ["--help"], capture_output=True, text=True, timeout=30,
                       env=harness.env())
    return p.stdout + p.stderr


def c_options(help_text: str) -> dict[str, bool]:
    """Each --option of a help text, and whether it takes a value (written `--opt VALUE`,
    `--opt=VALUE` or `--opt a|b`)."""
    opts: dict[str, bool] = {}
    for m in _OPT.finditer(help_text):
        opts[m.group(1)] = opts.get(m.group(1), False) or bool(m.group(2))
    opts.pop("--help", None)
    opts.pop("--version", None)
    return opts


def c_commands() -> list[tuple[list[str], str]]:
    """Each C tool, and each subcommand its usage lines name (TOOL WORD ...), with the part
    of the help text that describes it (a subcommand's: from its first line naming it to
    the next line naming another)."""
    out: list[tuple[list[str], str]] = []
    for tool in sorted(BIN.glob("mpilab-*")):
        text = _help_of([str(tool)])
        name = re.escape(tool.name)
        subs = sorted(set(re.findall(rf"{name} ([a-z]+)\b(?! \()", text)))
        if not subs:
            out.append(([str(tool)], text))
        for sub in subs:
            part, inside = [], False
            for ln in text.splitlines():
                m = re.search(rf"{name} ([a-z]+)\b", ln)
                if m:
                    inside = m.group(1) == sub
                if inside:
                    part.append(ln)
            out.append(([str(tool), sub], "\n".join(part)))
    return out


def c_generated_cases() -> list[Case]:
    cases: list[Case] = []
    for argv, help_text in c_commands():
        key = " ".join([Path(argv[0]).name, *argv[1:]])
        base = C_BASE.get(key, [])
        post = _unmount_under if "seekfs" in key else None
        for mode in ("full", "closed"):
            cases.append(_case(f"G {key} --help > {mode}", argv + ["--help"], stdout=mode,
                               env=harness.env()))
        for opt, takes in c_options(help_text).items():
            if not takes:
                muts: dict[str, tuple[str, Setup | None]] = {"given a value":
                                                             (f"{opt}=x", None)}
            elif PATH_WORDS.search(opt):
                muts = PATH_MUTATIONS
            else:
                muts = {k: (v, None) for k, v in VALUE_MUTATIONS.items()}
            rest = _without(base, opt)
            for label, (value, setup) in muts.items():
                pair = [value] if not takes else [opt, value]
                cases.append(_by_design(_case(f"G {key} {opt} {label}", argv + pair + rest,
                                              setup, post=post, limit=30, env=harness.env()),
                                        opt, label))
    return cases


def _without(base: list[str], opt: str) -> list[str]:
    out, skip = [], False
    for k, x in enumerate(base):
        if skip:
            skip = False
        elif x == opt:
            skip = k + 1 < len(base) and not base[k + 1].startswith("-")
        else:
            out.append(x)
    return out


# ---------------------------------------------------------------------------------------
# documents: every field of a good document of each kind, mutated

def ml_good() -> dict[str, Any]:
    run = {"op": "scatter", "impl": "single", "lanes": 1, "bytes": 1024, "times": [1e-3]}
    return {"schema": "mpilab.multilane/1", "root": 0,
            "grid": {"nranks": 4, "nsites": 2, "site_of_rank": [0, 0, 1, 1], "P_sup": 2},
            "runs": [run, dict(run, bytes=4096)]}


CHOICE: dict[str, Any] = {
    "schema": "mpilab.tune-choice/1", "source": "x", "mpi": "Open MPI 4.1.4",
    "min_effect": 0.05, "test": "t",
    "cells": [{"op": "bcast", "np": 2, "bytes": 1024, "winner": "ompi_binomial", "ratio": 0.5,
               "lo": 0.4, "hi": 0.6, "candidates": {}}],
    "ranges": [{"op": "bcast", "np": 2, "ranges": [
        {"winner": "ompi_binomial", "from": 1024, "to": 1024, "sizes": [1024]}]}]}


def _state_good() -> dict[str, Any]:
    from mpilab.testbed.spec import Spec

    return {"spec": Spec(prefix="zz").to_dict(), "key": "k", "created": 1.7e9,
            "delay_backend": "delayline", "netem_available": False, "delay_io": "tun"}


EVENTS_RUNNER = ("import sys\nfrom mpilab.testbed import net\nfrom mpilab.testbed.spec import "
                 "Spec\nnet.current_spec = lambda prefix: Spec(prefix='fk')\nfrom mpilab.cli "
                 "import main\nsys.exit(main(sys.argv[1:]))\n")
_EVENT = {"time": 1.7e9, "event": "state", "node": "s0n0", "from": "ARMED", "to": "MIGRATED"}


def _events_file(text: str) -> Setup:
    def f(d: Path) -> None:
        from mpilab.testbed.spec import Spec

        (d / "fk-testbed" / "pathmig").mkdir(parents=True)
        node = Spec(prefix="fk").node_names()[0]
        (d / "fk-testbed" / "pathmig" / f"{node}.jsonl").write_text(text + "\n")
    return f


def _plan_good() -> dict[str, Any]:
    return {"seed": 7, "faults": [{"at": 1.5, "target": "s0n0:1", "mode": "down",
                                   "duration": 2.0}]}


def _state_file(text: str) -> Setup:
    def f(d: Path) -> None:
        (d / "zz-testbed").mkdir()
        (d / "zz-testbed" / "state.json").write_text(text)
    return f


def _disk_state_good() -> dict[str, Any]:
    """What `disk up` records for one throttled disk `a` of prefix zz (state root `.`)."""
    from mpilab.disk import dev
    from mpilab.disk.spec import Disk, DiskSpec

    sp = DiskSpec(prefix="zz", disks=[Disk(name="a", size=1 << 30)])
    return {"spec": sp.to_dict(),
            "made": [{"kind": "cgroup", "pending": False, "path": str(dev.cgroup_dir("zz"))},
                     {"kind": "tmpfs", "pending": False, "path": "zz-disk/zz-a.mem"},
                     {"kind": "loop", "pending": False, "dev": "/dev/loop9",
                      "backing": "zz-disk/zz-a.mem/zz-a.img"},
                     {"kind": "mount", "pending": False, "path": "zz-disk/zz-a"}],
            "disks": {"a": {"model": "throttle", "mount": "zz-disk/zz-a", "dev": "/dev/loop9",
                            "devnum": "7:9"}}}


def _disk_state_file(text: str) -> Setup:
    def f(d: Path) -> None:
        (d / "zz-disk").mkdir()
        (d / "zz-disk" / "state.json").write_text(text)
    return f


# kind -> (a good document, how a mutated text is put in place, the command that reads it,
# extra environment)
DOCUMENTS: dict[str, tuple[Callable[[], Any], Callable[[str], Setup], list[str],
                           dict[str, str]]] = {
    "results-1.schema.json": (_good, lambda t: _write("r.json", t),
                              PY + ["report", "r.json", "--format", "csv", "-o", "out.csv"], {}),
    "tune-choice-1.schema.json": (lambda: CHOICE, lambda t: _write("c.json", t),
                                  PY + ["tune", "export", "c.json", "--openmpi", "out.conf"],
                                  {}),
    "multilane-1.schema.json": (ml_good, lambda t: _write("m.json", t),
                                PY + ["multilane", "report", "m.json", "-o", "out.html"], {}),
    "testbed-state-1.schema.json": (_state_good, _state_file, PY + ["testbed", "status"],
                                    {"MPILAB_TESTBED_PREFIX": "zz"}),
    "disk-state-1.schema.json": (_disk_state_good, _disk_state_file, PY + ["disk", "status"],
                                 {"MPILAB_DISK_PREFIX": "zz"}),
    "events-1.schema.json": (lambda: _EVENT, _events_file,
                             [sys.executable, "-c", EVENTS_RUNNER, "pathmig", "events"], {}),
    # read by the detached scheduler of `testbed fail --random` before it looks at the
    # testbed (zz is not up: a good plan ends there, a bad one at the plan's line)
    "fault-plan-1.schema.json": (_plan_good, lambda t: _write("plan.json", t),
                                 [sys.executable, "-m", "mpilab.pathmig.inject", "--prefix",
                                  "zz", "--plan", "plan.json"], {}),
}


def _paths(v: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every field of a document: each key of each object; of a list, the first element of
    each distinct shape."""
    if path:
        yield path
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _paths(x, path + (k,))
    elif isinstance(v, list):
        seen: set[str] = set()
        for k, x in enumerate(v):
            shape = json.dumps(sorted(x)) if isinstance(x, dict) else type(x).__name__
            if shape not in seen:
                seen.add(shape)
                yield from _paths(x, path + (k,))


_MISSING = object()
# the value "nested 10^5 deep": a string no document holds, replaced in the written text by
# 10^5 nested arrays (json.dumps would recurse through them; through even 900 of them,
# indented, it passes every chunk up every level: seconds a document)
_NESTED = "\u0000nested 10^5 deep"


def _field_mutations(v: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"missing": _MISSING, "nested 10^5 deep": _NESTED}
    if isinstance(v, bool):
        out["wrong type"] = "yes"
    elif isinstance(v, (int, float)):
        out.update({"wrong type": "x", "negative": -abs(v) - 1, "huge": 1e308,
                    "NaN": math.nan})
    else:
        out["wrong type"] = 5 if isinstance(v, str) else "x"
    return out


def _mutate(doc: Any, path: tuple[Any, ...], value: Any) -> str:
    d = json.loads(json.dumps(doc))
    at = d
    for k in path[:-1]:
        at = at[k]
    if value is _MISSING:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    text = json.dumps(d, indent=1)
    if value is _NESTED:
        text = text.replace(json.dumps(_NESTED), _DEEP, 1)
    return text


def document_cases() -> list[Case]:
    kinds = sorted(p.name for p in SCHEMAS.glob("*.schema.json"))
    unknown = [k for k in kinds if k not in DOCUMENTS]
    if unknown:
        raise SystemExit(f"hostile_generated: no good document and reader for {unknown} "
                         "(add it to DOCUMENTS)")
    cases = []
    for kind in kinds:
        good, place, argv, env = DOCUMENTS[kind]
        doc = good()
        for path in _paths(doc):
            at = doc
            for k in path:
                at = at[k]
            where = ".".join(map(str, path))
            for label, value in _field_mutations(at).items():
                text = _mutate(doc, path, value)
                c = _case(f"G {kind.split('-1')[0]} {where} {label}", argv, place(text),
                          limit=60, env=dict(_env(), **env))
                c.schema_valid = _schema_accepts(kind, label, text)
                cases.append(c)
    return cases


def _schema_accepts(kind: str, label: str, text: str) -> bool:
    """Whether the kind's schema accepts a mutated document: a field it does not require
    left out, a number it does not bound. NaN and deep nesting are never valid input."""
    if label in ("NaN", "nested 10^5 deep"):
        return False
    return schemacheck.first_error(kind, json.loads(text)) is None


# ---------------------------------------------------------------------------------------
# the history database: every column of its schema (mpilab.history.db) given a value that
# mpilab never writes, read by `history show 1` (a run's row and its points) and `history
# check` (the series of the newest run); a column in neither table below stops the script

_DEEP = "[" * 100000 + "]" * 100000
HISTORY_MUTATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("runs", "date"): {"not a date": "yesterday", "a number": 5},
    # a number put in a TEXT column is stored as its text (SQLite's column affinity), a
    # valid name: text columns get a blob instead
    ("runs", "source"): {"a blob": b"\x00\xff"},
    ("runs", "context"): {"a blob": b"\x00\xff"},
    ("runs", "machine"): {"broken JSON": "{", "an array": "[1]", "nested 10^5 deep": _DEEP},
    ("runs", "mpi"): {"broken JSON": "{", "a number": "7"},
    ("runs", "launcher"): {"broken JSON": "{"},
    ("runs", "options"): {"broken JSON": "{", "an array": "[1]"},
    ("runs", "launches"): {"negative": -1, "wrong type": "x"},
    ("runs", "partial"): {"wrong type": "x", "out of range": 7},
    ("series", "context"): {"a blob": b"\x00\xff"},
    ("series", "name"): {"empty": "", "a blob": b"\x00\xff"},
    ("series", "op"): {"a blob": b"\x00\xff"},
    ("points", "figure"): {"wrong type": "x", "negative": -1.0, "zero": 0.0,
                           "a blob": b"\x00\xff"},
    ("points", "lo"): {"wrong type": "x"},
    ("points", "hi"): {"wrong type": "x", "negative": -1.0},
    ("points", "launch_medians"): {"broken JSON": "[1,", "NaN": "[NaN]", "strings": '["a"]',
                                   "nested 10^5 deep": _DEEP, "a number": "7"},
    ("points", "flags"): {"broken JSON": "{", "a number": "3", "numbers": "[1]"},
}
#: columns no reader takes back (keys and bookkeeping)
HISTORY_UNREAD = {("runs", "id"), ("runs", "added"), ("runs", "digest"), ("series", "id"),
                  ("series", "mkey"), ("points", "series_id"), ("points", "run_id")}


def _history_good() -> bytes:
    import tempfile

    from mpilab.history import db

    with tempfile.TemporaryDirectory(prefix="mpilab-hostile-") as tmp:
        d = Path(tmp)
        c = db.connect(d / "h.sqlite")
        (d / "r.json").write_text(json.dumps(_good()))
        db.add_file(c, str(d / "r.json"))
        cols = {(t, r[1]) for t in ("runs", "series", "points")
                for r in c.execute(f"PRAGMA table_info({t})")}
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.execute("PRAGMA journal_mode = DELETE")
        c.close()
        missing = sorted(cols - set(HISTORY_MUTATIONS) - HISTORY_UNREAD)
        if missing:
            raise SystemExit(f"hostile_generated: history columns {missing} have no "
                             "mutations (add them to HISTORY_MUTATIONS or HISTORY_UNREAD)")
        return (d / "h.sqlite").read_bytes()


def _history_file(good: bytes, table: str, col: str, value: Any) -> Setup:
    def f(d: Path) -> None:
        import sqlite3

        (d / "h.sqlite").write_bytes(good)
        c = sqlite3.connect(d / "h.sqlite")
        c.execute(f"UPDATE {table} SET {col} = ?", (value,))
        c.commit()
        c.execute("PRAGMA journal_mode = DELETE")
        c.close()
    return f


def history_cases() -> list[Case]:
    good = _history_good()
    cases = []
    for (table, col), muts in sorted(HISTORY_MUTATIONS.items()):
        for label, value in muts.items():
            for sub in (["show", "1"], ["check"]):
                if sub == ["check"] and table == "runs" and col not in ("date",):
                    continue  # check reads a run's date and id only
                cases.append(_case(f"G history {table}.{col} {label} ({sub[0]})",
                                   PY + ["history", "--db", "h.sqlite", *sub],
                                   _history_file(good, table, col, value), limit=60))
    return cases


def generated_cases() -> list[Case]:
    return cli_generated_cases() + c_generated_cases() + document_cases() + history_cases()


def ci_slice(cases: list[Case], share: int = 12) -> list[Case]:
    """A fixed subset, the same on every machine: the cases whose name's hash falls in one
    of `share` buckets, the C tools' cases that start an MPI singleton left out (time)."""
    def pick(c: Case) -> bool:
        if "mpilab-bench" in c.name or "mpilab-multilane" in c.name or "selftest" in c.name \
                or "tb-pingpong" in c.name:
            return False
        return int(hashlib.sha256(c.name.encode()).hexdigest()[:8], 16) % share == 0
    return [c for c in cases if pick(c)]
