"""Hostile results files: each case once made `mpilab report` print a traceback, hang, or
accept a value it should refuse. Every one must now end in one line naming file:line (or the
file) and exit status 2, with no output file written."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab import results
from mpilab.errors import MpilabError
from mpilab.results_check import SCHEMA_FILE


def _doc(synthetic_results: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    return synthetic_results(ranks=2, sizes=(0, 1024))


def _with(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def _first_mean(doc: dict[str, Any]) -> str:
    return json.dumps(doc["measurements"][0]["stats"]["mean"])


# (name, edit of the indented text of a good file, text expected in the one-line message)
TEXT_CASES: list[tuple[str, Callable[[str, dict[str, Any]], str], str]] = [
    ("5000-digit integer", lambda t, d: _with(t, '"reps": ', '"reps": ' + "9" * 5000 + ", \"x\": "),
     "outside the range of a double"),
    ("bytes 10**400", lambda t, d: _with(t, '"bytes": 0', '"bytes": 1' + "0" * 400),
     "outside the range of a double"),
    ("float overflow", lambda t, d: _with(t, '"mean": ' + _first_mean(d), '"mean": 1e400'),
     "outside the range of a double"),
    ("NaN", lambda t, d: _with(t, '"mean": ' + _first_mean(d), '"mean": NaN'),
     "NaN is not a JSON number"),
    ("Infinity", lambda t, d: _with(t, '"mean": ' + _first_mean(d), '"mean": Infinity'),
     "Infinity is not a JSON number"),
    ("-Infinity", lambda t, d: _with(t, '"mean": ' + _first_mean(d), '"mean": -Infinity'),
     "-Infinity is not a JSON number"),
    ("bytes beyond int64", lambda t, d: _with(t, '"bytes": 0', '"bytes": 9223372036854775808'),
     "is above 9223372036854775807"),
    ("duplicate key", lambda t, d: _with(t, '"bytes": 0', '"bytes": 0, "bytes": 4096'),
     "the key appears twice in one object"),
    ("lone surrogate", lambda t, d: _with(t, '"schema": ', '"x": "a\\ud800b", "schema": '),
     "x: a string holds a lone surrogate"),
]


@pytest.mark.parametrize("name, edit, expected", TEXT_CASES, ids=[c[0] for c in TEXT_CASES])
def test_numbers_outside_rfc8259_are_refused_with_their_line(
        synthetic_results: Callable[..., dict[str, Any]], tmp_path: Path, name: str,
        edit: Callable[[str, dict[str, Any]], str], expected: str) -> None:
    doc = _doc(synthetic_results)
    text = edit(json.dumps(doc, indent=1), doc)
    p = tmp_path / "r.json"
    p.write_text(text)
    with pytest.raises(MpilabError) as e:
        results.load(p)
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 300, msg
    assert expected in msg, msg
    line = int(re.match(rf"{re.escape(str(p))}:(\d+): ", msg).group(1))  # type: ignore[union-attr]
    # the line holds the offending token
    token = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}.get(name)
    if token:
        assert token in text.splitlines()[line - 1]


FIELD_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("partial a string", lambda d: d.update(partial="yes"), "partial: expected true or false"),
    ("reps beside fewer samples",
     lambda d: d["measurements"][0]["stats"].update(reps=10 ** 18),
     "measurements[0].stats.reps: 1000000000000000000 repetitions for"),
    ("clock_sync.ranks a number",
     lambda d: d["provenance"].update(clock_sync={"method": "skampi", "max_residual_s": 1e-7,
                                                  "ranks": 5}),
     "provenance.clock_sync.ranks: expected an array"),
    ("clock_sync rank offset a string",
     lambda d: d["provenance"].update(clock_sync={"method": "skampi", "max_residual_s": 1e-7,
                                                  "ranks": [{"rank": 1, "offset_s": "x"}]}),
     "provenance.clock_sync.ranks[0].offset_s: expected a number or null"),
    ("pair beyond the rank count",
     lambda d: next(m for m in d["measurements"] if m["op"] == "p2p").update(pair=[0, 7]),
     "pair[1]: rank 7 does not exist in a run of 2 ranks"),
    ("eps = 5", lambda d: d["measurements"][0].update(
        precision={"cl": 0.95, "eps": 5, "min_reps": 5, "max_reps": 100}),
     "precision.eps: 5 must be below 1"),
    ("cl = 0", lambda d: d["measurements"][0].update(
        precision={"cl": 0, "eps": 0.1, "min_reps": 5, "max_reps": 100}),
     "precision.cl: 0 must be above 0"),
    ("max_reps below min_reps", lambda d: d["measurements"][0].update(
        precision={"cl": 0.95, "eps": 0.1, "min_reps": 50, "max_reps": 10}),
     "precision.max_reps: 10 is below min_reps 50"),
    ("root beyond the ranks", lambda d: next(m for m in d["measurements"] if m["op"] != "p2p")
     .update(root=9), "root: rank 9 does not exist"),
    ("hockney pair beyond the ranks",
     lambda d: d["models"]["hockney"]["pairs"][0].update(j=5),
     "models.hockney.pairs[0].j: rank 5 does not exist"),
    ("mapping entry not an object", lambda d: d["provenance"].update(mapping=[3]),
     "provenance.mapping[0]: expected an object"),
    ("negative stdev", lambda d: d["measurements"][0]["stats"].update(stdev=-1.0),
     "stats.stdev: -1.0: not a possible time"),
    ("hosts a string", lambda d: d["provenance"].update(hosts="node0"),
     "provenance.hosts: expected an array"),
    ("models a list", lambda d: d.update(models=[1]), "models: expected an object or null"),
    ("build's MPI version a number",
     lambda d: d["provenance"].update(build={"mpi": {"impl": "openmpi", "version": 4.1}}),
     "provenance.build.mpi.version: expected a string"),
    ("placement flag a string",
     lambda d: d["provenance"].update(placement={"mode": "auto", "yield_when_idle_off": "yes"}),
     "provenance.placement.yield_when_idle_off: expected true or false"),
    ("resync a number", lambda d: d["provenance"].setdefault("options", {}).update(resync=1),
     "provenance.options.resync: expected a string"),
    ("store variation a list",
     lambda d: d.update(launches={"n": 1, "files": [], "variation": [1]}),
     "launches.variation: expected an object"),
    ("own launches negative", lambda d: d["measurements"][0].update(launches={
        "n": 1, "medians": [1e-6], "variation": {"own_launches": -3}}),
     "launches.variation.own_launches: "),
    ("hockney quality a string",
     lambda d: d["models"]["hockney"]["pairs"][0].update(quality="good"),
     "models.hockney.pairs[0].quality: expected an object"),
    ("hockney beta's interval end a string",
     lambda d: d["models"]["hockney"]["pairs"][0].update(
         quality={"beta": {"raw": 1e-9, "hi": "x", "flags": []}}),
     "models.hockney.pairs[0].quality.beta.hi: expected a number or null"),
    ("hockney fit_on a number", lambda d: d["models"]["hockney"].update(fit_on=3),
     "models.hockney.fit_on: expected a string"),
]


@pytest.mark.parametrize("name, mutate, expected", FIELD_CASES, ids=[c[0] for c in FIELD_CASES])
def test_fields_are_checked_against_the_schema(
        synthetic_results: Callable[..., dict[str, Any]], write_json: Callable[..., Path],
        name: str, mutate: Callable[[dict[str, Any]], None], expected: str) -> None:
    doc = _doc(synthetic_results)
    mutate(doc)
    p = write_json(doc)
    with pytest.raises(MpilabError) as e:
        results.load(p)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{p}:"), msg
    assert expected in msg, msg


def test_the_published_schema_is_what_the_loader_uses(
        synthetic_results: Callable[..., dict[str, Any]]) -> None:
    import jsonschema

    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    good = _doc(synthetic_results)
    jsonschema.validate(good, schema)
    bad = _doc(synthetic_results)
    bad["measurements"][0]["stats"]["reps"] = "many"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    # the docs point at it
    docs = (Path(__file__).resolve().parents[2] / "docs" / "results-schema.md").read_text()
    assert "python/mpilab/schemas/results-1.schema.json" in docs


# ---- the report command end to end: one line, exit 2, nothing written, no hang


def _report(run_cli: Callable[..., Any], path: Path, *extra: str) -> Any:
    return run_cli("report", str(path), "-o", str(path.parent / "out.html"), *extra, timeout=60)


def _one_line_error(p: Any) -> str:
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_report_on_a_fifo_does_not_hang(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    line = _one_line_error(_report(run_cli, fifo))  # a hang fails with TimeoutExpired
    assert "is a FIFO" in line
    assert not (tmp_path / "out.html").exists()


def test_report_on_dev_zero_under_a_memory_limit(run_cli: Callable[..., Any],
                                                 tmp_path: Path) -> None:
    p = run_cli("report", "/dev/zero", "-o", str(tmp_path / "out.html"), timeout=60)
    assert "is a device" in _one_line_error(p)


def test_report_refuses_an_oversized_file(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as f:  # sparse: no disk space used
        f.truncate(results.MAX_RESULTS_BYTES + 1)
    # the report's own limit (--max-input, default 128M) speaks first, before any work ...
    assert "above the report's limit" in _one_line_error(_report(run_cli, big))
    # ... and raised, the loader's (results.MAX_RESULTS_BYTES) still refuses the file
    assert "larger than the" in _one_line_error(_report(run_cli, big, "--max-input", "1G"))


@pytest.mark.parametrize("case", ["digits", "bytes", "clock", "nan"])
def test_report_tracebacks_of_the_issue_are_one_line_errors(
        synthetic_results: Callable[..., dict[str, Any]], run_cli: Callable[..., Any],
        tmp_path: Path, case: str) -> None:
    doc = _doc(synthetic_results)
    text = json.dumps(doc, indent=1)
    if case == "digits":
        text = _with(text, '"reps": ', '"reps": ' + "1" * 5000 + ", \"y\": ")
    elif case == "bytes":
        text = _with(text, '"bytes": 0', '"bytes": 1' + "0" * 400)
    elif case == "clock":
        doc["provenance"]["clock_sync"] = {"method": "skampi", "max_residual_s": 0, "ranks": 5}
        text = json.dumps(doc, indent=1)
    else:
        text = _with(text, '"mean": ' + _first_mean(doc), '"mean": NaN')
    f = tmp_path / "r.json"
    f.write_text(text)
    line = _one_line_error(_report(run_cli, f))
    assert line.startswith(f"mpilab: {f}:"), line
    assert not (tmp_path / "out.html").exists()


@pytest.mark.parametrize("sizes", ["0,²", "1,-4", "4Q", "", "1e3", "nan", " , ", "1\n2",
                                   "\x1b[31m"])
def test_report_matrix_sizes_are_strict(synthetic_results: Callable[..., dict[str, Any]],
                                        write_json: Callable[..., Path],
                                        run_cli: Callable[..., Any], sizes: str) -> None:
    f = write_json(_doc(synthetic_results))
    line = _one_line_error(_report(run_cli, f, f"--matrix-sizes={sizes}"))
    assert "--matrix-sizes" in line
    assert not (f.parent / "out.html").exists()


def test_report_to_a_dash_writes_stdout(synthetic_results: Callable[..., dict[str, Any]],
                                        write_json: Callable[..., Path],
                                        run_cli: Callable[..., Any]) -> None:
    f = write_json(_doc(synthetic_results))
    p = run_cli("report", str(f), "-o", "-", timeout=600, cwd=f.parent)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("<!DOCTYPE html>")
    assert not (f.parent / "-").exists()
