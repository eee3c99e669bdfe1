"""`mpilab diff A.json B.json [--fail-above 5%] [--html OUT]`: B against A, measurement by
measurement, on launch medians (mpilab.tune.stats: never on pooled raw samples), a table on
the terminal, an HTML page built on the report's comparison view, and exit status 1 when
some measurement is significantly slower by more than the threshold: a CI gate.

Two files (unpaired): the moderated t test on the log launch medians of both files, the
variance shrunk towards the same operation's at the other sizes and towards the machine's
stored launch-to-launch variation (mpilab.launchvar, the store mpilab bench keeps;
--variation-store). One launch a side with nothing stored: launch variation cannot be told
from the difference, which the row and a closing line say (never significant).

--paired: A and B were measured in alternating launches (each side merged with mpilab's
launch merge): launch k of A is paired with launch k of B and each measurement is tested on
the per-pair log ratios of the launch medians (mpilab.tune.stats.paired below RANK_MIN
pairs, Wilcoxon's signed-rank test (paired_rank) from there on). Refused when the two files
do not hold the same number of launches or their launch dates do not interleave (pair k
wholly before pair k+1).

--run A_CMD B_CMD: the one-line gate. A and B are commands that each write one results file
to {out}; they are run in alternating launches (A B, B A, A B, ...: --pairs pairs, a fixed
budget), each side merged, and compared paired. The flagged measurements are named.

With a threshold every measurement ends in one of three states: flagged (significantly
slower, by more than the threshold), cleared (its interval ends below 1 + threshold: a
regression that large is ruled out) or undecided (neither). --look I/K makes a sequential
design of it: each of at most K looks tests at alpha/K (Bonferroni: the chance of a false
flag over all looks stays below alpha), and a look before the last exits 3 when some
measurement is undecided and none is flagged: measure more pairs and run look I+1 on all
of them.

Results of different machines, MPI libraries or rank counts are refused (provenance: hosts,
mpi, ranks); --allow-different turns that into a warning."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from mpilab import argtypes
from mpilab.errors import MpilabError


def _threshold(text: str) -> float:
    t = text.strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise MpilabError(f"--fail-above: '{text}' is not a percentage like 5%") from None
    if not 0 <= v < 10:
        raise MpilabError(f"--fail-above: '{text}' must be between 0% and 1000%")
    return v


def _look(text: str) -> tuple[int, int]:
    try:
        i, k = (int(x) for x in text.split("/"))
    except ValueError:
        raise MpilabError(f"--look: '{text}' is not I/K (look I of at most K)") from None
    if not 1 <= i <= k or k > 20:
        raise MpilabError(f"--look: '{text}': need 1 <= I <= K <= 20")
    return i, k


def _key(m: dict[str, Any]) -> tuple[Any, ...]:
    pair = m.get("pair")
    return (m.get("op"), m.get("impl"), m.get("timing"), m.get("isolation"),
            tuple(pair) if isinstance(pair, list) else None, m.get("root"), m.get("bytes"),
            m.get("bytes_back"), m.get("ranks"))


def provenance_problems(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    for f, what in (("mpi", "MPI libraries"), ("ranks", "rank counts"),
                    ("hosts", "machines")):
        va, vb = a.get(f), b.get(f)
        if f == "hosts" and isinstance(va, list) and isinstance(vb, list):
            va, vb = sorted(set(va)), sorted(set(vb))
        if va != vb:
            out.append(f"different {what} ({va} against {vb})")
    return out


def _when(text: Any) -> float | None:
    from datetime import datetime

    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pairing_problem(da: dict[str, Any], db: dict[str, Any]) -> str | None:
    """Why launch k of A cannot be paired with launch k of B (None: they can)."""
    la, lb = da.get("launches"), db.get("launches")
    if not isinstance(la, dict) or not isinstance(lb, dict):
        return "--paired needs files merged from launches (mpilab bench --launches)"
    na, nb = la.get("n"), lb.get("n")
    if not isinstance(na, int) or na != nb or na < 2:
        return f"--paired needs the same number of launches (at least 2) in both ({na}, {nb})"
    ta = [_when(x) for x in la.get("dates") or []]
    tb = [_when(x) for x in lb.get("dates") or []]
    if len(ta) != na or len(tb) != na or any(t is None for t in ta + tb):
        return "--paired needs every launch's date in both files"
    spans = [(min(x, y), max(x, y)) for x, y in zip(ta, tb, strict=True)]  # type: ignore
    if any(spans[k][1] > spans[k + 1][0] for k in range(na - 1)):
        return ("--paired: the launches of A and B did not alternate (pair k must end "
                "before pair k+1 starts)")
    return None


def _gkey(m: dict[str, Any]) -> tuple[Any, ...]:
    """The measurement's group: the same operation at every size (and pair)."""
    return (m.get("op"), m.get("impl"), m.get("timing"), m.get("isolation"), m.get("root"),
            m.get("ranks"))


