"""The HTML reports in a real browser: headless Chromium (Debian's chromium and
chromium-driver, driven by selenium) opens each report kind at 1400 px, as a reader would.

For every report: no console errors, every figure drawn, the figures answer a hover with the
value of the results file, flagged measurements are marked (hollow markers), and a
screenshot is saved: into $MPILAB_TEST_ARTIFACTS when set (CI keeps that directory), else
into the test's tmp_path (pytest prints neither; look under /tmp/pytest-of-$USER/).

Nothing waits for a fixed time: every step waits for a condition (WebDriverWait) with a
generous bound that only stops a hung browser, and nothing asserts how fast it went (render
time is bench/report_render.py's business).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env
from mpilab.report import iplot, units
from mpilab.report.iplot import Curve, Figure, Point

DATA = Path(__file__).resolve().parent.parent / "data" / "reports"
WIDTH, HEIGHT = 1400, 1000
BOUND_S = 300  # a hung browser fails after this; a slow one (busy CI) just takes longer


def _chromium() -> tuple[str | None, str | None]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or (
        "/usr/bin/chromedriver" if os.access("/usr/bin/chromedriver", os.X_OK) else None)
    return browser, driver


def _skip_reason() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (scripts/install-deps installs it)"
    browser, driver = _chromium()
    if browser is None or driver is None:
        return "chromium or chromium-driver is missing (scripts/install-deps installs them)"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


class Page:
    """One headless Chromium window and the few things the tests ask of a report in it."""

    def __init__(self) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        browser, driver = _chromium()
        opts = webdriver.ChromeOptions()
        opts.binary_location = str(browser)
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars",
                  "--disable-background-networking", "--no-first-run"):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.d = webdriver.Chrome(service=Service(str(driver)), options=opts)
        self.d.set_page_load_timeout(BOUND_S)
        self.d.set_script_timeout(BOUND_S)

    def close(self) -> None:
        self.d.quit()

    def wait(self, script: str, what: str) -> Any:
        """Wait until the JS expression is truthy; its value."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        try:
            return WebDriverWait(self.d, BOUND_S, poll_frequency=0.1).until(
                lambda d: d.execute_script(f"return ({script});"))
        except TimeoutException:
            raise AssertionError(f"browser: {what} (not within {BOUND_S} s)") from None

    def js(self, script: str, *args: Any) -> Any:
        return self.d.execute_script(script, *args)

    def open(self, path: Path) -> list[dict[str, Any]]:
        """Load the page and wait until every figure is drawn (or failed); the console
        messages of the load (errors fail the caller's assertion)."""
        self.d.get_log("browser")  # drop whatever an earlier page left
        self.d.get(path.resolve().as_uri())
        self.wait("document.readyState === 'complete'", "page loaded")
        self.wait("Array.from(document.querySelectorAll('.mpilab-fig:not(.mpilab-static)'))"
                  ".every(e => e.hasAttribute('data-rendered'))", "every figure drawn")
        return list(self.d.get_log("browser"))

    def figures(self) -> list[dict[str, Any]]:
        return self.js("""return Array.from(document.querySelectorAll('.mpilab-fig')).map(e =>
            ({id: e.id, title: e.getAttribute('data-figure'),
              rendered: e.getAttribute('data-rendered'),
              traces: (e.data || []).map(t => ({name: t.name, mode: t.mode, x: t.x,
                  symbols: (t.marker && Array.isArray(t.marker.symbol)) ? t.marker.symbol : [],
                  custom: t.customdata || []}))}));""")

    def hover(self, fig_id: str, curve: int, point: int) -> str:
        """Hover a point the way plotly does for a mouse over it; the hover label's text.
        An earlier label is cleared first (plotly throttles hovers, so an old label could
        otherwise be read as the new one)."""
        label = f"document.querySelector('#{fig_id} .hoverlayer .hovertext')"
        self.js("const gd = document.getElementById(arguments[0]);"
                "gd.scrollIntoView(); Plotly.Fx.unhover(gd);", fig_id)
        self.wait(f"{label} === null", f"no hover label left on {fig_id}")
        self.js("Plotly.Fx.hover(document.getElementById(arguments[0]),"
                " [{curveNumber: arguments[1], pointNumber: arguments[2]}]);",
                fig_id, curve, point)
        return str(self.wait(f"(() => {{ const t = {label}; return t ? t.textContent : null; }})()",
                             f"hover label on {fig_id}"))

    def click(self, css: str) -> None:
        """A real mouse click (move, press, release) on the first element matching css."""
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By

        el = self.d.find_element(By.CSS_SELECTOR, css)
        self.js("arguments[0].scrollIntoView({block: 'center'});", el)
        ActionChains(self.d).move_to_element(el).click().perform()

    def hollow_markers(self, fig_id: str) -> int:
        """Markers drawn hollow in the SVG (what the reader sees, not the spec)."""
        return int(self.js("""return Array.from(document.querySelectorAll(
            '#' + arguments[0] + ' .scatterlayer .points path.point'))
            .filter(p => { const s = getComputedStyle(p);
                           return s.fillOpacity === '0' || s.fill === 'none' ||
                                  s.fill === 'rgba(0, 0, 0, 0)'; }).length;""", fig_id))

    def screenshot(self, name: str, tmp_path: Path) -> Path:
        out = Path(os.environ.get("MPILAB_TEST_ARTIFACTS") or tmp_path)
        out.mkdir(parents=True, exist_ok=True)
        self.js("window.scrollTo(0, 0);")
        shot = out / f"{name}.png"
        assert self.d.save_screenshot(str(shot)), f"screenshot {shot} not written"
        return shot


