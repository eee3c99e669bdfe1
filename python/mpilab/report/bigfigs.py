"""Figures of aggregated data for large runs: a pair matrix as a heat map and parameter
distributions as box plots. Same page contract as report.iplot (a div of class mpilab-fig
drawn by mpilabDraw once the embedded plotly.js is loaded, data-rendered when drawn); with
--static, SVG exported by plotly (kaleido). Every number travels rounded to 4 significant
digits in the unit shown, so a 128 x 128 heat map is about 100 KB of page."""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass

import numpy as np

from mpilab.report.iplot import (
    FONT_PX,
    HEIGHT_PX,
    PALETTE,
    STATIC_SIZE_PX,
    _script_json,
    spec_image,
)
from mpilab.report.units import axis_scale, fmt_value


@dataclass
class Heatmap:
    fig_id: str
    title: str
    mat: np.ndarray          # values in SI units (NaN: no value)
    block: int               # each cell covers block x block ranks
    ranks: int
    unit: str = "s"
    # cells to point at: (row, column, label), e.g. the slowest pair a model names
    marks: tuple[tuple[int, int, str], ...] = ()


@dataclass
class Boxes:
    """One box per series, drawn from precomputed quartiles (scale.quartiles)."""
    fig_id: str
    title: str
    boxes: list[tuple[str, dict[str, float]]]
    unit: str = "s"
    ylabel: str = ""


def _r4(v: float) -> float | None:
    return None if not math.isfinite(v) else float(f"{v:.4g}")


def _edges(hm: Heatmap) -> list[str]:
    n = hm.mat.shape[0]
    if hm.block == 1:
        return [str(k) for k in range(n)]
    return [f"{k * hm.block}-{min((k + 1) * hm.block, hm.ranks) - 1}" for k in range(n)]


def heatmap_spec(hm: Heatmap) -> dict:
    fin = hm.mat[np.isfinite(hm.mat)]
    scale, name = axis_scale([float(np.median(fin))] if fin.size else [1.0], hm.unit)
    z = [[_r4(v / scale) for v in row] for row in hm.mat]
    labels = _edges(hm)
    what = "ranks" if hm.block > 1 else "rank"
    cell = (f"each cell: the slowest pair of a block of {hm.block} x {hm.block} ranks"
            if hm.block > 1 else "each cell: one pair")
    data = [{"type": "heatmap", "z": z, "x": labels, "y": labels,
             "colorscale": "Viridis", "reversescale": False, "hoverongaps": False,
             "colorbar": {"title": {"text": html.escape(name)}},
             "hovertemplate": f"{what} %{{y}} <-> %{{x}}<br>%{{z}} {html.escape(name)}"
                              "<extra></extra>"}]
    layout = {"title": {"text": html.escape(hm.title), "x": 0.01, "xanchor": "left"},
              "height": max(HEIGHT_PX, 640), "font": {"size": FONT_PX},
              "margin": {"l": 90, "r": 20, "t": 60, "b": 90},
              "xaxis": {"title": {"text": f"{what} j"}, "type": "category", "nticks": 16},
              "yaxis": {"title": {"text": f"{what} i"}, "type": "category", "nticks": 16,
                        "autorange": "reversed", "scaleanchor": "x"},
              "annotations": [{"text": html.escape(cell), "xref": "paper", "yref": "paper",
                               "x": 0, "y": -0.14, "xanchor": "left", "showarrow": False,
                               "font": {"size": FONT_PX - 2}}]
              + [{"text": html.escape(t), "x": labels[c], "y": labels[r], "xref": "x",
                  "yref": "y", "showarrow": True, "arrowhead": 2, "ax": 30, "ay": -30,
                  "bgcolor": "white", "bordercolor": "black", "font": {"size": FONT_PX - 2}}
                 for r, c, t in hm.marks if 0 <= r < len(labels) and 0 <= c < len(labels)]}
    return {"data": data, "layout": layout, "config": _config(hm.fig_id)}


