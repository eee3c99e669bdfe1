"""Loading and validating mpilab.results/1 files."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab import results
from mpilab.errors import MpilabError

SIZES = (0, 1024, 65536)


def _line_of(text: str, needle: str) -> int:
    """1-based line of the first occurrence of needle (computed independently of mpilab)."""
    pos = text.index(needle)
    return text.count("\n", 0, pos) + 1


def test_good_file_loads_with_typed_view(synthetic_results: Callable[..., dict[str, Any]],
                                         write_json: Callable[..., Path]) -> None:
    doc = synthetic_results(ranks=4, sizes=SIZES)
    r = results.load(write_json(doc))
    assert len(r.measurements) == len(doc["measurements"])
    p2p = r.p2p()
    # all pairs of 4 ranks at every size
    assert len(p2p) == 6 * len(SIZES)
    assert {m.pair for m in p2p} == {(i, j) for i in range(4) for j in range(i + 1, 4)}
    assert all(m.bytes_back == m.bytes and m.schedule == "parallel" for m in p2p)
    first = r.measurements[0]
    src = doc["measurements"][0]
    assert first.stats.mean == pytest.approx(src["stats"]["mean"])
    assert first.stats.reps == len(first.samples) == len(first.valid)
    assert first.precision is not None and first.precision.max_reps == 100
    assert r.ops() == ["scatter", "gather", "bcast", "allreduce"]
    assert {m.timing for m in r.collectives() if m.op == "scatter" and m.impl == "linear"} \
        == {"max", "root", "global", "opspec"}
    cs = r.clock_sync
    assert cs is not None and cs.method == "skampi" and cs.max_residual_s == pytest.approx(1.2e-7)
    assert len(r.hockney) == 6 and len(r.predictions) == 4 * len(SIZES)


def test_hockney_predict_uses_protocol_ranges(synthetic_results: Callable[..., dict[str, Any]],
                                              write_json: Callable[..., Path]) -> None:
    r = results.load(write_json(synthetic_results(sizes=SIZES)))
    p = r.hockney[0]
    assert p.predict(1000) == pytest.approx(5e-6 + 1e-9 * 1000)
    # second range has twice the latency
    assert p.predict(100000) == pytest.approx(10e-6 + 1e-9 * 100000)
    # outside every range: the whole-range fit
    assert p.predict(1 << 22) == pytest.approx(5e-6 + 1e-9 * (1 << 22))


def test_prediction_relative_error(synthetic_results: Callable[..., dict[str, Any]],
                                   write_json: Callable[..., Path]) -> None:
    doc = synthetic_results(sizes=SIZES)
    doc["models"]["predictions"] = [
        {"op": "scatter", "impl": "linear", "bytes": 8, "predicted": 3.0, "measured": 2.0},
        {"op": "gather", "impl": "binomial", "bytes": 8, "predicted": 3.0, "measured": None}]
    r = results.load(write_json(doc))
    assert r.predictions[0].rel_error == pytest.approx(0.5)
    assert r.predictions[1].measured is None and r.predictions[1].rel_error is None


def test_unknown_keys_are_ignored(synthetic_results: Callable[..., dict[str, Any]],
                                  write_json: Callable[..., Path]) -> None:
    doc = synthetic_results(sizes=(4,))
    doc["wavefront"] = {"anything": [1, 2]}
    doc["measurements"][0]["my_extra"] = {"x": 1}
    r = results.load(write_json(doc))
    assert r.raw["wavefront"] == {"anything": [1, 2]}
    assert r.measurements[0].raw["my_extra"] == {"x": 1}


def test_malformed_json_reports_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{\n "schema": "mpilab.results/1",\n "provenance": {},\n'
                 ' "measurements": [\n  {"op": "scatter",,}\n ]\n}\n')
    with pytest.raises(MpilabError) as e:
        results.load(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:5: malformed JSON:")
    assert "\n" not in msg


@pytest.mark.parametrize("content, expected", [
    ("", "empty file"),
    ("[1, 2]", "expected a JSON object at the top level"),
    ('{"provenance": {}, "measurements": []}', "schema is missing"),
    ('{"schema": "mpilab.results/2", "provenance": {}, "measurements": []}',
     "schema is \"mpilab.results/2\", expected 'mpilab.results/1'"),
    ('{"schema": 7, "provenance": {}, "measurements": []}', "schema is 7, expected"),
])
def test_bad_top_level(tmp_path: Path, content: str, expected: str) -> None:
    p = tmp_path / "r.json"
    p.write_text(content)
    with pytest.raises(MpilabError, match=str(p)) as e:
        results.load(p)
    assert expected in str(e.value)
    assert "\n" not in str(e.value)


def test_wrong_schema_names_its_line(tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    p.write_text('{\n  "provenance": {},\n  "schema": "other/1",\n  "measurements": []\n}')
    with pytest.raises(MpilabError) as e:
        results.load(p)
    assert str(e.value).startswith(f"{p}:3: schema is \"other/1\"")


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(MpilabError, match="no such file"):
        results.load(tmp_path / "missing.json")
    with pytest.raises(MpilabError, match="is a directory"):
        results.load(tmp_path)
    p = tmp_path / "bin.json"
    p.write_bytes(b'{\n"schema": "\xff"}')
    with pytest.raises(MpilabError, match=r"bin\.json:2: not UTF-8"):
        results.load(p)


Mutator = Callable[[dict[str, Any]], None]


def _set(path: tuple[Any, ...], value: Any) -> Mutator:
    def f(doc: dict[str, Any]) -> None:
        d: Any = doc
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return f


def _delete(path: tuple[Any, ...]) -> Mutator:
    def f(doc: dict[str, Any]) -> None:
        d: Any = doc
        for k in path[:-1]:
            d = d[k]
        del d[path[-1]]
    return f


# (mutation, JSON path named in the message, problem named in the message, line anchor:
#  a sentinel string placed by the mutation, or None when the message names no line)
CASES: list[tuple[str, Mutator, str, str]] = [
    ("mean not a number", _set(("measurements", 3, "stats", "mean"), "SENTINEL"),
     "measurements[3].stats.mean", "expected a number"),
    ("mean missing", _delete(("measurements", 2, "stats", "mean")),
     "measurements[2].stats.mean", "missing"),
    ("reps negative", _set(("measurements", 1, "stats", "reps"), -1),
     "measurements[1].stats.reps", "-1 is below 0"),
    ("reps a float", _set(("measurements", 1, "stats", "reps"), 2.5),
     "measurements[1].stats.reps", "expected an integer"),
    ("op missing", _delete(("measurements", 4, "op")), "measurements[4].op", "missing"),
    ("op empty", _set(("measurements", 4, "op"), ""), "measurements[4].op",
     "expected a non-empty string"),
    ("bytes negative", _set(("measurements", 5, "bytes"), -4096), "measurements[5].bytes",
     "-4096 is below 0"),
    ("bytes a bool", _set(("measurements", 5, "bytes"), True), "measurements[5].bytes",
     "expected an integer"),
    ("bytes a string", _set(("measurements", 5, "bytes"), "4K"), "measurements[5].bytes",
     "expected an integer"),
    ("stats not an object", _set(("measurements", 0, "stats"), [1]),
     "measurements[0].stats", "expected an object"),
    ("converged not a bool", _set(("measurements", 0, "stats", "converged"), "yes"),
     "measurements[0].stats.converged", "expected true or false"),
    ("sample a string", _set(("measurements", 0, "samples", 2), "x"),
     "measurements[0].samples[2]", "expected a number"),
    ("valid flags mismatch", _set(("measurements", 0, "valid"), [True]),
     "measurements[0].valid", "1 flags for"),
    ("p2p pair of one", _set(("measurements", 0, "pair"), [1]), "measurements[0].pair",
     "expected two ranks"),
    ("p2p pair with itself", _set(("measurements", 0, "pair"), [1, 1]),
     "measurements[0].pair", "a pair needs two different ranks"),
    ("p2p pair missing", _delete(("measurements", 0, "pair")), "measurements[0].pair",
     "missing"),
    ("measurements not a list", _set(("measurements",), {"a": 1}), "measurements",
     "expected an array"),
    ("measurement not an object", _set(("measurements", 6), 42), "measurements[6]",
     "expected an object"),
    ("provenance missing", _delete(("provenance",)), "provenance", "missing"),
    ("provenance ranks a string", _set(("provenance", "ranks"), "four"), "provenance.ranks",
     "expected an integer"),
    ("clock residual a string", _set(("provenance", "clock_sync", "max_residual_s"), "small"),
     "provenance.clock_sync.max_residual_s", "expected a number"),
    ("hockney alpha a string", _set(("models", "hockney", "pairs", 1, "alpha"), "fast"),
     "models.hockney.pairs[1].alpha", "expected a number"),
    ("hockney range reversed", _set(("models", "hockney", "pairs", 0, "ranges", 1, "to"), 9),
     "models.hockney.pairs[0].ranges[1]", "range from 65537 to 9 is empty"),
    ("prediction missing", _delete(("models", "predictions", 2, "predicted")),
     "models.predictions[2].predicted", "missing"),
]


def _refused_at_its_line(doc: dict[str, Any], tmp_path: Path, where: str,
                         problem: str) -> None:
    """The loader refuses doc in one line: FILE:LINE: WHERE: PROBLEM, LINE the sentinel's
    line when the document has one, else a line of the file."""
    text = json.dumps(doc, indent=1)
    p = tmp_path / "r.json"
    p.write_text(text)
    with pytest.raises(MpilabError) as e:
        results.load(p)
    msg = str(e.value)
    assert "\n" not in msg
    assert f": {where}: {problem}" in msg, msg
    head = msg.split(": ")[0]
    assert head.startswith(f"{p}:"), msg
    line = int(head.rsplit(":", 1)[1])
    if "SENTINEL" in text:
        assert line == _line_of(text, '"SENTINEL"')
    assert 1 <= line <= text.count("\n") + 1


@pytest.mark.parametrize("name, mutate, where, problem", CASES, ids=[c[0] for c in CASES])
def test_bad_measurements_name_file_line_and_path(
        synthetic_results: Callable[..., dict[str, Any]], tmp_path: Path, name: str,
        mutate: Mutator, where: str, problem: str) -> None:
    doc = copy.deepcopy(synthetic_results(ranks=3, sizes=(0, 1024)))
    mutate(doc)
    _refused_at_its_line(doc, tmp_path, where, problem)


def test_line_number_points_at_the_bad_value(synthetic_results: Callable[..., dict[str, Any]],
                                             tmp_path: Path) -> None:
    doc = synthetic_results(ranks=2, sizes=(0, 8))
    doc["measurements"][2]["stats"]["mean"] = "not-a-number-here"
    text = json.dumps(doc, indent=2)
    p = tmp_path / "r.json"
    p.write_text(text)
    with pytest.raises(MpilabError) as e:
        results.load(p)
    expected = _line_of(text, '"not-a-number-here"')
    # a mean may be null (no valid sample, flagged no_valid_samples), never a string
    assert str(e.value) == (f"{p}:{expected}: measurements[2].stats.mean: expected a number "
                            "or null")


def test_merge_keeps_sources_and_models(synthetic_results: Callable[..., dict[str, Any]],
                                        write_json: Callable[..., Path]) -> None:
    a = results.load(write_json(synthetic_results(ranks=2, sizes=(8,)), "a.json"))
    b = results.load(write_json(synthetic_results(ranks=3, sizes=(8, 16)), "b.json"))
    m = results.merge([a, b])
    assert len(m.measurements) == len(a.measurements) + len(b.measurements)
    assert [x.index for x in m.measurements] == list(range(len(m.measurements)))
    assert {x.source for x in m.measurements} == {a.path, b.path}
    assert len(m.hockney) == len(a.hockney) + len(b.hockney)
    assert [r["source"] for r in m.provenance["runs"]] == [a.path, b.path]
    # the merged document is itself a valid results file
    again = results.parse(json.dumps(m.raw), "merged")
    assert len(again.measurements) == len(m.measurements)
    with pytest.raises(MpilabError):
        results.merge([])


# ----------------------------------------------------------------------- models.loggp

def loggp_section(ranks: int = 3, sizes: tuple[int, ...] = (0, 1024, 65536),
                  L: float = 4e-6, os_: float = 1e-6, or_: float = 1.5e-6, g: float = 2e-6,
                  G: float = 1e-9) -> dict[str, Any]:
    """A models.loggp object as mpilab-bench writes it, generated from known parameters
    (pair (i, j) gets L + (i + j) us so the pairs differ)."""
    pairs = []
    for i in range(ranks):
        for j in range(i + 1, ranks):
            lat = L + (i + j) * 1e-6
            per_size = [{"bytes": m, "rtt": 2 * (os_ + lat + max(m - 1, 0) * G + or_),
                         "os": os_, "or": or_, "g": g + G * m} for m in sizes]
            params = {"L": lat, "L_raw": lat, "os": os_, "os_per_byte": 0.0, "or": or_,
                      "or_per_byte": 0.0, "g": g, "G": G, "flags": []}
            pairs.append({"i": i, "j": j, "round": 0, **params, "per_size": per_size,
                          "ranges": [{"from": sizes[0], "to": sizes[-1], **params}]})
    return {"pairs": pairs, "predictions": [
        {"op": "scatter", "impl": "linear", "timing": "max", "bytes": 1024,
         "predicted": 2e-5, "measured": 2.5e-5}], "fit_on": "per-size medians", "burst": 16}


def test_loggp_loads_typed(synthetic_results: Callable[..., dict[str, Any]],
                           write_json: Callable[..., Path]) -> None:
    doc = synthetic_results(ranks=3, sizes=SIZES)
    doc["models"]["loggp"] = loggp_section(3, SIZES)
    r = results.load(write_json(doc))
    assert [(p.i, p.j) for p in r.loggp] == [(0, 1), (0, 2), (1, 2)]
    p = r.loggp[2]
    assert p.params is not None
    assert p.params.L == pytest.approx(4e-6 + 3e-6) and p.params.G == pytest.approx(1e-9)
    assert [pt.bytes for pt in p.per_size] == list(SIZES)
    # the one-way time reproduces half the round trip it was generated from
    for pt in p.per_size:
        assert p.params.time(pt.bytes) == pytest.approx(pt.rtt / 2)
    assert p.params_for(5000) == p.ranges[0].params
    assert len(r.loggp_predictions) == 1
    assert r.loggp_predictions[0].rel_error == pytest.approx(-0.2)
    # Hockney stays as it was
    assert len(r.hockney) == 3
    # a file without LogGP has none
    assert results.load(write_json(synthetic_results(ranks=2, sizes=(8,)), "b.json")).loggp == []


def test_loggp_fit_failed_pair_has_no_params(synthetic_results: Callable[..., dict[str, Any]],
                                             write_json: Callable[..., Path]) -> None:
    doc = synthetic_results(ranks=2, sizes=(8, 16))
    lg = loggp_section(2, (8, 16))
    pr = lg["pairs"][0]
    for k in ("L", "os", "or", "g", "G", "ranges"):
        del pr[k]
    pr["flags"] = ["fit_failed"]
    pr["error"] = "non-finite value at size 8"
    doc["models"]["loggp"] = lg
    r = results.load(write_json(doc))
    assert r.loggp[0].params is None and r.loggp[0].error == "non-finite value at size 8"


LOGGP_CASES: list[tuple[str, Mutator, str, str]] = [
    ("L a string", _set(("models", "loggp", "pairs", 1, "L"), "SENTINEL"),
     "models.loggp.pairs[1].L", "expected a number"),
    ("L negative", _set(("models", "loggp", "pairs", 0, "L"), -1e-6),
     "models.loggp.pairs[0].L", "-1e-06 is below 0"),
    ("G missing", _delete(("models", "loggp", "pairs", 2, "G")),
     "models.loggp.pairs[2].G", "missing"),
    ("or missing", _delete(("models", "loggp", "pairs", 0, "or")),
     "models.loggp.pairs[0].or", "missing"),
    ("unknown flag", _set(("models", "loggp", "pairs", 0, "flags"), ["SENTINEL"]),
     "models.loggp.pairs[0].flags[0]", "unknown flag 'SENTINEL'"),
    ("same rank twice", _set(("models", "loggp", "pairs", 0, "j"), 0),
     "models.loggp.pairs[0].j", "a pair needs two different ranks"),
    ("sizes not increasing", _set(("models", "loggp", "pairs", 1, "per_size", 2, "bytes"), 1024),
     "models.loggp.pairs[1].per_size[2].bytes", "1024 does not increase on 1024"),
    ("per-size os a string", _set(("models", "loggp", "pairs", 1, "per_size", 0, "os"),
                                  "SENTINEL"),
     "models.loggp.pairs[1].per_size[0].os", "expected a number"),
    ("per_size missing", _delete(("models", "loggp", "pairs", 0, "per_size")),
     "models.loggp.pairs[0].per_size", "missing"),
    ("range reversed", _set(("models", "loggp", "pairs", 0, "ranges", 0, "to"), 0),
     "models.loggp.pairs[0].ranges[0]", "range from 1 to 0 is empty"),
    ("pairs not a list", _set(("models", "loggp", "pairs"), {"i": 0}), "models.loggp.pairs",
     "expected an array"),
    ("prediction without predicted", _delete(("models", "loggp", "predictions", 0, "predicted")),
     "models.loggp.predictions[0].predicted", "missing"),
]


@pytest.mark.parametrize("name, mutate, where, problem", LOGGP_CASES,
                         ids=[c[0] for c in LOGGP_CASES])
def test_bad_loggp_names_file_line_and_path(
        synthetic_results: Callable[..., dict[str, Any]], tmp_path: Path, name: str,
        mutate: Mutator, where: str, problem: str) -> None:
    doc = copy.deepcopy(synthetic_results(ranks=3, sizes=SIZES))
    doc["models"]["loggp"] = loggp_section(3, (1, 1024, 65536))
    mutate(doc)
    _refused_at_its_line(doc, tmp_path, where, problem)


def test_merge_keeps_loggp(synthetic_results: Callable[..., dict[str, Any]],
                           write_json: Callable[..., Path]) -> None:
    da = synthetic_results(ranks=2, sizes=(8,))
    da["models"]["loggp"] = loggp_section(2, (8, 64))
    a = results.load(write_json(da, "a.json"))
    b = results.load(write_json(synthetic_results(ranks=3, sizes=(8, 16)), "b.json"))
    m = results.merge([a, b])
    assert len(m.loggp) == 1 and len(m.loggp_predictions) == 1
    again = results.parse(json.dumps(m.raw), "merged")
    assert [(p.i, p.j) for p in again.loggp] == [(0, 1)]