def stored_prior(store: dict[str, Any] | None, prov: dict[str, Any], m: dict[str, Any],
                 paired: bool) -> tuple[float, float] | None:
    """The machine's stored launch-to-launch variation of this measurement (mpilab.launchvar,
    recorded by mpilab bench): the (variance, degrees of freedom) of one log launch median,
    doubled for the log ratio of a pair of launches; from the context of the results' host
    and rank count with the longest history of the measurement. None when nothing is
    stored."""
    from mpilab import launchvar

    if not store:
        return None
    hosts = prov.get("hosts") if isinstance(prov.get("hosts"), list) else []
    key, gkey = launchvar.measurement_key(m), launchvar.group_key(m)
    best: tuple[int, launchvar.Sigma] | None = None
    for entry in store.get("contexts", {}).values():
        desc = entry.get("describe") if isinstance(entry.get("describe"), dict) else {}
        mach = desc.get("machine") if isinstance(desc.get("machine"), dict) else {}
        if mach.get("host") not in hosts or desc.get("np") != prov.get("ranks"):
            continue
        series = launchvar.series_of(entry)
        sig = launchvar.sigma_for(series, key, gkey)
        n = len(series.get(key, []))
        if sig is not None and (best is None or n > best[0]):
            best = (n, sig)
    if best is None:
        return None
    return (best[1].sd ** 2 * (2 if paired else 1), best[1].df)


def compare_docs(da: dict[str, Any], db: dict[str, Any], paired: bool = False,
                 alpha: float = 0.05, store: dict[str, Any] | None = None,
                 cl: float | None = None) -> list[dict[str, Any]]:
    """Per measurement both files hold: B against A on launch medians (mpilab.tune.stats:
    paired by launch k when `paired`, else unpaired), each measurement's variance shrunk
    towards its operation's at the other sizes and the stored launch variation. Intervals
    at level cl (default 1 - alpha); `significant` is the two-sided test at alpha."""
    from mpilab.pair_matrix import expand_all
    from mpilab.tune import stats

    am = {_key(m): m for m in expand_all(da.get("measurements") or []) if isinstance(m, dict)}
    n = (db.get("launches") or {}).get("n")
    both = []
    for m in expand_all(db.get("measurements") or []):
        if not isinstance(m, dict) or _key(m) not in am:
            continue
        ga, gb = stats.launch_groups(am[_key(m)]), stats.launch_groups(m)
        # else some launch lacks this measurement
        both.append((m, ga, gb, paired and len(ga) == len(gb) == n))
    return compare_groups(both, db.get("provenance") or {}, alpha, store, cl)


Entry = tuple[dict[str, Any], list[list[float]], list[list[float]], bool]


def compare_groups(both: list[Entry], prov_b: dict[str, Any], alpha: float = 0.05,
                   store: dict[str, Any] | None = None,
                   cl: float | None = None) -> list[dict[str, Any]]:
    """compare_docs's rows from (measurement, A's launch groups, B's launch groups, paired)
    per measurement (mpilab.tune.stats.launch_groups: each launch's valid samples)."""
    from mpilab.tune import stats

    cl = 1 - alpha if cl is None else cl
    var = [stats.variance_of(stats.pair_logs(ga, gb)[0]) if pair
           else stats.unpaired_variance(ga, gb) for _m, ga, gb, pair in both]
    rows = []
    for i, (m, ga, gb, pair) in enumerate(both):
        group = [var[j] for j, (o, _a, _b, pp) in enumerate(both)
                 if j != i and pp == pair and _gkey(o) == _gkey(m)]
        prior = stored_prior(store, prov_b, m, pair)
        if pair and len(stats.pair_logs(ga, gb)[0]) >= stats.RANK_MIN:
            c = stats.paired_rank(ga, gb, cl, alpha)
        elif pair:
            c = stats.paired(ga, gb, cl, alpha, group, prior)
        else:
            c = stats.unpaired(ga, gb, cl, alpha, group, prior)
        rows.append({"op": m.get("op"), "impl": m.get("impl"), "timing": m.get("timing"),
                     "bytes": m.get("bytes"), "pair": m.get("pair"), **c.as_json()})
    return rows


