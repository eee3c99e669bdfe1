"""The compact all-pairs form (pair_matrix): schema, loader, report, mpilab.pairs, and the
Python design mirror against the C library's."""
from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mpilab import quality, results, results_check
from mpilab.errors import MpilabError
from mpilab.pair_matrix import expand_all
from mpilab.pairs import main as pairs_main
from mpilab.pairs import sample_pairs

ROOT = Path(__file__).resolve().parents[2]
DESIGN_BIN = ROOT / "build" / "bin" / "pairs_design"


def compact_doc(p: int = 6, sizes: tuple[int, ...] = (8, 1024), slow: int | None = 3,
                summarise: tuple[int, int] | None = None) -> dict[str, Any]:
    """A results document with one compact object per size over the sampled design of p
    ranks: t(i, j) = 10 us + 1 ns/B (+ 8 us on node `slow`), three samples a pair."""
    pairs = sample_pairs(p, seed=0)
    meas = []
    for b in sizes:
        pm: dict[str, Any] = {k: [] for k in ("i", "j", "round", "mean", "ci_half", "rel_err",
                                               "median", "med_lo", "med_hi", "min", "max",
                                               "stdev", "reps", "invalid", "converged",
                                               "flags", "samples")}
        for n, (i, j) in enumerate(pairs):
            t = 10e-6 + 1e-9 * b + (8e-6 if slow in (i, j) else 0.0)
            s = [t * 0.99, t, t * 1.01]
            for k, v in (("i", i), ("j", j), ("round", n % 3), ("mean", t), ("ci_half", t / 100),
                         ("rel_err", 0.01), ("median", t), ("med_lo", s[0]), ("med_hi", s[2]),
                         ("min", s[0]), ("max", s[2]), ("stdev", t / 100), ("reps", 3),
                         ("invalid", 0), ("converged", True), ("flags", []),
                         ("samples", None if summarise == (i, j) else s)):
                pm[k].append(v)
        pm.update(design="sampled", count=len(pairs), pairs_planned=len(pairs), rounds=3,
                  samples_cap=1000)
        meas.append({"op": "p2p", "impl": "roundtrip", "timing": "p2p", "schedule": "parallel",
                     "bytes": b, "bytes_back": b, "ranks": p,
                     "precision": {"cl": 0.95, "eps": 0.025, "min_reps": 2, "max_reps": 3},
                     "all_pairs_wall_s": 0.5, "pair_matrix": pm})
    return {"schema": "mpilab.results/1",
            "provenance": {"tool": "mpilab-bench", "version": "0.1.0", "ranks": p,
                           "date": "2026-11-25T10:00:00Z",
                           "options": {"pairs": {"design": "sampled", "asked": "auto",
                                                 "pairs": len(pairs), "groups": "none",
                                                 "ngroups": 0}}},
            "measurements": meas}


def write(tmp_path: Path, doc: dict[str, Any], name: str = "r.json") -> Path:
    f = tmp_path / name
    f.write_text(json.dumps(doc))
    return f


def test_schema_accepts_compact_and_per_pair_forms() -> None:
    schema = json.loads(results_check.SCHEMA_FILE.read_text())
    doc = compact_doc()
    jsonschema.validate(doc, schema)
    old = dict(doc, measurements=list(expand_all(doc["measurements"])))
    jsonschema.validate(old, schema)
    bad = copy.deepcopy(doc)
    bad["measurements"][0]["op"] = "bcast"  # a pair matrix is p2p only
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    bad = copy.deepcopy(doc)
    bad["measurements"][0]["pair_matrix"]["median"][0] = "fast"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_loader_expands_pairs_and_keeps_the_arrays(tmp_path: Path) -> None:
    doc = compact_doc(summarise=(0, 1))
    res = results.load(write(tmp_path, doc))
    npairs = doc["measurements"][0]["pair_matrix"]["count"]
    assert len(res.measurements) == 2 * npairs
    assert [m.index for m in res.measurements] == list(range(2 * npairs))
    m = res.measurements[0]
    assert m.op == "p2p" and m.pair == (0, 1) and m.bytes == 8 and m.stats.reps == 3
    assert m.samples == ()  # summarised: statistics only
    m = res.measurements[1]
    assert len(m.samples) == 3 and m.stats.median == pytest.approx(m.samples[1])
    assert len(res.pair_matrices) == 2 and res.pair_matrices[1].bytes == 1024
    assert res.pair_matrices[0].times()[(0, 1)] == pytest.approx(10e-6 + 8e-9)
    # the old per-pair form gives the same view
    old = dict(doc, measurements=list(expand_all(doc["measurements"])))
    res_old = results.load(write(tmp_path, old, "old.json"))
    assert [(x.pair, x.bytes, x.stats.median) for x in res_old.measurements] == \
        [(x.pair, x.bytes, x.stats.median) for x in res.measurements]
    assert quality.summary(doc)["measurements"] == 2 * npairs
    assert quality.unflagged_problems(doc) == []


@pytest.mark.parametrize("mutate,expect", [
    (lambda pm: pm["median"].pop(), "median: "),
    (lambda pm: pm.update(i=[pm["i"][1], pm["i"][0]] + pm["i"][2:],
                          j=[pm["j"][1], pm["j"][0]] + pm["j"][2:]), "out of (i, j) order"),
    (lambda pm: pm["j"].__setitem__(0, 0), "expected i < j"),
    (lambda pm: pm["j"].__setitem__(-1, 99), "does not exist"),
    (lambda pm: pm["samples"][0].pop(), "2 samples for 3 reps"),
])
def test_loader_refuses_bad_matrices_in_one_line(tmp_path: Path, mutate: Any, expect: str) -> None:
    doc = compact_doc()
    mutate(doc["measurements"][0]["pair_matrix"])
    with pytest.raises(MpilabError) as e:
        results.load(write(tmp_path, doc))
    msg = str(e.value)
    assert "\n" not in msg and expect in msg and "pair_matrix" in msg


def test_negative_sample_in_a_matrix_is_found() -> None:
    doc = compact_doc()
    doc["measurements"][0]["pair_matrix"]["samples"][2][0] = -1e-6
    assert any("samples[0]" in p for p in quality.unflagged_problems(doc))


def test_report_and_pairs_read_the_compact_form(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, compact_doc(p=12, slow=5))
    out = tmp_path / "r.html"
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "mpilab"), "report", str(f), "-o",
                          str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    html = out.read_text()
    assert "5-" in html or "-5" in html  # pairs of the slow node are in the report
    assert pairs_main([str(f)]) == 0
    text = capsys.readouterr().out
    assert "pairs of 12 ranks (sampled design" in text
    assert "slow nodes [5]" in text


@pytest.mark.skipif(not DESIGN_BIN.exists(), reason="build/bin/pairs_design not built")
@pytest.mark.parametrize("p,seed,block", [(3, 0, 0), (10, 3, 4), (65, 0, 0), (100, 5, 2),
                                          (256, 0, 64), (1024, 1, 256)])
def test_python_design_mirrors_the_c_library(p: int, seed: int, block: int) -> None:
    run = subprocess.run([str(DESIGN_BIN), "--case", "print_design", "print", str(p), str(seed),
                          str(block)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    c = [tuple(int(x) for x in ln.split()[1:]) for ln in run.stdout.splitlines()
         if ln.startswith("pair ")]
    groups = [r // block for r in range(p)] if block else None
    assert c and c == sample_pairs(p, groups, seed=seed)
