"""The machine's launch-to-launch variation, stored once and kept up to date
(mpilab.launchvar), the interval and verdict it gives one launch (mpilab.launches.merge with a
variation), and what `mpilab bench` prints (mpilab.launch_table)."""

from __future__ import annotations

import copy
import json
import math
import multiprocessing
import os
import random
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab import launch_table, launches, launchvar, quality
from mpilab.errors import MpilabError

SIZES = [1, 1024, 65536, 1 << 20]
BASE = {1: 0.4e-6, 1024: 0.6e-6, 65536: 12e-6, 1 << 20: 140e-6}
CTX = launchvar.context(["mpirun", "-np", "2"], {"OMPI_MCA_btl": "self,vader", "HOME": "/x"},
                        ["--ops", "p2p", "--sizes", "1K", "--timing", "max"], 2,
                        {"host": "h", "cpu": "c", "cpus": 2, "kernel": "k"})


def _launch(rng: random.Random, sd_level: float, shift: float = 0.0, own: float = 0.01,
            noise: float = 0.004) -> dict[str, Any]:
    """One launch's results: a level common to every size (log-normal, sd_level, plus an
    occasional whole-launch shift), a little independent noise per size, and each size's
    own interval of +-own that converged."""
    level = rng.gauss(0.0, sd_level) + shift
    ms = []
    for b in SIZES:
        med = BASE[b] * math.exp(level + rng.gauss(0.0, noise))
        ms.append({"op": "p2p", "impl": "roundtrip", "timing": "p2p", "bytes": b,
                   "bytes_back": b, "ranks": 2, "pair": [0, 1],
                   "precision": {"cl": 0.95, "eps": 0.025},
                   "stats": {"median": med, "med_lo": med * (1 - own),
                             "med_hi": med * (1 + own), "converged": True, "reps": 100},
                   "samples": [med] * 5})
    return {"schema": "mpilab.results/1", "provenance": {"mpi": "Open MPI v4.1.4",
                                                         "date": "2026-01-01T00:00:00Z"},
            "measurements": ms}


def _session(tmp_path: Path, history: list[dict[str, Any]]) -> launchvar.Session:
    store = tmp_path / "lv.json"
    for d in history:
        launchvar.record(store, CTX, "Open MPI v4.1.4", [d["measurements"]], "2026-01-01")
    return launchvar.Session(store, CTX)


def _one(s: launchvar.Session, doc: dict[str, Any]) -> dict[str, Any]:
    return launches.merge([doc], [], 1, s.variation([doc], 1))


# ----------------------------------------------------------------------- estimation

def test_moderated_variance_shrinks_towards_the_pool() -> None:
    own = [0.0, 0.1]            # variance 0.005, 1 df
    other = [0.0, 0.02, 0.04]   # variance 0.0004, 2 df
    sig = launchvar.moderated(own, [own, other], d0=4.0)
    assert sig is not None
    pooled = (0.005 * 1 + 0.0004 * 2) / 3
    assert sig.sd == pytest.approx(math.sqrt((3 * pooled + 1 * 0.005) / (3 + 1)))
    assert sig.df == pytest.approx(2.0)  # no more than the most launches behind it (3)
    assert launchvar.moderated([0.0], [[0.0]]) is None  # no two launches anywhere


def test_a_launch_far_off_the_usual_level_does_not_inflate_the_variance() -> None:
    usual = [math.log(1 + 0.01 * k) for k in (-2, -1, 0, 1, 2, -1, 0, 1, 0)]
    v = launchvar._var(usual)
    w = launchvar._var(usual + [math.log(2.0)])
    assert v is not None and w is not None
    assert w[0] == pytest.approx(v[0], rel=0.3) and w[1] == v[1]
    assert launchvar._var([0.0, 0.0, 0.0]) == (0.0, 2.0)


def test_half_width_for_one_launch_and_a_repeat_of_one() -> None:
    sig = launchvar.Sigma(sd=0.02, df=30.0, n_own=10, n_group=4)
    h = launchvar.half_log(sig, 0.95, 1, 1)
    assert h == pytest.approx(launches.t_quantile(0.95, 30) * 0.02 * math.sqrt(2))
    # the median of three launches against a repeat of one
    h3 = launchvar.half_log(sig, 0.95, 3, 1)
    assert h3 == pytest.approx(launches.t_quantile(0.95, 30) * 0.02
                               * math.sqrt(math.pi / 2 / 3 + 1))


