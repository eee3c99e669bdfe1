"""`mpilab report RESULTS.json [-o OUT.html]`: the HTML report of a results file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mpilab import results, units
from mpilab.errors import MpilabError
from mpilab.fsutil import check_output


def default_html(results_path: str | Path) -> Path:
    """RESULTS.json -> RESULTS.html beside it (any other suffix gets .html appended)."""
    p = Path(results_path)
    return p.with_suffix(".html") if p.suffix == ".json" else p.with_name(p.name + ".html")


def parse_sizes(text: str) -> list[int]:
    """'0,4K,1M' -> [0, 4096, 1048576] in the given order (mpilab.units.parse_size)."""
    out = []
    for item in text.split(","):
        try:
            out.append(units.parse_size(item))
        except ValueError:
            raise MpilabError(f"--matrix-sizes: '{item}' is not a size (e.g. 0, 4K, 1M)") from None
    return out


def make_report(results_path: str | Path, out: str | Path | None = None,
                matrix_sizes: list[int] | None = None) -> Path:
    """Load, validate and render; nothing is written unless everything succeeded."""
    target = Path(out) if out is not None else default_html(results_path)
    check_output(target)  # before minutes of rendering: a directory, a dangling link, ...
    r = results.load(results_path)
    from mpilab.report import build_report  # matplotlib: only once the input is good

    try:
        build_report(r, target, matrix_sizes)
    except OSError as e:
        raise MpilabError(f"{target}: cannot write: {e.strerror}") from None
    return target


def _run(args: argparse.Namespace) -> int:
    sizes = parse_sizes(args.matrix_sizes) if args.matrix_sizes is not None else None
    out = make_report(args.results, args.output, sizes)
    if str(out) != "-":  # the report itself went to stdout
        sys.stdout.write(f"report: {out}\n")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("report", help="HTML report (plots and tables) of a results file",
                       description="Write a self-contained HTML report of an "
                                   "mpilab.results/1 file.")
    p.add_argument("results", metavar="RESULTS.json", help="results file to report on")
    p.add_argument("-o", "--output", metavar="OUT.html",
                   help="output file (default: the results file with .html)")
    p.add_argument("--matrix-sizes", metavar="LIST",
                   help="message sizes of the point-to-point heat maps, e.g. 0,64K "
                        "(default: the smallest and the largest measured)")
    p.set_defaults(func=_run)
