"""Issue 53's classes, one test each: signals only to processes mpilab started (pid files
with start time and program, checked against /proc), a FIFO agent log, malformed event
logs, results, state and choice files, closed or full standard output, fault-kind
registration, dubious accepts, and argument errors named before the environment is looked
at."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env
from mpilab import pidfile
from mpilab.errors import MpilabError

MPILAB = [sys.executable, "-m", "mpilab.cli"]


def _cli(*args: str, cwd: Path, timeout: float = 120,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(MPILAB + list(args), cwd=cwd, env=env or cli_env(),
                          capture_output=True, text=True, timeout=timeout)


def _one_line(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode not in (0, 70), (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


# ------------------------------------------------------------------ signals (item 1)

@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """A process mpilab did not start (a `sleep`), ended by the test itself."""
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def _slurm_dir(tmp_path: Path, text: str, daemon: str = "slurmd") -> Path:
    d = tmp_path / "slurm"
    d.mkdir(exist_ok=True)
    (d / "slurm.conf").write_text("# not used\n")
    (d / "munge.key").write_text("k")
    (d / f"mpilab-{daemon}.pid").write_text(text)
    (d / f"{daemon}.pid").write_text(text.split()[0] + "\n" if text.split() else "")
    return d


def _start_of(pid: int) -> int:
    ident = pidfile.proc_ident(pid)
    assert ident is not None
    return ident.start


@pytest.mark.parametrize("form", ["bare pid", "recorded as sleep", "real start, other program",
                                  "later start"])
def test_slurm_down_refuses_a_pid_file_naming_a_stranger(
        tmp_path: Path, stranger: subprocess.Popen[bytes], form: str) -> None:
    pid = stranger.pid
    text = {"bare pid": f"{pid}\n",
            "recorded as sleep": f"{pid} {_start_of(pid)} sleep\n",
            "real start, other program": f"{pid} {_start_of(pid)} slurmd\n",
            "later start": f"{pid} {_start_of(pid) - 1} slurmd\n"}[form]
    d = _slurm_dir(tmp_path, text)
    r = _cli("slurm", "down", "--dir", str(d), cwd=tmp_path)
    _one_line(r)
    assert f"mpilab-slurmd.pid: pid {pid}" in r.stderr and "not signalling it" in r.stderr
    time.sleep(0.2)
    assert stranger.poll() is None, "the stranger's process was signalled"
    assert (d / "slurm.conf").exists(), "the folder was removed after a refusal"


@pytest.mark.parametrize("pid", ["0", "1", "-1"])
def test_slurm_down_refuses_pids_below_two(tmp_path: Path, pid: str) -> None:
    """Run in a PID namespace of its own (root): code that still signalled such a pid would
    reach only the processes of that namespace, not every process of the machine."""
    import shutil

    for text in (f"{pid}\n", f"{pid} 1 slurmd\n"):
        with pytest.raises(MpilabError, match=f"pid {pid} refused"):
            pidfile.parse("x.pid", text)
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("the command itself runs only inside a PID namespace (root, unshare)")
    for text in (f"{pid}\n", f"{pid} 1 slurmd\n"):
        d = _slurm_dir(tmp_path, text)
        r = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", *MPILAB, "slurm",
                            "down", "--dir", str(d)], cwd=tmp_path, env=cli_env(),
                           capture_output=True, text=True, timeout=120)
        _one_line(r)
        assert f"pid {pid} refused (below 2" in r.stderr, r.stderr


def test_pidfile_stops_only_the_process_recorded(tmp_path: Path) -> None:
    """The positive side: a process recorded at its start is stopped through its pid
    file; once its record no longer matches (pid file of an exited one) nothing is sent."""
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        path = tmp_path / "sleep.pid"
        ident = pidfile.record(path, p.pid, "sleep")
        assert path.read_text() == f"{p.pid} {ident.start} sleep\n"
        assert pidfile.verified(path, "sleep") == p.pid
        with pytest.raises(MpilabError, match="recorded as sleep, not slurmd"):
            pidfile.verified(path, "slurmd")
        assert pidfile.stop([(path, "sleep")], grace=30.0) == [p.pid]
        assert p.wait(timeout=60) == -signal.SIGTERM
        assert pidfile.verified(path, "sleep") is None  # exited: nothing to signal
        assert pidfile.send(path, "sleep", signal.SIGTERM) is None
    finally:
        p.kill()
        p.wait()


def test_pidfile_record_refuses_another_program(tmp_path: Path,
                                                stranger: subprocess.Popen[bytes]) -> None:
    with pytest.raises(MpilabError, match="runs sleep, not mpilab-delayline"):
        pidfile.record(tmp_path / "dl.pid", stranger.pid, "mpilab-delayline")
    assert not (tmp_path / "dl.pid").exists()


@pytest.mark.parametrize("where", ["pathmig agent", "delay line"])
def test_agent_and_delay_line_pid_files_are_verified(
        tmp_path: Path, stranger: subprocess.Popen[bytes], where: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reader of a pid file goes through pidfile.verified: a testbed's agent or
    delay line pid file naming a stranger is refused, not signalled."""
    from mpilab.pathmig import agents
    from mpilab.testbed import net

    monkeypatch.setenv("MPILAB_TESTBED_STATE_ROOT", str(tmp_path))
    pid = stranger.pid
    sd = net.state_dir("zq")
    if where == "pathmig agent":
        from mpilab.testbed.spec import Spec

        spec = Spec(prefix="zq")
        (sd / "pathmig").mkdir(parents=True)
        node = spec.node_names()[0]
        (sd / "pathmig" / f"{node}.pid").write_text(f"{pid} {_start_of(pid)} sleep\n")
        with pytest.raises(MpilabError, match="recorded as sleep, not mpilab-pathmigd"):
            agents.stop(spec)
    else:
        sd.mkdir(parents=True)
        (sd / "delayline.pid").write_text(f"{pid}\n")
        with pytest.raises(MpilabError, match="without its start time"):
            net.delayline_stats("zq", 0.1)
    time.sleep(0.2)
    assert stranger.poll() is None