# ----------------------------------------------------------------------- synthetic launches

@pytest.mark.parametrize("sd_level, shift_every", [(0.03, 0), (0.02, 6)])
def test_one_launch_covers_repeats_and_converges_at_the_stated_limit(
        tmp_path: Path, sd_level: float, shift_every: int) -> None:
    """Launch levels move by a few percent (and every sixth launch sits 12% higher): a
    stored history of 12 launches gives one new launch an interval that holds the median of
    five more launches in >= 90% of trials; every row converged, at the machine's limit
    (flagged), and the verdict says so."""
    rng = random.Random(7 + shift_every)
    count = 0

    def launch() -> dict[str, Any]:
        nonlocal count
        count += 1
        return _launch(rng, sd_level, 0.12 if shift_every and count % shift_every == 0 else 0)

    s = _session(tmp_path, [launch() for _ in range(12)])
    held = total = conv = 0
    for _ in range(60):
        doc = launch()
        merged = _one(s, doc)
        repeats = [launch() for _ in range(5)]
        for k, m in enumerate(merged["measurements"]):
            st = m["stats"]
            med5 = statistics.median(r["measurements"][k]["stats"]["median"] for r in repeats)
            held += st["med_lo"] <= med5 <= st["med_hi"]
            total += 1
            assert m["launches"]["variation"]["limit_rel"] > 0.025
            if st["converged"] is True:
                assert quality.AT_MACHINE_LIMIT in m["flags"]
                conv += 1
            else:  # only a launch off the machine's usual level
                assert quality.OFF_USUAL_LEVEL in m["flags"], m["flags"]
        v = launch_table.verdict(merged)
        assert v["at_eps"] == 0 and v["at_limit"] + v["off_level"] == len(SIZES)
        assert launch_table.verdict_line(merged).startswith(
            f"{v['at_limit']} of {len(SIZES)} measurements converged: 0 at the asked 2.5%")
    assert held / total >= 0.9, (held, total)
    assert conv / total >= (0.8 if shift_every else 0.9), (conv, total)


def test_a_steady_machine_converges_at_the_asked_precision(tmp_path: Path) -> None:
    rng = random.Random(3)
    s = _session(tmp_path, [_launch(rng, 0.002, own=0.01, noise=0.001) for _ in range(8)])
    merged = _one(s, _launch(rng, 0.002, own=0.01, noise=0.001))
    for m in merged["measurements"]:
        assert m["stats"]["converged"] is True
        assert quality.AT_MACHINE_LIMIT not in m["flags"]
        assert m["stats"]["med_rel_err"] <= 0.025
    assert "4 at the asked 2.5%" in launch_table.verdict_line(merged)


def test_a_launch_that_did_not_converge_is_not_converged(tmp_path: Path) -> None:
    rng = random.Random(5)
    s = _session(tmp_path, [_launch(rng, 0.03) for _ in range(6)])
    doc = _launch(rng, 0.03)
    doc["measurements"][0]["stats"]["converged"] = False
    merged = _one(s, doc)
    assert merged["measurements"][0]["stats"]["converged"] is False
    assert quality.NOT_CONVERGED in merged["measurements"][0]["flags"]
    assert "1 not converged (a launch ran out" in launch_table.verdict_line(merged)


def test_the_launchs_own_interval_is_the_floor(tmp_path: Path) -> None:
    """A steady machine does not make a noisy launch more precise than its own samples."""
    rng = random.Random(9)
    s = _session(tmp_path, [_launch(rng, 0.001, noise=0.0005) for _ in range(8)])
    merged = _one(s, _launch(rng, 0.001, own=0.2, noise=0.0005))
    for m in merged["measurements"]:
        assert m["stats"]["med_rel_err"] >= math.sinh(math.log1p(0.2)) - 1e-12


def test_without_history_one_launch_says_its_interval_is_its_own() -> None:
    rng = random.Random(1)
    merged = launches.merge([_launch(rng, 0.03)], [], 1, lambda m, meds: None)
    m = merged["measurements"][0]
    assert quality.VARIATION_UNKNOWN in m["flags"]
    assert m["stats"]["med_lo"] == pytest.approx(m["stats"]["median"] * 0.99)


# ----------------------------------------------------------------------- the store

