"""The reports' one door to figures (the contract with report/iplot.py, see
/work/notes/iplot-contract.md): Point, Curve, Figure, runtime_script, figure_html,
figure_static. When iplot is present its interactive plotly figures are used; otherwise a
small matplotlib stand-in draws the same Figure as inline SVG (no interactivity)."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path

from mpilab.report import units

try:  # the interactive implementation (engineer P's)
    from mpilab.report.iplot import (  # type: ignore[attr-defined]
        Curve,
        Figure,
        Point,
        figure_html,
        figure_static,
        runtime_script,
    )
    INTERACTIVE = True
except ImportError:  # pragma: no cover - exercised until iplot.py lands
    INTERACTIVE = False

    @dataclass
    class Point:  # type: ignore[no-redef]
        x: float
        y: float | None
        lo: float | None = None
        hi: float | None = None
        reps: int | None = None
        flags: list[str] = field(default_factory=list)

    @dataclass
    class Curve:  # type: ignore[no-redef]
        label: str
        points: list[Point]
        kind: str = "measured"

    @dataclass
    class Figure:  # type: ignore[no-redef]
        fig_id: str
        title: str
        curves: list[Curve]
        xlabel: str
        ylabel: str
        x_unit: str
        y_unit: str
        xlog: bool = True
        ylog: bool = True

    def _draw(fig: Figure):  # type: ignore[no-untyped-def]
        from matplotlib.figure import Figure as MplFigure
        from matplotlib.ticker import MaxNLocator

        mf = MplFigure(figsize=(7.5, 4.2))
        ax = mf.subplots()
        ys = [p.y for c in fig.curves for p in c.points if p.y is not None]
        yscale, yname = units.axis_scale(ys, fig.y_unit)
        for c in fig.curves:
            pts = sorted((p for p in c.points if p.y is not None and math.isfinite(p.y)),
                         key=lambda p: p.x)
            if not pts:
                continue
            xs = [p.x for p in pts]
            yv = [p.y / yscale for p in pts]  # type: ignore[operator]
            if c.kind == "model":
                ax.plot(xs, yv, "--", label=c.label)
                continue
            line, = ax.plot(xs, yv, "-", label=c.label)
            lo = [(p.y - p.lo) / yscale if p.lo is not None else 0.0 for p in pts]  # type: ignore
            hi = [(p.hi - p.y) / yscale if p.hi is not None else 0.0 for p in pts]  # type: ignore
            ax.errorbar(xs, yv, yerr=[[max(v, 0) for v in lo], [max(v, 0) for v in hi]],
                        fmt="none", ecolor=line.get_color(), capsize=2)
            for p, x, y in zip(pts, xs, yv, strict=True):
                ax.plot([x], [y], "o", ms=4, color=line.get_color(),
                        mfc="none" if p.flags else line.get_color())
        xs_all = [p.x for c in fig.curves for p in c.points]
        if fig.xlog and xs_all:
            if min(xs_all) <= 0:
                ax.set_xscale("symlog", linthresh=1)
            else:
                ax.set_xscale("log")
        if fig.ylog and ys and min(ys) > 0:
            ax.set_yscale("log")
        if fig.x_unit == "ranks":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(fig.title)
        ax.set_xlabel(fig.xlabel)
        ax.set_ylabel(f"{fig.ylabel} ({yname})" if yname else fig.ylabel)
        ax.grid(True, which="both", alpha=0.3)
        if fig.curves:
            ax.legend(fontsize=8)
        return mf

    def runtime_script() -> str:  # type: ignore[no-redef]
        return ""

    def figure_html(fig: Figure) -> str:  # type: ignore[no-redef]
        from html import escape

        buf = io.StringIO()
        _draw(fig).savefig(buf, format="svg", bbox_inches="tight")
        svg = buf.getvalue()
        svg = svg[svg.index("<svg"):]
        return (f'<div class="mpilab-fig" id="{escape(fig.fig_id)}" '
                f'data-figure="{escape(fig.title)}">{svg}</div>')

    def figure_static(fig: Figure, path: Path, fmt: str = "svg") -> None:  # type: ignore
        _draw(fig).savefig(path, format=fmt, bbox_inches="tight", dpi=150)


def static_html(fig: Figure) -> str:
    """The figure as an embedded image (SVG inline, for --static: papers, no script)."""
    import tempfile
    from html import escape

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "fig.svg"
        figure_static(fig, p, "svg")
        svg = p.read_text()
    svg = svg[svg.index("<svg"):] if "<svg" in svg else svg
    return (f'<div class="mpilab-fig mpilab-static" id="{escape(fig.fig_id)}" '
            f'data-figure="{escape(fig.title)}">{svg}</div>')


__all__ = ["Curve", "Figure", "INTERACTIVE", "Point", "figure_html", "figure_static",
           "runtime_script", "static_html"]
