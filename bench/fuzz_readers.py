#!/usr/bin/env python3
"""Fuzz every document reader of mpilab with `hypothesis`: results files, tune choice
files, testbed state, the pathmig agent event log and fault plan, the testbed fault log,
testbed and disk specs, SimGrid platform inputs (a platform XML's hosts and configs, a
heterogeneous cluster file), history databases (`mpilab history`'s readers on a damaged
file or damaged rows), the results import of `mpilab history add` and the `.npz` samples
archive of a compact results file (bench/fuzz_npz.py: its seeds, mutations and readers).

Each reader starts from valid seeds (the examples, a synthetic results document, a state
and a choice written by the project's own code) and is given mutated copies: a JSON node
replaced by a hostile value (huge and negative numbers, wrong types, deep nesting, long and
control-character strings), a key deleted, a document truncated, bytes that are not UTF-8
(Latin-1, a lone continuation byte), NaN and 1e999 numbers, a line duplicated, deleted or
cut (text formats), deep XML nesting.

Invariant: the reader returns, or raises MpilabError whose message is one line starting
with the file's name. Anything else (another exception, a multi-line message) is a
finding: the input is saved under --findings and the run exits 1.

    python3 bench/fuzz_readers.py                            # every reader, 10 minutes each
    python3 bench/fuzz_readers.py --minutes 2 --reader results --reader choice
    python3 bench/fuzz_readers.py --examples 50 --seed 1     # a fixed short run (CI)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fuzz_npz
from harness import REPO, test_helpers
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed
from hypothesis import strategies as st
from mpilab.errors import MpilabError

test_helpers()  # conftest.make_results: the results seeds

PREFIX = "fzq"  # the testbed prefix of the state reader's files


@dataclass
class Reader:
    """A document kind: its seeds (bytes), whether they are JSON (documents or lines) or
    text, and the function that reads a file of that kind (all of its consumers' checks)."""
    seeds: Callable[[], list[bytes]]
    kind: str  # "json", "jsonl", "text", "sqlite" (a database file) or "npz" (fuzz_npz)
    read: Callable[[Path], Any]
    name: str = "in.json"


# ---- seeds


def _results_seeds() -> list[bytes]:
    from conftest import make_results

    small = make_results(ranks=2, sizes=(0, 1024))
    out = [json.dumps(small).encode()]
    corpus = REPO / "tests" / "fuzz" / "corpus" / "results"
    out += [p.read_bytes() for p in sorted(corpus.glob("*.json"))]
    return out


def _choice_seeds() -> list[bytes]:
    cell = {"op": "bcast", "np": 2, "bytes": 1024, "winner": "ompi_binomial", "ratio": 0.5,
            "lo": 0.4, "hi": 0.6, "candidates": {}}
    doc = {"schema": "mpilab.tune-choice/1", "source": "x", "mpi": "Open MPI 4.1.4",
           "min_effect": 0.05, "test": "t", "cells": [cell],
           "ranges": [{"op": "bcast", "np": 2, "ranges": [
               {"winner": "ompi_binomial", "from": 1024, "to": 1024, "sizes": [1024]}]}]}
    return [json.dumps(doc).encode()]


def _state_seeds() -> list[bytes]:
    from mpilab.testbed.spec import Spec
    from mpilab.testbed.spec import load as spec_load

    docs = [{"spec": Spec(prefix=PREFIX).to_dict(), "key": "k", "created": 1.7e9,
             "delay_backend": "delayline", "netem_available": False, "delay_io": "tun"}]
    for f in ("grid-2x4.toml", "pathmig-2x1.toml", "lmo-hetero4.toml"):
        sp = spec_load(str(REPO / "examples" / "testbed" / f), prefix=PREFIX)
        docs.append(dict(docs[0], spec=sp.to_dict()))
    return [json.dumps(d).encode() for d in docs]


def _disk_state_seeds() -> list[bytes]:
    """What `disk up` records for each example disk spec, the state root written @ROOT@
    (the reader puts the file's folder there)."""
    from mpilab.disk import dev
    from mpilab.disk.spec import load as disk_load

    out = []
    for f in sorted((REPO / "examples" / "disk").glob("*.toml")):
        sp = disk_load(str(f), PREFIX)
        sd = f"@ROOT@/{PREFIX}-disk"
        made: list[dict[str, Any]] = [{"kind": "cgroup", "pending": False,
                                       "path": str(dev.cgroup_dir(PREFIX))}]
        disks: dict[str, Any] = {}
        for k, d in enumerate(sp.disks):
            base = f"{sd}/{PREFIX}-{d.name}"
            made.append({"kind": "tmpfs", "pending": k == len(sp.disks) - 1,
                         "path": f"{base}.mem"})
            if d.model == "throttle":
                made += [{"kind": "loop", "pending": False, "dev": f"/dev/loop{k}",
                          "backing": f"{base}.mem/{PREFIX}-{d.name}.img"},
                         {"kind": "mount", "pending": False, "path": base}]
                disks[d.name] = {"model": d.model, "mount": base, "dev": f"/dev/loop{k}",
                                 "devnum": f"7:{k}"}
            else:
                made.append({"kind": "fuse", "pending": False, "path": base})
                disks[d.name] = {"model": d.model, "mount": base, "stats": f"{base}.stats"}
        out.append(json.dumps({"spec": sp.to_dict(), "made": made, "disks": disks}).encode())
    return out


def _agent_log_seeds() -> list[bytes]:
    recs = [{"time": 1.7e9, "event": "state", "node": "s0n0", "from": "ARMED",
             "to": "MIGRATED"},
            {"time": 1.7e9 + 1, "event": "state", "node": "s0n0", "from": "MIGRATED",
             "to": "REARM"}]
    return ["".join(json.dumps(r) + "\n" for r in recs).encode()]


def _multilane_seeds() -> list[bytes]:
    from test_multilane import synthetic

    return [json.dumps(synthetic(Path(tempfile.gettempdir()))).encode()]


def _plan_seeds() -> list[bytes]:
    from mpilab.pathmig import inject

    plan = inject.make_plan(7, ["s0n0", "s1n0"], [0, 1], 3, 30.0, ("down", "drop"))
    return [inject.plan_json(plan, 7).encode()]


def _sweep_state_seeds() -> list[bytes]:
    doc = {"schema": "mpilab.tune-state/1", "config": SWEEP_CONFIG,
           "runs": {"np2": {"done": 1, "files": ["np2.launch0.json"]}}}
    return [json.dumps(doc).encode()]


def _wavefront_seeds() -> list[bytes]:
    wf = {"iterations": 10, "total_s": 1.5, "bytes_read": 1 << 30, "bytes_written": 1 << 29,
          "requests_read": 4096, "requests_written": 2048, "dev_read_bytes": None,
          "dev_write_bytes": 1 << 29, "per_worker": [{"io_wait_s": 0.2}, {"io_wait_s": 0.3}]}
    return [json.dumps({"schema": "mpilab.wavefront/1", "wavefront": wf}).encode()]


def _texts(folder: str, pattern: str) -> Callable[[], list[bytes]]:
    return lambda: [p.read_bytes() for p in sorted((REPO / folder).glob(pattern))]


# ---- readers (every consumer that turns the document into what commands use)


def _read_results(p: Path) -> Any:
    from mpilab import results
    return results.load(p)


def _read_choice(p: Path) -> Any:
    from mpilab.tune import cli
    return cli.load_choice(str(p))


def _read_state(p: Path) -> Any:
    from mpilab.testbed import net
    from mpilab.testbed.spec import Spec

    os.environ["MPILAB_TESTBED_STATE_ROOT"] = str(p.parent)
    d = p.parent / f"{PREFIX}-testbed"
    d.mkdir(exist_ok=True)
    target = d / "state.json"
    os.replace(p, target)
    try:
        doc = net.load_state(PREFIX)
    except MpilabError as e:  # the message names the state file
        raise MpilabError(str(e).replace(str(target), str(p), 1)) from None
    return Spec.from_dict(doc["spec"]) if doc else None


def _read_disk_state(p: Path) -> Any:
    """dev.status (the loader, the spec, the recorded disks), as `disk status` reads it."""
    from mpilab.disk import dev

    os.environ["MPILAB_DISK_STATE_ROOT"] = str(p.parent)
    d = p.parent / f"{PREFIX}-disk"
    d.mkdir(exist_ok=True)
    target = d / "state.json"
    target.write_bytes(p.read_bytes().replace(b"@ROOT@", str(p.parent).encode()))
    try:
        return dev.status(PREFIX)
    except MpilabError as e:  # the message names the state file
        raise MpilabError(str(e).replace(str(target), str(p), 1)) from None


def _read_agent_log(p: Path) -> Any:
    from mpilab import documents
    from mpilab.pathmig import agents

    evs = documents.load_lines(p, "pathmig agent log")
    return agents.failed_actions(evs)


def _read_fault_log(p: Path) -> Any:
    from mpilab import documents
    return documents.load_lines(p, "testbed fault log")


def _read_testbed_spec(p: Path) -> Any:
    from mpilab.sim import platform
    return platform.load_spec(str(p))


def _read_disk_spec(p: Path) -> Any:
    from mpilab.disk import spec
    return spec.load(str(p))


def _read_hetero(p: Path) -> Any:
    from mpilab.sim import platform
    return platform.hetero(platform.load_hetero(str(p)))


def _read_platform(p: Path) -> Any:
    from mpilab.sim import platform
    data = p.read_bytes()
    return platform.hosts_of(data, str(p)), platform.configs_of(data, str(p))


def _read_multilane(p: Path) -> Any:
    from mpilab.multilane import doc
    d = doc.load(p)
    return [doc.phase_split(r) for r in d.runs]


def _read_plan(p: Path) -> Any:
    from mpilab.pathmig import inject
    return inject.load_plan(str(p))


SWEEP_CONFIG = {"nps": [2], "colls": ["bcast"], "sizes": [1024]}


def _read_sweep_state(p: Path) -> Any:
    from mpilab.tune import sweep

    os.replace(p, p.parent / sweep.STATE)
    try:
        return sweep._load_state(p.parent, SWEEP_CONFIG)  # noqa: SLF001
    except MpilabError as e:  # the message names the state file
        raise MpilabError(str(e).replace(str(p.parent / sweep.STATE), str(p), 1)) from None


def _read_wavefront(p: Path) -> Any:
    from mpilab import wavefront_regime as wr

    c = wr.load_results(str(p))  # `mpilab wavefront regime RESULTS`: then classified
    return wr.classify(c, wr.DiskLimits(200.0, 200.0, 1e8, 1e8))


def _history_seeds() -> list[bytes]:
    """A history database of three runs (SQLite bytes)."""
    from conftest import make_results
    from mpilab.history import db

    with tempfile.TemporaryDirectory(prefix="mpilab-fuzz-seed-") as tmp:
        d = Path(tmp)
        c = db.connect(d / "h.sqlite")
        for k in range(3):
            doc = make_results(ranks=2, sizes=(0, 1024), seed=k)
            doc["provenance"]["date"] = f"2026-11-0{k + 1}T02:00:00Z"
            (d / f"r{k}.json").write_text(json.dumps(doc))
            db.add_file(c, str(d / f"r{k}.json"))
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.execute("PRAGMA journal_mode = DELETE")
        c.close()
        return [(d / "h.sqlite").read_bytes()]


def _read_history(p: Path) -> Any:
    """Every reader of `mpilab history` (list, show, trend, check) on a database file."""
    from mpilab.history import db, detect

    with db.errors_named(p):
        c = db.connect(p, create=False)
        try:
            out = [db.runs(c)]
            for rid in db.latest_runs(c):
                out.append(db.run(c, rid))
                out.append(db.run_points(c, rid))
            for s in db.series(c):
                obs = db.observations(c, s.id)
                if len(obs) >= 2:
                    out.append(detect.segments([o.figure for o in obs], [o.lo for o in obs],
                                               [o.hi for o in obs]))
            return out
        finally:
            c.close()


def _read_history_add(p: Path) -> Any:
    """`mpilab history add RESULTS`: a results file imported into a fresh history."""
    from mpilab.history import db

    h = p.parent / "h.sqlite"
    with db.errors_named(h):
        c = db.connect(h)
        try:
            return db.add_file(c, str(p))
        finally:
            c.close()


READERS: dict[str, Reader] = {
    "history-db": Reader(_history_seeds, "sqlite", _read_history, "h.sqlite"),
    "history-add": Reader(_results_seeds, "json", _read_history_add),
    "samples-npz": Reader(fuzz_npz.seeds, "npz", fuzz_npz.read, fuzz_npz.NAME),
    "results": Reader(_results_seeds, "json", _read_results),
    "choice": Reader(_choice_seeds, "json", _read_choice),
    "testbed-state": Reader(_state_seeds, "json", _read_state),
    "disk-state": Reader(_disk_state_seeds, "json", _read_disk_state, "disk-state.json"),
    "agent-log": Reader(_agent_log_seeds, "jsonl", _read_agent_log, "agent.jsonl"),
    "fault-log": Reader(_agent_log_seeds, "jsonl", _read_fault_log, "faults.jsonl"),
    "testbed-spec": Reader(_texts("examples/testbed", "*.toml"), "text", _read_testbed_spec,
                           "spec.toml"),
    "disk-spec": Reader(_texts("examples/disk", "*.toml"), "text", _read_disk_spec,
                        "disk.toml"),
    "hetero": Reader(_texts("examples/platforms", "*.toml"), "text", _read_hetero,
                     "cluster.toml"),
    "platform": Reader(_texts("examples/platforms", "*.xml"), "text", _read_platform,
                       "platform.xml"),
    "multilane": Reader(_multilane_seeds, "json", _read_multilane, "ml.json"),
    "fault-plan": Reader(_plan_seeds, "json", _read_plan, "plan.json"),
    "sweep-state": Reader(_sweep_state_seeds, "json", _read_sweep_state, "sweep.json"),
    "wavefront-results": Reader(_wavefront_seeds, "json", _read_wavefront, "wf.json"),
}

# ---- mutations


def _deep(n: int, leaf: Any = 0) -> Any:
    v: Any = leaf
    for _ in range(n):
        v = [v]
    return v


HOSTILE = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 10**30, 1e308, -1e308, 5e-324, "", "x", "1",
                     "\x00\x1b[31m", "é" * 3, None, True, False]),
    # containers made afresh per draw: a later mutation writes into what it placed
    st.sampled_from(["[]", "{}", "[0]", '{"a": 1}']).map(json.loads),
    st.integers(min_value=50, max_value=4000).map(_deep),
    st.text(max_size=30),
    st.lists(st.integers(), max_size=5),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))