def test_store_round_trip_keeps_the_last_launches(tmp_path: Path) -> None:
    rng = random.Random(2)
    s = _session(tmp_path, [_launch(rng, 0.03) for _ in range(launchvar.KEEP + 5)])
    assert s.stored()[0] == launchvar.KEEP + 5
    series = launchvar.series_of(s.entry)
    assert len(series) == len(SIZES)
    assert all(len(v) == launchvar.KEEP for v in series.values())
    assert s.unknown_ops([_launch(rng, 0.03)]) == []
    other = _launch(rng, 0.03)
    for m in other["measurements"]:
        m["op"] = "bcast"
    assert s.unknown_ops([other]) == ["bcast:roundtrip"]


def test_another_mpi_library_starts_the_context_afresh(tmp_path: Path) -> None:
    rng = random.Random(4)
    s = _session(tmp_path, [_launch(rng, 0.03) for _ in range(4)])
    assert s.far_off() == (0, 16)
    assert s.drop_if_other_mpi("MPICH 4.0.2") is True and s.entry is None
    launchvar.record(tmp_path / "lv.json", CTX, "MPICH 4.0.2",
                     [_launch(rng, 0.03)["measurements"]], "2026-01-02")
    s2 = launchvar.Session(tmp_path / "lv.json", CTX)
    assert s2.entry is not None and s2.entry["mpi"] == "MPICH 4.0.2"
    assert s2.stored()[0] == 1


def test_context_ignores_what_does_not_change_a_level() -> None:
    mach = {"host": "h", "cpu": "c", "cpus": 2, "kernel": "k"}
    a = launchvar.context(["mpirun"], {"OMPI_MCA_btl": "tcp"}, ["--sizes", "1K", "--out",
                                                               "x", "--timing", "max"], 2, mach)
    b = launchvar.context(["mpirun"], {"OMPI_MCA_btl": "tcp", "PATH": "/y"},
                          ["--sizes=4K", "--eps", "0.01", "--timing", "max"], 2, mach)
    c = launchvar.context(["mpirun"], {"OMPI_MCA_btl": "vader"}, ["--timing", "max"], 2, mach)
    d = launchvar.context(["mpirun"], {"OMPI_MCA_btl": "tcp"}, ["--timing", "max", "--quiet",
                                                               "--out", "y"], 2, mach)
    assert a.key() == b.key() == d.key() != c.key()


@pytest.mark.parametrize("content, expected", [
    (b"{not json", "not a launch-variation store"),
    (b'{"format": "other", "contexts": {}}', "format mpilab.launch-variation/1 expected"),
    (b'{"format": "mpilab.launch-variation/1", "contexts": {"k": {"series": {"a": [1]}}}}',
     "context 'k' is malformed"),
    (b'{"format": "mpilab.launch-variation/1", "contexts": {"k": {"series": {}, '
     b'"runs": "x"}}}', "context 'k' is malformed"),
    (b"[" * 100000, "not a launch-variation store"),
])
def test_a_bad_store_is_refused_in_one_line(tmp_path: Path, content: bytes,
                                            expected: str) -> None:
    p = tmp_path / "lv.json"
    p.write_bytes(content)
    with pytest.raises(MpilabError) as e:
        launchvar.load(p)
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_a_fifo_or_directory_store_is_refused_without_blocking(tmp_path: Path) -> None:
    f = tmp_path / "fifo.json"
    os.mkfifo(f)
    with pytest.raises(MpilabError, match="not a regular file"):
        launchvar.load(f)
    with pytest.raises(MpilabError, match="not a regular file"):
        launchvar.load(tmp_path)


def _add_many(path: str, k: int) -> None:
    rng = random.Random(k)
    for _ in range(10):
        launchvar.record(Path(path), CTX, "Open MPI v4.1.4",
                         [_launch(rng, 0.03)["measurements"]], "2026-01-01")


