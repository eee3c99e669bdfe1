"""Issue 28 item 8, read in the rendered page: no figure lists the same legend entry twice
(the predicted-vs-measured figure listed "binomial predicted" four times), the clock card
counts the run's ranks (it said 3 on a 4-rank run: the per-rank list leaves out rank 0), and
a bandwidth column uses one unit."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from mpilab.commands.report import make_report

DATA = Path(__file__).resolve().parents[1] / "data" / "survey-quick-np3.json"


def figures(html: str) -> dict[str, dict]:  # type: ignore[type-arg]
    """Each figure's plotly spec, by the id of its element (the page draws them with
    mpilabDraw(id, spec))."""
    dec = json.JSONDecoder()
    out = {}
    for m in re.finditer(r'mpilabDraw\("([^"]+)",\s*', html):
        spec, _ = dec.raw_decode(html, m.end())
        out[m.group(1)] = spec
    return out


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("legends")
    return make_report(DATA, d / "r.html").read_text(encoding="utf-8")


def test_no_legend_entry_twice_in_a_figure(page: str) -> None:
    figs = figures(page)
    assert any(k.startswith("fig-pred-") for k in figs), sorted(figs)  # the figure at issue
    for fid, spec in figs.items():
        names = [t["name"] for t in spec["data"]
                 if t.get("name") and t.get("showlegend", True) is not False]
        dup = sorted({n for n in names if names.count(n) > 1})
        assert not dup, f"{fid}: legend lists {dup} more than once"


def test_the_scan_sees_a_duplicate() -> None:
    html = ('mpilabDraw("f", {"data": [{"name": "a"}, {"name": "a"}, {"name": "b", '
            '"showlegend": false}]});')
    spec = figures(html)["f"]
    assert [t["name"] for t in spec["data"]] == ["a", "a", "b"]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.parametrize("ranks", [3, 4])
def test_clock_card_counts_the_runs_ranks(tmp_path: Path, ranks: int) -> None:
    d = json.loads(DATA.read_text(encoding="utf-8"))
    assert d["provenance"]["ranks"] == 3
    if ranks != 3:  # the same run said to have had 4 ranks (the card reads the provenance)
        d = copy.deepcopy(d)
        d["provenance"]["ranks"] = ranks
        mapping = d["provenance"]["mapping"]
        mapping += [dict(mapping[-1], rank=k) for k in range(len(mapping), ranks)]
    f = tmp_path / "r.json"
    f.write_text(json.dumps(d), encoding="utf-8")
    text = _text(make_report(f, tmp_path / "r.html").read_text(encoding="utf-8"))
    m = re.search(r"clock sync max residual \S+ \S+ method \S+, (\d+) ranks", text)
    assert m is not None, "no clock card"
    assert int(m.group(1)) == ranks


def test_bandwidth_columns_use_one_unit(page: str) -> None:
    seen = 0
    for table in re.findall(r"<table.*?</table>", page, re.S):
        head = [_text(h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)]
        rows = [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)
                for r in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)]
        for j, h in enumerate(head):
            if "bandwidth" not in h.lower():
                continue
            col = [_text(r[j]).strip() for r in rows if len(r) > j]
            unit_set = {m.group(1) for v in col
                        if (m := re.fullmatch(r"[\d.]+\s*([kMGT]?B/s)", v))}
            seen += bool(unit_set)
            assert len(unit_set) <= 1, f"column {h!r} mixes {unit_set}"
    assert seen, "no bandwidth column with values"