TEXT_TOKENS = ["0", "-1", "1e999", "NaN", "Infinity", "9" * 400, '""', "[", "]", "{", "}",
               ",", '"', "\\", "\n", "=", "[[", "]]", "true", "\x00", "<", ">", "&a;",
               "<a>" * 200]
BAD_BYTES = [b"\xff", b"\xe9", b"\x80", b"\xc3", b"\xed\xa0\x80", b"\x00"]


def _nodes(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if len(path) >= 20:  # a nest a mutation made: its inside is not worth more mutations
        return
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:50]):
            yield from _nodes(v, path + (i,))


def _set(doc: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> Any:
    if not path:
        return value
    try:
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if delete:
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass  # an earlier mutation of this input replaced the node: nothing to change
    return doc


def _mutate_json(data: st.DataObject, doc: Any) -> bytes:
    nodes = list(_nodes(doc))
    for _ in range(data.draw(st.integers(1, 3), "mutations")):
        path = nodes[data.draw(st.integers(0, len(nodes) - 1), "node")]
        op = data.draw(st.sampled_from(["replace", "replace", "delete", "nest"]), "op")
        if op == "delete" and path:
            doc = _set(doc, path, None, delete=True)
        elif op == "nest":
            doc = _set(doc, path, _deep(data.draw(st.integers(10, 3000), "depth")))
        else:
            doc = _set(doc, path, data.draw(HOSTILE, "value"))
        nodes = list(_nodes(doc))
        if not nodes:
            break
    try:
        return json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):
        return b"[]"