class Summaries:
    """The paired runner's launches as it keeps them in memory: per side and launch, each
    measurement's valid samples, sorted (mpilab.tune.stats.launch_groups of that launch
    alone: the median and its order-statistics interval are all a launch lends the paired
    tests), taken from the document validated when the launch ended. A look tests on these,
    never reading, merging or checking the kept files again."""

    def __init__(self) -> None:
        self.groups: dict[str, list[dict[tuple[Any, ...], list[float] | None]]] = {
            "A": [], "B": []}
        self.first: dict[str, dict[str, Any]] = {}  # each side's first launch, no samples

    def add(self, side: str, doc: dict[str, Any]) -> None:
        from mpilab.pair_matrix import expand_all
        from mpilab.tune import stats

        g: dict[tuple[Any, ...], list[float] | None] = {}
        meas = [m for m in expand_all(doc.get("measurements") or []) if isinstance(m, dict)]
        for m in meas:
            lg = stats.launch_groups(m)
            g[_key(m)] = sorted(lg[0]) if len(lg) == 1 else None  # None: not one launch
        self.groups[side].append(g)
        if side not in self.first:
            self.first[side] = {
                "provenance": doc.get("provenance") or {},
                "measurements": [{k: v for k, v in m.items() if k not in ("samples", "valid")}
                                 for m in meas]}

    def entries(self, n: int) -> list[Entry] | None:
        """compare_groups's input for launches 1..n of each side, every measurement paired;
        None when some launch file held several launches or some measurement of B's first
        launch is missing from a launch of either side that A has at all (the merged files
        then decide, as for two files)."""
        ga_all, gb_all = self.groups["A"][:n], self.groups["B"][:n]
        if len(ga_all) != n or len(gb_all) != n or "B" not in self.first:
            return None
        out: list[Entry] = []
        for m in self.first["B"]["measurements"]:
            k = _key(m)
            if all(k not in g for g in ga_all):
                continue  # A never measured it: not compared
            ga, gb = [g.get(k) for g in ga_all], [g.get(k) for g in gb_all]
            if any(x is None for x in ga + gb):
                return None
            out.append((m, ga, gb, True))  # type: ignore[arg-type]
        return out


def _store(args: argparse.Namespace) -> dict[str, Any] | None:
    """The launch-variation store (--variation-store; 'none': not used)."""
    from mpilab import launchvar

    v = args.variation_store
    if v == "none":
        return None
    return launchvar.load(Path(v) if v else launchvar.default_store())


def _command(text: str, which: str) -> list[str]:
    import shlex

    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise MpilabError(f"--run: command {which} '{text}': {e}") from None
    if not argv or not any("{out}" in x for x in argv):
        raise MpilabError(f"--run: command {which} '{text}' must write its results file to "
                          "{out} (e.g. mpilab bench --launches 1 --out {out} -- ...)")
    return argv


def run_order(pairs: int, first: int = 1) -> list[tuple[int, str]]:
    """(pair, side) in launch order for pairs first..pairs: A B, B A, A B, ... (pair k odd: A
    first; a drift of the machine favours neither side)."""
    return [(k, s) for k in range(first, pairs + 1)
            for s in (("A", "B") if k % 2 else ("B", "A"))]


