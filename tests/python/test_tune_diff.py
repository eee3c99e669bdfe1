"""mpilab diff (docs/tune.md): verdicts and exit codes on synthetic pairs of results files
(identical, clearly slower, noisy), provenance and bad files refused in one line, --paired
(launches alternating; the signed-rank test robust to pairs far off), the sequential looks
(--look I/K), and the false-flag rates of the paired tests (no timing anywhere)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from mpilab import launches
from tunekit import PAIR_LEVELS, _launched, _mpilab, _pair_docs, _write


def _pair(tmp: Path, factor: float, noise: float, seed: int) -> tuple[str, str]:
    t = {("bcast", "native", b): 1e-6 * (1 + b / 500) for b in (8, 1024, 65536)}
    t.update({("allreduce", "native", b): 2e-6 * (1 + b / 500) for b in (8, 1024, 65536)})
    a = _launched([1.0, 1.05, 0.97, 1.02, 0.99], t, noise=noise, seed=seed)
    tb = {k: v * (factor if k[0] == "bcast" else 1.0) for k, v in t.items()}
    b = _launched([1.01, 0.98, 1.03, 0.99, 1.0], tb, noise=noise, seed=seed + 1)
    return _write(tmp, "a.json", a), _write(tmp, "b.json", b)


def test_diff_identical_passes(tmp_path: Path) -> None:
    a, _ = _pair(tmp_path, 1.0, 0.02, 5)
    p = _mpilab("diff", a, a, "--fail-above", "5%")
    assert p.returncode == 0, p.stderr
    assert "SLOWER" not in p.stdout and p.stdout.count("same") == 6


def test_diff_flags_the_slower_collective_only(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, 1.10, 0.02, 7)
    html = tmp_path / "d.html"
    p = _mpilab("diff", a, b, "--fail-above", "5%", "--html", str(html))
    assert p.returncode == 1, p.stdout + p.stderr
    lines = [x for x in p.stdout.splitlines() if x.startswith(("bcast", "allreduce"))]
    assert all("SLOWER beyond 5%" in x for x in lines if x.startswith("bcast"))
    assert all("same" in x for x in lines if x.startswith("allreduce"))
    assert html.is_file() and "mpilab comparison" in html.read_text()
    assert _mpilab("diff", a, b, "--fail-above", "20%").returncode == 0  # below the gate


def test_diff_noisy_is_not_flagged(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, 1.0, 0.5, 11)
    p = _mpilab("diff", a, b, "--fail-above", "5%")
    assert p.returncode == 0, p.stdout


def test_diff_refuses_other_machines_and_bad_files(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, 1.0, 0.02, 5)
    other = json.loads(Path(b).read_text())
    other["provenance"]["mpi"] = "MPICH 4.0.2"
    o = _write(tmp_path, "o.json", other)
    p = _mpilab("diff", a, o)
    assert p.returncode == 2 and "different MPI libraries" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert _mpilab("diff", a, o, "--allow-different").returncode == 0
    trunc = tmp_path / "t.json"
    trunc.write_text(Path(a).read_text()[:200])
    for args in ((a, str(trunc)), (a, str(tmp_path / "missing.json")),
                 (a, b, "--fail-above", "five")):
        p = _mpilab("diff", *args)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "Traceback" not in p.stderr


# ------------------------------------------------------------- diff --paired


def _paired_files(tmp: Path, factor: float, seed: int, interleave: bool = True
                  ) -> tuple[str, str]:
    """A and B from alternating launches at levels far apart (shared by pair k)."""
    t = {("bcast", b): 1e-6 * (1 + b / 500) for b in (8, 1024, 65536)}
    t.update({("allreduce", b): 2e-6 * (1 + b / 500) for b in (8, 1024, 65536)})
    fac = {k: factor for k in t if k[0] == "bcast"}
    b_docs, a_docs = _pair_docs(t, fac, PAIR_LEVELS, seed, jitter=0.02)
    out = []
    for name, docs, off in (("a", a_docs, 0), ("b", b_docs, 1)):
        for k, d in enumerate(docs):
            s = 2 * k + off if interleave else k + off * len(docs)
            d["provenance"]["date"] = f"2026-11-25T10:00:{s:02d}Z"
        merged = launches.merge(docs, [f"{name}{k}" for k in range(len(docs))])
        out.append(_write(tmp, f"{name}.json", merged))
    return out[0], out[1]


def test_diff_paired_flags_every_slowed_size_through_launch_levels(tmp_path: Path) -> None:
    a, b = _paired_files(tmp_path, 1.10, 21)
    p = _mpilab("diff", a, b, "--fail-above", "5%", "--paired")
    assert p.returncode == 1, p.stdout + p.stderr
    lines = [x for x in p.stdout.splitlines() if x.startswith(("bcast", "allreduce"))]
    assert len(lines) == 6
    assert all("SLOWER beyond 5%" in x for x in lines if x.startswith("bcast"))
    assert all("same" in x for x in lines if x.startswith("allreduce"))
    same = _paired_files(tmp_path, 1.0, 22)
    assert _mpilab("diff", *same, "--fail-above", "5%", "--paired").returncode == 0


def test_diff_paired_refuses_launches_that_did_not_alternate(tmp_path: Path) -> None:
    a, b = _paired_files(tmp_path, 1.10, 23, interleave=False)
    p = _mpilab("diff", a, b, "--paired")
    assert p.returncode == 2 and "did not alternate" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_paired_t_false_flag_rate_is_near_alpha() -> None:
    """No difference, launch levels 60% apart: the paired test flags about 5%, not more."""
    from mpilab.tune import stats

    rng = random.Random(5)
    flagged = 0
    trials = 300
    for _ in range(trials):
        a, b = [], []
        for lv in PAIR_LEVELS:
            for g in (a, b):
                lj = lv * math.exp(rng.gauss(0, 0.02))
                g.append([lj * math.exp(rng.gauss(0, 0.03)) for _ in range(12)])
        flagged += stats.paired(a, b).significant
    assert flagged / trials <= 0.09


# ------------------------------------------- diff --paired: rank test, sequential looks


def _spiked_pairs(rng: random.Random, n: int, factor: float, spikes: int,
                  spike: float = 0.8) -> tuple[list[list[float]], list[list[float]]]:
    """n pairs of launches at levels far apart; in `spikes` of them one launch (A or B at
    random) met a load spike that made it exp(spike) slower (a pair far off)."""
    a, b = [], []
    for k in range(n):
        lv = math.exp(rng.gauss(0, 0.3))
        la, lb = lv * math.exp(rng.gauss(0, 0.03)), lv * math.exp(rng.gauss(0, 0.03)) * factor
        if k < spikes:
            if rng.random() < 0.5:
                la *= math.exp(spike)
            else:
                lb *= math.exp(spike)
        a.append([la * math.exp(rng.gauss(0, 0.02)) for _ in range(20)])
        b.append([lb * math.exp(rng.gauss(0, 0.02)) for _ in range(20)])
    return a, b


def test_signed_rank_interval_cut_is_the_tables() -> None:
    from mpilab.tune import stats

    # two-sided 5% critical values of T+ (any table): n=6 -> 0, n=10 -> 8, n=30 -> 137;
    # the interval is [W_(T+1), W_(M-T)]; n=5 has none at 5%
    assert [stats.signed_rank_cut(n, 0.05) for n in (5, 6, 10, 30)] == [0, 1, 9, 138]


def test_paired_rank_flags_a_slowdown_that_pairs_far_off_hide_from_the_t_test() -> None:
    """A recorded miss: 1 KiB x1.096 [0.957, 1.256] among 30 pairs. Three pairs of 30 with
    one launch far off: the t test misses a 10% slowdown about half the time, the signed-rank
    test sees it every time, with its interval around 1.10."""
    from mpilab.tune import stats

    rng = random.Random(17)
    t_hits = r_hits = covered = 0
    for _ in range(40):
        a, b = _spiked_pairs(rng, 30, 1.10, 3)
        t, r = stats.paired(a, b), stats.paired_rank(a, b)
        t_hits += t.slower and t.ratio is not None and t.ratio > 1.05
        r_hits += r.slower and r.ratio is not None and r.ratio > 1.05
        covered += r.lo is not None and r.hi is not None and r.lo < 1.10 < r.hi
    assert r_hits == 40 and t_hits < 30 and covered >= 34  # a 95% interval: about 38


def test_paired_rank_false_flag_rate_is_near_alpha() -> None:
    """No difference, pairs far off included: about 5% flagged, not more."""
    from mpilab.tune import stats

    rng = random.Random(19)
    trials = 300
    flagged = sum(stats.paired_rank(*_spiked_pairs(rng, 20, 1.0, 2)).significant
                  for _ in range(trials))
    assert flagged / trials <= 0.09


def test_diff_looks_exit_3_while_undecided_and_check_their_arguments(tmp_path: Path) -> None:
    a, b = _paired_files(tmp_path, 1.04, 25)   # 4%: within 5%, but 8 pairs cannot tell
    p = _mpilab("diff", a, b, "--fail-above", "5%", "--paired", "--look", "1/2")
    assert p.returncode == 3, p.stdout + p.stderr
    assert "undecided (look 1 of 2, alpha 0.025)" in p.stdout and "(undecided)" in p.stdout
    p = _mpilab("diff", a, b, "--fail-above", "5%", "--paired", "--look", "2/2")
    assert p.returncode == 0 and "not flagged" in p.stdout, p.stdout
    a, b = _paired_files(tmp_path, 1.25, 26)   # flagged: exit 1 at any look
    assert _mpilab("diff", a, b, "--fail-above", "5%", "--paired", "--look", "1/2"
                   ).returncode == 1
    for bad in (("--look", "1/2"), ("--fail-above", "5%", "--look", "3/2"),
                ("--fail-above", "5%", "--look", "x")):
        p = _mpilab("diff", a, b, "--paired", *bad)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (bad, p.stderr)
