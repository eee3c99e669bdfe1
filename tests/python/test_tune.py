"""mpilab tune (docs/tune.md): the choice on synthetic samples, the rules file and selection
JSON read back by readers written here (not the exporter's code), bad input, validation on
synthetic pairs, and real runs proving forcing and the exported file by the library's own
naming of the algorithm (no timing anywhere). mpilab diff: test_tune_diff.py."""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mpilab import launches
from mpilab.tune import choose, export
from mpilab.tune.algorithms import mpich_container, parse_ompi_info
from tunekit import (
    PAIR_LEVELS,
    REPO,
    _doc,
    _launched,
    _meas,
    _mpilab,
    _pair_docs,
    _write,
    csel,
    ompi_pick,
    read_ompi_rules,
)

BENCH = REPO / "build" / "bin" / "mpilab-bench"


LEVELS = [1.0, 1.6, 0.8]  # launches at levels 60% apart, as this machine gives them


# ------------------------------------------------------------------- the choice


def _cells(table: dict[tuple[str, str, int], float], **kw: Any) -> dict[int, choose.Cell]:
    doc = _launched(LEVELS, table, **kw)
    return {c.bytes: c for c in choose.choose_all([doc])}


def test_clear_winner_is_chosen_with_its_interval() -> None:
    c = _cells({("bcast", "native", 1024): 10e-6, ("bcast", "ompi_chain", 1024): 7e-6,
                ("bcast", "ompi_linear", 1024): 10.2e-6})[1024]
    assert c.winner == "ompi_chain"
    assert c.ratio == pytest.approx(0.7, rel=0.05) and c.lo < 0.7 < c.hi < 0.95
    assert c.candidates["ompi_linear"]["significant"] is False


def test_tie_keeps_the_default() -> None:
    c = _cells({("bcast", "native", 64): 5e-6, ("bcast", "ompi_chain", 64): 5e-6})[64]
    assert c.winner == "native"


def test_noisy_loser_and_small_gain_keep_the_default() -> None:
    # 3% faster: significant inside launches maybe, but below the 5% minimum effect
    c = _cells({("bcast", "native", 64): 5e-6, ("bcast", "ompi_chain", 64): 4.85e-6},
               noise=0.005)[64]
    assert c.winner == "native"
    # slower and very noisy: never a winner
    c = _cells({("bcast", "native", 64): 5e-6, ("bcast", "ompi_chain", 64): 6e-6},
               noise=0.4)[64]
    assert c.winner == "native"


def test_a_winner_that_one_launch_contradicts_is_not_chosen() -> None:
    rng = random.Random(3)
    docs = []
    for k, lv in enumerate(LEVELS):
        cand = 7e-6 if k < 2 else 12e-6  # the third launch says the opposite
        docs.append(_doc([_meas("bcast", "native", 8, [10e-6 * lv * math.exp(rng.gauss(0, .02))
                                                       for _ in range(40)]),
                          _meas("bcast", "ompi_chain", 8, [cand * lv * math.exp(rng.gauss(0, .02))
                                                           for _ in range(40)])]))
    doc = launches.merge(docs, ["a", "b", "c"])
    assert choose.choose_all([doc])[0].winner == "native"


def test_winner_at_one_size_only_gives_three_ranges_and_refines_around_it() -> None:
    t: dict[tuple[str, str, int], float] = {}
    for b in (4, 64, 1024, 16384, 262144):
        t[("allreduce", "native", b)] = 1e-6 * (1 + b / 1000)
        t[("allreduce", "ompi_ring", b)] = t[("allreduce", "native", b)] * (0.6 if b == 1024
                                                                            else 1.0)
    cells = list(_cells(t).values())
    rng = choose.ranges(cells)
    assert [(r["winner"], r["from"], r["to"]) for r in rng] == [
        ("native", 4, 64), ("ompi_ring", 1024, 1024), ("native", 16384, 262144)]
    assert choose.refine(cells) == [256, 4096]  # only where the winner changes


# ------------------------------------------------------- Open MPI rules: round trip