def test_concurrent_runs_lose_no_launch(tmp_path: Path) -> None:
    path = str(tmp_path / "lv.json")
    procs = [multiprocessing.Process(target=_add_many, args=(path, k)) for k in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert launchvar.Session(Path(path), CTX).stored()[0] == 20


# ----------------------------------------------------------------------- what is printed

def test_table_labels_rows_and_states_the_verdict(tmp_path: Path) -> None:
    rng = random.Random(11)
    s = _session(tmp_path, [_launch(rng, 0.03) for _ in range(8)])
    doc = _launch(rng, 0.03)
    doc["measurements"][3]["stats"]["converged"] = False
    text = launch_table.table(_one(s, doc))
    rows = text.splitlines()
    assert "quantity" in rows[0] and "converged" in rows[0]
    assert all("one-way" in r for r in rows[1:5])
    assert sum("at limit" in r for r in rows[1:5]) == 3
    assert " no " in rows[4]
    assert rows[-1].startswith("3 of 4 measurements converged: 0 at the asked 2.5%, 3 at "
                               "this machine's launch-to-launch limit")
    assert "1 not converged" in rows[-1]
    assert "stored launches" in rows[-2]


def test_an_interval_over_a_decade_reads_undetermined_with_its_flag(tmp_path: Path) -> None:
    """A row whose interval spans more than a decade (or has no lower bound above 0) shows
    "undetermined" and the flag ci_undetermined in its flags column, never the bounds."""
    rng = random.Random(5)
    s = _session(tmp_path, [_launch(rng, 0.03) for _ in range(8)])
    merged = _one(s, _launch(rng, 0.03))
    st = merged["measurements"][1]["stats"]
    st["med_lo"], st["med_hi"] = st["median"] / 20, st["median"] * 3
    rows = launch_table.table(merged).splitlines()
    row = rows[2]
    assert "undetermined" in row and "ci_undetermined" in row
    assert f"{st['med_lo'] * 1e6 * 0.5:.4g}.." not in row
    assert sum("ci_undetermined" in r for r in rows[1:5]) == 1


def test_cost_line_against_a_fake_clock() -> None:
    one = launch_table.cost_line(0.62, [0.5], [0.08], None)
    assert one == ("mpilab: one launch, 0.62 s in all: 0.08 s measuring, 0.54 s starting, "
                   "synchronising and writing")
    three = launch_table.cost_line(2.0, [0.5, 0.7, 0.7], [0.1, 0.1, 0.1], "measuring p2p")
    assert "3 launches, 2.00 s in all; one launch took 0.50 s: measuring p2p cost 1.50 s " \
           "more (+300%), once" in three


def test_measuring_time_counts_all_pairs_objects() -> None:
    doc = {"measurements": [{"op": "p2p", "all_pairs_wall_s": 0.25},
                            {"op": "bcast", "wall_s": 0.5}, {"op": "x"}]}
    assert launches.measuring_s(doc) == pytest.approx(0.75)
    c = launches.cost([doc, copy.deepcopy(doc)], [1.0, 1.5])
    assert c["measuring_s"] == [0.75, 0.75]


def test_limits_note_says_what_cannot_be_reached() -> None:
    note = launch_table.limits_note([0.01, 0.04, 0.06], 0.025, 12, "2026-01-01", "MPI x")
    assert note is not None
    assert "+-1.0..6.0%" in note and "cannot be reached at 2 of 3 measurements" in note
    assert "within reach" in (launch_table.limits_note([0.01], 0.025, 3, "d", None) or "")
    assert launch_table.limits_note([], 0.025, 0, "-", None) is None
    assert "(2 of 40 stored launch medians sat far off" in (
        launch_table.limits_note([0.01], 0.025, 3, "d", None, (2, 40)) or "")


# ----------------------------------------------------------------------- the command

def _fake_args(env: dict[str, str]) -> list[str]:
    return json.loads(Path(env["FAKE_BENCH_ARGS"]).read_text())


def test_bench_measures_the_variation_once_then_makes_one_launch(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    env = fake_bench("ok")
    env["MPILAB_DATA_DIR"] = str(tmp_path / "data")
    first = run_cli("bench", "--np", "1", "--out", "a.json", "--", "--ops", "bcast", env=env)
    assert first.returncode == 0, first.stderr
    assert "2 more launches now, once" in first.stderr
    assert json.loads((tmp_path / "a.json").read_text())["launches"]["n"] == 3
    assert _fake_args(env)[-4:-2] == ["--time-budget", "20s"]  # the 3 share one budget
    assert (tmp_path / "data" / launchvar.STORE_FILE).is_file()
    second = run_cli("bench", "--np", "1", "--out", "b.json", "--", "--ops", "bcast", env=env)
    assert second.returncode == 0, second.stderr
    assert "more launches" not in second.stderr and "launch 1 of" not in second.stderr
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["launches"]["n"] == 1 and doc["launches"]["variation"]["launches_stored"] == 3
    assert "mpilab: one launch," in second.stderr
    assert "--time-budget" not in _fake_args(env)  # one launch: the whole budget
    assert "measurements converged" in second.stdout
    assert not list(tmp_path.glob("b.launch*"))  # the launch file lived in a temporary folder


_COPY_RUNNER = """#!{python}
# Stand-in for mpilab-bench: writes the launch document at $LAUNCH_DOC to --out.
import os, shutil, sys
args = sys.argv[1:]
if "--out" in args:
    shutil.copyfile(os.environ["LAUNCH_DOC"], args[args.index("--out") + 1])
print("op bytes median")
"""


def test_bench_says_the_machine_limit_once_up_front_and_answers_at_it(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    """A store whose launch levels move by about 4%: the run says once, before the launch,
    what a repeat lands within and that the asked 2.5% cannot be reached; every row (each
    launch converged at +-1%) is reported converged at that limit, and the verdict says so."""
    import sys

    env = fake_bench("ok")
    bindir = tmp_path / "copybin"
    bindir.mkdir()
    exe = bindir / "mpilab-bench"
    exe.write_text(_COPY_RUNNER.format(python=sys.executable))
    exe.chmod(0o755)
    launch_doc = tmp_path / "launch.json"
    launch_doc.write_text(json.dumps(_launch(random.Random(1), 0.0, noise=0.0)))
    env.update(MPILAB_BIN=str(bindir), LAUNCH_DOC=str(launch_doc),
               MPILAB_DATA_DIR=str(tmp_path / "data"))
    first = run_cli("bench", "--np", "1", "--out", "a.json", "--", "--ops", "p2p", env=env)
    assert first.returncode == 0, first.stderr
    store = tmp_path / "data" / launchvar.STORE_FILE
    doc = json.loads(store.read_text())
    levels = [0.0, 0.04, -0.04, 0.03, -0.03, 0.05, -0.05, 0.02, -0.02, 0.01, -0.01, 0.0]
    for entry in doc["contexts"].values():
        for key, series in entry["series"].items():
            date, med = series[0]
            entry["series"][key] = [[date, med * math.exp(v)] for v in levels]
    store.write_text(json.dumps(doc))
    second = run_cli("bench", "--np", "1", "--out", "b.json", "--", "--ops", "p2p", env=env)
    assert second.returncode == 0, second.stderr
    err = [ln for ln in second.stderr.splitlines() if ln.startswith("mpilab:")]
    notes = [ln for ln in err if "launch-to-launch variation" in ln]
    assert len(notes) == 1 and err[0] == notes[0], second.stderr  # once, before all else
    m = re.search(r"a repeat lands within \+-([0-9.]+)\.\.([0-9.]+)%", notes[0])
    assert m is not None and float(m.group(1)) > 2.5, notes[0]
    assert f"the asked 2.5% cannot be reached at {len(SIZES)} of {len(SIZES)}" in notes[0]
    rows = json.loads((tmp_path / "b.json").read_text())["measurements"]
    assert len(rows) == len(SIZES)
    assert all(r["stats"]["converged"] is True for r in rows), [r["flags"] for r in rows]
    assert all(quality.AT_MACHINE_LIMIT in r["flags"] for r in rows)
    last = second.stdout.strip().splitlines()[-1]
    assert last.startswith(f"{len(SIZES)} of {len(SIZES)} measurements converged: 0 at the "
                           "asked 2.5%"), second.stdout
    assert "launch-to-launch limit" in last and "not converged" not in second.stdout


def test_bench_refuses_a_bad_store_before_launching(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    env = fake_bench("ok")
    (tmp_path / "bad.json").write_text("nope")
    p = run_cli("bench", "--np", "1", "--variation-store", "bad.json", "--", env=env)
    assert p.returncode == 2
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "bad.json: not a launch-variation store" in lines[0]
    assert not Path(env["FAKE_BENCH_ARGS"]).exists()


def test_a_launch_off_the_usual_level_is_flagged_and_reaches_back(tmp_path: Path) -> None:
    rng = random.Random(13)
    s = _session(tmp_path, [_launch(rng, 0.01) for _ in range(10)])
    merged = _one(s, _launch(rng, 0.0, shift=math.log(2.0)))
    for m, b in zip(merged["measurements"], SIZES, strict=True):
        st = m["stats"]
        assert st["converged"] is False
        assert quality.OFF_USUAL_LEVEL in m["flags"]
        assert st["med_lo"] <= BASE[b] * 1.02 and st["med_hi"] >= st["median"]
    assert "4 not converged: this launch sat off the machine's usual level" in \
        launch_table.verdict_line(merged)


def test_a_noisy_machine_relaxes_a_launchs_own_precision_and_keeps_the_asked_verdict(
        tmp_path: Path) -> None:
    """Where the machine's limit exceeds eps, one launch measures each such size only to a
    third of that limit (--eps-for); the merged verdict is still against the asked eps."""
    rng = random.Random(17)
    s = _session(tmp_path, [_launch(rng, 0.05) for _ in range(10)])
    rules = s.eps_rules(0.025)
    assert rules is not None
    items = dict(r.split("=") for r in rules.split(","))
    assert sorted(items) == sorted(f"p2p:roundtrip@{b}" for b in SIZES)
    for k, v in items.items():
        b = int(k.split("@")[1])
        sig = launchvar.sigma_for(launchvar.series_of(s.entry),
                                  launchvar.measurement_key(_launch(rng, 0)["measurements"]
                                                            [SIZES.index(b)]),
                                  launchvar.group_key(_launch(rng, 0)["measurements"][0]))
        assert sig is not None
        assert float(v) == pytest.approx(max(0.025, launchvar.limit_rel(sig, 0.95, 1, 1) / 3),
                                         rel=1e-3)
    doc = _launch(rng, 0.05, own=0.04)
    for m in doc["measurements"]:
        m["precision"]["eps"] = float(items[f"p2p:roundtrip@{m['bytes']}"])
    merged = launches.merge([doc], [], 1, s.variation([doc], 1, 0.025))
    for m in merged["measurements"]:
        assert m["precision"]["eps"] == 0.025 and m["precision"]["eps_launch"] > 0.025
        if m["stats"]["converged"]:
            assert quality.AT_MACHINE_LIMIT in m["flags"]
    quiet = _session(tmp_path / "q", [_launch(rng, 0.001, noise=0.0005) for _ in range(8)])
    assert quiet.eps_rules(0.025) is None


def test_a_level_that_moved_for_good_is_the_usual_one_three_runs_on(tmp_path: Path) -> None:
    rng = random.Random(19)
    store = tmp_path / "lv.json"
    for _ in range(12):
        launchvar.record(store, CTX, "m", [_launch(rng, 0.005)["measurements"]], "d")
    flagged = []
    for _ in range(5):  # the machine now runs 30% faster, for good
        doc = _launch(rng, 0.005, shift=math.log(0.7))
        s = launchvar.Session(store, CTX)
        merged = launches.merge([doc], [], 1, s.variation([doc], 1, 0.025))
        flagged.append(all(quality.OFF_USUAL_LEVEL in m["flags"]
                           for m in merged["measurements"]))
        launchvar.record(store, CTX, "m", [doc["measurements"]], "d")
    assert flagged[:3] == [True, True, True] and flagged[3:] == [False, False]


def test_a_store_that_cannot_be_written_leaves_the_results_complete(
        fake_bench: Callable[[str], dict[str, str]], run_cli: Callable[..., Any],
        tmp_path: Path) -> None:
    env = fake_bench("ok")
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "sub").write_text("a file where the store's folder would be")
    p = run_cli("bench", "--np", "1", "--variation-store", "ro/sub/lv.json", "--", env=env)
    assert p.returncode == 2 and "Not a directory" in p.stderr  # refused before it runs
    assert not Path(env["FAKE_BENCH_ARGS"]).exists()
    # /proc takes no new file: the store cannot be written once the run is done
    q = run_cli("bench", "--np", "1", "--variation-store", "/proc/mpilab-lv.json", "--out",
                "r.json", "--", env=env)
    assert q.returncode == 0, q.stderr
    assert "was not updated" in q.stderr
    assert json.loads((tmp_path / "r.json").read_text())["launches"]["n"] == 3


def test_limits_note_never_prints_a_limit_beyond_a_decade() -> None:
    """A store whose launches disagree by orders of magnitude (a hostile or corrupted one,
    or a machine that changed) gives no figure like +-1.3e37%: such limits read undetermined,
    with how many measurements they are."""
    note = launch_table.limits_note([0.03, 1.3e35], 0.025, 12, "d", None) or ""
    assert "e+" not in note and "e3" not in note
    assert "+-3.0% up to undetermined (1 of 2 measurements" in note
    only = launch_table.limits_note([5.0, 1e9], 0.025, 12, "d", None) or ""
    assert "where a repeat lands is undetermined" in only and "%" not in only.split(";")[0]
    assert "+-2.0..216.0%" in (launch_table.limits_note([0.02, 2.16], 0.025, 5, "d", None)
                               or "")
