"""Interactive figures of the HTML reports (plotly.js, embedded once per page, offline).

The contract with the report core is /work/notes/iplot-contract.md: the report builds
`Figure`s of `Curve`s of `Point`s (values in SI base units, their confidence interval,
repetitions and quality flags) and places `runtime_script()` once and `figure_html(fig)` per
figure in the page. `figure_static` exports the same figure through plotly (kaleido) for `--static`.

Page size: plotly.js is 4.8 MB minified, close to the 5 MB a survey report may weigh, so
the runtime travels gzip-compressed (1.5 MB, 2.0 MB in base64) and the browser unpacks it
with DecompressionStream (Chromium 80, Firefox 113, Safari 16.4). Figures are drawn once it
is loaded; each figure's div gets data-rendered="1" when plotly has drawn it (tests and the
render-time bench wait for that), or data-rendered="error" and a message in the div.

Display: one colour per curve from a qualitative palette (distinct hues, not paired
shades); flagged points are hollow markers, a non-positive value on a log axis is drawn as
a hollow triangle at the axis floor (its hover text gives the real value); error bars come
from the CI bounds; model curves are dashed lines without markers. Hover text (value, CI,
repetitions, flags) is formatted on the Python side through the report's unit formatter
and travels in each point's customdata: [hover text, flags joined by ","].
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_bytes
from mpilab.report.units import axis_scale, fmt_ci, fmt_value

# Tableau 10: ten hues a reader tells apart (and that survive most colour-vision
# deficiencies better than paired palettes). Curves beyond ten reuse a hue with a dash.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
DASHES = ("solid", "dash", "dot", "dashdot")
HEIGHT_PX = 520
FONT_PX = 14
STATIC_SIZE_PX = (1000, 600)
STATIC_SCALE = 1.5  # png: 1500 x 900 pixels


@dataclass
class Point:
    """One measured value. y, lo, hi in SI base units of the figure's y_unit."""
    x: float
    y: float | None
    lo: float | None = None
    hi: float | None = None
    reps: int | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class Curve:
    label: str
    points: list[Point]
    kind: str = "measured"  # "measured" | "model" (line, no markers, no error bars)


@dataclass
class Figure:
    fig_id: str
    title: str
    curves: list[Curve]
    xlabel: str
    ylabel: str
    x_unit: str = "B"  # "B" | "ranks" | ""
    y_unit: str = "s"  # "s" | "B/s" | "fraction" | ""
    xlog: bool = True
    ylog: bool = True
    interval: str = "95% CI"  # what a measured point's lo..hi is (hover text)


def _finite(v: float | None) -> bool:
    return v is not None and not isinstance(v, bool) and math.isfinite(v)


# ---------------------------------------------------------------- runtime

@functools.lru_cache(maxsize=1)
def _plotlyjs_gz_b64() -> str:
    from plotly.offline import get_plotlyjs

    raw = get_plotlyjs().encode("utf-8")
    # mtime=0: the same plotly gives the same bytes (reproducible reports)
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


_LOADER = """
(function () {
  "use strict";
  var queue = [];
  var failed = null;
  function fail(div, why) {
    div.setAttribute("data-rendered", "error");
    div.textContent = "This figure could not be drawn: " + why +
      " (the report's --static option writes images instead).";
  }
  function draw(id, spec) {
    var div = document.getElementById(id);
    if (!div) { console.error("mpilab: no element " + id); return; }
    if (failed) { fail(div, failed); return; }
    Plotly.newPlot(div, spec.data, spec.layout, spec.config).then(function () {
      div.setAttribute("data-rendered", "1");
    }, function (e) { console.error("mpilab: figure " + id + ": " + e); fail(div, String(e)); });
  }
  window.mpilabDraw = function (id, spec) {
    if (window.Plotly || failed) { draw(id, spec); } else { queue.push([id, spec]); }
  };
  function flush() { var q = queue; queue = []; q.forEach(function (a) { draw(a[0], a[1]); }); }
  function load() {
    if (window.Plotly) { flush(); return; }  // the shared runtime file, loaded by <script src>
    var packed = document.getElementById("mpilab-plotlyjs");
    if (!packed) {
      failed = "the plotting library file (mpilab-plotly-*.min.js) is not beside this page " +
        "(copy it with the page, or write the report with --self-contained)";
      flush(); return;
    }
    if (typeof DecompressionStream === "undefined") {
      failed = "this browser cannot unpack the embedded plotting library";
      flush(); return;
    }
    var b64 = packed.textContent;
    var bin = atob(b64);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    new Response(stream).text().then(function (src) {
      var s = document.createElement("script");
      s.textContent = src;
      document.head.appendChild(s);
      if (!window.Plotly) { failed = "the plotting library did not load"; }
      flush();
    }, function (e) { failed = "unpacking the plotting library failed: " + e; flush(); });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", load);
  } else { load(); }
})();
"""