CHOICE = {"schema": "mpilab.tune-choice/1", "source": "test", "cells": [],
          "ranges": [{"op": "bcast", "np": 2, "ranges": [
              {"winner": "native", "from": 4, "to": 64, "sizes": [4, 64]},
              {"winner": "ompi_chain", "from": 1024, "to": 16384, "sizes": [1024, 16384]},
              {"winner": "ompi_binomial", "from": 262144, "to": 262144, "sizes": [262144]}]},
              {"op": "alltoall", "np": 4, "ranges": [
                  {"winner": "ompi_pairwise", "from": 8, "to": 8, "sizes": [8]},
                  {"winner": "native", "from": 4096, "to": 4096, "sizes": [4096]}]},
              {"op": "barrier", "np": 2, "ranges": [
                  {"winner": "ompi_recursive_doubling", "from": 0, "to": 0, "sizes": [0]}]},
              {"op": "gather", "np": 2, "ranges": [
                  {"winner": "native", "from": 4, "to": 1024, "sizes": [4, 1024]}]}]}
OMPI_INFO = "\n".join(
    f"mca:coll:tuned:param:coll_tuned_{c}_algorithm:enumerator:value:{n}:{name}"
    for c, n, name in (("bcast", 0, "ignore"), ("bcast", 2, "chain"), ("bcast", 6, "binomial"),
                       ("alltoall", 2, "pairwise"), ("barrier", 3, "recursive_doubling"),
                       ("reduce", 6, "in-order_binary")))


def test_ompi_info_parse() -> None:
    algs = parse_ompi_info(OMPI_INFO + "\nmca:coll:tuned:param:coll_tuned_bcast_algorithm:value:0")
    assert algs["bcast"] == {"ompi_chain": 2, "ompi_binomial": 6}
    assert algs["reduce"] == {"ompi_in_order_binary": 6}


def test_rules_file_round_trip() -> None:
    text = export.ompi_rules(CHOICE, parse_ompi_info(OMPI_INFO))
    rules = read_ompi_rules(text)
    assert set(rules) == {7, 3, 6}  # gather, kept at the default everywhere, left out
    # bcast on 2 ranks: default below the middle of 64 and 1024, chain, binomial above
    # (half a step beyond the last measured size, 4 x 262144: the default again)
    assert [ompi_pick(rules, 7, 2, m) for m in (4, 64, 255, 256, 1024, 16384, 262144,
                                                 1048575, 1048576, 1 << 30)] \
        == [0, 0, 0, 2, 2, 2, 6, 6, 0, 0]
    assert ompi_pick(rules, 7, 3, 1024) == 0 and ompi_pick(rules, 7, 64, 1024) == 0
    # alltoall: Open MPI compares block x ranks: 8 B blocks on 4 ranks are 32 B
    assert ompi_pick(rules, 3, 4, 32) == 2 and ompi_pick(rules, 3, 4, 4096 * 4) == 0
    assert ompi_pick(rules, 3, 2, 32) == 0  # 2 ranks were not measured: default
    assert ompi_pick(rules, 6, 2, 0) == 3


def test_rules_refuse_an_algorithm_open_mpi_lacks() -> None:
    bad = json.loads(json.dumps(CHOICE))
    bad["ranges"][0]["ranges"][1]["winner"] = "ompi_bogus"
    with pytest.raises(Exception, match="ompi_bogus is not one Open MPI offers"):
        export.ompi_rules(bad, parse_ompi_info(OMPI_INFO))


# ------------------------------------------------------------- MPICH selection JSON


MPICH_DEFAULT = {"collective=bcast": {"comm_type=intra": {"avg_msg_size<=12288": {
    "algorithm=MPIR_Bcast_intra_binomial": {}}, "avg_msg_size=any": {
    "algorithm=MPIR_Bcast_intra_scatter_ring_allgather": {}}}, "comm_type=inter": {}},
    "collective=allgather": {"comm_type=intra": {"total_msg_size<81920": {
        "algorithm=MPIR_Allgather_intra_brucks": {}}, "total_msg_size=any": {
        "algorithm=MPIR_Allgather_intra_ring": {}}}},
    "collective=alltoall": {"comm_type=intra": {"avg_msg_size<=256": {
        "algorithm=MPIR_Alltoall_intra_brucks": {}}, "avg_msg_size=any": {
        "algorithm=MPIR_Alltoall_intra_scattered": {}}}}}