def _mutate_text(data: st.DataObject, raw: bytes) -> bytes:
    for _ in range(data.draw(st.integers(1, 3), "mutations")):
        op = data.draw(st.sampled_from(["token", "token", "cut", "bytes", "line", "drop",
                                        "truncate", "number"]), "op")
        at = data.draw(st.integers(0, len(raw)), "at")
        lines = raw.split(b"\n")
        if op == "token":
            tok = data.draw(st.sampled_from(TEXT_TOKENS), "tok").encode()
            raw = raw[:at] + tok + raw[at:]
        elif op == "cut":
            end = data.draw(st.integers(at, len(raw)), "end")
            raw = raw[:at] + raw[end:]
        elif op == "bytes":
            raw = raw[:at] + data.draw(st.sampled_from(BAD_BYTES), "b") + raw[at:]
        elif op == "line" and lines:
            k = data.draw(st.integers(0, len(lines) - 1), "line")
            lines.insert(k, lines[k])
            raw = b"\n".join(lines)
        elif op == "drop" and lines:
            del lines[data.draw(st.integers(0, len(lines) - 1), "line")]
            raw = b"\n".join(lines)
        elif op == "truncate":
            raw = raw[:at]
        else:
            digits = [i for i, c in enumerate(raw) if 48 <= c <= 57]
            if digits:
                i = digits[data.draw(st.integers(0, len(digits) - 1), "digit")]
                v = data.draw(st.sampled_from(["-1", "0", "1e308", "9" * 5000, "٣", "0x10",
                                               "1_000", "inf"]), "num").encode()
                raw = raw[:i] + v + raw[i + 1:]
    return raw


