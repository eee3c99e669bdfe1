"""`mpilab report RESULTS.json [-o OUT.html]`: the HTML report of a results file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mpilab import results
from mpilab.errors import MpilabError


def default_html(results_path: str | Path) -> Path:
    """RESULTS.json -> RESULTS.html beside it (any other suffix gets .html appended)."""
    p = Path(results_path)
    return p.with_suffix(".html") if p.suffix == ".json" else p.with_name(p.name + ".html")


def make_report(results_path: str | Path, out: str | Path | None = None) -> Path:
    """Load, validate and render; nothing is written unless everything succeeded."""
    from mpilab.report import build_report

    r = results.load(results_path)
    target = Path(out) if out is not None else default_html(results_path)
    if target.is_dir():
        raise MpilabError(f"{target}: is a directory, expected an output file name")
    try:
        build_report(r, target)
    except OSError as e:
        raise MpilabError(f"{target}: cannot write: {e.strerror}") from None
    return target


def _run(args: argparse.Namespace) -> int:
    out = make_report(args.results, args.output)
    sys.stdout.write(f"report: {out}\n")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("report", help="HTML report (plots and tables) of a results file",
                       description="Write a self-contained HTML report of an "
                                   "mpilab.results/1 file.")
    p.add_argument("results", metavar="RESULTS.json", help="results file to report on")
    p.add_argument("-o", "--output", metavar="OUT.html",
                   help="output file (default: the results file with .html)")
    p.set_defaults(func=_run)
