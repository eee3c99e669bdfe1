#!/usr/bin/env python3
"""Render time and page size of the HTML report in headless Chromium (issue 14: a default
survey's report renders in under 10 s and weighs under 5 MB).

    python3 bench/report_render.py RESULTS.json [--runs 3] [--baseline REV [--baseline-runs 1]]
        [--json OUT]

Writes the report of RESULTS.json with this tree's `mpilab report` (and, with --baseline,
with the tree of git revision REV, extracted into a temporary directory, for a side-by-side
number), then for each report and each run starts a fresh headless Chromium at 1400 px and
measures:
  - drawn: from navigation start until the load event and every figure drawn
    (div.mpilab-fig[data-rendered]; a report without such figures: the load event);
  - full page: a screenshot of the whole page height (what a reader scrolling through it
    makes the browser lay out and paint), CDP Page.captureScreenshot beyond the viewport;
  - the page's height in px.
Prints one line per report with the medians over the runs (min..max) and the page size.
Timed: run it in a `quiet` slot.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import REPO, mpilab, write_json
from report_browser import BOUND_S, HEIGHT, WIDTH, baseline_tree, one_run


def _report(python_dir: Path, results: Path, out: Path) -> float:
    t0 = time.perf_counter()
    p = mpilab("report", str(results), "-o", str(out), package=python_dir, capture=True,
               check=False, timeout=BOUND_S)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"report_render: mpilab report failed: {p.stderr.strip()}")
    return dt


def _summary(name: str, page: Path, gen_s: float, runs: list[dict[str, float]]) -> dict:
    def med(k: str) -> tuple[float, float, float]:
        v = [r[k] for r in runs]
        return statistics.median(v), min(v), max(v)
    text = page.read_text(encoding="utf-8")
    out = {"report": name, "bytes": page.stat().st_size, "generate_s": gen_s,
           "figures": text.count('class="mpilab-fig"'), "images": text.count("<img"),
           "runs": runs}
    for k in ("drawn_s", "wall_s", "full_page_s", "height_px"):
        out[k] = med(k)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV", help="also measure this revision's report")
    ap.add_argument("--baseline-runs", type=int, default=1,
                    help="runs of the baseline report (default 1: the old one is slow)")
    ap.add_argument("--json", type=Path, help="write every number here")
    a = ap.parse_args()
    if not a.results.is_file():
        print(f"report_render: {a.results}: no such file", file=sys.stderr)
        return 2
    print(f"report of {a.results} (fresh headless Chromium {WIDTH}x{HEIGHT} per run; "
          f"median (min..max) of {a.runs} runs, baseline {a.baseline_runs})", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="report-render-") as tmp:
        t = Path(tmp)
        trees = [("this tree", REPO / "python")]
        if a.baseline:
            trees.append((f"baseline {a.baseline}", baseline_tree(a.baseline, t)))
        for k, (name, tree) in enumerate(trees):
            page = t / f"report{k}.html"
            gen = _report(tree, a.results, page)
            runs = [one_run(page) for _ in range(a.runs if k == 0 else a.baseline_runs)]
            r = _summary(name, page, gen, runs)
            rows.append(r)
            d, f, h = r["drawn_s"], r["full_page_s"], r["height_px"]
            print(f"{r['report']:>22}: {r['bytes'] / 1e6:.2f} MB, {r['figures']} interactive "
                  f"figures, {r['images']} images, generated in {r['generate_s']:.1f} s; "
                  f"loaded+drawn {d[0]:.2f} s ({d[1]:.2f}..{d[2]:.2f}); full-page paint "
                  f"{f[0]:.2f} s ({f[1]:.2f}..{f[2]:.2f}); {h[0]:.0f} px tall", flush=True)
    if a.json:
        write_json(a.json, rows, newline=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
