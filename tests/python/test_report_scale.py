"""The report at scale (issue 26): a large all-pairs results file gives a page of summaries
(heat maps, outliers, distributions) with the full tables as CSV files beside it; a file
too large is refused in one line before any work; the stream reader of large files gives
what results.load gives, and results.load's own error on anything it refuses."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import htmlq
import pytest
from mpilab import results, results_model
from mpilab.errors import MpilabError
from mpilab.report import scale, stream

REPO = Path(__file__).resolve().parents[2]


def _synth() -> Any:
    # the script imports bench/harness.py, as every bench script does
    if str(REPO / "bench") not in sys.path:
        sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("report_scale_synth",
                                                  REPO / "bench" / "report_scale_synth.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["report_scale_synth"] = mod
    spec.loader.exec_module(mod)
    return mod


# above HEATMAP_MAX (the matrix is block-reduced) and large enough that the report reads the
# file as a stream (checked in the fixture); 256 ranks cost the fixture twice the CPU
RANKS = 192
SLOW_NODE = 77
SLOW_PAIR = (12, 150)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """192 ranks, every pair at one size, Hockney and LogGP per pair, rank 77 slow and the
    pair 12-150 slow: 18,336 p2p measurements (about 26 MB, read as a stream), reported
    through the CLI."""
    import subprocess

    from conftest import cli_env
    from mpilab.commands.report import STREAM_BYTES

    d = tmp_path_factory.mktemp("scale")
    res = d / "big.json"
    n = _synth().write(res, RANKS, [0], 5, slow_node=SLOW_NODE, slow_pair=SLOW_PAIR)
    assert res.stat().st_size >= STREAM_BYTES and RANKS > scale.HEATMAP_MAX
    out = d / "big.html"
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", "report", str(res), "-o", str(out)],
                       env=cli_env(), capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    return {"dir": d, "json": res, "html": out, "n": n, "text": out.read_text()}


def test_large_page_has_heat_maps_and_no_long_table(big: dict[str, Any]) -> None:
    text = big["text"]
    page = htmlq.parse(text)
    assert "p2p" in page.sections and "models" in page.sections
    # the pair matrix is a heat map (plotly), block-reduced to at most HEATMAP_MAX a side
    assert '<div class="mpilab-fig" id="fig-matrix-parallel-0"' in text
    spec = re.search(r'mpilabDraw\("fig-matrix-parallel-0", (\{.*?\})\);</script>', text)
    assert spec is not None
    hm = json.loads(spec.group(1))["data"][0]
    assert hm["type"] == "heatmap"
    assert len(hm["z"]) == len(hm["z"][0]) == RANKS // 2 <= scale.HEATMAP_MAX
    assert hm["x"][0] == "0-1" and hm["x"][-1] == f"{RANKS - 2}-{RANKS - 1}"
    # no latency matrix as a table, no table longer than the threshold
    rows = {m.group(1): int(m.group(2)) for m in re.finditer(
        r'<table class="mpilab-table" id="([^"]*)" data-rows="(\d+)"', text)}
    assert rows and max(rows.values()) <= scale.TABLE_ROWS, rows
    assert not any(h[:2] == ["rank", "0"] for t in page.in_section("p2p") for h in [t.head])
    # model parameters as distributions (box plots) and a per-parameter summary
    assert '"type":"box"' in text
    assert "summary-models" in rows and "hockney-dist" in rows and "loggp-params-dist" in rows
    # the page is a fraction of what one row per measurement made (23 MB at 10^4)
    assert big["html"].stat().st_size < 5_000_000


def test_outliers_name_the_injected_slow_node_and_pair(big: dict[str, Any]) -> None:
    page = htmlq.parse(big["text"])
    nodes = page.table("slow-nodes-parallel-0")
    assert [r[0] for r in nodes.rows] == [str(SLOW_NODE)]
    pairs = page.table("slow-pairs-parallel-0")
    assert [r[0] for r in pairs.rows] == [f"{SLOW_PAIR[0]}-{SLOW_PAIR[1]}"]
    health = re.findall(r"<li>(slow [^<]*)</li>", big["text"])
    assert any(f"rank {SLOW_NODE}" in h for h in health)
    assert any(f"{SLOW_PAIR[0]}-{SLOW_PAIR[1]}" in h for h in health)
    # the measurement table keeps the slow pair's measurement
    mt = page.table("measurements")
    assert any(r[5].startswith(f"{SLOW_PAIR[0]}-{SLOW_PAIR[1]}") for r in mt.rows)


def test_linked_csv_files_hold_every_row(big: dict[str, Any]) -> None:
    text, d = big["text"], big["dir"]
    links = re.findall(r'<a href="([^"]+\.csv)" download>', text)
    assert set(links) == {"big.pairs.csv", "big.hockney.csv", "big.loggp.csv",
                          "big.measurements.csv"}
    npairs = RANKS * (RANKS - 1) // 2
    doc = json.loads(big["json"].read_text())
    with open(d / "big.measurements.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == big["n"] == len(doc["measurements"])
    # every row as the file has it: the pair and the median, in SI units
    for k in (0, 777, len(rows) - 1):
        m = doc["measurements"][k]
        assert int(rows[k]["index"]) == k and rows[k]["op"] == m["op"]
        # point-to-point: one-way (half the round trip), the round trip beside it
        k2 = 0.5 if m["op"] == "p2p" else 1.0
        assert float(rows[k]["median_s"]) == pytest.approx(k2 * m["stats"]["median"],
                                                           rel=1e-5)
        if m["op"] == "p2p":
            assert [int(rows[k]["pair_i"]), int(rows[k]["pair_j"])] == m["pair"]
            assert float(rows[k]["roundtrip_median_s"]) == pytest.approx(
                m["stats"]["median"], rel=1e-5)
    for name in ("pairs", "hockney", "loggp"):
        with open(d / f"big.{name}.csv", newline="") as f:
            got = list(csv.reader(f))
        assert len(got) == 1 + npairs, name
        assert {(int(r[0]), int(r[1])) for r in got[1:]} == {
            (i, j) for i in range(RANKS) for j in range(i + 1, RANKS)}


def test_too_large_a_file_is_refused_in_one_line(run_cli: Callable[..., Any],
                                                 tmp_path: Path) -> None:
    f = tmp_path / "huge.json"
    with open(f, "wb") as fh:
        fh.truncate(300 << 20)  # sparse: the check looks at the size, before reading
    p = run_cli("report", str(f), "-o", str(tmp_path / "huge.html"))
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "300 MiB of results is above the report's limit of 128 MiB" in lines[0]
    assert "--max-input 301M" in lines[0]
    assert not list(tmp_path.glob("huge.*html*")) and not list(tmp_path.glob("*.csv"))
    p = run_cli("report", str(f), "--max-input", "lots")
    assert p.returncode == 2 and "--max-input: 'lots' is not a size" in p.stderr
    # raised above the file's size, the limit lets it through to the reader
    p = run_cli("report", str(f), "--max-input", "301M", "-o", str(tmp_path / "huge.html"))
    assert p.returncode == 2 and "above the report's limit" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def _typed(r: results_model.Results) -> list[Any]:
    return [(m.index, m.op, m.impl, m.timing, m.bytes, m.stats, m.pair, m.bytes_back,
             m.root, m.ranks, m.precision, m.schedule, m.isolation,
             (m.samples, m.valid) if not m.is_p2p else ()) for m in r.measurements]


def test_stream_reader_gives_what_results_load_gives(tmp_path: Path) -> None:
    res = tmp_path / "mid.json"
    _synth().write(res, 40, [0, 4096], 5, slow_node=3, slow_pair=(1, 30))
    a, b = results.load(res), stream.load_large(res)
    assert _typed(a) == _typed(b)
    assert a.hockney == b.hockney and a.loggp == b.loggp and a.predictions == b.predictions
    assert a.provenance == b.provenance
    assert all(not m.samples for m in b.p2p()) and all(m.samples for m in a.p2p())


def _cases() -> list[tuple[str, Callable[[str], str]]]:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_results_hostile import TEXT_CASES

    def first_p2p(edit: Callable[[dict[str, Any]], None]) -> Callable[[str], str]:
        def f(text: str) -> str:
            doc = json.loads(text)
            edit(next(m for m in doc["measurements"] if m["op"] == "p2p"))
            return json.dumps(doc, indent=1)
        return f

    out: list[tuple[str, Callable[[str], str]]] = []
    for name, edit, _ in TEXT_CASES:
        out.append((name, lambda t, e=edit: e(t, json.loads(t))))
    out += [
        ("mean not a number", first_p2p(lambda m: m["stats"].update(mean="x"))),
        ("rank beyond the run", first_p2p(lambda m: m.update(pair=[0, 99]))),
        ("pair of one rank", first_p2p(lambda m: m.update(pair=[1, 1]))),
        ("valid flags short", first_p2p(lambda m: m.update(valid=[True]))),
        ("reps beside fewer samples", first_p2p(lambda m: m["stats"].update(reps=10 ** 18))),
        ("missing stats", first_p2p(lambda m: m.pop("stats"))),
        ("truncated", lambda t: t[: len(t) * 2 // 3]),
        ("text after the document", lambda t: t + "\n{}"),
        ("not UTF-8", lambda t: t.replace('"p2p"', '"p\udcff2p"', 1)),
        ("schema wrong", lambda t: t.replace('"mpilab.results/1"', '"mpilab.results/2"', 1)),
        ("measurements before provenance", lambda t: json.dumps(
            {k: json.loads(t)[k] for k in ("schema", "measurements", "provenance")})),
        ("good file", lambda t: t),
    ]
    return out


CASES = _cases()


@pytest.mark.parametrize("name, edit", CASES, ids=[c[0] for c in CASES])
def test_stream_reader_errors_are_results_load_errors(
        synthetic_results: Callable[..., dict[str, Any]], tmp_path: Path, name: str,
        edit: Callable[[str], str]) -> None:
    doc = synthetic_results(ranks=3, sizes=(0, 1024))
    text = edit(json.dumps(doc, indent=1))
    p = tmp_path / "r.json"
    p.write_bytes(text.encode("utf-8", "surrogateescape"))

    def outcome(load: Callable[[Path], results_model.Results]) -> Any:
        try:
            r = load(p)
        except MpilabError as e:
            return str(e)
        return ("ok", len(r.measurements), len(r.hockney))

    expect = outcome(results.load)
    assert outcome(stream.load_large) == expect
    assert (expect[0] == "ok") == (name in ("good file", "measurements before provenance"))


def test_run_report_walks_the_quality_summary_once(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """quality.summary walks every measurement and model parameter (2.8 million parameter
    flags at 10^5 measurements, seconds each time): a run report computes it once (the
    health lines, the verdict and the flag legend share it; the banners need it only for a
    partial or merged file), and the page says what the shared summary says."""
    from mpilab import quality
    from mpilab.report import build_report

    res = tmp_path / "mid.json"
    _synth().write(res, 12, [0, 4096], 5, slow_node=3, slow_pair=(1, 10))
    r = results.load(res)
    calls: list[int] = []
    real = quality.summary

    def counted(doc: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        return real(doc)

    monkeypatch.setattr(quality, "summary", counted)
    out = tmp_path / "mid.html"
    build_report(r, out)
    assert len(calls) == 1
    s = real(r.raw)
    text = out.read_text()
    conv = f"{s['converged']} of {s['measurements']}"
    assert conv in text