def run_launches(cmd_a: list[str], cmd_b: list[str], first: int, last: int, d: Path,
                 timeout: float, log: Any = None, sums: Summaries | None = None) -> None:
    """Pairs first..last of alternating launches of the two commands (run_order), each
    writing one results file ({out} replaced by d/a.K.json or d/b.K.json), read and validated
    once when it is written (into `sums` when given). A launch that fails, times out or
    writes no valid results file stops the run in one line naming it."""
    import signal
    import subprocess

    from mpilab import results

    for k, side in run_order(last, first):
        out = d / f"{side.lower()}.{k}.json"
        argv = [x.replace("{out}", str(out)) for x in (cmd_a if side == "A" else cmd_b)]
        errf = d / f"{side.lower()}.{k}.log"
        with open(errf, "wb") as err:
            try:
                pr = subprocess.Popen(argv, stdout=err, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as e:
                raise MpilabError(f"--run: cannot start command {side} ({argv[0]}: "
                                  f"{e.strerror})") from None
            try:
                rc = pr.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(pr.pid, signal.SIGKILL)
                pr.wait()
                raise MpilabError(f"--run: launch {k} of {side} ran over {timeout:g} s "
                                  f"(output: {errf})") from None
            except KeyboardInterrupt:  # ^C, or SIGTERM (a job's time limit): the launch too
                os.killpg(pr.pid, signal.SIGKILL)
                pr.wait()
                raise
        if rc != 0:
            raise MpilabError(f"--run: launch {k} of {side} failed (exit {rc}; output: {errf})")
        if not out.is_file():
            raise MpilabError(f"--run: launch {k} of {side} wrote no results file {out}")
        loaded = results.load(str(out))  # one line on a bad file
        if sums is not None:
            sums.add(side, loaded.raw)
        if log is not None:
            log(f"pair {k} {side}: {out.name}\n")


def merge_sides(d: Path, pairs: int) -> tuple[Path, Path]:
    """Each side's launches 1..pairs (d/a.K.json, d/b.K.json) merged (mpilab.launches.merge)
    into d/a.json and d/b.json."""
    return merge_sides_docs(d, pairs)[0]


def merge_sides_docs(d: Path, pairs: int
                     ) -> tuple[tuple[Path, Path], tuple[dict[str, Any], dict[str, Any]]]:
    """merge_sides, and the two merged documents as written."""
    from mpilab import launches
    from mpilab.fsutil import atomic_write_text

    merged, out = [], []
    for side in ("a", "b"):
        files = [d / f"{side}.{k}.json" for k in range(1, pairs + 1)]
        docs = [json.loads(f.read_text(encoding="utf-8")) for f in files]
        text = json.dumps(launches.merge(docs, [str(f) for f in files]))
        path = d / f"{side}.json"
        atomic_write_text(path, text + "\n")
        merged.append(path)
        out.append(json.loads(text))  # the document exactly as the file holds it
    return (merged[0], merged[1]), (out[0], out[1])


def run_pairs(cmd_a: list[str], cmd_b: list[str], pairs: int, d: Path, timeout: float,
              log: Any = None) -> tuple[Path, Path]:
    """`pairs` pairs of alternating launches (run_launches), each side merged into d/a.json
    and d/b.json (merge_sides)."""
    run_launches(cmd_a, cmd_b, 1, pairs, d, timeout, log)
    return merge_sides(d, pairs)


def look_plan(pairs: int, max_pairs: int | None) -> list[int]:
    """The pair counts at which a sequential --run looks: after `pairs`, then after every
    `pairs` more, the last at max_pairs (one look without max_pairs)."""
    if max_pairs is None or max_pairs <= pairs:
        return [pairs]
    return list(range(pairs, max_pairs, pairs)) + [max_pairs]


def _interrupt(_sig: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _run(args: argparse.Namespace) -> int:
    import shutil
    import signal
    import tempfile

    if not args.run:
        if args.max_pairs is not None or args.time_limit is not None:
            raise MpilabError("--max-pairs and --time-limit are for --run (it measures the "
                              "pairs)")
        return _files(args, args.a, args.b, args.paired)
    if args.paired:
        raise MpilabError("--run pairs its own launches: --paired is for two files")
    cmd_a, cmd_b = _command(args.a, "A"), _command(args.b, "B")
    thr = _threshold(args.fail_above) if args.fail_above is not None else None  # checked first
    if args.look:
        raise MpilabError("--look is for files measured in looks: --run plans its own "
                          "(--pairs, --max-pairs)")
    if args.max_pairs is not None and thr is None:
        raise MpilabError("--max-pairs needs --fail-above (more pairs decide what is "
                          "undecided about the threshold)")
    if args.max_pairs is not None and args.max_pairs < args.pairs:
        raise MpilabError(f"--max-pairs {args.max_pairs} is below --pairs {args.pairs}")
    if args.time_limit is not None and args.max_pairs is None:
        raise MpilabError("--time-limit needs --max-pairs (it ends the looks)")
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        if keep.exists() and not keep.is_dir():
            raise MpilabError(f"--keep {args.keep}: not a directory")
        keep.mkdir(parents=True, exist_ok=True)
    d = keep or Path(tempfile.mkdtemp(prefix="mpilab-diff-"))
    log = None if args.quiet else sys.stderr.write
    signal.signal(signal.SIGTERM, _interrupt)
    plan = look_plan(args.pairs, args.max_pairs)
    alpha = 0.05 / len(plan)
    t0, done, i, n = time.monotonic(), 0, 1, plan[0]
    sums = Summaries()
    try:
        while True:
            # a launch that fails leaves its output (named in the one line) for the user
            run_launches(cmd_a, cmd_b, done + 1, n, d, args.timeout, log, sums)
            done = n
            if i == len(plan):
                break
            rows = _look_rows(args, d, n, sums, alpha)
            fails, undecided = _states(rows, thr)
            nxt = next_look(n, plan[i], time.monotonic() - t0, args.time_limit)
            sys.stdout.write(f"mpilab diff: look {i} of {len(plan)} ({n} pairs, alpha "
                             f"{alpha:.3g}): {len(fails)} flagged, {len(undecided)} undecided"
                             + (": done\n" if not undecided else
                                f": the next {plan[i] - n} pairs would pass --time-limit "
                                f"{args.time_limit:g} s: done\n" if nxt is None else
                                f": {nxt - n} more pairs\n" if nxt == plan[i] else
                                f": {nxt - n} more pairs fit in --time-limit "
                                f"{args.time_limit:g} s: the last look\n"))
            if not undecided or nxt is None:
                break
            i, n = (i + 1, nxt) if nxt == plan[i] else (len(plan), nxt)
        ents = sums.entries(done)
        summary = None if ents is None else (sums.first["A"]["provenance"],
                                             sums.first["B"]["provenance"], ents)
        a, b, docs = d / "a.json", d / "b.json", None
        if keep is not None or args.html or summary is None:  # the merged sides, once
            (a, b), docs = merge_sides_docs(d, done)
        return _files(args, str(a), str(b), True, checked=True, alpha=alpha,
                      pairs_note=f"{done} pairs, {len(plan)} planned look(s)", docs=docs,
                      summary=summary)
    finally:
        if keep is None:
            shutil.rmtree(d, ignore_errors=True)


Summary = tuple[dict[str, Any], dict[str, Any], list[Entry]]


def _look_rows(args: argparse.Namespace, d: Path, n: int, sums: Summaries,
               alpha: float) -> list[dict[str, Any]]:
    """The rows of a look of --run at n pairs: from the launches kept in memory, or (a launch
    file of several launches, a measurement some launch lacks) from the merged sides."""
    ents = sums.entries(n)
    if ents is None:
        (a, b), docs = merge_sides_docs(d, n)
        return _evaluate(args, str(a), str(b), True, True, alpha, docs)[2]
    summary = (sums.first["A"]["provenance"], sums.first["B"]["provenance"], ents)
    return _evaluate(args, str(d / "a.json"), str(d / "b.json"), True, True, alpha,
                     summary=summary)[2]


def _evaluate(args: argparse.Namespace, path_a: str, path_b: str, paired: bool,
              checked: bool, alpha: float,
              docs: tuple[dict[str, Any], dict[str, Any]] | None = None,
              typed: bool = False, summary: Summary | None = None
              ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]],
                         tuple[Any, Any] | None]:
    """Both files loaded and checked (one line on a problem), and the rows of compare_docs:
    (provenance of A, of B, rows, the two typed Results or None). docs: the two documents
    --run merged from launches that were each validated when they ended (not read and
    validated again: on 30 launches a side that took tens of seconds a look; `typed` loads
    them as Results all the same, for the HTML page). summary: --run's launches as it keeps
    them in memory (provenance of A, of B, compare_groups's input): the rows from those,
    the same as from the merged documents."""
    from mpilab import results, samples_file

    store = _store(args)
    loaded = None
    if summary is not None:
        pa, pb = summary[0], summary[1]
        if typed:
            loaded = (results.load(path_a), results.load(path_b))
    elif docs is not None:
        da, db = docs
        pa, pb = da.get("provenance") or {}, db.get("provenance") or {}
        if typed:
            loaded = (results.load(path_a), results.load(path_b))
    else:
        ra, rb = results.load(path_a), results.load(path_b)  # one line on a bad file
        pa, pb, loaded = ra.provenance, rb.provenance, (ra, rb)
        # the raw documents (compact files with their samples back: the tests need them)
        da = samples_file.attach(results.read_raw(path_a), path_a)
        db = samples_file.attach(results.read_raw(path_b), path_b)
    probs = provenance_problems(pa, pb)
    if probs and not args.allow_different:
        raise MpilabError(f"{path_b} against {path_a}: {'; '.join(probs)} "
                          "(--allow-different compares them anyway)")
    if paired and not checked:
        why = pairing_problem(da, db)
        if why:
            raise MpilabError(f"{path_b} against {path_a}: {why}")
    # with a threshold each end of the interval is a one-sided test at alpha (flagged: ratio
    # <= 1 + thr rejected; cleared: ratio > 1 + thr rejected, a TOST): the 1 - 2 alpha interval
    cl = 1 - 2 * alpha if args.fail_above is not None else 1 - alpha
    rows = (compare_groups(summary[2], pb, alpha, store, cl) if summary is not None
            else compare_docs(da, db, paired, alpha, store, cl))
    if not rows:
        raise MpilabError(f"{path_a} and {path_b} have no measurement in common")
    return pa, pb, rows, loaded


