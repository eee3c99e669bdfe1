"""`mpilab history report`: one HTML page, a trend plot per measurement (plotly, the library
embedded once), each run's figure with its launch-level interval and the change points
(mpilab.history.detect.segments) marked. Written by temporary name and rename."""

from __future__ import annotations

import html
import sqlite3

import plotly.graph_objects as go
import plotly.io as pio

from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.history import detect
from mpilab.history.db import observations, series

MAX_PLOTS = 500


def _figure(name: str, dates: list[str], figs: list[float], los: list[float | None],
            his: list[float | None], cps: list[detect.Split]) -> go.Figure:
    us = [f * 1e6 for f in figs]
    up = [None if h is None else (h - f) * 1e6 for h, f in zip(his, figs, strict=True)]
    down = [None if lo is None else (f - lo) * 1e6 for lo, f in zip(los, figs, strict=True)]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=dates, y=us, mode="lines+markers", name="figure",
                             error_y={"type": "data", "array": up, "arrayminus": down,
                                      "visible": any(u is not None for u in up)}))
    for cp in cps:
        fig.add_vline(x=dates[cp.at], line_dash="dash", line_color="crimson")
        fig.add_annotation(x=dates[cp.at], y=max(us), text=f"{(cp.ratio - 1) * 100:+.1f}%",
                           showarrow=False, yanchor="bottom", font={"color": "crimson"})
    fig.update_layout(title=name, xaxis_title="run date", yaxis_title="time (us)",
                      height=360, margin={"l": 60, "r": 20, "t": 50, "b": 50},
                      showlegend=False)
    return fig


def write_report(c: sqlite3.Connection, out: str, pattern: str | None = None,
                 last: int | None = None) -> int:
    """Write the page; returns the number of plots."""
    ss = series(c, pattern)[:MAX_PLOTS]
    if pattern is not None and not ss:
        raise MpilabError(f"--measurement {pattern!r}: no measurement matches (mpilab history "
                          "show RUN names them; a glob such as 'p2p:*/1024 *')")
    parts: list[str] = []
    first = True
    rows: list[str] = []
    for s in ss:
        obs = observations(c, s.id, last)
        if not obs:
            continue
        figs = [o.figure for o in obs]
        cps = detect.segments(figs, [o.lo for o in obs], [o.hi for o in obs])
        fig = _figure(f"#{s.id} {s.name}", [o.date for o in obs], figs,
                      [o.lo for o in obs], [o.hi for o in obs], cps)
        parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=first,
                                 div_id=f"series-{s.id}"))
        first = False
        where = ", ".join(f"run {obs[cp.at].run_id} ({(cp.ratio - 1) * 100:+.1f}%)"
                          for cp in cps) or "none"
        rows.append(f"<tr><td>#{s.id}</td><td>{html.escape(s.name)}</td><td>{len(obs)}</td>"
                    f"<td>{html.escape(where)}</td></tr>")
    page = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            "<title>mpilab history</title></head><body>\n<h1>mpilab history</h1>\n"
            f"<p>{len(parts)} measurement(s); change points: binary segmentation, t test on "
            "log run figures (docs/history.md).</p>\n<table border=\"1\"><tr><th>series</th>"
            "<th>measurement</th><th>runs</th><th>change points</th></tr>\n"
            + "\n".join(rows) + "</table>\n" + "\n".join(parts) + "\n</body></html>\n")
    atomic_write_text(out, page)
    return len(parts)