@pytest.fixture(scope="module")
def page() -> Iterator[Page]:
    p = Page()
    try:
        yield p
    finally:
        p.close()


def _errors(log: list[dict[str, Any]]) -> list[str]:
    return [str(e.get("message")) for e in log if e.get("level") == "SEVERE"]


def _load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


# ---------------------------------------------------------------- iplot on its own page

def _p2p_figure(doc: dict[str, Any], fig_id: str) -> Figure:
    """The point-to-point round trip per pair, straight from the results document."""
    curves: dict[str, list[Point]] = {}
    for m in doc["measurements"]:
        if m["op"] != "p2p":
            continue
        st = m["stats"]
        curves.setdefault(f"pair {m['pair'][0]}-{m['pair'][1]}", []).append(
            Point(x=m["bytes"], y=st["median"], lo=st.get("med_lo"), hi=st.get("med_hi"),
                  reps=st["reps"], flags=list(m.get("flags", []))))
    return Figure(fig_id, "p2p round trip per pair",
                  [Curve(k, v) for k, v in sorted(curves.items())],
                  "message size", "round trip", x_unit="B", y_unit="s")


def test_iplot_figures_in_the_browser(page: Page, tmp_path: Path) -> None:
    doc = _load("survey-b.json")
    fig = _p2p_figure(doc, "fig-p2p")
    fig.curves.append(Curve("model", [Point(x=p.x, y=5e-6 + p.x * 1e-9)
                                      for p in fig.curves[0].points if p.x > 0], kind="model"))
    ranks = Figure("fig-ranks", "time against ranks",
                   [Curve("bcast", [Point(x=n, y=n * 1e-5, lo=n * 9e-6, hi=n * 1.1e-5, reps=9)
                                    for n in (2, 3, 4, 8)])],
                   "ranks", "time", x_unit="ranks", xlog=False, ylog=False)
    html = ("<!doctype html><html><head><meta charset='utf-8'><title>iplot</title></head>"
            "<body style='max-width:1300px;margin:auto'>" + iplot.runtime_script()
            + iplot.figure_html(fig) + iplot.figure_html(ranks) + "</body></html>")
    assert html.count('id="mpilab-plotlyjs"') == 1
    path = tmp_path / "iplot.html"
    path.write_text(html)
    log = page.open(path)
    assert _errors(log) == []
    figs = {f["id"]: f for f in page.figures()}
    assert {k: f["rendered"] for k, f in figs.items()} == {"fig-p2p": "1", "fig-ranks": "1"}
    # a hover shows the file's value, interval, repetitions and flags of that point
    trace = figs["fig-p2p"]["traces"][0]
    pts = sorted((p for p in fig.curves[0].points if p.y is not None and p.y > 0),
                 key=lambda p: p.x)
    k = next(i for i, p in enumerate(pts) if p.flags) if any(p.flags for p in pts) else 0
    text = page.hover("fig-p2p", 0, k)
    assert trace["name"] in text
    assert f"value: {iplot.fmt_value(pts[k].y, 's')}" in text
    assert f"repetitions: {pts[k].reps}" in text
    for f in pts[k].flags:
        assert f in text
    # flagged points are hollow, the others filled: in the spec and in the drawn SVG
    n_flagged = sum(1 for c in fig.curves if c.kind == "measured" for p in c.points
                    if p.flags and p.y is not None and p.x > 0)
    assert n_flagged > 0, "the stored file has flagged measurements"
    symbols = [s for t in figs["fig-p2p"]["traces"] for s in t["symbols"]]
    assert sum(1 for s in symbols if s.endswith("-open")) == n_flagged
    assert page.hollow_markers("fig-p2p") == n_flagged
    # the model is a line without markers, the ranks axis reads 2, 3, 4, 8
    assert figs["fig-p2p"]["traces"][-1]["mode"] == "lines"
    ticks = page.js("return Array.from(document.querySelectorAll("
                    "'#fig-ranks .xaxislayer-above .xtick text')).map(t => t.textContent);")
    assert ticks == ["2", "3", "4", "8"]
    # legend toggling: a real click on the first legend entry hides its curve
    page.click("#fig-p2p .legend .traces .legendtoggle")
    page.wait("document.getElementById('fig-p2p').data[0].visible === 'legendonly'",
              "legend click hides the first curve")
    page.screenshot("iplot", tmp_path)


