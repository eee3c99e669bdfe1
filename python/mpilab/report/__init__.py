"""The HTML report of a results file: interactive plotly figures (SVG
exported by plotly with --static) and tables.

`build_report(results, out_html)` writes one self-contained HTML file atomically.
"""

from mpilab.report.html import build_report, render_report

__all__ = ["build_report", "render_report"]