def _states(rows: list[dict[str, Any]], thr: float | None
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(flagged, undecided) rows at threshold thr: flagged when significantly slower with the
    interval's lower end above 1 + thr; undecided when neither flagged nor cleared (the
    interval's upper end at most 1 + thr)."""
    fails, undecided = [], []
    for r in rows if thr is not None else []:
        ratio = r["ratio"]
        if ratio is None:
            continue
        if r["significant"] and r["separable"] and ratio > 1 and r["lo"] is not None \
                and r["lo"] > 1 + thr:
            fails.append(r)
        elif r["hi"] is None or r["hi"] > 1 + thr:
            undecided.append(r)
    return fails, undecided


def next_look(done: int, planned: int, spent: float, time_limit: float | None) -> int | None:
    """The pair count of the next look of a sequential --run after `done` pairs in `spent`
    seconds: the planned one, or when its pairs would end after time_limit at the pace so far,
    as many as fit (that look is then the last); None when not one more pair fits. Where the
    looks fall does not change their alpha (Bonferroni over the planned looks holds for any
    pair counts chosen without looking at the differences)."""
    if time_limit is None or done <= 0 or spent <= 0:
        return planned
    fit = int((time_limit - spent) / (spent / done))
    if fit >= planned - done:
        return planned
    return done + fit if fit >= 1 else None


def _files(args: argparse.Namespace, path_a: str, path_b: str, paired: bool,
           checked: bool = False, alpha: float | None = None, pairs_note: str = "",
           docs: tuple[dict[str, Any], dict[str, Any]] | None = None,
           summary: Summary | None = None) -> int:
    from mpilab.fsutil import atomic_write_text, check_output

    thr = _threshold(args.fail_above) if args.fail_above is not None else None
    look, looks = _look(args.look) if args.look else (1, 1)
    if args.look and thr is None:
        raise MpilabError("--look needs --fail-above (undecided is about the threshold)")
    if args.html:
        check_output(args.html)
    alpha = 0.05 / looks if alpha is None else alpha
    pa, pb, rows, loaded = _evaluate(args, path_a, path_b, paired, checked, alpha, docs,
                                     bool(args.html), summary)
    for p in provenance_problems(pa, pb):
        sys.stderr.write(f"mpilab diff: warning: {p}\n")
    fails, undecided = _states(rows, thr)
    mixed = []
    sys.stdout.write(f"{'op':<10} {'impl':<24} {'bytes':>9} {'B/A':>7} {'interval':>17} "
                     f"{'p':>8}  verdict\n")
    for r in rows:
        ratio = r["ratio"]
        verdict = ("slower" if r["significant"] and ratio and ratio > 1 else
                   "faster" if r["significant"] and ratio and ratio < 1 else "same")
        if not r["separable"] and ratio is not None:
            verdict = "cannot separate launch variation from the difference"
            mixed.append(r)
        if any(r is f for f in fails):
            verdict = f"SLOWER beyond {thr * 100:g}%"  # type: ignore[operator]
        elif any(r is u for u in undecided):
            verdict += " (undecided)"  # neither flagged nor a regression that large ruled out
        iv = f"{r['lo']:.3f}..{r['hi']:.3f}" if r["lo"] is not None else "-"
        rt = f"{ratio:.3f}" if ratio is not None else "-"
        p = f"{r['p']:.2g}" if r["p"] is not None else "-"
        sys.stdout.write(f"{r['op']:<10} {str(r['impl']):<24} {r['bytes']:>9} {rt:>7} {iv:>17} "
                         f"{p:>8}  {verdict}{'' if r['launch_level'] else ' (one launch)'}\n")
    if args.html:
        from mpilab.report import compare

        assert loaded is not None  # typed=True whenever --html is given
        ra, rb = loaded
        page = compare.render_comparison([compare.Run("A", ra), compare.Run("B", rb)])
        atomic_write_text(args.html, page)
        sys.stdout.write(f"report: {args.html}\n")
    if mixed:
        sys.stdout.write(f"mpilab diff: {len(mixed)} measurement(s) with one launch a side and "
                         "no stored launch variation: launch variation cannot be told from "
                         "the difference (measure several launches, or use --run)\n")
    note = f" ({pairs_note})" if pairs_note else ""
    if fails:
        names = ", ".join(f"{r['op']}{':' + str(r['impl']) if r['impl'] else ''} "
                          f"{r['bytes']} B" for r in fails)
        sys.stdout.write(f"mpilab diff: {len(fails)} measurement(s) significantly slower by "
                         f"more than {thr * 100:g}%{note}: {names}\n")  # type: ignore[operator]
        return 1
    if undecided:
        more = look < looks
        sys.stdout.write(f"mpilab diff: {len(undecided)} measurement(s) undecided (look {look} "
                         f"of {looks}, alpha {alpha:.3g}){note}: "
                         + ("measure more pairs and run the next look on all of them\n" if more
                            else "not flagged\n"))
        return 3 if more else 0
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("diff", help="B against A, measurement by measurement: a CI gate")
    p.add_argument("a", help="baseline results file (with --run: command A)")
    p.add_argument("b", help="results file to check (with --run: command B)")
    p.add_argument("--fail-above", metavar="PCT",
                   help="exit 1 when a measurement is significantly slower by more than PCT "
                        "(e.g. 5%%)")
    p.add_argument("--html", metavar="OUT", type=argtypes.nonempty,
                   help="also write the comparison page")
    p.add_argument("--paired", action="store_true",
                   help="A and B come from alternating launches: pair launch k of A with "
                        "launch k of B (a paired test; docs/tune.md)")
    p.add_argument("--run", action="store_true",
                   help="A and B are commands, each writing one results file to {out}: run "
                        "them in alternating launches (A B B A ...) and compare the pairs")
    p.add_argument("--pairs", type=argtypes.positive, default=20,
                   help="with --run: pairs of launches (default 20)")
    p.add_argument("--max-pairs", type=argtypes.positive, metavar="M",
                   help="with --run and --fail-above: a sequential design: look after --pairs "
                        "pairs and after every --pairs more up to M, each look at alpha "
                        "0.05/looks, more pairs only while a measurement is undecided")
    p.add_argument("--time-limit", type=argtypes.seconds, metavar="T",
                   help="with --max-pairs: when the next look's pairs would end after T "
                        "seconds (at the pace so far), the pairs that fit and a last look")
    p.add_argument("--timeout", type=argtypes.seconds, default=300.0,
                   help="with --run: the most one launch may take (default 300s)")
    p.add_argument("--keep", metavar="DIR", type=argtypes.out_dir,
                   help="with --run: keep the launches' files and the merged a.json, b.json")
    p.add_argument("--quiet", action="store_true", help="with --run: no line per launch")
    p.add_argument("--variation-store", metavar="PATH", type=argtypes.nonempty,
                   help="the stored launch-to-launch variation that moderates the tests "
                        "(default: mpilab bench's; 'none': not used)")
    p.add_argument("--look", metavar="I/K",
                   help="sequential design: look I of at most K, each at alpha 0.05/K; exit 3 "
                        "when undecided before the last look (docs/tune.md)")
    p.add_argument("--allow-different", action="store_true",
                   help="compare files of different machines, MPI libraries or rank counts "
                        "(a warning instead of a refusal)")
    p.set_defaults(func=_run)