# ------------------------------------------------------------------ event logs (items 2, 3)

# `mpilab pathmig events` on a testbed whose state is faked (no root, no namespaces): the
# agents' logs are read from $MPILAB_TESTBED_STATE_ROOT/fk-testbed/pathmig/NODE.jsonl.
EVENTS_RUNNER = r"""
import sys
from mpilab.testbed import net
from mpilab.testbed.spec import Spec
net.current_spec = lambda prefix: Spec(prefix="fk")
from mpilab.cli import main
sys.exit(main(sys.argv[1:]))
"""

GOOD_EVENT = '{"time": 1700000000.5, "event": "state", "node": "s0n0", "from": "ARMED", ' \
             '"to": "MIGRATED"}\n'


def _events(tmp_path: Path, log: bytes | None, fifo: bool = False,
            directory: bool = False) -> subprocess.CompletedProcess[str]:
    from mpilab.testbed.spec import Spec

    d = tmp_path / "fk-testbed" / "pathmig"
    d.mkdir(parents=True, exist_ok=True)
    node = Spec(prefix="fk").node_names()[0]
    path = d / f"{node}.jsonl"
    if fifo:
        os.mkfifo(path)
    elif directory:
        path.mkdir()
    else:
        assert log is not None
        path.write_bytes(log)
    env = dict(cli_env(), MPILAB_TESTBED_STATE_ROOT=str(tmp_path))
    return subprocess.run([sys.executable, "-c", EVENTS_RUNNER, "pathmig", "events"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def test_pathmig_events_refuses_a_fifo_log(tmp_path: Path) -> None:
    """A FIFO agent log used to block forever (no writer): refused in one line."""
    r = _events(tmp_path, None, fifo=True)
    _one_line(r)
    assert "s0n0.jsonl: is a FIFO" in r.stderr, r.stderr


@pytest.mark.parametrize("name, log, why", [
    ("JSON array line", b"[1, 2]\n", ":1: (top level): expected an object"),
    ("JSON number line", GOOD_EVENT.encode() + b"42\n", ":2: (top level): expected an object"),
    ("string time", b'{"time": "soon", "event": "link"}\n', ":1: time: expected a number"),
    ("NaN time", b'{"time": NaN, "event": "link"}\n', ":1: time: NaN is not a JSON number"),
    ("negative time", b'{"time": -5, "event": "link"}\n', ":1: time: -5 is not a time"),
    ("deep nesting", b'{"time": 1, "event": "x", "a": ' + b"[" * 100000 + b"]" * 100000
     + b"}\n", ":1: malformed JSON: nested too deeply"),
    ("Latin-1", b'{"time": 1, "event": "caf\xe9"}\n', ":1: not UTF-8 text"),
    ("no event", b'{"time": 1}\n', ":1: event: missing"),
    ("state without from", b'{"time": 1, "event": "state", "to": "ARMED"}\n', ":1: from: missing"),
    ("5 MB node", b'{"time": 1, "event": "link", "node": "' + b"n" * (5 << 20) + b'"}\n',
     ":1: node: "),
])
def test_pathmig_events_refuses_malformed_records(tmp_path: Path, name: str, log: bytes,
                                                  why: str) -> None:
    r = _events(tmp_path, log)
    _one_line(r)
    assert "s0n0.jsonl" + why in r.stderr, r.stderr


def test_pathmig_events_refuses_a_directory_log(tmp_path: Path) -> None:
    r = _events(tmp_path, None, directory=True)
    _one_line(r)
    assert "s0n0.jsonl: is a directory" in r.stderr, r.stderr


def test_pathmig_events_reads_a_good_log(tmp_path: Path) -> None:
    r = _events(tmp_path, GOOD_EVENT.encode() + b"\n" + GOOD_EVENT.encode())
    assert r.returncode == 0, r.stderr
    assert r.stdout.count('"MIGRATED"') == 2


def test_fault_log_is_checked_at_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mpilab.testbed import faults
    from mpilab.testbed.spec import Spec

    monkeypatch.setenv("MPILAB_TESTBED_STATE_ROOT", str(tmp_path))
    spec = Spec(prefix="fk")
    faults.log_path(spec).parent.mkdir(parents=True)
    faults.log_path(spec).write_text('{"time": 1, "event": "fail", "mode": "down"}\n')
    with pytest.raises(MpilabError, match=r"faults.jsonl:1: target: missing"):
        faults.read_log(spec)


def test_live_log_tail_skips_a_fifo(tmp_path: Path) -> None:
    """The watcher of `testbed run --pathmig` reads the same logs while the job runs: a FIFO
    in a log's place is skipped, not waited on; a regular log beside it is read."""
    from mpilab.pathmig.watch import LogTail

    os.mkfifo(tmp_path / "a.jsonl")
    (tmp_path / "b.jsonl").write_text(GOOD_EVENT)
    tail = LogTail([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    assert [e["to"] for e in tail.poll()] == ["MIGRATED"]


# ------------------------------------------------------------------ results (item 3)

@pytest.mark.parametrize("key", ["mean", "ci_half"])
@pytest.mark.parametrize("cmd", ["report", "report csv", "diff", "tune choose"])
def test_pair_matrix_without_a_statistic_is_refused_at_load(tmp_path: Path, key: str,
                                                            cmd: str) -> None:
    import json

    from test_pair_matrix import compact_doc

    (tmp_path / "good.json").write_text(json.dumps(compact_doc()))
    doc = compact_doc()
    for m in doc["measurements"]:
        del m["pair_matrix"][key]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    args = {"report": ["report", "bad.json", "-o", "r.html"],
            "report csv": ["report", "bad.json", "--format", "csv", "-o", "r.csv"],
            "diff": ["diff", "good.json", "bad.json"],
            "tune choose": ["tune", "choose", "bad.json", "--out", "c.json"]}[cmd]
    r = _cli(*args, cwd=tmp_path)
    _one_line(r)
    assert re.search(rf"bad\.json:\d+: measurements\[\d+\]\.pair_matrix\.{key}: missing",
                     r.stderr), r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "good.json"]


# ------------------------------------------------------------------ testbed state (items 3, 4)

_SPEC_MIN = {"sites": 2, "nodes_per_site": 4, "rails": 1, "subnet": "10.77.0.0/16",
             "site_prefixlen": 24}


@pytest.mark.parametrize("name, state, why", [
    ("empty spec", {"spec": {}}, ":1: spec.prefix: missing"),
    ("spec a number", {"spec": 5}, ":1: spec: expected an object"),
    ("another testbed's spec", {"spec": dict(_SPEC_MIN, prefix="mlt")},
     ": spec.prefix is 'mlt', not this testbed's 'zz'; not acting on another testbed"),
    ("sites a string", {"spec": dict(_SPEC_MIN, prefix="zz", sites="2")},
     ":1: spec.sites: expected an integer"),
    ("a key Spec does not have", {"spec": dict(_SPEC_MIN, prefix="zz", color=1)},
     ":1: spec: "),
    ("a delay line pid of 0", {"spec": dict(_SPEC_MIN, prefix="zz"), "delayline_pid": 0},
     ":1: delayline_pid: "),
    ("deep nesting", None, ": malformed JSON: nested too deeply"),
    ("a subnet that is no network", {"spec": dict(_SPEC_MIN, prefix="zz",
                                                  subnet="999.1.1.1/99")},
     ": spec.subnet: '999.1.1.1/99' is not an IPv4 network"),
    ("sites that do not fit the subnet", {"spec": dict(_SPEC_MIN, prefix="zz", sites=16,
                                                       rails=4, site_prefixlen=17)},
     ": spec.site_prefixlen: 64 subnets of /17 do not fit in 10.77.0.0/16"),
    # what `up` records: the delay line's I/O (tun, packet; none under netem) and backend
    ("a delay I/O up never records", {"spec": dict(_SPEC_MIN, prefix="zz"), "delay_io": "bogus"},
     ":1: delay_io: "),
    ("a delay backend up never records", {"spec": dict(_SPEC_MIN, prefix="zz"),
                                          "delay_backend": "auto"},
     ":1: delay_backend: "),
])
@pytest.mark.parametrize("cmd", [["testbed", "status"], ["testbed", "run", "--", "true"],
                                 ["multilane", "run", "-o", "m.json"],
                                 ["pathmig", "status"]])
def test_corrupt_testbed_state_is_refused_before_acting(
        tmp_path: Path, name: str, state: object, why: str, cmd: list[str]) -> None:
    import json

    d = tmp_path / "zz-testbed"
    d.mkdir()
    text = json.dumps(state) if state is not None else \
        '{"spec": ' + "[" * 100000 + "]" * 100000 + "}"
    (d / "state.json").write_text(text)
    env = dict(cli_env(), MPILAB_TESTBED_STATE_ROOT=str(tmp_path), MPILAB_TESTBED_PREFIX="zz")
    r = _cli(*cmd, cwd=tmp_path, env=env)
    _one_line(r)
    assert f"{d / 'state.json'}{why}" in r.stderr, r.stderr
    assert not (tmp_path / "m.json").exists()


def test_every_example_spec_makes_a_state_the_schema_accepts() -> None:
    """The state schema is not stricter than what `up` writes: Spec.to_dict() of every
    example spec (and the defaults) validates."""
    from mpilab import schemacheck
    from mpilab.testbed import net
    from mpilab.testbed import spec as tbspec

    root = Path(__file__).resolve().parents[2] / "examples" / "testbed"
    specs = [tbspec.Spec()] + [tbspec.load(str(p)) for p in sorted(root.glob("*.toml"))]
    assert len(specs) > 3
    for sp in specs:
        state = {"spec": sp.to_dict(), "key": "k", "created": time.time(),
                 "delayline_pid": os.getpid(), "delayline_pids": [os.getpid()],
                 "delay_backend": "delayline", "netem_available": False, "delay_io": "tun",
                 "delay_trim": {"trim_s": 0.0, "measured": False}}
        assert schemacheck.first_error(net.STATE_SCHEMA, state) is None, sp.source


# ------------------------------------------------------------------ tune export (items 3, 5)

CHOICE = {"schema": "mpilab.tune-choice/1", "source": "x", "mpi": "Open MPI 4.1.4",
          "min_effect": 0.05, "test": "t",
          "cells": [{"op": "bcast", "np": 2, "bytes": 1024, "winner": "ompi_binomial",
                     "ratio": 0.5, "lo": 0.4, "hi": 0.6, "candidates": {}}],
          "ranges": [{"op": "bcast", "np": 2, "ranges": [
              {"winner": "ompi_binomial", "from": 1024, "to": 1024, "sizes": [1024]}]}]}


def _rng(d: dict[str, Any]) -> dict[str, Any]:
    r: dict[str, Any] = d["ranges"][0]["ranges"][0]
    return r


@pytest.mark.parametrize("name, mutate, why", [
    ("negative from", lambda d: _rng(d).update({"from": -5}),
     ":26: ranges[0].ranges[0].from: -5 is not a message size"),
    ("non-numeric from", lambda d: _rng(d).update({"from": "x"}),
     ":26: ranges[0].ranges[0].from: expected an integer"),
    ("communicator size 0", lambda d: d["ranges"][0].update(np=0),
     ":22: ranges[0].np: 0 is not a communicator size"),
    ("communicator size -8", lambda d: d["ranges"][0].update(np=-8),
     ":22: ranges[0].np: -8 is not a communicator size"),
    ("communicator size 10^9", lambda d: d["ranges"][0].update(np=10**9),
     ":22: ranges[0].np: 1000000000 is not a communicator size"),
    ("reversed range", lambda d: _rng(d).update(to=10),
     ":24: ranges[0].ranges[0]: from 1024 is above to 10"),
    ("1e30 end", lambda d: _rng(d).update(to=1e30),
     ":27: ranges[0].ranges[0].to: 1e+30 is not a message size"),
    ("overlapping ranges", lambda d: d["ranges"][0]["ranges"].append(
        dict(_rng(d), winner="native")),
     ":34: ranges[0].ranges[1].from: 1024 is not above the range before it"),
    ("duplicate collective", lambda d: d["ranges"].append(d["ranges"][0]),
     ":34: ranges[1]: bcast at 2 ranks again"),
    ("nested lists", lambda d: d["ranges"][0].update(ranges=[[[[[]]]]]),
     ":24: ranges[0].ranges[0]: expected an object"),
    ("MPICH choice as Open MPI rules", lambda d: _rng(d).update(winner="mpich_binomial"),
     ": bcast at 2 ranks chose mpich_binomial, an algorithm of MPICH"),
    ("deep nesting", None, ": malformed JSON: nested too deeply"),
])
def test_tune_export_refuses_a_bad_choice(tmp_path: Path, name: str, mutate: Any,
                                          why: str) -> None:
    import copy
    import json

    if mutate is None:
        text = '{"schema": "mpilab.tune-choice/1", "cells": [], "ranges": ' + \
            "[" * 100000 + "]" * 100000 + "}"
    else:
        doc = copy.deepcopy(CHOICE)
        mutate(doc)
        text = json.dumps(doc, indent=1)
    (tmp_path / "c.json").write_text(text)
    r = _cli("tune", "export", "c.json", "--openmpi", "rules.conf", cwd=tmp_path)
    _one_line(r)
    assert "c.json" + why in r.stderr, r.stderr
    assert not (tmp_path / "rules.conf").exists()


def test_tune_export_writes_a_good_choice(tmp_path: Path) -> None:
    import json
    import shutil

    if shutil.which("ompi_info") is None:
        pytest.skip("needs Open MPI's ompi_info")
    (tmp_path / "c.json").write_text(json.dumps(CHOICE, indent=1))
    r = _cli("tune", "export", "c.json", "--openmpi", "rules.conf", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "7 # bcast" in (tmp_path / "rules.conf").read_text()


@pytest.mark.parametrize("args, why", [
    (["sweep", "--dir", "sw", "--timeout", "-1"],
     "argument --timeout: '-1': need 0 < seconds <= 1e+07"),
    (["sweep", "--dir", "sw", "--rounds", "-1"], "argument --rounds: '-1': must not be negative"),
    (["sweep", "--dir", "sw", "--min-effect", "-1"], "argument --min-effect: '-1': need 0 <="),
    (["choose", "--dir", "sw", "--out", "c.json", "--min-effect", "-1"],
     "argument --min-effect: '-1': need 0 <="),
    (["validate", "c.json", "--dir", "sw", "--out", "r.conf", "--timeout", "-1"],
     "argument --timeout: '-1': need 0 < seconds <= 1e+07"),
    (["validate", "c.json", "--dir", "sw", "--out", "r.conf", "--rounds", "0"],
     "argument --rounds: '0': must be at least 1"),
])
def test_tune_refuses_negative_limits(tmp_path: Path, args: list[str], why: str) -> None:
    r = _cli("tune", *args, cwd=tmp_path)
    _one_line(r)
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_tune_sweep_dir_that_is_not_a_directory(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(tmp_path / "sw")
    else:
        (tmp_path / "sw").write_text("x")
    r = _cli("tune", "sweep", "--dir", "sw", "--np", "2", "--colls", "bcast", cwd=tmp_path,
             timeout=60)
    _one_line(r)
    assert r.returncode == 2 and "--dir: 'sw': not a directory" in r.stderr, r.stderr


def test_tune_sweep_too_many_ranks_leaves_no_state(tmp_path: Path) -> None:
    r = _cli("tune", "sweep", "--dir", "sw", "--np", "100000", "--colls", "bcast",
             "--sizes", "1K", cwd=tmp_path, timeout=120)
    _one_line(r)
    assert "--np 100000: this machine can start at most" in r.stderr, r.stderr
    assert not (tmp_path / "sw").exists()


# ------------------------------------------------------------------ standard output (item 3)

def _to(cmd: list[str], cwd: Path, stdout: Any,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(MPILAB + cmd, cwd=cwd, env=env or cli_env(), stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def _good_results(tmp_path: Path) -> None:
    import json

    from test_pair_matrix import compact_doc

    (tmp_path / "a.json").write_text(json.dumps(compact_doc()))
    (tmp_path / "b.json").write_text(json.dumps(compact_doc()))


STDOUT_COMMANDS = {
    "diff": ["diff", "a.json", "b.json"],
    "report csv to -": ["report", "a.json", "--format", "csv", "-o", "-"],
    "testbed status": ["testbed", "status"],
    "--version": ["--version"],
    "--help": ["--help"],
}


@pytest.mark.parametrize("name", list(STDOUT_COMMANDS))
def test_closed_stdout_ends_quietly(tmp_path: Path, name: str) -> None:
    """`| head -c0`: the reader is gone before anything is written; exit 0, nothing said."""
    _good_results(tmp_path)
    env = dict(cli_env(), MPILAB_TESTBED_STATE_ROOT=str(tmp_path / "none"))
    r, w = os.pipe()
    os.close(r)
    try:
        p = _to(STDOUT_COMMANDS[name], tmp_path, w, env)
    finally:
        os.close(w)
    assert p.returncode == 0 and p.stderr == "", (p.returncode, p.stderr)


@pytest.mark.parametrize("name", list(STDOUT_COMMANDS))
def test_full_stdout_is_one_line_and_non_zero(tmp_path: Path, name: str) -> None:
    """`> /dev/full`: the output is lost, so the command fails in one line (was: exit 0 or
    Python's 'Exception ignored' lines)."""
    _good_results(tmp_path)
    env = dict(cli_env(), MPILAB_TESTBED_STATE_ROOT=str(tmp_path / "none"))
    with open("/dev/full", "w") as full:
        p = _to(STDOUT_COMMANDS[name], tmp_path, full, env)
    _one_line(p)
    assert "standard output: write failed: No space left on device" in p.stderr, p.stderr


def test_first_line_of_testbed_status(tmp_path: Path) -> None:
    """`testbed status | head -1`: the first line arrives and the command ends with 0."""
    env = dict(cli_env(), MPILAB_TESTBED_STATE_ROOT=str(tmp_path / "none"))
    p = subprocess.run(" ".join(MPILAB) + " testbed status | head -1; "
                       "exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == "" and p.stdout.count("\n") == 1, p


# ------------------------------------------------------------------ fault kinds (item 3)

# A fault kind added to the table the way docs/architecture.md says (registered while
# mpilab.testbed.faults loads), here from a module the command list loads first.
BAD_KIND = {
    "twice": "from mpilab.testbed import faults\nfaults.register(faults.kinds()[0])\n",
    "without detect": "from mpilab.testbed import faults\n"
                      "f = lambda spec, node, rail: None\n"
                      "faults.register(faults.FaultKind('cut', 'a cut', f, f, None))\n",
}
KIND_RUNNER = r"""
import sys
from mpilab import cli
cli.COMMAND_MODULES.insert(0, "badkind")
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("how", list(BAD_KIND))
def test_a_bad_fault_kind_is_one_line_and_the_cli_still_works(tmp_path: Path, how: str) -> None:
    (tmp_path / "badkind.py").write_text(BAD_KIND[how])
    env = dict(cli_env())
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env["PYTHONPATH"]
    # --help loads every command module (the bad one too); a named command loads its own
    # module alone (mpilab.cli.COMMANDS), and --version none, so the bad one is not read there
    for args, out, lines in ((["--help"], "usage: mpilab ", 1), (["--version"], "mpilab ", 0),
                             (["tune", "--help"], "usage: mpilab tune", 0)):
        p = subprocess.run([sys.executable, "-c", KIND_RUNNER, *args], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and p.stdout.startswith(out), (p.returncode, p.stderr)
        assert p.stderr.count("\n") == lines and "Traceback" not in p.stderr, p.stderr
        why = "already registered" if how == "twice" else "detect is not a function"
        assert lines == 0 or \
            f"fault kind '{'down' if how == 'twice' else 'cut'}': {why}" in p.stderr