#: columns of a history database and the hostile values a row may be given
HISTORY_COLUMNS = {"runs": ("date", "source", "machine", "mpi", "launcher", "options",
                            "context", "launches", "partial"),
                   "series": ("context", "mkey", "name", "op"),
                   "points": ("figure", "lo", "hi", "launch_medians", "flags")}


def _mutate_sqlite(data: st.DataObject, raw: bytes) -> bytes:
    """Row values replaced through SQLite (hostile values, JSON text broken or nested), a
    row deleted, or the file's bytes mutated as text."""
    import sqlite3

    if data.draw(st.booleans(), "bytes"):
        return _mutate_text(data, raw)
    with tempfile.TemporaryDirectory(prefix="mpilab-fuzz-db-") as tmp:
        f = Path(tmp) / "h.sqlite"
        f.write_bytes(raw)
        c = sqlite3.connect(f)
        try:
            for _ in range(data.draw(st.integers(1, 3), "mutations")):
                table = data.draw(st.sampled_from(sorted(HISTORY_COLUMNS)), "table")
                if data.draw(st.integers(0, 5), "delete") == 0:
                    c.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} "
                              "LIMIT 1)" if table != "points" else
                              "DELETE FROM points WHERE run_id = 1")
                    continue
                col = data.draw(st.sampled_from(HISTORY_COLUMNS[table]), "column")
                v = data.draw(HOSTILE, "value")
                if isinstance(v, list | dict):
                    try:
                        v = json.dumps(v, allow_nan=True)
                    except (RecursionError, ValueError):  # deeper than json writes
                        v = "[" * 5000 + "]" * 5000
                elif isinstance(v, bool):
                    v = int(v)
                elif isinstance(v, int) and abs(v) >= 1 << 63:
                    v = str(v)
                with contextlib.suppress(sqlite3.DatabaseError, ValueError, OverflowError):
                    c.execute(f"UPDATE {table} SET {col} = ?", (v,))
            c.commit()
        finally:
            c.close()
        return f.read_bytes()


