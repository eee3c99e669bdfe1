"""report/iplot.py without a browser: the plotly spec it writes (markers, error bars, hover
text, axes, colours), the embedded runtime, and the static export through plotly. The drawn
result is checked in a real browser by test_report_browser.py."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import pytest
from mpilab.errors import MpilabError
from mpilab.report import iplot
from mpilab.report.iplot import Curve, Figure, Point


def _fig(**kw: object) -> Figure:
    good = Point(x=1024, y=3.5e-6, lo=3.4e-6, hi=3.7e-6, reps=100)
    flagged = Point(x=4096, y=9e-6, lo=5e-6, hi=2e-5, reps=3, flags=["not_converged"])
    negative = Point(x=16384, y=-2e-6, lo=-3e-6, hi=1e-6, reps=9, flags=["negative"])
    none = Point(x=65536, y=None)
    curves = [Curve("native", [flagged, good, negative, none]),
              Curve("native predicted", [Point(x=1024, y=3e-6), Point(x=4096, y=6e-6)],
                    kind="model"),
              Curve("linear", [Point(x=1024, y=4e-6, reps=5)])]
    args: dict = {"fig_id": "f", "title": "bcast <time>", "curves": curves,
                  "xlabel": "message size", "ylabel": "time", "x_unit": "B", "y_unit": "s"}
    args.update(kw)
    return Figure(**args)


def test_measured_trace_markers_error_bars_and_hover() -> None:
    spec = iplot.figure_spec(_fig())
    native = spec["data"][0]
    assert native["x"] == [1024, 4096, 16384]  # sorted; the point without a value is left out
    # y in the axis' display unit (us); the negative point sits at the axis floor, half the
    # figure's smallest positive value (the model's 3 us)
    assert native["y"][:2] == pytest.approx([3.5, 9.0])
    assert native["y"][2] == pytest.approx(1.5)
    assert native["marker"]["symbol"] == ["circle", "circle-open", "triangle-down-open"]
    assert native["error_y"]["array"][:2] == pytest.approx([0.2, 11.0])
    assert native["error_y"]["arrayminus"][:2] == pytest.approx([0.1, 4.0])
    assert native["error_y"]["array"][2] is None  # no bar around a point drawn at the floor
    hover, flags = native["customdata"][1]
    assert flags == "not_converged"
    for part in ("native", "message size: 4 KiB", "value: 9.00 us", "repetitions: 3",
                 "flagged: not_converged"):
        assert part in hover, part
    assert "value: impossible (< 0)" in native["customdata"][2][0]  # never shown as a time
    assert native["customdata"][0][1] == ""
    notes = spec["layout"]["annotations"][0]["text"]
    assert "hollow markers" in notes and "negative" in notes
    assert spec["layout"]["title"]["text"] == "bcast &lt;time&gt;"
    assert spec["layout"]["yaxis"]["title"]["text"] == "time (us)"


def test_model_curve_is_a_dashed_line_in_its_measurements_colour() -> None:
    spec = iplot.figure_spec(_fig())
    native, model, linear = spec["data"]
    assert model["mode"] == "lines" and "marker" not in model and "error_y" not in model
    assert model["line"]["dash"] == "dash"
    assert model["line"]["color"] == native["line"]["color"] != linear["line"]["color"]
    assert "model prediction" in model["customdata"][0][0]


def test_eight_curves_have_eight_distinct_hues() -> None:
    curves = [Curve(f"impl{k}", [Point(x=8, y=1e-6 * (k + 1))]) for k in range(8)]
    spec = iplot.figure_spec(_fig(curves=curves))
    colours = [t["line"]["color"] for t in spec["data"]]
    assert len(set(colours)) == 8


def test_axes_read_as_sizes_and_ranks() -> None:
    spec = iplot.figure_spec(_fig())
    x = spec["layout"]["xaxis"]
    assert x["type"] == "log"
    assert x["ticktext"] == ["1 KiB", "2 KiB", "4 KiB", "8 KiB", "16 KiB"]
    ranks = Figure("r", "t", [Curve("c", [Point(x=n, y=n * 1e-3) for n in (2, 3, 4, 8)])],
                   "ranks", "time", x_unit="ranks", y_unit="s", xlog=False, ylog=False)
    rs = iplot.figure_spec(ranks)
    assert rs["layout"]["xaxis"]["tickvals"] == [2, 3, 4, 8]
    assert rs["layout"]["xaxis"]["ticktext"] == ["2", "3", "4", "8"]
    assert rs["layout"]["yaxis"]["title"]["text"] == "time (ms)"


def test_empty_figure_says_so() -> None:
    spec = iplot.figure_spec(_fig(curves=[Curve("c", [Point(x=1, y=None)])]))
    assert spec["data"] == []
    assert any(a["text"] == "no values to plot" for a in spec["layout"]["annotations"])


def test_figure_html_is_safe_inside_a_script() -> None:
    fig = _fig(title="</script><b>x", fig_id="fig-1")
    text = iplot.figure_html(fig)
    assert text.count("</script>") == 1  # only the element's own end tag
    assert 'class="mpilab-fig" id="fig-1"' in text
    payload = re.search(r'mpilabDraw\("fig-1", (.*)\);</script>', text)
    assert payload is not None
    assert json.loads(payload.group(1))["layout"]["height"] == iplot.HEIGHT_PX


def test_runtime_embeds_plotly_once_compressed() -> None:
    from plotly.offline import get_plotlyjs

    rt = iplot.runtime_script()
    m = re.search(r'<script type="application/octet-stream" id="mpilab-plotlyjs">([^<]*)'
                  r"</script>", rt)
    assert m is not None
    raw = gzip.decompress(base64.b64decode(m.group(1)))
    assert raw == get_plotlyjs().encode()
    assert len(rt) < 0.5 * len(raw)
    assert rt == iplot.runtime_script()  # reproducible


def _has_kaleido() -> bool:
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _has_kaleido(), reason="kaleido (the static extra) not installed")
@pytest.mark.parametrize("fmt,magic", [("svg", b"<svg"), ("png", b"\x89PNG")])
def test_static_export(tmp_path: Path, fmt: str, magic: bytes) -> None:
    out = tmp_path / f"fig.{fmt}"
    iplot.figure_static(_fig(), out, fmt)
    data = out.read_bytes()
    assert magic in data[:200]
    if fmt == "png":
        import struct

        w, h = struct.unpack(">II", data[16:24])
        assert (w, h) == (1500, 900)  # 1000 x 600 at scale 1.5
    else:
        assert b"native predicted" in data and b"4 KiB" in data
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary left


def test_static_export_without_kaleido_is_one_line(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "kaleido", None)  # import kaleido raises ImportError
    with pytest.raises(MpilabError, match=r"static figures need kaleido \(pip install") as e:
        iplot.figure_static(_fig(), tmp_path / "f.svg", "svg")
    assert "\n" not in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_static_export_refuses_other_formats(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="svg or png"):
        iplot.figure_static(_fig(), tmp_path / "f.pdf", "pdf")
    assert list(tmp_path.iterdir()) == []


def _gone(pid: int) -> bool:
    """pid has exited (no such process, or a zombie waiting for its reaper)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_static_export_that_hangs_is_stopped_in_one_line(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """An export whose browser never answers is killed with its whole process group (the
    worker's own child included) and reported in one line; no image file is left."""
    import importlib.util
    import time

    pidfile = tmp_path / "child.pid"
    hang = ("import subprocess, sys, time; "
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
            f"open({str(pidfile)!r}, 'w').write(str(c.pid)); time.sleep(600)")
    monkeypatch.setattr(iplot, "STATIC_WORKER", ("-c", hang))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "kaleido" else real(name, *a))
    monkeypatch.setattr(iplot, "STATIC_TIMEOUT_S", 3.0)
    out = tmp_path / "f.svg"
    with pytest.raises(MpilabError, match="did not finish within 3 s") as e:
        iplot.figure_static(_fig(), out, "svg")
    assert "\n" not in str(e.value) and not out.exists()
    if pidfile.exists():  # the worker had started its child: it went with the group
        pid = int(pidfile.read_text())
        for _ in range(200):  # SIGKILL is delivered at once; the exit may take a moment
            if _gone(pid):
                break
            time.sleep(0.05)
        assert _gone(pid)
