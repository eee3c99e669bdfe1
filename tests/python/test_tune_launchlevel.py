"""Decisions on launches (mpilab.tune.stats, mpilab diff): synthetic launches whose levels
shift from launch to launch give no more false alarms than alpha and a 10% slowdown is
found; one launch a side with nothing to moderate with is said to be inseparable from launch
variation; `mpilab diff --run` alternates its two commands (fake commands, no timing)."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

from mpilab.tune import stats
from tunekit import REPO, _doc, _meas, _mpilab, _write

FAKE = REPO / "tests" / "python" / "fake_bench.py"


def _shifted(rng: random.Random, n: int, factor: float, shift: float = 0.3,
             jitter: float = 0.02) -> tuple[list[list[float]], list[list[float]]]:
    """n pairs of launches: each pair at a level of its own (log-normal, sd `shift`: levels
    tens of percent apart), each launch with a small jitter of its own; B x factor."""
    a, b = [], []
    for _ in range(n):
        lv = math.exp(rng.gauss(0, shift))
        for g, f in ((a, 1.0), (b, factor)):
            lj = lv * f * math.exp(rng.gauss(0, jitter))
            g.append([lj * math.exp(rng.gauss(0, 0.03)) for _ in range(20)])
    return a, b


def _group(rng: random.Random, n: int, factor: float, sizes: int = 3
           ) -> list[tuple[list[list[float]], list[list[float]]]]:
    """The same launches seen at `sizes` sizes (each with its own pair jitter)."""
    return [_shifted(rng, n, factor) for _ in range(sizes)]


def _decide(cells: list[tuple[list[list[float]], list[list[float]]]]) -> list[stats.Comparison]:
    var = [stats.variance_of(stats.pair_logs(a, b)[0]) for a, b in cells]
    return [stats.paired(a, b, group=[v for j, v in enumerate(var) if j != i])
            for i, (a, b) in enumerate(cells)]


def test_paired_launch_levels_no_false_alarm_beyond_alpha() -> None:
    rng = random.Random(31)
    trials = 200
    flagged = sum(c.significant for _ in range(trials) for c in _decide(_group(rng, 6, 1.0)))
    assert flagged / (3 * trials) <= 0.08


def test_paired_launch_levels_find_ten_percent() -> None:
    rng = random.Random(32)
    found = covered = 0
    for _ in range(50):
        for c in _decide(_group(rng, 6, 1.10)):
            found += c.slower
            covered += c.lo is not None and c.hi is not None and c.lo < 1.10 < c.hi
    assert found >= 145 and covered >= 135   # of 150; a 95% interval covers about 142


def test_pooled_samples_would_alarm_where_launch_medians_do_not() -> None:
    """Two runs of one configuration, launches at levels 30% apart: a rank test on the
    pooled raw samples is 'significant' most of the time; the launch-level test about 5%."""
    from scipy.stats import mannwhitneyu

    rng = random.Random(33)
    pooled = launch = 0
    for _ in range(100):
        a, b = _shifted(rng, 4, 1.0, jitter=0.3)
        p = mannwhitneyu([s for g in a for s in g], [s for g in b for s in g]).pvalue
        pooled += p < 0.05
        launch += stats.unpaired(a, b).significant
    assert pooled >= 50 and launch <= 10


def test_unpaired_one_launch_a_side_cannot_be_separated_without_a_stored_variation() -> None:
    rng = random.Random(34)
    a, b = _shifted(rng, 1, 1.3)
    c = stats.unpaired(a, b)
    assert not c.separable and not c.significant and c.lo is None
    assert "cannot be told" in c.method
    # the machine's stored launch variation (sd 1% of a log launch median, 10 df) separates
    c = stats.unpaired(a, b, prior=(0.01 ** 2, 10.0))
    assert c.separable and c.slower
    # and a launch variation of 30% does not let a 30% difference through
    c = stats.unpaired(a, b, prior=(0.3 ** 2, 10.0))
    assert c.separable and not c.significant


def test_diff_of_two_single_launch_files_says_it_cannot_separate(tmp_path: Path) -> None:
    rng = random.Random(35)
    docs = []
    for f in (1.0, 1.2):
        docs.append(_doc([_meas("bcast", "native", b, [1e-6 * f * (1 + b / 500)
                                                       * math.exp(rng.gauss(0, 0.02))
                                                       for _ in range(30)])
                          for b in (8, 1024)]))
    a, b = _write(tmp_path, "a.json", docs[0]), _write(tmp_path, "b.json", docs[1])
    p = _mpilab("diff", a, b, "--fail-above", "5%", "--variation-store", "none")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("cannot separate launch variation from the difference") == 2
    assert "launch variation cannot be told from the difference" in p.stdout


def _run(tmp: Path, factor: float, pairs: int, *extra: str) -> tuple[int, str, list[str]]:
    log = tmp / f"order-{factor}.log"
    cmd = f"{sys.executable} {FAKE} {{side}} {{{{out}}}} {log} {{f}}"
    p = _mpilab("diff", "--run", cmd.format(side="A", f=1.0), cmd.format(side="B", f=factor),
                "--pairs", str(pairs), "--fail-above", "5%", "--variation-store", "none",
                "--keep", str(tmp / f"k{factor}"), *extra)
    return p.returncode, p.stdout + p.stderr, log.read_text().split()


def test_diff_run_alternates_and_flags_the_slowed_sizes_only(tmp_path: Path) -> None:
    rc, out, order = _run(tmp_path, 1.10, 6)
    assert order == ["A", "B", "B", "A"] * 3
    assert rc == 1, out
    rows = [x for x in out.splitlines() if x.startswith(("bcast", "allreduce"))]
    flagged = sorted(x.split()[2] for x in rows if "SLOWER beyond 5%" in x)
    assert flagged == ["16384", "65536"] and all(x.startswith("bcast") for x in rows
                                                  if "SLOWER" in x)
    assert "bcast:native 16384 B, bcast:native 65536 B" in out
    merged = json.loads((tmp_path / "k1.1" / "b.json").read_text())
    assert merged["launches"]["n"] == 6
    rc, out, order = _run(tmp_path, 1.0, 4, "--html", str(tmp_path / "d.html"))
    assert rc == 0 and "SLOWER" not in out and order == ["A", "B", "B", "A"] * 2, out
    assert "mpilab comparison" in (tmp_path / "d.html").read_text()  # the merged sides' page


def test_diff_run_bad_commands_are_one_line(tmp_path: Path) -> None:
    ok = f"{sys.executable} {FAKE} A {{out}} {tmp_path / 'l'} 1.0"
    for a, b, why in ((ok, "true", "must write its results file to {out}"),
                      (ok, ok + " fail", "launch 1 of B failed (exit 4"),
                      (ok, f"{tmp_path / 'missing'} {{out}}", "cannot start command B"),
                      (ok, "sh -c 'exit 0' {out}", "wrote no results file"),
                      (ok, "'unclosed {out}", "command B")):
        p = _mpilab("diff", "--run", a, b, "--pairs", "2", "--variation-store", "none",
                    "--quiet", "--keep", str(tmp_path / "k"))
        assert p.returncode == 2 and why in p.stderr, (b, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    p = _mpilab("diff", "--run", ok, ok, "--paired")
    assert p.returncode == 2 and "--paired is for two files" in p.stderr


def test_diff_run_sequential_looks_go_on_only_while_undecided(tmp_path: Path) -> None:
    # 1.10 at 16 KiB and up: every measurement decided at the first look (flagged or
    # cleared), so the run stops there
    rc, out, order = _run(tmp_path, 1.10, 6, "--max-pairs", "18")
    assert rc == 1, out
    assert order == ["A", "B", "B", "A"] * 3, out
    assert "look 1 of 3 (6 pairs, alpha 0.0167)" in out and ": done" in out
    assert "bcast:native 16384 B, bcast:native 65536 B" in out
    assert "(6 pairs, 3 planned look(s))" in out
    # 1.06: just beyond 5%, undecided at 4 pairs; the run goes on, alternating across looks
    # (pair 5 starts with A), and the verdict is on all the pairs measured, at alpha 0.05/3
    rc, out, order = _run(tmp_path, 1.06, 4, "--max-pairs", "12")
    assert "look 1 of 3 (4 pairs, alpha 0.0167)" in out and "4 more pairs" in out, out
    n = len(order) // 2
    assert n in (8, 12) and order == (["A", "B", "B", "A"] * 6)[:2 * n], out
    assert f"({n} pairs, 3 planned look(s))" in out
    merged = json.loads((tmp_path / "k1.06" / "b.json").read_text())
    assert merged["launches"]["n"] == n
    assert rc in (0, 1) and "SLOWER beyond 5%" not in "\n".join(
        x for x in out.splitlines() if x.startswith("allreduce")), out
    # --time-limit: no look whose pairs would end after it
    (tmp_path / "t").mkdir()
    rc, out, order = _run(tmp_path / "t", 1.06, 4, "--max-pairs", "12", "--time-limit", "0.001")
    assert len(order) == 8 and "would pass --time-limit" in out, out


def test_next_look_fills_the_time_limit_then_stops() -> None:
    from mpilab.commands.diff import next_look

    assert next_look(15, 30, 40.0, None) == 30            # no limit: the planned look
    assert next_look(15, 30, 40.0, 110.0) == 30           # 15 more at 2.7 s a pair fit
    assert next_look(15, 30, 60.0, 110.0) == 27           # 12 fit: the last look at 27
    assert next_look(15, 30, 108.0, 110.0) is None        # not one more pair fits
    assert next_look(4, 8, 0.0, 0.001) == 8               # no pace measured yet


def test_threshold_one_sided_at_alpha_false_flags_and_power() -> None:
    """With a threshold each end of the gate's interval is a one-sided test at alpha (the
    1 - 2 alpha interval): at a true ratio of exactly 1 + T a flag stays as rare as alpha
    (here 0.05/3, 30 pairs whose per-pair log ratio has sd 0.11, as bcast 256 KiB's on a busy
    machine); a 10% slowdown is flagged more often than with the two-sided interval."""
    alpha, thr = 0.05 / 3, 1.05
    rng = random.Random(36)
    at = sum(c.significant and c.lo > thr
             for c in (stats.paired_rank(*_shifted(rng, 30, thr, jitter=0.08), 1 - 2 * alpha,
                                         alpha) for _ in range(300)))
    assert at <= 9   # of 300: 3% (alpha 1.7%)
    one = two = 0
    for _ in range(100):
        a, b = _shifted(rng, 30, 1.10, jitter=0.08)
        c1, c2 = stats.paired_rank(a, b, 1 - 2 * alpha, alpha), stats.paired_rank(a, b, 1 - alpha,
                                                                                   alpha)
        one += c1.significant and c1.lo > thr
        two += c2.significant and c2.lo > thr
    assert one >= 35 and two <= one   # of 100 (about 44 and 35 here)


def test_diff_run_sequential_bad_options_are_one_line(tmp_path: Path) -> None:
    ok = f"{sys.executable} {FAKE} A {{out}} {tmp_path / 'l'} 1.0"
    for extra, why in ((["--max-pairs", "8"], "--max-pairs needs --fail-above"),
                       (["--max-pairs", "2", "--pairs", "4", "--fail-above", "5%"],
                        "--max-pairs 2 is below --pairs 4"),
                       (["--time-limit", "60", "--fail-above", "5%"],
                        "--time-limit needs --max-pairs"),
                       (["--max-pairs", "0", "--fail-above", "5%"], "--max-pairs")):
        p = _mpilab("diff", "--run", ok, ok, "--variation-store", "none", "--quiet", *extra)
        assert p.returncode == 2 and why in p.stderr, (extra, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    a = _write(tmp_path, "a.json", _doc([_meas("bcast", "native", 1024, [1e-6] * 10)]))
    p = _mpilab("diff", a, a, "--max-pairs", "8")
    assert p.returncode == 2 and "--max-pairs and --time-limit are for --run" in p.stderr
    assert not (tmp_path / "l").exists()


def _launch_files(d: Path, pairs: int, factor: float, drop: tuple[str, int] | None = None
                  ) -> None:
    """a.K.json and b.K.json as --run keeps them: launch levels tens of percent apart, bcast
    at 16 KiB and above x factor on B, some samples invalid; `drop` (side, K): that launch
    lacks allreduce 1 KiB."""
    rng = random.Random(5)
    for k in range(1, pairs + 1):
        lv = math.exp(rng.gauss(0, 0.3))
        for side, f in (("a", 1.0), ("b", factor)):
            ms = []
            for op in ("bcast", "allreduce"):
                for b in (1024, 16384, 65536):
                    if drop == (side, k) and (op, b) == ("allreduce", 1024):
                        continue
                    t = 1e-6 * (1 + b / 500) * lv * (f if op == "bcast" and b >= 16384 else 1)
                    m = _meas(op, "native", b, [t * math.exp(rng.gauss(0, 0.05))
                                                for _ in range(20 + rng.randrange(40))])
                    m["valid"][3] = False
                    ms.append(m)
            doc = _doc(ms)
            doc["provenance"]["date"] = f"2026-11-25T10:{k:02d}:{0 if side == 'a' else 30:02d}Z"
            (d / f"{side}.{k}.json").write_text(json.dumps(doc))


def test_diff_run_looks_on_launches_in_memory_as_on_the_merged_files(tmp_path: Path) -> None:
    # --run's looks test on each launch's samples as read once when it ended
    # (diff.Summaries), never re-reading and merging the kept files: the rows must be those
    # of the merged sides, at a look below the rank test's pair count and at one above it
    from mpilab.commands import diff

    _launch_files(tmp_path, 14, 1.10)
    sums = diff.Summaries()
    for k in range(1, 15):
        for side in ("A", "B"):
            sums.add(side, json.loads((tmp_path / f"{side.lower()}.{k}.json").read_text()))
    for n in (6, 14):
        _, (da, db) = diff.merge_sides_docs(tmp_path, n)
        merged = diff.compare_docs(da, db, True, 0.0167, None, 1 - 2 * 0.0167)
        ents = sums.entries(n)
        assert ents is not None and len(ents) == 6
        mem = diff.compare_groups(ents, db["provenance"], 0.0167, None, 1 - 2 * 0.0167)
        assert mem == merged
        assert [r["significant"] for r in mem] == [False, True, True, False, False, False]
    # a launch without a measurement: no summary rows (the merged sides decide)
    (tmp_path / "m").mkdir()
    _launch_files(tmp_path / "m", 6, 1.10, drop=("b", 4))
    sums = diff.Summaries()
    for k in range(1, 7):
        for side in ("A", "B"):
            sums.add(side, json.loads((tmp_path / "m" / f"{side.lower()}.{k}.json").read_text()))
    assert sums.entries(3) is not None and sums.entries(6) is None