def mutate(data: st.DataObject, r: Reader, seeds: list[bytes]) -> bytes:
    raw = seeds[data.draw(st.integers(0, len(seeds) - 1), "seed")]
    if r.kind == "sqlite":
        return _mutate_sqlite(data, raw)
    if r.kind == "npz":
        return fuzz_npz.mutate(data, raw, _mutate_text)
    if r.kind != "text" and data.draw(st.booleans(), "structural"):
        if r.kind == "json":
            return _mutate_json(data, json.loads(raw))
        lines = raw.decode().splitlines()
        k = data.draw(st.integers(0, len(lines) - 1), "record")
        lines[k] = _mutate_json(data, json.loads(lines[k])).decode("utf-8", "replace")
        return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    return _mutate_text(data, raw)


# ---- the run


@dataclass
class Outcome:
    inputs: int = 0
    accepted: int = 0
    refused: int = 0
    findings: int = 0


def check_one(r: Reader, raw: bytes, work: Path) -> str | None:
    """Read one input; None if the invariant holds, else what broke it."""
    p = work / r.name
    p.write_bytes(raw)
    try:
        r.read(p)
    except MpilabError as e:
        msg = str(e)
        if "\n" in msg or not msg.startswith(str(p)):
            return f"MpilabError not one line naming the file: {msg[:300]!r}"
        return ""
    except Exception:  # noqa: BLE001 (the finding)
        return traceback.format_exc(limit=6)
    return None