# ---------------------------------------------------------------- the reports

def _cli(*args: str, cwd: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", *args], cwd=cwd, env=cli_env(),
                       capture_output=True, text=True, timeout=BOUND_S)
    assert p.returncode == 0, p.stderr


def _open_report(page: Page, path: Path, name: str, tmp_path: Path) -> dict[str, Any]:
    """Common checks of every report: no console errors, a summary at the top, every figure
    drawn, flagged points hollow (spec and drawing agree), flagged table cells marked."""
    log = page.open(path)
    page.screenshot(name, tmp_path)
    assert _errors(log) == []
    assert page.js("const s = document.getElementById('summary');"
                   "return s !== null && s.getBoundingClientRect().top < 1500;")
    figs = {f["id"]: f for f in page.figures()}
    assert figs and all(f["rendered"] == "1" for f in figs.values())
    # the plotting runtime once: the shared file beside the page, or embedded
    assert page.js("return document.querySelectorAll("
                   "'#mpilab-plotlyjs, script[src^=\"mpilab-plotly-\"]').length;") == 1
    for fid, f in figs.items():
        n_open = 0
        for t in f["traces"]:
            if t["mode"] == "lines":  # a model curve: no markers
                assert t["symbols"] == [], (fid, t["name"])
                continue
            for sym, cd in zip(t["symbols"], t["custom"], strict=True):
                assert sym.endswith("-open") == (cd[1] != "" or sym.startswith("triangle")), \
                    (fid, t["name"], sym, cd)
                n_open += sym.endswith("-open")
        assert page.hollow_markers(fid) == n_open, fid
    return figs


def _flagged_cells(page: Page) -> list[str]:
    return list(page.js("return Array.from(document.querySelectorAll("
                        "'table.mpilab-table .flagged[title]')).map(e => e.title);"))


def _metrics(page: Page) -> dict[str, float]:
    pairs = page.js("return Array.from(document.querySelectorAll('#summary [data-metric]'))"
                    ".map(e => [e.getAttribute('data-metric'), e.getAttribute('data-value')]);")
    return {k: float(v) for k, v in pairs if v not in (None, "")}


