"""`mpilab diff A.json B.json [--fail-above 5%] [--html OUT]`: B against A, measurement by
measurement, on the raw samples (mpilab.tune.stats.unpaired: launch-level intervals when
the files were merged from launches, a Mann-Whitney test on the samples), a table on the
terminal, an HTML page built on the report's comparison view, and exit status 1 when some
measurement is significantly slower by more than the threshold: a CI gate.

--paired: A and B were measured in alternating launches (mpilab bench --launches 1, A and B
in turn, each side merged with mpilab's launch merge): launch k of A is paired with launch k
of B, which shared the machine's state of that moment, and each measurement is tested on
the per-pair log ratios of the launch medians (mpilab.tune.stats.paired_rank: Wilcoxon's
signed-rank test and the Hodges-Lehmann interval, never narrower than the medians' own
intervals; robust to pairs far off, where a paired t test was not). Refused when the two
files do not hold the same number of launches or their launch dates do not interleave
(pair k wholly before pair k+1).

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
import sys
from pathlib import Path
from typing import Any

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


def compare_docs(da: dict[str, Any], db: dict[str, Any], paired: bool = False,
                 alpha: float = 0.05) -> list[dict[str, Any]]:
    from mpilab.pair_matrix import expand_all
    from mpilab.tune import stats

    am = {_key(m): m for m in expand_all(da.get("measurements") or []) if isinstance(m, dict)}
    rows = []
    for m in expand_all(db.get("measurements") or []):
        if not isinstance(m, dict) or _key(m) not in am:
            continue
        ga, gb = stats.launch_groups(am[_key(m)]), stats.launch_groups(m)
        n = (db.get("launches") or {}).get("n")
        if paired and len(ga) == len(gb) == n:
            c = stats.paired_rank(ga, gb, 1 - alpha, alpha)
        else:  # not paired, or some launch lacks this measurement
            c = stats.unpaired(ga, gb, 1 - alpha, alpha)
        rows.append({"op": m.get("op"), "impl": m.get("impl"), "timing": m.get("timing"),
                     "bytes": m.get("bytes"), "pair": m.get("pair"), **c.as_json()})
    return rows


def _run(args: argparse.Namespace) -> int:
    from mpilab import results, samples_file
    from mpilab.fsutil import atomic_write_text, check_output

    thr = _threshold(args.fail_above) if args.fail_above is not None else None
    look, looks = _look(args.look) if args.look else (1, 1)
    if args.look and thr is None:
        raise MpilabError("--look needs --fail-above (undecided is about the threshold)")
    if args.html:
        check_output(args.html)
    ra, rb = results.load(args.a), results.load(args.b)  # one line on a bad file
    # the raw documents (compact files with their samples back: the tests need them)
    da = samples_file.attach(json.loads(Path(args.a).read_text(encoding="utf-8")), args.a)
    db = samples_file.attach(json.loads(Path(args.b).read_text(encoding="utf-8")), args.b)
    probs = provenance_problems(ra.provenance, rb.provenance)
    if probs and not args.allow_different:
        raise MpilabError(f"{args.b} against {args.a}: {'; '.join(probs)} "
                          "(--allow-different compares them anyway)")
    for p in probs:
        sys.stderr.write(f"mpilab diff: warning: {p}\n")
    if args.paired:
        why = pairing_problem(da, db)
        if why:
            raise MpilabError(f"{args.b} against {args.a}: {why}")
    rows = compare_docs(da, db, args.paired, 0.05 / looks)
    if not rows:
        raise MpilabError(f"{args.a} and {args.b} have no measurement in common")
    fails, undecided = [], []
    sys.stdout.write(f"{'op':<10} {'impl':<24} {'bytes':>9} {'B/A':>7} {'interval':>17} "
                     f"{'p':>8}  verdict\n")
    for r in rows:
        ratio = r["ratio"]
        verdict = ("slower" if r["significant"] and ratio and ratio > 1 else
                   "faster" if r["significant"] and ratio and ratio < 1 else "same")
        if verdict == "slower" and thr is not None and ratio > 1 + thr:
            verdict = f"SLOWER beyond {thr * 100:g}%"
            fails.append(r)
        elif thr is not None and ratio is not None and (r["hi"] is None or r["hi"] > 1 + thr):
            verdict += " (undecided)"  # neither flagged nor a regression that large ruled out
            undecided.append(r)
        iv = f"{r['lo']:.3f}..{r['hi']:.3f}" if r["lo"] is not None else "-"
        rt = f"{ratio:.3f}" if ratio is not None else "-"
        p = f"{r['p']:.2g}" if r["p"] is not None else "-"
        sys.stdout.write(f"{r['op']:<10} {str(r['impl']):<24} {r['bytes']:>9} {rt:>7} {iv:>17} "
                         f"{p:>8}  {verdict}{'' if r['launch_level'] else ' (one launch)'}\n")
    if args.html:
        from mpilab.report import compare

        page = compare.render_comparison([compare.Run("A", ra), compare.Run("B", rb)])
        atomic_write_text(args.html, page)
        sys.stdout.write(f"report: {args.html}\n")
    if fails:
        sys.stdout.write(f"mpilab diff: {len(fails)} measurement(s) significantly slower by "
                         f"more than {thr * 100:g}%\n")
        return 1
    if undecided:
        more = look < looks
        sys.stdout.write(f"mpilab diff: {len(undecided)} measurement(s) undecided (look {look} "
                         f"of {looks}, alpha {0.05 / looks:g}): "
                         + ("measure more pairs and run the next look on all of them\n" if more
                            else "not flagged\n"))
        return 3 if more else 0
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("diff", help="B against A, measurement by measurement: a CI gate")
    p.add_argument("a", help="baseline results file")
    p.add_argument("b", help="results file to check")
    p.add_argument("--fail-above", metavar="PCT",
                   help="exit 1 when a measurement is significantly slower by more than PCT "
                        "(e.g. 5%%)")
    p.add_argument("--html", metavar="OUT", help="also write the comparison page")
    p.add_argument("--paired", action="store_true",
                   help="A and B come from alternating launches: pair launch k of A with "
                        "launch k of B (a paired test; docs/tune.md)")
    p.add_argument("--look", metavar="I/K",
                   help="sequential design: look I of at most K, each at alpha 0.05/K; exit 3 "
                        "when undecided before the last look (docs/tune.md)")
    p.add_argument("--allow-different", action="store_true",
                   help="compare files of different machines, MPI libraries or rank counts "
                        "(a warning instead of a refusal)")
    p.set_defaults(func=_run)
