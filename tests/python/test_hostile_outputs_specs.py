"""Issue 29's classes and issue 28's report and CSV items, one test each: a FIFO output per
writer (a timeout turns a hang into a failure), malformed multilane documents, impossible
values in results files, a full disk (ENOSPC on a small tmpfs, root), arguments checked
before the environment, spec files, the report's layout and outputs."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env, make_results, real_runner
from mpilab import plausible, results
from mpilab.errors import MpilabError
from mpilab.multilane import doc as mldoc
from mpilab.report import figs
from mpilab.testbed import launch as tblaunch
from mpilab.testbed import spec as tbspec

MPILAB = [sys.executable, "-m", "mpilab.cli"]
NEEDS_RUNNER = pytest.mark.skipif(real_runner() is None or shutil.which("mpirun") is None,
                                  reason="needs the built mpilab-bench and mpirun")


def _cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(MPILAB + list(args), cwd=cwd, env=cli_env(), capture_output=True,
                          text=True, timeout=timeout)


def _mpirun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mpirun", "--oversubscribe", "-np", "2", str(real_runner()), *args],
                          cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=300)


# ------------------------------------------------------------------ FIFO outputs

def _multilane_doc() -> dict[str, Any]:
    run = {"op": "scatter", "impl": "single", "lanes": 1, "bytes": 1024, "times": [1e-3, 2e-3]}
    return {"schema": "mpilab.multilane/1", "root": 0,
            "grid": {"nranks": 4, "nsites": 2, "site_of_rank": [0, 0, 1, 1], "P_sup": 2},
            "runs": [run, dict(run, bytes=4096, times=[3e-3])]}


def test_multilane_report_to_fifo_without_reader(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text(json.dumps(_multilane_doc()))
    os.mkfifo(tmp_path / "f.html")
    r = _cli("multilane", "report", "m.json", "-o", "f.html", cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "a FIFO with no reader" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1


@NEEDS_RUNNER
def test_runner_refuses_a_fifo_before_measuring(tmp_path: Path) -> None:
    """Refused before any measurement (no table, no checkpoint line), one line."""
    os.mkfifo(tmp_path / "f.json")
    r = _mpirun("--ops", "p2p", "--sizes", "1", "--out", "f.json", cwd=tmp_path)
    assert r.returncode != 0
    assert "mpilab-bench: f.json: a FIFO with no reader" in r.stderr
    assert "checkpoint" not in r.stderr and "median" not in r.stdout


# ------------------------------------------------------------------ malformed multilane

@pytest.mark.parametrize("name, mutate, where", [
    ("garbage wan_samples", lambda d: d.update(wan_samples={"t": "zz", "tx_bytes": {"a": 5}}),
     "wan_samples.t"),
    ("sample times shorter than the counters", lambda d: d.update(
        wan_samples={"t": [1.0], "tx_bytes": {"s1r0": [1, 2, 3]}}),
     "wan_samples.tx_bytes.s1r0: 3 counter values for 1 sample times"),
    ("a string root", lambda d: d.update(root="a"), "root: expected an integer"),
    ("a root of 10^30", lambda d: d.update(root=10**30), "root: 1000000000000000000000000000000"),
    ("a root beyond the grid", lambda d: d.update(root=7), "root: rank 7 does not exist"),
    ("nranks -3", lambda d: d["grid"].update(nranks=-3), "grid.nranks: -3 is below 2"),
    ("10^12 lanes", lambda d: d["runs"][0].update(lanes=10**12), "runs[0].lanes"),
    ("lanes beyond P_sup", lambda d: d["runs"][0].update(lanes=3), "at most 2 (P_sup)"),
])
def test_malformed_multilane_documents(tmp_path: Path, name: str,
                                       mutate: Callable[[dict[str, Any]], None],
                                       where: str) -> None:
    d = _multilane_doc()
    mutate(d)
    p = tmp_path / "m.json"
    p.write_text(json.dumps(d))
    with pytest.raises(MpilabError) as e:
        mldoc.load(p)
    assert where in str(e.value) and "\n" not in str(e.value)
    r = _cli("multilane", "report", "m.json", "-o", "o.html", cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "internal error" not in r.stderr
    assert not (tmp_path / "o.html").exists()


@pytest.mark.parametrize("text", ['"mpilab.multilane/1"', "1" + "0" * 30])
def test_multilane_document_not_an_object(tmp_path: Path, text: str) -> None:
    p = tmp_path / "m.json"
    p.write_text(text)
    with pytest.raises(MpilabError, match="not a mpilab.multilane/1 document"):
        mldoc.load(p)


def test_multilane_report_on_the_shared_stack(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text(json.dumps(_multilane_doc()))
    r = _cli("multilane", "report", "m.json", "-o", "o.html", cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "o.html").read_text()
    assert 'class="mpilab-fig"' in text and "<img" not in text
    assert (tmp_path / figs.runtime_file_name()).is_file()


# ------------------------------------------------------------------ impossible values

def _doc() -> dict[str, Any]:
    return make_results(ranks=2, sizes=(0, 1024))


def _coll(d: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in d["measurements"] if m["op"] != "p2p")


IMPOSSIBLE = [
    ("a negative mean", lambda d: _coll(d)["stats"].update(mean=-1e-6), "stats.mean: -1e-06"),
    ("a negative median", lambda d: _coll(d)["stats"].update(median=-1e-6), "stats.median"),
    ("a mean of 1e308", lambda d: _coll(d)["stats"].update(mean=1e308), "stats.mean: 1e+308"),
    ("an interval that misses its median", lambda d: _coll(d)["stats"].update(med_lo=1.0),
     "the interval must hold it"),
    ("min above max", lambda d: _coll(d)["stats"].update(min=1.0), "is above max"),
    ("more invalid repetitions than repetitions",
     lambda d: _coll(d)["stats"].update(invalid=10**6), "invalid repetitions of"),
    ("an unknown op", lambda d: _coll(d).update(op="teleport"), "'teleport': unknown operation"),
    ("an unknown timing method", lambda d: _coll(d).update(timing="psychic"),
     "psychic: unknown timing method"),
    ("provenance.ranks 10^9", lambda d: d["provenance"].update(
        ranks=10**9, mapping=[{"rank": 0, "host": "n0"}, {"rank": 1, "host": "n0"}]),
     "provenance.ranks: 1000000000 ranks, but the mapping lists 2"),
    ("a mapping host not in the hosts", lambda d: d["provenance"].update(
        ranks=2, hosts=["n0"], mapping=[{"rank": 0, "host": "n0"}, {"rank": 1, "host": "n9"}]),
     "host 'n9' is not in provenance.hosts"),
]


@pytest.mark.parametrize("name, mutate, expected", IMPOSSIBLE, ids=[c[0] for c in IMPOSSIBLE])
def test_impossible_values_refused_at_load(tmp_path: Path, name: str,
                                           mutate: Callable[[dict[str, Any]], None],
                                           expected: str) -> None:
    d = _doc()
    mutate(d)
    p = tmp_path / "r.json"
    p.write_text(json.dumps(d, indent=1))
    with pytest.raises(MpilabError) as e:
        results.load(p)
    msg = str(e.value)
    assert expected in msg and "\n" not in msg and re.match(rf"{re.escape(str(p))}:\d+: ", msg)


def test_a_users_entry_is_known_through_the_provenance() -> None:
    d = _doc()
    _coll(d).update(op="myop")
    assert next(plausible.problems(d), None) is not None
    d["provenance"].setdefault("options", {})["ops"] = ["myop:custom"]
    assert next(plausible.problems(d), None) is None


@NEEDS_RUNNER
def test_builtin_ops_are_the_runners(tmp_path: Path) -> None:
    r = subprocess.run([str(real_runner()), "--list", "--json"], capture_output=True,
                       text=True, timeout=120, env=cli_env())
    names = {e["name"] for e in json.loads(r.stdout)["entries"]}
    assert names <= plausible.BUILTIN_OPS
    # the testbed check's and mpilab-wavefront's
    assert plausible.BUILTIN_OPS - names == {"link", "wavefront"}


def test_control_characters_are_escaped_in_the_page(tmp_path: Path) -> None:
    d = _doc()
    d["provenance"]["command"] = "a\x00b\x1b[31mc"
    (tmp_path / "r.json").write_text(json.dumps(d))
    r = _cli("report", "r.json", "-o", "r.html", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    raw = (tmp_path / "r.html").read_bytes()
    assert b"\x00" not in raw and b"\x1b" not in raw and b"a\\x00b\\x1b[31mc" in raw


# ------------------------------------------------------------------ reports (issue 28.8)

def test_report_layout_and_size(tmp_path: Path) -> None:
    """Legend beside the summary, provenance folded after every figure, the plotting
    library in one shared file, a small page."""
    d = _doc()
    (tmp_path / "r.json").write_text(json.dumps(d))
    r = _cli("report", "r.json", "-o", "r.html", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "r.html").read_text()
    legend = text.index('id="flag-legend"')
    assert text.index('<section id="summary">') < legend < text.index('class="cards"')
    prov = text.index('<section id="provenance">')
    assert prov > text.rindex('class="mpilab-fig"')
    assert '<details class="mpilab-long"><summary>Provenance' in text[prov:]
    assert 'class="tscroll"' in text
    assert (tmp_path / figs.runtime_file_name()).is_file()
    assert len(text) < 500_000 and 'id="mpilab-plotlyjs"' not in text  # not embedded
    r = _cli("report", "r.json", "-o", "s.html", "--self-contained", cwd=tmp_path)
    assert r.returncode == 0 and 'id="mpilab-plotlyjs"' in (tmp_path / "s.html").read_text()


def test_report_csv_is_one_way(tmp_path: Path) -> None:
    d = _doc()
    (tmp_path / "r.json").write_text(json.dumps(d))
    r = _cli("report", "r.json", "--format", "csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "r.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(d["measurements"])
    for row, m in zip(rows, d["measurements"], strict=True):
        k = 0.5 if m["op"] == "p2p" else 1.0
        assert float(row["median_s"]) == pytest.approx(k * m["stats"]["median"])
        if m["op"] == "p2p":
            assert float(row["roundtrip_median_s"]) == pytest.approx(m["stats"]["median"])


def test_run_health_groups_flagged_parameters() -> None:
    from mpilab.report.summary import grouped_params

    params = [f"hockney 0-{j} range 0..4 alpha: beta_clamped" for j in range(1, 31)]
    out = grouped_params(params)
    assert len(out) == 1 and out[0].startswith("30 x model parameter hockney alpha")
    assert "(27 more)" in out[0]


@NEEDS_RUNNER
def test_runner_csv(tmp_path: Path) -> None:
    r = _mpirun("--ops", "p2p,bcast", "--sizes", "1", "--quiet", "--format", "csv",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(r.stdout.splitlines()))
    p2p = next(x for x in rows if x["op"] == "p2p")
    assert float(p2p["median_s"]) == pytest.approx(0.5 * float(p2p["roundtrip_median_s"]))
    assert next(x for x in rows if x["op"] == "bcast")["roundtrip_median_s"] == ""


# ------------------------------------------------------------------ a full disk

@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Any:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs")
    d = tmp_path / "full"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)])


@NEEDS_RUNNER
def test_enospc_leaves_nothing_at_out(small_tmpfs: Path, tmp_path: Path) -> None:
    # a run of a few seconds (checkpoints are tried once a second after the first), whose
    # document (megabytes of samples) cannot fit the 64 KiB disk; without the budget the
    # unconverged measurements fill the default 60 s and write over 100 MB
    job = ["--ops", "p2p,bcast,scatter", "--sizes", "1:64K:x4", "--time-budget", "5s",
           "--quiet"]
    out = small_tmpfs / "r.json"
    r = _mpirun(*job, "--out", str(out), cwd=tmp_path)
    assert r.returncode != 0 and "No space left on device" in r.stderr
    # at most one line about checkpoints ("... (no further checkpoints)"), not one per try
    assert sum("checkpoint" in ln for ln in r.stderr.splitlines()) <= 1
    assert not out.exists()
    q = subprocess.run(MPILAB + ["bench", "--np", "2", "--out", str(small_tmpfs / "b.json"),
                                 "--", *job], env=cli_env(), capture_output=True, text=True,
                       timeout=600, cwd=tmp_path)
    assert q.returncode != 0 and "internal error" not in q.stderr
    assert not (small_tmpfs / "b.json").exists()


def test_atomic_write_on_a_full_disk_is_one_line(small_tmpfs: Path) -> None:
    from mpilab.fsutil import atomic_write_bytes

    with pytest.raises(MpilabError, match="write failed: No space left on device"):
        atomic_write_bytes(small_tmpfs / "x", b"x" * (1 << 20))
    assert os.listdir(small_tmpfs) == []


# ------------------------------------------------------------------ arguments first

def test_job_arguments_checked_against_the_spec() -> None:
    sp = tbspec.load_text(tbspec.DEFAULT_SPEC, "<default>", "hz")
    tblaunch.check_job_args(sp, 2, "s0n0,s0n1", [0])
    for np, hosts, rails, why in ((2, "s9n9", None, "no such node"),
                                  (2, "s0n0;id", None, "not a node name"),
                                  (100000, None, None, "can start at most"),
                                  (2, None, [5], "rail 5 does not exist")):
        with pytest.raises(MpilabError, match=why):
            tblaunch.check_job_args(sp, np, hosts, rails)


@pytest.mark.parametrize("change, why", [
    (lambda t: t.replace('node_rate = "100Mbit"', 'node_rate = "1bit"'), "rate below 10kbit"),
    (lambda t: t + '\n[[link]]\nnode = "s0n1"\nrail = 0\nwan_rate = "20Mbit"\n'
     '[[link]]\nnode = "s0n1"\nrail = 0\nwan_rate = "30Mbit"\n', "a second [[link]]"),
    (lambda t: t + "\nx = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deep"),
    (lambda t: t.replace("sites = 2", "sites = " + "9" * 5000), "more than 4300 digits"),
])
def test_bad_testbed_specs(change: Callable[[str], str], why: str) -> None:
    text = change(tbspec.DEFAULT_SPEC)
    assert text != tbspec.DEFAULT_SPEC
    with pytest.raises(MpilabError, match=re.escape(why)) as e:
        tbspec.load_text(text, "s.toml", "hz")
    assert "\n" not in str(e.value)



def test_spec_fuzzer_short_run() -> None:
    """200 mutated testbed and disk specs (huge numbers, deep nesting, duplicated tables):
    each loads or is refused in one line naming the file (tests/fuzz/fuzz_specs.py)."""
    r = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "fuzz"
                                            / "fuzz_specs.py"), "--iterations", "200"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "0 failures" in r.stdout