def _p2p_oneway(doc: dict[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    """pair "i-j" -> size -> {"t": one-way time (half the median round trip), "reps",
    "flags"} of the file's symmetric point-to-point measurements."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for m in doc["measurements"]:
        if m["op"] == "p2p" and m.get("bytes_back") in (None, m["bytes"]):
            out.setdefault(f"{m['pair'][0]}-{m['pair'][1]}", {})[m["bytes"]] = {
                "t": m["stats"]["median"] / 2, "reps": m["stats"]["reps"],
                "flags": m.get("flags", [])}
    return out


def _check_headlines(metrics: dict[str, float], doc: dict[str, Any], prefix: str = "") -> None:
    """Per pair: the one-way latency at the smallest size and the bandwidth at the largest
    (bytes over the one-way time); the headline: their median over the pairs."""
    p2p = _p2p_oneway(doc)
    assert p2p, "the file has point-to-point measurements"
    lat, bw = [], []
    for pair, by_size in p2p.items():
        small, large = min(by_size), max(by_size)
        lat.append(by_size[small]["t"])
        bw.append(large / by_size[large]["t"])
        if not prefix:
            assert metrics[f"latency:{pair}"] == pytest.approx(lat[-1], rel=1e-9)
            assert metrics[f"bandwidth:{pair}"] == pytest.approx(bw[-1], rel=1e-9)
    assert metrics[f"{prefix}latency"] == pytest.approx(statistics.median(lat), rel=1e-9)
    assert metrics[f"{prefix}bandwidth"] == pytest.approx(statistics.median(bw), rel=1e-9)


def _hover_p2p(page: Page, figs: dict[str, Any], fig_id: str, trace_name: str,
               by_size: dict[int, dict[str, Any]]) -> str:
    """Hover the trace's flagged point if it has one (else its first); the label must give
    the file's one-way time, repetitions and flags at that size."""
    traces = figs[fig_id]["traces"]
    k = next(i for i, t in enumerate(traces) if t["name"] == trace_name)
    xs = [int(x) for x in traces[k]["x"]]
    j = next((i for i, x in enumerate(xs) if by_size[x]["flags"]), 0)
    want = by_size[xs[j]]
    text = page.hover(fig_id, k, j)
    assert f"value: {units.fmt_time(want['t'])}" in text, text
    assert f"repetitions: {want['reps']}" in text, text
    assert units.fmt_bytes(xs[j]) in text, text
    for f in want["flags"]:
        assert f in text, text
    return text


def test_survey_report(page: Page, tmp_path: Path) -> None:
    doc = _load("survey-a.json")
    out = tmp_path / "survey.html"
    _cli("report", str(DATA / "survey-a.json"), "-o", str(out), cwd=tmp_path)
    figs = _open_report(page, out, "report-survey", tmp_path)
    _check_headlines(_metrics(page), doc)
    assert page.js("return document.getElementById('partial-banner');") is None
    p2p = _p2p_oneway(doc)
    _hover_p2p(page, figs, "fig-p2p-parallel", "0-1", p2p["0-1"])
    flagged = sum(1 for m in doc["measurements"] if m.get("flags"))
    assert flagged > 0
    assert sum(s.endswith("-open") for f in figs.values() for t in f["traces"]
               for s in t["symbols"]) > 0
    assert any("not_converged" in t for t in _flagged_cells(page))


def test_two_run_comparison(page: Page, tmp_path: Path) -> None:
    a, b = _load("survey-a.json"), _load("survey-b.json")
    out = tmp_path / "two.html"
    _cli("report", str(DATA / "survey-a.json"), str(DATA / "survey-b.json"),
         "--label", "A", "--label", "B", "-o", str(out), cwd=tmp_path)
    figs = _open_report(page, out, "report-two-runs", tmp_path)
    metrics = _metrics(page)
    _check_headlines(metrics, a, "run:A:")
    _check_headlines(metrics, b, "run:B:")
    fig = next(k for k, f in figs.items() if f["title"] == "pair 0-1: one-way time")
    _hover_p2p(page, figs, fig, "B", _p2p_oneway(b)["0-1"])
    _hover_p2p(page, figs, fig, "A", _p2p_oneway(a)["0-1"])


def test_partial_report(page: Page, tmp_path: Path) -> None:
    doc = _load("partial.json")
    out = tmp_path / "partial.html"
    _cli("report", str(DATA / "partial.json"), "-o", str(out), cwd=tmp_path)
    figs = _open_report(page, out, "report-partial", tmp_path)
    banner = page.js("const b = document.getElementById('partial-banner');"
                     "return b && b.getBoundingClientRect().height > 0 ? b.textContent : null;")
    assert banner is not None and doc["partial_reason"] in banner
    _check_headlines(_metrics(page), doc)
    _hover_p2p(page, figs, "fig-p2p-parallel", "1-2", _p2p_oneway(doc)["1-2"])
    negative = [m for m in doc["measurements"] if "negative_time" in m.get("flags", [])]
    assert negative, "the stored partial file has negative times"
    assert any("negative" in t for t in _flagged_cells(page))


def test_compare_report(page: Page, tmp_path: Path) -> None:
    d = tmp_path / "cmp"
    d.mkdir()
    docs = {}
    for f in sorted((DATA / "compare").glob("*.json")):
        shutil.copy(f, d / f.name)
        docs[f.stem] = json.loads(f.read_text())
    _cli("compare", "--from", str(d), cwd=tmp_path)
    figs = _open_report(page, d / "report.html", "report-compare", tmp_path)
    # the summary's winner table lists every transport's small-message latency
    winners = page.js("return document.querySelector('#summary table#winners').textContent;")
    fig = next(k for k, f in figs.items() if f["title"].startswith("Ping-pong latency"))
    for name, doc in docs.items():
        pp = sorted((m for m in doc["measurements"]
                     if m["op"] == "pingpong" and m.get("ranks", 2) == 2), key=lambda m: m["bytes"])
        lat = pp[0]["derived"]["latency_s"]
        assert f"{name}: {units.fmt_time(lat)} at {units.fmt_bytes(pp[0]['bytes'])}" in winners
        traces = figs[fig]["traces"]
        k = next(i for i, t in enumerate(traces) if t["name"] == name)
        j = [int(x) for x in traces[k]["x"]].index(pp[0]["bytes"])
        text = page.hover(fig, k, j)
        assert f"value: {units.fmt_time(lat)}" in text, text
    assert sum(s.endswith("-open") for f in figs.values() for t in f["traces"]
               for s in t["symbols"]) > 0


def test_large_run_report(page: Page, tmp_path: Path) -> None:
    """40 ranks, every pair: the latency matrix is a heat map whose hover gives the slow
    pair's one-way time as the file has it, model parameters are box plots, every figure
    is drawn without console errors."""
    import importlib.util

    bench = str(Path(__file__).resolve().parents[2] / "bench")
    if bench not in sys.path:  # the script imports the bench harness
        sys.path.insert(0, bench)
    spec = importlib.util.spec_from_file_location(
        "report_scale_synth", Path(__file__).resolve().parents[2] / "bench"
        / "report_scale_synth.py")
    assert spec is not None and spec.loader is not None
    synth = importlib.util.module_from_spec(spec)
    sys.modules["report_scale_synth"] = synth
    spec.loader.exec_module(synth)
    res = tmp_path / "large.json"
    synth.write(res, 40, [0, 4096], 5, slow_node=3, slow_pair=(1, 30))
    out = tmp_path / "large.html"
    _cli("report", str(res), "-o", str(out), cwd=tmp_path)
    figs = _open_report(page, out, "report-large", tmp_path)
    assert "fig-matrix-parallel-0" in figs and "fig-hockney-alpha" in figs
    doc = json.loads(res.read_text())
    m = next(m for m in doc["measurements"] if m.get("pair") == [1, 30] and m["bytes"] == 0)
    oneway = m["stats"]["median"] / 2
    page.js("const gd = document.getElementById('fig-matrix-parallel-0');"
            "gd.scrollIntoView(); Plotly.Fx.hover(gd, {xval: 30, yval: 1});")
    label = str(page.wait("(() => { const t = document.querySelector("
                          "'#fig-matrix-parallel-0 .hoverlayer .hovertext');"
                          " return t ? t.textContent : null; })()", "heat map hover"))
    assert "rank 1 <-> 30" in label
    assert f"{oneway * 1e6:.4g} us" in label, label


# ---------------------------------------------------------------- issue 28 item 8: layout

FIRST_W, FIRST_H = 1400, 900  # the first screen the Target names


def _viewport(page: Page, w: int, h: int) -> None:
    """The page's viewport exactly w x h CSS pixels (not the window with its chrome)."""
    page.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": False})


@pytest.fixture
def first_screen(page: Page) -> Iterator[Page]:
    _viewport(page, FIRST_W, FIRST_H)
    try:
        yield page
    finally:
        page.d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _rect(page: Page, css: str) -> dict[str, float] | None:
    return page.js("const e = document.querySelector(arguments[0]); if (!e) return null;"
                   "const r = e.getBoundingClientRect();"
                   "return {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY,"
                   " left: r.left, right: r.right, height: r.height};", css)


def _no_page_scroll_x(page: Page) -> None:
    w = page.js("return [document.documentElement.scrollWidth,"
                " document.documentElement.clientWidth];")
    assert w[0] <= w[1], f"the page scrolls sideways: {w[0]} px wide in a {w[1]} px window"


def _layout(page: Page, path: Path, name: str, tmp_path: Path) -> None:
    """At 1400 x 900: the summary and the flag legend on the first screen, no provenance
    before the first figure, the provenance folded, wide tables scrolling inside the page."""
    log = page.open(path)
    assert _errors(log) == []
    page.screenshot(name, tmp_path)
    assert page.js("return [window.innerWidth, window.innerHeight];") == [FIRST_W, FIRST_H]
    summ, legend = _rect(page, "#summary"), _rect(page, "#flag-legend")
    assert summ is not None and summ["top"] < FIRST_H, summ
    assert legend is not None, "no flag legend (#flag-legend)"
    # the legend is seen on the first screen: its top inside it, within the window's width
    assert legend["top"] < FIRST_H and legend["height"] > 0, legend
    assert 0 <= legend["left"] and legend["right"] <= FIRST_W, legend
    assert page.js("return document.getElementById('flag-legend').closest('#summary') "
                   "!== null;"), "the legend is not beside the summary"
    # provenance: after the first figure, folded
    fig, prov = _rect(page, ".mpilab-fig"), _rect(page, "#provenance")
    assert fig is not None and prov is not None
    assert prov["top"] > fig["top"], (prov, fig)
    folds = page.js("return Array.from(document.querySelectorAll('#provenance details'))"
                    ".map(d => d.open);")
    assert folds and not any(folds), f"provenance not folded: {folds}"
    assert page.js("return document.querySelectorAll('#provenance table').length;") > 0
    # folded: inside a closed details element, not rendered (checkVisibility: Chrome's
    # details hide their content with content-visibility, which a box query would lay out)
    assert page.js("return Array.from(document.querySelectorAll('#provenance table'))"
                   ".every(t => t.closest('details') !== null && !t.closest('details').open"
                   " && !t.checkVisibility());"), "provenance rows visible while folded"
    _no_page_scroll_x(page)
    # unfolded, every table (the provenance included) scrolls inside its own box
    page.js("document.querySelectorAll('details').forEach(d => d.open = true);")
    page.wait("Array.from(document.querySelectorAll('#provenance table'))"
              ".every(t => t.checkVisibility() && t.getBoundingClientRect().height > 0)",
              "provenance unfolded")
    _no_page_scroll_x(page)
    wide = page.js("""return Array.from(document.querySelectorAll('table.mpilab-table'))
        .filter(t => t.scrollWidth > t.parentElement.clientWidth + 1)
        .map(t => [t.id, getComputedStyle(t.parentElement).overflowX,
                   t.parentElement.getBoundingClientRect().right]);""")
    for tid, overflow, right in wide:
        assert overflow in ("auto", "scroll"), (tid, overflow)
        assert right <= FIRST_W, (tid, right)
    page.js("document.querySelectorAll('details').forEach(d => d.open = false);")


def _with_wide_tables(doc: dict[str, Any]) -> dict[str, Any]:
    """The survey with what made the compare page's provenance wider than the window: a
    long unbroken launcher argument and many options."""
    doc = json.loads(json.dumps(doc))
    prov = doc["provenance"]
    prov["command"] = ("mpirun --mca btl_tcp_if_include=" + "eth0," * 60 + "lo "
                       + "--bind-to core " * 10 + "mpilab-bench --ops p2p")
    prov.setdefault("options", {})["long_option_" + "x" * 200] = "y" * 300
    return doc


def test_report_first_screen_and_folded_provenance(first_screen: Page, tmp_path: Path) -> None:
    doc = _with_wide_tables(_load("survey-a.json"))
    res = tmp_path / "wide.json"
    res.write_text(json.dumps(doc))
    out = tmp_path / "first.html"
    _cli("report", str(res), "-o", str(out), cwd=tmp_path)
    _layout(first_screen, out, "first-screen-survey", tmp_path)
    # the long launcher line is in the page (inside the folded provenance), not cut off
    assert "eth0,eth0" in first_screen.js("return document.getElementById('provenance')"
                                          ".textContent;")


def test_compare_first_screen_and_folded_provenance(first_screen: Page,
                                                    tmp_path: Path) -> None:
    d = tmp_path / "cmp"
    d.mkdir()
    for f in sorted((DATA / "compare").glob("*.json")):
        shutil.copy(f, d / f.name)
    _cli("compare", "--from", str(d), cwd=tmp_path)
    _layout(first_screen, d / "report.html", "first-screen-compare", tmp_path)


def test_no_negative_model_parameter_on_show(page: Page, tmp_path: Path) -> None:
    """A results file whose fit fell below 0 the ways a real fit does (LogGP o_r and g per
    range, a Hockney range's intercept, a Hockney headline clamped by the fitter): every
    model table cell shows the clamp 0 with its flag in the hover, and no model parameter
    anywhere on the page reads as a negative number."""
    doc = _load("survey-a.json")
    rng = doc["models"]["loggp"]["pairs"][0]["ranges"][0]
    rng["or"], rng["g"] = -4.71e-7, -7.13e-8      # the issue's -471 ns and -71.3 ns
    hp = doc["models"]["hockney"]["pairs"][0]
    hp["ranges"][0].update(alpha=-3.1e-7, flags=["negative_intercept"])
    hp["alpha"] = 0.0
    hp["quality"]["alpha"].update(raw=-3.1e-7, lo=0.0, hi=2e-7, flags=["clamped", "ci_wide"])
    res = tmp_path / "neg.json"
    res.write_text(json.dumps(doc))
    out = tmp_path / "neg.html"
    _cli("report", str(res), "-o", str(out), cwd=tmp_path)
    _open_report(page, out, "report-negative-params", tmp_path)
    page.js("document.querySelectorAll('details').forEach(d => d.open = true);")
    cells = page.js("""return ['summary-hockney', 'summary-loggp', 'hockney', 'loggp-params']
        .map(id => [id, document.getElementById(id)]).filter(x => x[1] !== null)
        .map(([id, t]) => [id, Array.from(t.tHead.rows[0].cells).map(c => c.textContent),
            Array.from(t.tBodies[0].rows).map(r => Array.from(r.cells).map(c =>
                [c.innerText, c.className, c.title || '']))]);""")
    tables = {tid: (head, rows) for tid, head, rows in cells}
    assert set(tables) == {"summary-hockney", "summary-loggp", "hockney", "loggp-params"}
    for tid, (_head, rows) in tables.items():
        for row in rows:
            for text, _cls, _title in row:
                assert not text.strip().startswith(("-0", "-1", "-2", "-3", "-4", "-5", "-6",
                                                    "-7", "-8", "-9", "\u2212")), (tid, row)

    def cell(tid: str, row: int, col: str) -> tuple[str, str, str]:
        head, rows = tables[tid]
        return tuple(rows[row][head.index(col)])  # type: ignore[return-value]

    for tid, row, col, flag in (("loggp-params", 1, "o_r", "or_clamped"),
                                ("loggp-params", 1, "g", "g_clamped"),
                                ("hockney", 1, "alpha", "negative_intercept"),
                                ("hockney", 0, "alpha", "clamped"),
                                ("summary-hockney", 0, "Hockney alpha (latency)", "clamped")):
        text, cls, title = cell(tid, row, col)
        assert text.strip().startswith("0 ") or text.strip().startswith("0.00"), \
            (tid, col, text)
        assert "flagged" in cls and flag in title, (tid, col, cls, title)
    # nowhere on the page: the fitted negatives as numbers
    body = page.js("return document.body.innerText;")
    for shown in ("-471 ns", "-0.471 us", "-71.3 ns", "-0.0713 us", "-310 ns", "-0.31 us",
                  "-0.310 us"):
        assert shown not in body, shown
    page.js("document.querySelectorAll('details').forEach(d => d.open = false);")
