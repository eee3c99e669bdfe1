#!/usr/bin/env python3
"""The paper's Fig. 7a from bench/wavefront_disk.py results: time per iteration against block
size, one curve per layout and I/O back end, the model-aware I/O bound dashed beside each.

    python3 bench/wavefront_fig7a.py --out fig.png RUN_DIR/rounds.json [MORE/rounds.json ...]

Several runs (e.g. two slots with different block sizes on the same disk spec) are merged:
each point is the median of its rounds, the bar spans their minimum to maximum. Reads only
results files (DESIGN.md's one-way flow); bad input gives one line and exit status 2.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import NoReturn

import harness  # noqa: F401  (python/ on the import path)
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_bytes, read_regular
from mpilab.report.iplot import PALETTE, spec_image

Series = dict[str, dict[int, list[tuple[float, float]]]]


def die(msg: str) -> NoReturn:
    print(f"wavefront_fig7a: {msg}", file=sys.stderr)
    raise SystemExit(2)


def series(rounds: object, where: str) -> Series:
    """{layout/back end: {block size: [(s per iteration, model bound), ...]}} over the rounds
    of one run (`where` names them in errors)."""
    if not isinstance(rounds, list):
        die(f"{where}: expected a list of rounds")
    out: Series = {}
    for k, rnd in enumerate(rounds):
        if not isinstance(rnd, dict):
            die(f"{where}: round {k + 1} is not an object")
        for name, v in rnd.items():
            parts = str(name).split("/")
            if len(parts) != 4 or parts[0] != "7a":
                continue
            try:
                b = int(parts[2])
                t = float(v["s_per_iter"])
                bound = float(v.get("bound_model", "nan"))
            except (TypeError, KeyError, ValueError):
                die(f"{where}: round {k + 1}, {name}: no numeric s_per_iter")
            if not t > 0:
                die(f"{where}: round {k + 1}, {name}: s_per_iter {t} is not a positive time")
            out.setdefault(f"{parts[1]} {parts[3]}", {}).setdefault(b, []).append((t, bound))
    return out


def load(paths: list[str]) -> Series:
    """series() of every file's rounds, merged (e.g. two slots with different block sizes)."""
    out: Series = {}
    for p in paths:
        try:
            rounds = json.loads(read_regular(p, "rounds file", 64 << 20))
        except MpilabError as e:
            die(str(e))
        except json.JSONDecodeError as e:
            die(f"{p}:{e.lineno}: not JSON ({e.msg})")
        except (OSError, ValueError) as e:
            die(f"{p}: {e}")
        for label, pts in series(rounds, p).items():
            for b, v in pts.items():
                out.setdefault(label, {}).setdefault(b, []).extend(v)
    if not out:
        die("no Fig. 7a configuration in the files given")
    return out


def draw(series: Series, title: str, fmt: str) -> bytes:
    """The figure as png or svg bytes, through plotly's export (kaleido)."""
    data: list[dict] = []
    for n, (label, pts) in enumerate(sorted(series.items())):
        colour = PALETTE[n % len(PALETTE)]
        sizes = sorted(pts)
        med = [statistics.median(t for t, _ in pts[b]) for b in sizes]
        lo = [m - min(t for t, _ in pts[b]) for m, b in zip(med, sizes, strict=True)]
        hi = [max(t for t, _ in pts[b]) - m for m, b in zip(med, sizes, strict=True)]
        dash = "solid" if label.startswith("optimized") else "dash"
        data.append({"type": "scatter", "mode": "lines+markers", "name": label, "x": sizes,
                     "y": med, "line": {"color": colour, "dash": dash},
                     "error_y": {"type": "data", "symmetric": False, "array": hi,
                                 "arrayminus": lo, "color": colour}})
        bounds = [statistics.median(bd for _, bd in pts[b]) for b in sizes]
        if all(x == x for x in bounds):
            data.append({"type": "scatter", "mode": "lines", "x": sizes, "y": bounds,
                         "showlegend": False, "hoverinfo": "skip",
                         "line": {"color": colour, "dash": "dot", "width": 1}})
    ticks = sorted({b for pts in series.values() for b in pts})
    layout = {"title": {"text": title}, "font": {"size": 13},
              "xaxis": {"type": "log", "tickvals": ticks, "ticktext": [str(b) for b in ticks],
                        "title": {"text": "block size (square blocks, elements per side)"}},
              "yaxis": {"type": "log", "title": {"text": "time per iteration (s)"}},
              "legend": {"title": {"text": "layout, I/O back end (dotted: model bound)"}}}
    return spec_image({"data": data, "layout": layout}, fmt, 800, 500)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rounds", nargs="+", help="rounds.json files of wavefront_disk.py runs")
    ap.add_argument("--out", required=True, help="PNG or SVG file")
    ap.add_argument("--title", default="Fig. 7a on an emulated disk")
    a = ap.parse_args()
    fmt = Path(a.out).suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        die(f"--out {a.out}: expected a .png or .svg name")
    series = load(a.rounds)
    try:
        atomic_write_bytes(a.out, draw(series, a.title, fmt))
    except (MpilabError, OSError) as e:
        die(str(e))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