def _round(name: str, r: Reader, seeds: list[bytes], work: Path, findings: Path,
           examples: int, rnd: int, out: Outcome) -> None:
    """One hypothesis run of `examples` inputs from seed `rnd`."""
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), derandomize=False)
    @hseed(rnd)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        raw = mutate(data, r, seeds)
        why = check_one(r, raw, work)
        out.inputs += 1
        if why is None:
            out.accepted += 1
        elif why == "":
            out.refused += 1
        else:
            out.findings += 1
            findings.mkdir(parents=True, exist_ok=True)
            f = findings / f"{name}-{rnd}-{out.inputs}{Path(r.name).suffix}"
            f.write_bytes(raw)
            sys.stderr.write(f"fuzz_readers: {name}: finding saved as {f}:\n{why}\n")
        for q in list(work.iterdir()):
            if q.is_dir():
                for x in q.iterdir():
                    x.unlink()
            else:
                q.unlink()
    run()


def fuzz(name: str, seconds: float, examples: int, seed: int, findings: Path,
         out: Outcome) -> None:
    r = READERS[name]
    seeds = r.seeds()
    with tempfile.TemporaryDirectory(prefix="mpilab-fuzz-") as tmp:
        work = Path(tmp)
        deadline = time.monotonic() + seconds
        rnd = seed
        while True:
            _round(name, r, seeds, work, findings, examples, rnd, out)
            rnd += 1
            if seconds <= 0 or time.monotonic() >= deadline:
                break


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reader", action="append", choices=sorted(READERS),
                    help="a reader to fuzz (repeatable; default: all)")
    ap.add_argument("--minutes", type=float, default=10.0,
                    help="time per reader (default 10); 0: one round of --examples")
    ap.add_argument("--examples", type=int, default=200,
                    help="inputs per round (hypothesis max_examples, default 200)")
    ap.add_argument("--seed", type=int, default=0, help="first round's seed (default 0)")
    ap.add_argument("--findings", default=str(REPO / "tests" / "fuzz" / "findings"),
                    help="where inputs that break the invariant are saved")
    a = ap.parse_args(argv)
    if a.minutes < 0 or a.examples < 1:
        ap.error("--minutes must be >= 0 and --examples >= 1")
    total = 0
    for name in a.reader or sorted(READERS):
        out = Outcome()
        t0 = time.monotonic()
        with contextlib.redirect_stdout(sys.stderr):
            fuzz(name, a.minutes * 60, a.examples, a.seed, Path(a.findings), out)
        print(f"{name}: {out.inputs} inputs in {time.monotonic() - t0:.0f} s, "
              f"{out.accepted} accepted, {out.refused} refused in one line, "
              f"{out.findings} uncaught", flush=True)
        total += out.findings
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
