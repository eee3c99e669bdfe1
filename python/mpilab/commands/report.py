"""`mpilab report RESULTS.json [-o OUT.html]`: the HTML report of a results file."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path

from mpilab import results, units
from mpilab.errors import MpilabError
from mpilab.fsutil import check_output

# Above this size a results file is not reported unless --max-input raises the limit: at
# about 1 KB of JSON per measurement that is some 1.3 x 10^5 measurements, which report in
# about 500 MB of memory (time and memory grow linearly; docs/report-perf.md).
MAX_INPUT_BYTES = 128 << 20
# From this size on, a single results file is read as a stream (report.stream).
STREAM_BYTES = 16 << 20


def check_input_sizes(paths: list[str], limit: int) -> None:
    """One line refusing a results file larger than `limit` bytes, before any work."""
    for p in paths:
        try:
            size = os.stat(p).st_size
        except OSError:
            continue  # results.load words a missing or unreadable file
        if size > limit:
            raise MpilabError(
                f"{p}: {size / 2**20:.0f} MiB of results is above the report's limit of "
                f"{limit >> 20} MiB (at about 1 KiB per measurement, some {limit >> 10:,} "
                "measurements; memory and time grow linearly with the file, about 4.5 MB "
                "and 0.2 s per MiB here); raise it with --max-input "
                f"{(size >> 20) + 1}M if the machine has the memory")


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


def default_compare_html(first: str | Path) -> Path:
    """A.json B.json ... -> A-compare.html beside A."""
    p = Path(first)
    stem = p.stem if p.suffix == ".json" else p.name
    return p.with_name(f"{stem}-compare.html")


def make_report(results_path: str | Path | list[str], out: str | Path | None = None,
                matrix_sizes: list[int] | None = None, labels: list[str] | None = None,
                label_by: str | None = None, static: bool = False,
                max_input: int = MAX_INPUT_BYTES, fmt: str = "html",
                self_contained: bool = False) -> Path:
    """Load, validate and render one results file (a run report) or several (a comparison);
    nothing is written unless everything succeeded."""
    paths = [str(results_path)] if isinstance(results_path, str | Path) else list(results_path)
    if any(not p for p in paths):
        raise MpilabError("an empty results file name (give RESULTS.json)")
    if len(paths) > 1 and matrix_sizes is not None:
        raise MpilabError("--matrix-sizes applies to the report of one results file")
    if len(paths) == 1 and (labels or label_by):
        raise MpilabError("--label and --label-by name the runs of a comparison "
                          "(give two or more results files)")
    if out is not None:
        target = Path(out)
    else:
        target = default_html(paths[0]) if len(paths) == 1 else default_compare_html(paths[0])
        if fmt == "csv":
            target = target.with_suffix(".csv")
    if fmt == "csv" and (static or matrix_sizes is not None or self_contained):
        raise MpilabError("--static, --matrix-sizes and --self-contained shape the HTML "
                          "page; --format csv writes the measurements only")
    check_output(target)  # before minutes of rendering: a directory, a dangling link, ...
    check_input_sizes(paths, max_input)
    if len(paths) == 1 and _size(paths[0]) >= STREAM_BYTES:
        from mpilab.report.stream import load_large

        loaded = [load_large(paths[0])]
    else:
        loaded = [results.load(p) for p in paths]
    # what was read lives until the end: keep the cyclic collector's full passes off it
    # (hundreds of thousands of objects for a large file; every pass would walk them all)
    gc.freeze()
    # the report modules (jinja2, numpy, plotly): only once the input is good
    from mpilab.fsutil import atomic_write_text
    from mpilab.report import build_report
    from mpilab.report.compare import Run, labels_for, render_comparison
    from mpilab.report.html import write_csv, write_runtime_for

    # plotly.js once per folder, beside the pages (not for a page on stdout)
    shared = not self_contained and str(target) != "-"
    try:
        if fmt == "csv":
            names = (labels_for(paths, loaded, labels, label_by) if len(loaded) > 1
                     else [paths[0]])
            write_csv(list(zip(names, loaded, strict=True)), target)
        elif len(loaded) == 1:
            build_report(loaded[0], target, matrix_sizes, static, shared)
        else:
            names = labels_for(paths, loaded, labels, label_by)
            text = render_comparison([Run(n, r) for n, r in zip(names, loaded, strict=True)],
                                     static, shared)
            write_runtime_for(text, target)
            atomic_write_text(target, text)
    except OSError as e:
        raise MpilabError(f"{target}: cannot write: {e.strerror}") from None
    return target


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _run(args: argparse.Namespace) -> int:
    sizes = parse_sizes(args.matrix_sizes) if args.matrix_sizes is not None else None
    try:
        limit = units.parse_size(args.max_input)
    except ValueError:
        raise MpilabError(f"--max-input: '{args.max_input}' is not a size (e.g. 512M, 2G)"
                          ) from None
    out = make_report(args.results, args.output, sizes, args.label, args.label_by, args.static,
                      limit, args.format, args.self_contained)
    if str(out) != "-":  # the report itself went to stdout
        sys.stdout.write(f"report: {out}\n")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("report", help="HTML report (summary, plots, tables) of results files",
                       description="Write the HTML report of an mpilab.results/1 file "
                                   "(its plotting library in one shared file beside it, or "
                                   "embedded with --self-contained); with several files, a "
                                   "comparison (runs overlaid, ratios to the first with "
                                   "significance); --format csv: the measurements as CSV.")
    p.add_argument("results", metavar="RESULTS.json", nargs="+",
                   help="results file(s) to report on; the first is the comparison's baseline")
    p.add_argument("-o", "--output", metavar="OUT.html",
                   help="output file (default: the results file with .html; for several "
                        "files FIRST-compare.html)")
    p.add_argument("--label", metavar="NAME", action="append",
                   help="name of a run in a comparison, once per file in order")
    p.add_argument("--label-by", metavar="FIELD",
                   help="name the runs by this provenance field (default: transport, else "
                        "the file name)")
    p.add_argument("--static", action="store_true",
                   help="figures as embedded SVG images (for papers; no script)")
    p.add_argument("--matrix-sizes", metavar="LIST",
                   help="message sizes of the point-to-point heat maps, e.g. 0,64K "
                        "(default: the smallest and the largest measured)")
    p.add_argument("--format", choices=("html", "csv"), default="html",
                   help="html: the report page (default); csv: every measurement, one row "
                        "each, times in seconds (point-to-point one-way, the round trip in "
                        "its own column), for spreadsheets (default output RESULTS.csv)")
    p.add_argument("--self-contained", action="store_true",
                   help="embed the plotting library in the page (2 MB) instead of one shared "
                        "file beside the reports of the folder (mpilab-plotly-*.min.js)")
    p.add_argument("--max-input", metavar="SIZE", default=f"{MAX_INPUT_BYTES >> 20}M",
                   help="refuse results files larger than this (default %(default)s: about "
                        "10^5 measurements, reported in about 500 MB of memory)")
    p.set_defaults(func=_run)