def runtime_script(shared: bool = False) -> str:
    """The plotting runtime and its loader, once per page, before or after the figures
    (they wait for it): embedded (plotly.js gzip-compressed, base64), or shared: a
    <script src> of RUNTIME_FILE beside the page (write_runtime_file puts it there; one
    file serves every report in the folder)."""
    if shared:
        return (f'<script src="{runtime_file_name()}"></script>\n'
                f"<script>{_LOADER}</script>\n")
    return (f'<script type="application/octet-stream" id="mpilab-plotlyjs">'
            f"{_plotlyjs_gz_b64()}</script>\n<script>{_LOADER}</script>\n")


@functools.lru_cache(maxsize=1)
def runtime_file_name() -> str:
    """mpilab-plotly-VERSION.min.js: the version in the name, so reports written by
    different plotly versions in one folder each find theirs."""
    import plotly

    return f"mpilab-plotly-{plotly.__version__}.min.js"


def write_runtime_file(folder: str | Path) -> Path:
    """The shared runtime beside the reports in `folder` (written once; kept when it is
    already there with the right size)."""
    from plotly.offline import get_plotlyjs

    data = get_plotlyjs().encode("utf-8")
    p = Path(folder) / runtime_file_name()
    try:
        if p.is_file() and p.stat().st_size == len(data):
            return p
    except OSError:
        pass
    atomic_write_bytes(p, data)
    return p


# ---------------------------------------------------------------- axes and text

def _pow2_ticks(xs: list[float], unit: str) -> tuple[list[float], list[str]]:
    """Tick positions at powers of two (sizes are chosen as such) labelled in binary units,
    thinned to at most ~12 ticks."""
    pos = [x for x in xs if x > 0]
    if not pos:
        return [], []
    lo = math.floor(math.log2(min(pos)))
    hi = math.ceil(math.log2(max(pos)))
    step = max(1, math.ceil((hi - lo + 1) / 12))
    vals = [float(2 ** e) for e in range(lo, hi + 1) if (e - lo) % step == 0]
    return vals, [fmt_value(v, unit) for v in vals]


def _int_ticks(xs: list[float]) -> tuple[list[float], list[str]]:
    vals = sorted({x for x in xs if _finite(x)})
    if len(vals) > 12:
        step = math.ceil(len(vals) / 12)
        vals = vals[::step]
    return vals, [fmt_value(v, "ranks") for v in vals]


def _x_text(x: float, unit: str) -> str:
    if unit == "B":
        return fmt_value(x, "B")
    if unit == "ranks":
        return f"{fmt_value(x, 'ranks')} ranks"
    return fmt_value(x, "")


def _hover(c: Curve, p: Point, fig: Figure) -> str:
    lines = [f"<b>{html.escape(c.label)}</b>",
             f"{html.escape(fig.xlabel)}: {_x_text(p.x, fig.x_unit)}"]
    lines.append(f"value: {fmt_value(p.y, fig.y_unit)}")
    if c.kind == "measured":
        if _finite(p.lo) and _finite(p.hi):
            lines.append(f"{fig.interval}: {fmt_ci(p.lo, p.hi, fig.y_unit)}")
        else:
            lines.append(f"{fig.interval}: none")
        if p.reps is not None:
            lines.append(f"repetitions: {p.reps}")
    else:
        lines.append("model prediction")
    if p.flags:
        lines.append(f"<b>flagged: {html.escape(', '.join(p.flags))}</b>")
    return "<br>".join(lines)


def _y_floor(fig: Figure) -> float | None:
    """Where a non-positive value is drawn on a log y axis: half the smallest positive
    value (or bound) of the figure."""
    pos = [v for c in fig.curves for p in c.points for v in (p.y, p.lo)
           if _finite(v) and v is not None and v > 0]
    return min(pos) / 2 if pos else None


# ---------------------------------------------------------------- plotly spec

def _model_of(model: str, measured: list[str], seen: int) -> int | None:
    """The measured curve a model curve predicts, by label: the most common leading words
    ("binomial predicted" -> "binomial measured (max)"; among equals the last one drawn
    before the model, as a model usually follows its measurement), else a measured label
    that is a word of the model's ("hockney 0-1" -> "0-1")."""
    words = model.split()
    common = []
    for lab in measured:
        n = 0
        for a, b in zip(words, lab.split(), strict=False):
            if a != b:
                break
            n += 1
        common.append(n)
    top = max(common, default=0)
    if top > 0:
        ties = [i for i, n in enumerate(common) if n == top]
        before = [i for i in ties if i < seen]
        return before[-1] if before else ties[0]
    return next((i for i, lab in enumerate(measured) if lab in words), None)