def boxes_spec(bx: Boxes) -> dict:
    vals = [q["median"] for _, q in bx.boxes if q["median"] > 0]
    scale, name = axis_scale(vals or [1.0], bx.unit)
    data = []
    for k, (label, q) in enumerate(bx.boxes):
        c = PALETTE[k % len(PALETTE)]
        hover = (f"<b>{html.escape(label)}</b> ({int(q['n'])} pairs)<br>"
                 + "<br>".join(f"{n}: {fmt_value(q[key], bx.unit)}" for n, key in (
                     ("max", "max"), ("95th percentile", "p95"), ("upper quartile", "q3"),
                     ("median", "median"), ("lower quartile", "q1"),
                     ("5th percentile", "p5"), ("min", "min"))))
        data.append({"type": "box", "name": html.escape(label), "x": [html.escape(label)],
                     "q1": [_r4(q["q1"] / scale)], "median": [_r4(q["median"] / scale)],
                     "q3": [_r4(q["q3"] / scale)], "lowerfence": [_r4(q["p5"] / scale)],
                     "upperfence": [_r4(q["p95"] / scale)], "marker": {"color": c},
                     "line": {"color": c}, "hoverinfo": "text", "text": [hover],
                     "hovertemplate": "%{text}<extra></extra>"})
        # the extremes as points: where the whiskers (5th..95th percentile) stop
        data.append({"type": "scatter", "mode": "markers", "x": [html.escape(label)] * 2,
                     "y": [_r4(q["min"] / scale), _r4(q["max"] / scale)], "showlegend": False,
                     "marker": {"color": c, "symbol": "diamond", "size": 7},
                     "hovertemplate": f"{html.escape(label)} extreme: %{{y}} {name}"
                                      "<extra></extra>"})
    layout = {"title": {"text": html.escape(bx.title), "x": 0.01, "xanchor": "left"},
              "height": HEIGHT_PX, "font": {"size": FONT_PX}, "showlegend": False,
              "margin": {"l": 80, "r": 20, "t": 60, "b": 95},
              "yaxis": _box_axis(bx, name),
              "annotations": [{"text": "box: quartiles and median; whiskers: 5th to 95th "
                               "percentile; diamonds: minimum and maximum",
                               "xref": "paper", "yref": "paper", "x": 0, "y": -0.16,
                               "xanchor": "left", "showarrow": False,
                               "font": {"size": FONT_PX - 2}}]}
    return {"data": data, "layout": layout, "config": _config(bx.fig_id)}


def _box_axis(bx: Boxes, name: str) -> dict:
    """Log scale (one tick per decade) only when the values span two decades or more."""
    lo = min((q["min"] for _, q in bx.boxes if q["min"] > 0), default=1.0)
    hi = max((q["max"] for _, q in bx.boxes), default=1.0)
    ax: dict = {"title": {"text": html.escape(f"{bx.ylabel} ({name})" if name else bx.ylabel)},
                "exponentformat": "none"}
    if hi / lo >= 100:
        ax.update(type="log", dtick=1)
    else:
        ax.update(type="linear", rangemode="tozero")
    return ax


def _config(fid: str) -> dict:
    return {"displaylogo": False, "responsive": True, "scrollZoom": False,
            "modeBarButtonsToRemove": ["select2d", "lasso2d"],
            "toImageButtonOptions": {"format": "svg", "filename": fid}}


def spec_html(fid: str, title: str, spec: dict, height: int) -> str:
    f = html.escape(fid, quote=True)
    return (f'<div class="mpilab-fig" id="{f}" data-figure="{html.escape(title, quote=True)}"'
            f' style="width:100%;min-height:{height}px"></div>\n'
            f"<script>mpilabDraw({json.dumps(fid)}, {_script_json(spec)});</script>\n")


def figure_html(fig: Heatmap | Boxes) -> str:
    if isinstance(fig, Heatmap):
        return spec_html(fig.fig_id, fig.title, heatmap_spec(fig), max(HEIGHT_PX, 640))
    return spec_html(fig.fig_id, fig.title, boxes_spec(fig), HEIGHT_PX)


def static_html(fig: Heatmap | Boxes) -> str:
    """The figure as inline SVG (plotly's export of the same spec), for --static pages."""
    if isinstance(fig, Heatmap):
        svg = spec_image(heatmap_spec(fig), "svg", 900, 700).decode("utf-8")
    else:
        svg = spec_image(boxes_spec(fig), "svg", *STATIC_SIZE_PX).decode("utf-8")
    svg = svg[svg.index("<svg"):] if "<svg" in svg else svg
    return (f'<div class="mpilab-fig mpilab-static" id="{html.escape(fig.fig_id)}" '
            f'data-figure="{html.escape(fig.title)}">{svg}</div>')