def test_mpich_json_round_trip() -> None:
    names = frozenset({"MPIR_Bcast_intra_binomial", "MPIR_Bcast_intra_scatter_ring_allgather",
                       "MPIR_Allgather_intra_ring", "MPIR_Allgather_allcomm_nb",
                       "MPIR_Allgather_intra_brucks"})
    choice = {"ranges": [
        {"op": "bcast", "np": 2, "ranges": [
            {"winner": "mpich_scatter_ring_allgather", "from": 4, "to": 64},
            {"winner": "native", "from": 1024, "to": 1 << 20}]},
        {"op": "allgather", "np": 2, "ranges": [
            {"winner": "mpich_nb", "from": 4, "to": 4},
            {"winner": "mpich_ring", "from": 4096, "to": 4096}]}]}
    names |= {"MPIR_Alltoall_intra_pairwise", "MPIR_Alltoall_intra_brucks",
              "MPIR_Alltoall_intra_scattered"}
    # gather kept at the default everywhere: left out (this tree has no gather to edit)
    choice["ranges"].append({"op": "gather", "np": 2, "ranges": [
        {"winner": "native", "from": 4, "to": 64}]})
    choice["ranges"].append({"op": "alltoall", "np": 4, "ranges": [
        {"winner": "mpich_pairwise", "from": 4, "to": 32},
        {"winner": "native", "from": 64, "to": 64},
        {"winner": "mpich_pairwise", "from": 128, "to": 1024}]})
    doc = json.loads(json.dumps(export.mpich_json(choice, MPICH_DEFAULT, names)))
    # alltoall: csel's avg_msg_size is the block (sendcount x type size), not block x ranks
    # (the export multiplied it by the ranks: a 64 B block ran pairwise, 128 B the default)
    pw, dflt = "MPIR_Alltoall_intra_pairwise", "MPIR_Alltoall_intra_brucks"
    # (half a step beyond the last measured size, 1024 x sqrt(1024 / 128): the default)
    for block, want in ((32, pw), (64, dflt), (128, pw), (2048, pw),
                        (4096, "MPIR_Alltoall_intra_scattered")):
        assert csel(doc, "alltoall", 4, block, block * 4) == want, block
    assert csel(doc, "bcast", 2, 64, 128) == "MPIR_Bcast_intra_scatter_ring_allgather"
    assert csel(doc, "bcast", 2, 1024, 2048) == "MPIR_Bcast_intra_binomial"  # the default's
    assert csel(doc, "bcast", 2, 1 << 20, 1 << 21) == "MPIR_Bcast_intra_scatter_ring_allgather"
    assert csel(doc, "bcast", 3, 64, 192) == "MPIR_Bcast_intra_binomial"  # untuned size
    assert csel(doc, "bcast", 1, 64, 64) == "MPIR_Bcast_intra_binomial"
    assert csel(doc, "allgather", 2, 0, 8) == "MPIR_Allgather_allcomm_nb"  # total = 4 x 2
    assert csel(doc, "allgather", 2, 0, 8192) == "MPIR_Allgather_intra_ring"
    assert doc["collective=bcast"]["comm_type=inter"] == {}  # the rest kept
    assert mpich_container("bcast", "mpich_binomial") == "MPIR_Bcast_intra_binomial"
    bad = {"ranges": [{"op": "bcast", "np": 2, "ranges": [{"winner": "mpich_bogus", "from": 4,
                                                          "to": 4}]}]}
    with pytest.raises(Exception, match="MPIR_Bcast_intra_bogus is not an algorithm"):
        export.mpich_json(bad, MPICH_DEFAULT, names)


def test_tune_bad_input_is_one_line(tmp_path: Path) -> None:
    cases = [("tune", "sweep", "--dir", str(tmp_path / "s"), "--colls", "bcast,frobnicate"),
             ("tune", "sweep", "--dir", str(tmp_path / "s"), "--sizes", "4,huge"),
             ("tune", "export", str(tmp_path / "none.json"), "--openmpi", str(tmp_path / "r")),
             ("tune", "choose", str(tmp_path / "none.json"), "--out", str(tmp_path / "c.json"))]
    good = tmp_path / "good.json"
    good.write_text(json.dumps(CHOICE))
    cases.append(("tune", "export", str(good), "--mpich", str(tmp_path / "r"),
                  "--explicit-default"))   # explicit defaults are Open MPI's
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**CHOICE, "ranges": [{"op": "bcast", "np": 2, "ranges": [
        {"winner": "ompi_bogus", "from": 4, "to": 4}]}]}))
    if shutil.which("ompi_info"):
        cases.append(("tune", "export", str(bad), "--openmpi", str(tmp_path / "r")))
    for c in cases:
        p = _mpilab(*c)
        assert p.returncode == 2, (c, p.stdout, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "r").exists() and not (tmp_path / "s" / "state.json").exists()