def _styles(fig: Figure) -> list[tuple[str, str]]:
    """(colour, dash) per curve: measured curves take the palette in order (a dash pattern
    once the ten hues are used up); a model curve is dashed in the colour of the measured
    curve it predicts, or in the next free hue."""
    measured = [c.label for c in fig.curves if c.kind != "model"]
    out: list[tuple[str, str]] = []
    i = 0
    n = len(measured)
    for c in fig.curves:
        if c.kind != "model":
            out.append((PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)]))
            i += 1
            continue
        j = _model_of(c.label, measured, i)
        if j is None:
            j, n = n, n + 1
        out.append((PALETTE[j % len(PALETTE)], "dash" if j < len(PALETTE) else "dot"))
    return out


def _trace(c: Curve, style: tuple[str, str], fig: Figure, scale: float,
           floor: float | None) -> dict | None:
    colour, dash = style
    xs: list[float] = []
    ys: list[float] = []
    plus: list[float | None] = []
    minus: list[float | None] = []
    symbols: list[str] = []
    custom: list[list[str]] = []
    for p in sorted(c.points, key=lambda q: q.x):
        if not _finite(p.x) or not _finite(p.y) or (fig.xlog and p.x <= 0):
            continue
        assert p.y is not None
        y = p.y
        symbol = "circle-open" if p.flags else "circle"
        if fig.ylog and y <= 0:
            if floor is None:
                continue
            y, symbol = floor, "triangle-down-open"
        xs.append(p.x)
        ys.append(y / scale)
        up = p.hi - p.y if _finite(p.hi) and p.hi is not None and y == p.y else None
        dn = p.y - p.lo if _finite(p.lo) and p.lo is not None and y == p.y else None
        plus.append(up / scale if up is not None and up >= 0 else None)
        minus.append(dn / scale if dn is not None and dn >= 0 else None)
        symbols.append(symbol)
        custom.append([_hover(c, p, fig), ",".join(p.flags)])
    if not xs:
        return None
    t: dict = {"type": "scatter", "name": html.escape(c.label), "x": xs, "y": ys,
               "customdata": custom,
               "hovertemplate": "%{customdata[0]}<extra></extra>",
               "line": {"color": colour, "width": 2, "dash": dash}}
    if c.kind == "model":
        t["mode"] = "lines"
        t["line"]["width"] = 1.5
        return t
    t["mode"] = "lines+markers"
    t["marker"] = {"color": colour, "size": [10 if s != "circle" else 7 for s in symbols],
                   "symbol": symbols, "line": {"color": colour, "width": 2}}
    if any(v is not None for v in plus + minus):
        t["error_y"] = {"type": "data", "symmetric": False, "array": plus,
                        "arrayminus": minus, "color": colour, "thickness": 1.2, "width": 3}
    return t


def _plotted_x(fig: Figure) -> list[float]:
    return [p.x for c in fig.curves for p in c.points if _finite(p.x) and _finite(p.y)]


def _x_axis(fig: Figure) -> dict:
    xs = _plotted_x(fig)
    ax: dict = {"title": {"text": html.escape(fig.xlabel)},
                "type": "log" if fig.xlog else "linear",
                "showgrid": True, "zeroline": False}
    if fig.x_unit == "B" and fig.xlog:
        ax["tickvals"], ax["ticktext"] = _pow2_ticks(xs, "B")
    elif fig.x_unit == "ranks":
        ax["tickvals"], ax["ticktext"] = _int_ticks(xs)
    return ax


def _y_axis(fig: Figure) -> tuple[dict, float]:
    ys = [p.y for c in fig.curves for p in c.points if _finite(p.y)]
    scale, name = axis_scale([y for y in ys if y is not None], fig.y_unit)
    title = f"{fig.ylabel} ({name})" if name and name not in fig.ylabel else fig.ylabel
    ax: dict = {"title": {"text": html.escape(title)},
                "type": "log" if fig.ylog else "linear",
                "showgrid": True, "exponentformat": "none", "zeroline": not fig.ylog}
    pos = [y / scale for y in ys if y is not None and y > 0]
    if fig.ylog and pos and math.log10(max(pos) / min(pos)) >= 2:
        ax["dtick"] = 1  # one labelled tick per decade: 1, 10, 100 (no "2 5" mantissas)
    return ax, scale


