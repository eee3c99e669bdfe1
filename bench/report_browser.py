"""The headless-Chromium side of the report benchmarks (bench/report_render.py,
bench/report_scale.py): a fresh browser per run, the time until every figure is drawn, a
full-page paint, and python/ of another git revision for a side-by-side number. A library of
bench/, not a script (moved unchanged from report_render.py, issue 27: scripts no longer
import each other)."""

from __future__ import annotations

import base64
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

from harness import REPO

WIDTH, HEIGHT = 1400, 1000
BOUND_S = 600


def baseline_tree(rev: str, dest: Path) -> Path:
    """python/ of git revision rev, extracted under dest."""
    tar = dest / "base.tar"
    with open(tar, "wb") as f:
        subprocess.run(["git", "-C", str(REPO), "archive", rev, "python"], stdout=f, check=True)
    with tarfile.open(tar) as t:
        t.extractall(dest / "base", filter="data")
    return dest / "base" / "python"


def _driver():  # type: ignore[no-untyped-def]
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars", "--no-first-run",
              "--disable-background-networking"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"),
                         options=opts)
    d.set_page_load_timeout(BOUND_S)
    d.set_script_timeout(BOUND_S)
    return d


DONE_JS = """return document.readyState === 'complete' &&
  Array.from(document.querySelectorAll('.mpilab-fig:not(.mpilab-static)'))
    .every(e => e.hasAttribute('data-rendered'))
  ? performance.now() : null;"""


def one_run(page: Path) -> dict[str, float]:
    from selenium.webdriver.support.ui import WebDriverWait

    d = _driver()
    try:
        t0 = time.perf_counter()
        d.get(page.resolve().as_uri())
        drawn_ms = WebDriverWait(d, BOUND_S, poll_frequency=0.02).until(
            lambda d: d.execute_script(DONE_JS))
        wall = time.perf_counter() - t0
        bad = d.execute_script("return document.querySelectorAll("
                               "'.mpilab-fig[data-rendered=\"error\"]').length;")
        height = d.execute_script("return document.documentElement.scrollHeight;")
        t1 = time.perf_counter()
        shot = d.execute_cdp_cmd("Page.captureScreenshot",
                                 {"format": "png", "captureBeyondViewport": True})
        full = time.perf_counter() - t1
        return {"drawn_s": drawn_ms / 1000.0, "wall_s": wall, "full_page_s": full,
                "height_px": float(height), "failed_figures": float(bad),
                "shot_bytes": float(len(base64.b64decode(shot["data"])))}
    finally:
        d.quit()