# ------------------------------------------------------------ real runs (no timing)

needs_ompi = pytest.mark.skipif(
    not BENCH.is_file() or not shutil.which("mpirun.openmpi")
    or not (REPO / "build" / "lib" / "libmpilab-collaudit.so").is_file(),
    reason="needs build/ (Open MPI) with libmpilab-collaudit.so")


@needs_ompi
def test_forced_algorithm_runs_it_as_open_mpi_names_it() -> None:
    from mpilab.tune import verify

    seen = verify.probe(2, ["bcast:ompi_binomial", "bcast:ompi_basic_linear",
                            "allreduce:ompi_ring", "bcast:native"], [64, 65536], "openmpi",
                        None)
    assert seen[("bcast", "ompi_binomial", 64)] == "binomial"
    assert seen[("bcast", "ompi_basic_linear", 65536)] == "basic_linear"
    assert seen[("allreduce", "ompi_ring", 65536)] == "ring"
    assert seen[("bcast", "native", 64)] not in ("basic_linear",)


@needs_ompi
def test_forced_entries_are_what_ompi_info_lists() -> None:
    from mpilab.tune.algorithms import ompi_algorithms

    p = subprocess.run(["mpirun.openmpi", "--allow-run-as-root", "-q", "-np", "1", "--mca",
                        "coll_tuned_use_dynamic_rules", "1", str(BENCH), "--mpi-algorithms",
                        "--list", "--json"], capture_output=True, text=True, timeout=120)
    entries = json.loads(p.stdout)["entries"]
    listed = {(e["name"], e["impl"]) for e in entries if e["impl"].startswith("ompi_")}
    info = {(c, i) for c, algs in ompi_algorithms().items() for i in algs
            if c in {n for n, _ in listed}}
    assert listed == info and len(listed) > 30