def figure_spec(fig: Figure) -> dict:
    """The plotly {data, layout, config} of a figure (plain JSON-able dicts)."""
    yax, scale = _y_axis(fig)
    floor = _y_floor(fig) if fig.ylog else None
    data = [t for c, st in zip(fig.curves, _styles(fig), strict=True)
            if (t := _trace(c, st, fig, scale, floor)) is not None]
    flagged = any(p.flags for c in fig.curves for p in c.points)
    below = fig.ylog and any(_finite(p.y) and p.y is not None and p.y <= 0
                             for c in fig.curves for p in c.points)
    notes = []
    if flagged:
        notes.append("hollow markers: flagged values (hover for the reason)")
    if below:
        notes.append("triangles at the bottom: zero or negative values")
    layout: dict = {
        "title": {"text": html.escape(fig.title), "x": 0.01, "xanchor": "left"},
        "height": HEIGHT_PX, "autosize": True,
        "font": {"size": FONT_PX},
        "margin": {"l": 80, "r": 20, "t": 60, "b": 70},
        "xaxis": _x_axis(fig), "yaxis": yax,
        "hovermode": "closest",
        "hoverlabel": {"align": "left"},
        "legend": {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1,
                   "font": {"size": FONT_PX - 1}},
        "plot_bgcolor": "white",
    }
    layout["xaxis"]["gridcolor"] = layout["yaxis"]["gridcolor"] = "#e5e5e5"
    layout["xaxis"]["linecolor"] = layout["yaxis"]["linecolor"] = "#888"
    if notes:
        layout["annotations"] = [{"text": "; ".join(notes), "xref": "paper", "yref": "paper",
                                  "x": 0, "y": -0.2, "xanchor": "left", "yanchor": "top",
                                  "showarrow": False, "font": {"size": FONT_PX - 2}}]
        layout["margin"]["b"] = 95
    if not data:
        layout.setdefault("annotations", []).append(
            {"text": "no values to plot", "xref": "paper", "yref": "paper", "x": 0.5,
             "y": 0.5, "showarrow": False})
    config = {"displaylogo": False, "responsive": True, "scrollZoom": False,
              "modeBarButtonsToRemove": ["select2d", "lasso2d"],
              "toImageButtonOptions": {"format": "svg", "filename": fig.fig_id}}
    return {"data": data, "layout": layout, "config": config}


def _script_json(obj: object) -> str:
    """JSON safe inside a <script> element (no "</script>", no "<!--")."""
    s = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def figure_html(fig: Figure) -> str:
    """The figure's div and the script that draws it (once the runtime is loaded)."""
    spec = figure_spec(fig)
    fid = html.escape(fig.fig_id, quote=True)
    return (f'<div class="mpilab-fig" id="{fid}" data-figure="{html.escape(fig.title, quote=True)}"'
            f' style="width:100%;min-height:{HEIGHT_PX}px"></div>\n'
            f"<script>mpilabDraw({json.dumps(fig.fig_id)}, {_script_json(spec)});</script>\n")


# ---------------------------------------------------------------- static (plotly export)

STATIC_INSTALL = "pip install 'mpilab[static]'"


STATIC_TIMEOUT_S = 120.0  # one figure's export, Chromium's start included
STATIC_WORKER = ("-m", "mpilab.report.static_worker")


def spec_image(spec: dict, fmt: str, width: int, height: int,
               timeout: float | None = None) -> bytes:
    """The figure spec (the one the page draws) as an svg or png image, through plotly's
    own export (kaleido, which drives a headless Chromium). The export runs in a process
    group of its own (report/static_worker.py), killed whole when it does not finish
    within timeout seconds. Without kaleido, when the export fails or overruns: one-line
    MpilabError (the interactive page needs neither)."""
    if fmt not in ("svg", "png"):
        raise ValueError(f"static figure format must be svg or png, not {fmt!r}")
    if importlib.util.find_spec("kaleido") is None:
        raise MpilabError("static figures need kaleido (" + STATIC_INSTALL + "); without "
                          "--static the report's figures are interactive")
    layout = dict(spec["layout"])
    layout["height"] = height
    layout["width"] = width
    job = json.dumps({"data": spec["data"], "layout": layout, "format": fmt, "width": width,
                      "height": height, "scale": STATIC_SCALE})
    timeout = STATIC_TIMEOUT_S if timeout is None else timeout
    proc = subprocess.Popen([sys.executable, *STATIC_WORKER],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(job.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker and the browser it started
        proc.communicate()
        raise MpilabError(f"static figure export (plotly/kaleido) did not finish within "
                          f"{timeout:g} s (its headless Chromium stopped)") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if proc.returncode != 0 or not out:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        line = " ".join(lines[-1].split()) if lines else f"exit {proc.returncode}"
        raise MpilabError(f"static figure export (plotly/kaleido) failed: {line}")
    return out


def figure_static(fig: Figure, path: Path, fmt: str = "svg") -> None:
    """Draw the figure (the same spec as the interactive page) into path, svg or png,
    STATIC_SIZE_PX at STATIC_SCALE, written atomically (temporary name, then rename)."""
    spec = figure_spec(fig)
    atomic_write_bytes(path, spec_image(spec, fmt, *STATIC_SIZE_PX))
