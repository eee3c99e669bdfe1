"""Figures of the report. Each function returns a matplotlib Figure (no pyplot state);
`to_img` turns it into an embedded <img> tag."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Sequence

from matplotlib.figure import Figure

from mpilab.results_model import HockneyPair, LogGPPair, Measurement, Prediction

MAX_CURVES = 12  # per axes; more are dropped with a note in the title
DPI = 80


def to_img(fig: Figure, alt: str) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    from html import escape
    return f'<img class="plot" alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _finite(x: float) -> bool:
    return x is not None and math.isfinite(x)


def _size_axis(ax: object, xs: Sequence[float]) -> None:
    if any(x <= 0 for x in xs):
        ax.set_xscale("symlog", linthresh=1)  # type: ignore[attr-defined]
    else:
        ax.set_xscale("log")  # type: ignore[attr-defined]


def _time_axis(ax: object, ys: Sequence[float]) -> None:
    if ys and all(y > 0 for y in ys):
        ax.set_yscale("log")  # type: ignore[attr-defined]


Curve = tuple[str, list[Measurement]]


def _sorted(ms: list[Measurement]) -> list[Measurement]:
    return sorted(ms, key=lambda m: m.bytes)


def curves_plot(title: str, curves: list[Curve], ylabel: str,
                yfun: Callable[[Measurement], float | None],
                errfun: Callable[[Measurement], float | None] | None,
                ax: object | None = None, fig: Figure | None = None,
                colors: dict[str, str] | None = None) -> Figure:
    """One curve per (label, measurements) of y(m) against message size, log-log."""
    if fig is None:
        fig = Figure(figsize=(6.4, 4.0))
    if ax is None:
        ax = fig.subplots()
    dropped = max(0, len(curves) - MAX_CURVES)
    if min(len(curves), MAX_CURVES) > 10:
        import matplotlib

        ax.set_prop_cycle(color=matplotlib.colormaps["tab20"].colors)  # type: ignore
    xs_all: list[float] = []
    ys_all: list[float] = []
    for label, ms in curves[:MAX_CURVES]:
        pts = []
        for m in _sorted(ms):
            y = yfun(m)
            if y is None or not _finite(y) or y <= 0:
                continue
            e = errfun(m) if errfun else None
            pts.append((float(m.bytes), y, e if e is not None and _finite(e) else 0.0))
        if not pts:
            continue
        xs, ys, es = zip(*pts, strict=True)
        xs_all += xs
        ys_all += ys
        kw = {"color": colors[label]} if colors and label in colors else {}
        if errfun:
            ax.errorbar(xs, ys, yerr=es, marker="o", ms=3, capsize=2, lw=1,  # type: ignore
                        label=label, **kw)
        else:
            ax.plot(xs, ys, marker="o", ms=3, lw=1, label=label, **kw)  # type: ignore
    if xs_all:
        _size_axis(ax, xs_all)
        _time_axis(ax, ys_all)
    ax.set_xlabel("message size (bytes)")  # type: ignore[attr-defined]
    ax.set_ylabel(ylabel)  # type: ignore[attr-defined]
    ax.set_title(title + (f" ({dropped} more curves not shown)" if dropped else ""),  # type: ignore
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)  # type: ignore[attr-defined]
    if xs_all:
        ax.legend(fontsize=7)  # type: ignore[attr-defined]
    return fig


def grid_plot(title: str, panels: list[tuple[str, list[Curve]]], ylabel: str,
              yfun: Callable[[Measurement], float | None],
              errfun: Callable[[Measurement], float | None] | None) -> Figure:
    """Several curves_plot panels side by side (at most 3 per row)."""
    n = len(panels)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig = Figure(figsize=(4.6 * cols, 3.6 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    # the same label has the same colour in every panel
    labels = sorted({label for _, curves in panels for label, _ in curves})
    colors = {label: f"C{k % 10}" for k, label in enumerate(labels)}
    for k, (ptitle, curves) in enumerate(panels):
        curves_plot(ptitle, curves, ylabel, yfun, errfun, ax=axes[k // cols][k % cols], fig=fig,
                    colors=colors)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def heatmap(title: str, nranks: int, cells: dict[tuple[int, int], float],
            unit: str) -> Figure:
    """ranks x ranks matrix; cells[(i, j)] is drawn at both (i, j) and (j, i)."""
    import numpy as np

    mat = np.full((nranks, nranks), np.nan)
    for (i, j), v in cells.items():
        if i < nranks and j < nranks:
            mat[i, j] = v
            mat[j, i] = v
    size = min(7.0, 2.5 + 0.35 * nranks)
    fig = Figure(figsize=(size + 1.0, size))
    ax = fig.subplots()
    im = ax.imshow(mat, cmap="viridis", origin="upper")
    fig.colorbar(im, ax=ax, label=unit)
    ax.set_xlabel("rank j")
    ax.set_ylabel("rank i")
    if nranks <= 16:
        ax.set_xticks(range(nranks))
        ax.set_yticks(range(nranks))
    if nranks <= 8:
        finite = mat[np.isfinite(mat)]
        mid = float(np.nanmean(finite)) if finite.size else 0.0
        for i in range(nranks):
            for j in range(nranks):
                if np.isfinite(mat[i, j]):
                    ax.text(j, i, f"{mat[i, j]:.3g}", ha="center", va="center", fontsize=7,
                            color="white" if mat[i, j] < mid else "black")
    ax.set_title(title, fontsize=9)
    return fig


def hockney_plot(pairs: list[HockneyPair], points: dict[tuple[int, int], list[tuple[int, float]]]
                 ) -> Figure:
    """Measured one-way times (dots) and the fitted alpha + beta*m (lines), per pair."""
    import numpy as np

    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.subplots()
    shown = pairs[:MAX_CURVES // 2]
    xs_all: list[float] = []
    ys_all: list[float] = []
    for k, p in enumerate(shown):
        color = f"C{k % 10}"
        pts = sorted(points.get((p.i, p.j), []))
        pts = [(x, y) for x, y in pts if _finite(y) and y > 0]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, "o", ms=3, color=color, label=f"{p.i}-{p.j} measured")
            xs_all += xs
            ys_all += ys
            lo, hi = max(1.0, min(xs)), max(max(xs), 2.0)
        else:
            lo, hi = 1.0, 1 << 20
        grid = list(np.geomspace(lo, hi, 64))
        if pts and pts[0][0] <= 0:
            grid = [0.0] + grid
        fit = [p.predict(float(x)) for x in grid]
        ax.plot(grid, fit, "-", lw=1, color=color, label=f"{p.i}-{p.j} fit")
        xs_all += [float(lo), float(hi)]
        ys_all += [f for f in fit if f > 0]
    if xs_all:
        _size_axis(ax, xs_all)
        _time_axis(ax, ys_all)
    extra = len(pairs) - len(shown)
    ax.set_title("Hockney fit: one-way time = alpha + beta*m"
                 + (f" ({extra} more pairs in the table)" if extra > 0 else ""), fontsize=9)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("one-way time (s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return fig


def prediction_plot(op: str, preds: list[Prediction]) -> Figure:
    """Predicted (dashed) and measured (solid) time against size, one colour per impl."""
    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.subplots()
    impls = sorted({p.impl for p in preds})
    xs_all: list[float] = []
    ys_all: list[float] = []
    markers = "osD^v<>p*h"
    for k, impl in enumerate(impls):
        color = f"C{k % 10}"
        ps = sorted((p for p in preds if p.impl == impl), key=lambda p: p.bytes)
        # the prediction does not depend on the timing method of the measured value
        pr = sorted({(float(p.bytes), p.predicted) for p in ps if _finite(p.predicted)
                     and p.predicted > 0})
        if pr:
            xs, ys = zip(*pr, strict=True)
            ax.plot(xs, ys, "--", lw=2, color=color, label=f"{impl} predicted")
            xs_all += xs
            ys_all += ys
        timings = sorted({p.timing or "" for p in ps})
        for t, timing in enumerate(timings):
            me = [(float(p.bytes), p.measured) for p in ps if (p.timing or "") == timing
                  and p.measured is not None and _finite(p.measured) and p.measured > 0]
            if not me:
                continue
            xs, ys = zip(*me, strict=True)
            lab = f"{impl} measured" + (f" ({timing})" if timing else "")
            ax.plot(xs, ys, "-", marker=markers[t % len(markers)], ms=3, lw=0.8, color=color,
                    alpha=0.8, label=lab)
            xs_all += xs
            ys_all += ys
    if xs_all:
        _size_axis(ax, xs_all)
        _time_axis(ax, ys_all)
        ax.legend(fontsize=7)
    ax.set_title(f"{op}: predicted (Hockney) vs measured", fontsize=9)
    ax.set_xlabel("per-rank block (bytes)")
    ax.set_ylabel("time (s)")
    ax.grid(True, which="both", alpha=0.3)
    return fig


def loggp_plot(pairs: list[LogGPPair]) -> Figure:
    """Measured o_s(m), o_r(m), g(m) (dots) and the fitted per-range lines, first pairs."""
    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.subplots()
    shown = [p for p in pairs if p.per_size][:MAX_CURVES // 3]
    xs_all: list[float] = []
    ys_all: list[float] = []
    for k, p in enumerate(shown):
        for q, (name, attr, marker) in enumerate((("o_s", "os", "o"), ("o_r", "orr", "s"),
                                                  ("g", "g", "^"))):
            color = f"C{(3 * k + q) % 10}"
            pts = [(float(pt.bytes), float(getattr(pt, attr))) for pt in p.per_size]
            pts = [(x, y) for x, y in pts if _finite(y) and y > 0]
            if not pts:
                continue
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, marker, ms=3, color=color, label=f"{p.i}->{p.j} {name}")
            fit = []
            for x in xs:
                par = p.params_for(x)
                if par is None:
                    fit.append(math.nan)
                    continue
                fit.append({"os": par.os + par.os_per_byte * x,
                            "orr": par.orr + par.or_per_byte * x,
                            "g": par.g + par.G * x}[attr])
            ax.plot(xs, fit, "-", lw=1, color=color)
            xs_all += xs
            ys_all += ys
    if xs_all:
        _size_axis(ax, xs_all)
        _time_axis(ax, ys_all)
    extra = len(pairs) - len(shown)
    ax.set_title("LogGP: measured overheads and gap (dots), fitted lines"
                 + (f" ({extra} more pairs in the table)" if extra > 0 else ""), fontsize=9)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("time (s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return fig
