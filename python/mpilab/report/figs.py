"""The reports' one door to figures (the contract with report/iplot.py, see
/work/notes/iplot-contract.md): Point, Curve, Figure, runtime_script, figure_html,
figure_static, and static_html for --static pages."""

from __future__ import annotations

import tempfile
from html import escape
from pathlib import Path

from mpilab.report.iplot import (
    Curve,
    Figure,
    Point,
    figure_html,
    figure_static,
    runtime_file_name,
    runtime_script,
    write_runtime_file,
)


def static_html(fig: Figure) -> str:
    """The figure as an inline SVG image (for --static: papers, no script)."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "fig.svg"
        figure_static(fig, p, "svg")
        svg = p.read_text()
    svg = svg[svg.index("<svg"):] if "<svg" in svg else svg
    return (f'<div class="mpilab-fig mpilab-static" id="{escape(fig.fig_id)}" '
            f'data-figure="{escape(fig.title)}">{svg}</div>')


__all__ = ["Curve", "Figure", "Point", "figure_html", "figure_static", "runtime_file_name",
           "runtime_script", "static_html", "write_runtime_file"]