@needs_ompi
def test_exported_rules_are_loaded_and_fire(tmp_path: Path) -> None:
    choice = {"schema": "mpilab.tune-choice/1", "source": "test",
              "cells": [{"op": "bcast", "np": 2, "bytes": b, "winner": w}
                        for b, w in ((64, "ompi_basic_linear"), (65536, "ompi_binomial"))]
              + [{"op": "allreduce", "np": 2, "bytes": 1024, "winner": "native"}],
              "ranges": [{"op": "bcast", "np": 2, "ranges": [
                  {"winner": "ompi_basic_linear", "from": 64, "to": 64},
                  {"winner": "ompi_binomial", "from": 65536, "to": 65536}]},
                  {"op": "allreduce", "np": 2, "ranges": [
                      {"winner": "native", "from": 1024, "to": 1024}]}]}
    c = _write(tmp_path, "choice.json", choice)
    rules = tmp_path / "rules.conf"
    p = _mpilab("tune", "export", c, "--openmpi", str(rules))
    assert p.returncode == 0, p.stderr
    p = _mpilab("tune", "verify", c, str(rules), "--np", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verify: 3 of 3 cells ran the chosen algorithm" in p.stdout
    assert re.search(r"bcast\s+64 B\s+chosen ompi_basic_linear\s+ran basic_linear", p.stdout)


@pytest.mark.skipif(not (REPO / "build-mpich" / "bin" / "mpilab-bench").is_file()
                    or not shutil.which("mpiexec.mpich"), reason="needs build-mpich/")
def test_mpich_exported_json_is_loaded_and_fires(tmp_path: Path) -> None:
    choice = {"schema": "mpilab.tune-choice/1", "source": "test",
              "cells": [{"op": "bcast", "np": 2, "bytes": b, "winner": w}
                        for b, w in ((4096, "mpich_scatter_ring_allgather"), (1048576, "native"))],
              "ranges": [{"op": "bcast", "np": 2, "ranges": [
                  {"winner": "mpich_scatter_ring_allgather", "from": 4096, "to": 4096},
                  {"winner": "native", "from": 1048576, "to": 1048576}]}]}
    c = _write(tmp_path, "choice.json", choice)
    sel = tmp_path / "sel.json"
    p = _mpilab("--mpi", "mpich", "tune", "export", c, "--mpich", str(sel))
    assert p.returncode == 0, p.stderr
    assert "collective=allreduce" in sel.read_text()  # the library's default tree kept
    p = _mpilab("--mpi", "mpich", "tune", "verify", c, str(sel), "--np", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verify: 2 of 2 cells ran the chosen algorithm" in p.stdout
    assert re.search(r"bcast\s+4096 B\s+chosen mpich_scatter_ring_allgather\s+ran "
                     r"intra_scatter_ring_allgather .*differs from the default", p.stdout)


@needs_ompi
def test_an_interrupted_sweep_continues_where_it_stopped(tmp_path: Path) -> None:
    d = tmp_path / "sw"
    args = ("tune", "sweep", "--dir", str(d), "--np", "2", "--colls", "bcast", "--sizes",
            "64", "--launches", "2", "--budget", "0.5", "--rounds", "0", "--quiet")
    p = _mpilab(*args)
    assert p.returncode == 0, p.stderr
    st = json.loads((d / "state.json").read_text())
    assert st["runs"]["np2-r0"]["files"] == ["np2-r0.launch1.json", "np2-r0.launch2.json"]
    assert st["spent_s"]["2"] > 0
    # as if the sweep had been stopped during launch 2: its file gone, the state without it
    first = (d / "np2-r0.launch1.json").read_bytes()
    (d / "np2-r0.launch2.json").unlink()
    (d / "np2-r0.json").unlink()
    st["runs"]["np2-r0"]["files"] = ["np2-r0.launch1.json"]
    st["runs"]["np2-r0"].pop("merged")
    st.pop("done")
    (d / "state.json").write_text(json.dumps(st))
    p = _mpilab(*args)
    assert p.returncode == 0, p.stderr
    assert (d / "np2-r0.launch1.json").read_bytes() == first  # launch 1 not measured again
    assert (d / "np2-r0.launch2.json").is_file() and (d / "np2-r0.json").is_file()
    log = (d / "np2-r0.log").read_text()
    merged = json.loads((d / "np2-r0.json").read_text())
    assert len(merged["measurements"][0]["launches"]["reps"]) == 2, log
    st2 = json.loads((d / "state.json").read_text())
    assert st2["done"] and st2["spent_s"]["2"] > st["spent_s"]["2"]
    # other settings on the same directory are refused in one line
    other = list(args)
    other[other.index("--launches") + 1] = "3"
    p = _mpilab(*other)
    assert p.returncode == 2 and "other settings" in p.stderr and len(
        p.stderr.strip().splitlines()) == 1, p.stderr


@needs_ompi
def test_an_algorithm_the_library_cannot_run_at_this_size_is_left_out(tmp_path: Path) -> None:
    from mpilab.tune import sweep

    # Open MPI lists two_proc barrier at any size; on 4 ranks it returns
    # MPI_ERR_UNSUPPORTED_OPERATION, which aborted the whole 4-rank sweep launch
    cfg = {"mpi": "openmpi", "timeout": 120.0}
    bad = sweep.unusable(4, "barrier:native,barrier:ompi_two_proc,barrier:ompi_linear", [0],
                         cfg, tmp_path)
    assert list(bad) == ["barrier:ompi_two_proc"], bad
    assert "UNSUPPORTED" in bad["barrier:ompi_two_proc"]
    assert sweep.unusable(2, "barrier:native,barrier:ompi_two_proc", [0], cfg, tmp_path) == {}


def _choice(winners: dict[tuple[str, int], str]) -> dict[str, Any]:
    from mpilab.tune import validate

    doc = {**CHOICE, "cells": [{"op": op, "np": 2, "bytes": b, "winner": w, "ratio": None,
                                "lo": None, "hi": None, "candidates": {}}
                               for (op, b), w in winners.items()], "ranges": []}
    validate.regroup(doc)
    return doc
WINNERS = {("allreduce", 8): "ompi_recursive_doubling", ("allreduce", 256): "ompi_ring",
           ("allreduce", 1024): "ompi_basic_linear", ("allreduce", 65536): "native",
           ("reduce", 8): "ompi_linear", ("reduce", 32): "native",
           ("bcast", 8): "native"}
TIMES = {k: 2e-6 * (1 + k[1] / 500) for k in WINNERS}
#: 12 pairs: the family-wise verdict can decide 7 cells (mpilab.tune.confirm.pairs_needed)
LEVELS12 = PAIR_LEVELS + [1.1, 0.95, 1.4, 0.9]


def test_validate_drops_a_loser_keeps_a_winner_and_a_tie_stays_default() -> None:
    from mpilab.tune import validate

    # through the file: recursive doubling gains 30%; ring loses 20% (a loser); basic linear
    # ties (the sweep's gain does not come through the file); reduce 4 B gains 80% but the
    # file makes reduce 32 B, kept at the default, 10% slower (the look-up)
    fac = {("allreduce", 8): 0.7, ("allreduce", 256): 1.2, ("reduce", 8): 0.2,
           ("reduce", 32): 1.10}
    ch = _choice(WINNERS)
    rules, dflt = _pair_docs(TIMES, fac, LEVELS12, seed=3)
    rows = {(r["op"], r["bytes"]): r for r in validate.compare(ch, 2, rules, dflt)}
    assert rows[("allreduce", 8)]["verdict"] == "GAIN"
    assert rows[("allreduce", 256)]["verdict"] == "LOSS"
    assert rows[("allreduce", 1024)]["verdict"] == "same"
    assert rows[("reduce", 32)]["verdict"] == "LOSS"
    assert rows[("bcast", 8)]["verdict"] == "same"
    out, notes = validate.prune(ch, list(rows.values()), 2)
    won = {(c["op"], c["bytes"]): c["winner"] for c in out["cells"]}
    assert won == {**WINNERS, ("allreduce", 256): "native", ("allreduce", 1024): "native",
                   ("reduce", 8): "native"}
    assert any(n.startswith("reduce: left out of the file") for n in notes)
    assert [r["op"] for r in export.tuned_ranges(out)] == ["allreduce"]
    assert ch["cells"][1]["winner"] == "ompi_ring"  # the input choice is not changed


def test_validate_rounds_end_with_the_measured_file() -> None:
    from mpilab.tune import validate

    def lib(choice: dict[str, Any]) -> dict[tuple[str, int], float]:
        """A simulated library: a chosen algorithm's own factor; reduce in the file costs
        its default cells 10%."""
        own = {"ompi_recursive_doubling": 0.7, "ompi_ring": 1.2, "ompi_linear": 0.2}
        tuned = {r["op"] for r in export.tuned_ranges(choice)}
        return {(c["op"], c["bytes"]): own.get(c["winner"], 1.0)
                * (1.10 if c["op"] == "reduce" and c["op"] in tuned and c["winner"] == "native"
                   else 1.0) for c in choice["cells"]}

    seen: list[dict[str, Any]] = []

    def measure(cur: dict[str, Any], np: int, *_: Any) -> list[dict[str, Any]]:
        seen.append(cur)
        rules, dflt = _pair_docs(TIMES, lib(cur), LEVELS12, seed=len(seen))
        return validate.compare(cur, np, rules, dflt)

    written: list[str] = []
    orig = validate.measure
    validate.measure = measure  # type: ignore[assignment]
    try:
        rep = validate.run(_choice(WINNERS), 2, "openmpi", Path("/nonexistent"), 12, "1s",
                           10.0, 3, lambda ch, p: written.append(str(p)), log=lambda s: None)
    finally:
        validate.measure = orig  # type: ignore[assignment]
    assert len(rep["rounds"]) == 2 and rep["rounds"][0]["notes"] and not rep["rounds"][1]["notes"]
    assert rep["validated"] and rep["final_file"] == written[-1] == "/nonexistent/round2.conf"
    final = {(c["op"], c["bytes"]): c["winner"] for c in rep["final_choice"]["cells"]}
    assert final[("allreduce", 8)] == "ompi_recursive_doubling"
    assert {w for k, w in final.items() if k != ("allreduce", 8)} == {"native"}
    assert rep["rounds"][1]["summary"]["losses"] == []
    assert rep["rounds"][1]["summary"]["gains"][0].startswith("allreduce 8 B")


def test_validate_keeps_and_drops_by_the_confirmations_family_wise_verdict() -> None:
    """One statistic: validate's verdict of every cell is the confirmation's
    (mpilab.tune.confirm.verdicts on the same launch figures). A cell whose gain holds per
    cell but not family-wise goes back to the default, and a default cell's per-cell loss
    alone (about one in 20 cells by chance) keeps its collective in the file."""
    import random

    from mpilab.tune import confirm, validate

    rng = random.Random(5)
    listed = ((8, "ompi_recursive_doubling"), (64, "ompi_ring"), (1 << 20, "ompi_ring"),
              (2 << 20, "ompi_basic_linear"))
    cells = [{"op": "allreduce", "np": 2, "bytes": b, "winner": w} for b, w in listed] + \
        [{"op": "allreduce", "np": 2, "bytes": 128 << i, "winner": "native"} for i in range(12)]
    ch = _choice({(c["op"], c["bytes"]): c["winner"] for c in cells})
    # pair levels shared by both launches of a pair; 8 B gains 30% in every pair; 64 B
    # gains 3% in 8 of 12 pairs (signed-rank p 0.021: a per-cell gain, not a family-wise one
    # among 4 cells given an algorithm); 256 B is 6% slower in 8 of 12 pairs (p 0.0098: a
    # per-cell loss beyond the minimum effect, not a family-wise one among 16 cells); 1 and
    # 2 MiB tie
    per: dict[tuple[str, int], tuple[list[float], list[float]]] = {}
    for c in cells:
        a, b = [], []
        for k in range(12):
            lv = rng.uniform(0.7, 1.5)
            f = {8: 0.7, 64: 0.97 * (1 + 0.001 * k) if k < 8 else 1.005 + 0.001 * k,
                 256: 1.06 * (1 + 0.001 * k) if k < 8 else 0.99 + 0.001 * k}.get(
                c["bytes"], 1.0 + rng.uniform(-0.02, 0.02))
            a.append(lv)
            b.append(lv * f)
        per[(c["op"], c["bytes"])] = (a, b)
    rows = validate.decide([c for c in ch["cells"]], per, 0.03)
    fw = confirm.verdicts(per, {("allreduce", b) for b, _ in listed}, 0.03)
    by = {(r["op"], r["bytes"]): r for r in fw["rows"]}
    assert [r["verdict"] for r in rows] == [by[(r["op"], r["bytes"])]["verdict"] for r in rows]
    v = {r["bytes"]: r for r in rows}
    assert v[8]["verdict"] == "GAIN"
    assert v[64]["per_cell"] == "GAIN" and v[64]["verdict"] == "same"
    assert v[256]["per_cell"] == "LOSS" and v[256]["verdict"] == "same"
    assert v[256]["comparison"]["ratio"] > 1.03
    assert all(r["decidable"] for r in rows)
    out, notes = validate.prune(ch, rows, 2)
    won = {c["bytes"]: c["winner"] for c in out["cells"]}
    assert won[8] == "ompi_recursive_doubling" and won[256] == "native"
    assert won[64] == won[1 << 20] == won[2 << 20] == "native"
    assert notes[0] == ("allreduce 64 B: ompi_ring back to the default (no family-wise gain "
                        f"through the file (x{v[64]['comparison']['ratio']:.3f}))")
    assert not any("left out of the file" in n for n in notes)
    # the same cells with too few pairs for the family: undecided, never a pass
    short = {k: (a[:8], b[:8]) for k, (a, b) in per.items()}
    assert not any(r["decidable"] for r in validate.decide(list(ch["cells"]), short, 0.03))


# ------------------------------------- Open MPI: the default's own algorithm, explicit


def test_explicit_default_rules_round_trip() -> None:
    """Ranges kept at the default get the fixed decision's steps (given here) instead of 0;
    allreduce's ring steps stay 0 (not safe for non-commutative operations, which a rules
    file cannot tell apart); sizes beyond the steps' end fall back to 0."""
    algs = {"bcast": {"ompi_chain": 2, "ompi_binomial": 6, "ompi_pipeline": 3},
            "allreduce": {"ompi_recursive_doubling": 3, "ompi_ring": 4,
                          "ompi_basic_linear": 1}}
    choice = {"schema": "mpilab.tune-choice/1", "source": "test", "cells": [], "ranges": [
        {"op": "bcast", "np": 2, "ranges": [
            {"winner": "native", "from": 4, "to": 64},
            {"winner": "ompi_chain", "from": 1024, "to": 16384},
            {"winner": "native", "from": 262144, "to": 262144}]},
        {"op": "allreduce", "np": 2, "ranges": [
            {"winner": "ompi_basic_linear", "from": 4, "to": 4},
            {"winner": "native", "from": 8, "to": 65536}]}]}
    steps = {("bcast", 2): [(4, 3), (32, 6), (131072, 3), (524288, 6), (2097152, 0)],
             ("allreduce", 2): [(4, 4), (8, 3), (4096, 4), (8192, 3), (16384, 4),
                                (131072, 0)]}
    rules = read_ompi_rules(export.ompi_rules(choice, algs, steps))
    want = {1: 3, 16: 3, 32: 6, 200: 6, 255: 6, 256: 2, 16384: 2, 65535: 2, 65536: 6,
            200000: 3, 524288: 6, 2097151: 6, 2097152: 0, 1 << 30: 0}
    assert {m: ompi_pick(rules, 7, 2, m) for m in want} == want
    want = {4: 1, 5: 0, 7: 0, 8: 3, 4095: 3, 4096: 0, 8192: 3, 16384: 0, 131072: 0}
    assert {m: ompi_pick(rules, 2, 2, m) for m in want} == want
    assert ompi_pick(rules, 7, 3, 64) == 0   # other communicator sizes: the fixed decision
    # without steps, as before: 0 for the default's ranges
    assert ompi_pick(read_ompi_rules(export.ompi_rules(choice, algs)), 7, 2, 32) == 0


@needs_ompi
def test_default_steps_read_from_the_library_hold_between_powers_of_two() -> None:
    """The fixed decision read at powers of two (ompi_default_steps) names, at sizes between
    them, the algorithm the library's default really runs there (each number checked by its
    own forced run)."""
    from mpilab.tune import verify
    from mpilab.tune.algorithms import ompi_algorithms

    algs = ompi_algorithms()
    steps = verify.ompi_default_steps(2, ["allreduce", "reduce"], algs, 65536)
    assert steps[("allreduce", 2)][-1] == (131072, 0)
    assert sum(n != 0 for _, n in steps[("reduce", 2)]) >= 2
    odd = [12, 24, 100, 3000, 6000, 12000, 40000]
    nat = verify.probe(2, ["allreduce:native", "reduce:native"], odd, "openmpi", None)
    forced = verify.probe(2, [f"{o}:{i}" for o in ("allreduce", "reduce") for i in algs[o]],
                          odd, "openmpi", None)
    for op in ("allreduce", "reduce"):
        for b in odd:
            num = [n for f, n in steps[(op, 2)] if f <= b][-1]
            impl = next(i for i, n in algs[op].items() if n == num)
            assert forced[(op, impl, b)] == nat[(op, "native", b)], (op, b, num)


@needs_ompi
def test_explicit_default_file_is_loaded_and_its_default_rules_fire(tmp_path: Path) -> None:
    """A file whose default ranges name an algorithm explicitly: the library runs that
    algorithm there. Shown with steps that claim basic linear as allreduce's default (the
    library's own default at 256 B is recursive doubling, so the audit tells them apart),
    then with the steps read from the library (every cell runs what the default runs)."""
    from mpilab.tune import verify
    from mpilab.tune.algorithms import ompi_algorithms

    algs = ompi_algorithms()
    choice = {"schema": "mpilab.tune-choice/1", "source": "test",
              "cells": [{"op": "allreduce", "np": 2, "bytes": b, "winner": w}
                        for b, w in ((4, "ompi_recursive_doubling"), (256, "native"),
                                     (2048, "native"))],
              "ranges": [{"op": "allreduce", "np": 2, "ranges": [
                  {"winner": "ompi_recursive_doubling", "from": 4, "to": 4},
                  {"winner": "native", "from": 256, "to": 2048}]}]}
    fake = {("allreduce", 2): [(4, algs["allreduce"]["ompi_basic_linear"]), (4096, 0)]}
    rules = tmp_path / "fake.conf"
    rules.write_text(export.ompi_rules(choice, algs, fake))
    ran = verify.probe(2, ["allreduce:native"], [256, 2048, 8192], "openmpi",
                       str(rules))
    assert ran[("allreduce", "native", 256)] == "basic_linear"
    assert ran[("allreduce", "native", 2048)] == "basic_linear"
    assert ran[("allreduce", "native", 8192)] != "basic_linear"  # 0 beyond: fixed decision
    c = _write(tmp_path, "choice.json", choice)
    real = tmp_path / "explicit.conf"
    p = _mpilab("tune", "export", c, "--openmpi", str(real), "--explicit-default")
    assert p.returncode == 0, p.stderr
    picks = read_ompi_rules(real.read_text())
    assert ompi_pick(picks, 2, 2, 256) == algs["allreduce"]["ompi_recursive_doubling"]
    p = _mpilab("tune", "verify", c, str(real), "--np", "2")
    assert p.returncode == 0 and "verify: 3 of 3 cells ran the chosen algorithm" in p.stdout, \
        p.stdout + p.stderr
