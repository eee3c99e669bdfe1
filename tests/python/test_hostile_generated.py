"""The hostile-input campaign generated from the interfaces (bench/hostile_generated.py):
its fixed CI slice runs here and fails on any hang, traceback or internal error, signal,
or file left behind; and the generation itself covers every subcommand, option, C tool
and document kind, so a new one cannot be missed."""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import hostile_generated as gen  # noqa: E402
from hostile_inputs import run_case  # noqa: E402

BAD = ("hang", "traceback", "signal", "clobbered", "orphan")


@pytest.fixture(scope="module")
def cases() -> list[gen.Case]:
    if not (gen.BIN / "mpilab-bench").exists():
        pytest.skip("the C tools are not built")
    return gen.generated_cases()


def test_ci_slice_has_no_hang_traceback_signal_or_leftover(cases: list[gen.Case]) -> None:
    chosen = gen.ci_slice(cases)
    assert len(chosen) > 100
    with cf.ThreadPoolExecutor(max_workers=2) as ex:
        outcomes = list(ex.map(lambda c: run_case(c, None), chosen))
    bad = [f"{o.kind}: {o.case.name}: {o.detail}" for o in outcomes if o.kind in BAD]
    assert not bad, "\n".join(bad)
    # the slice is the same on every run: chosen by name, not by chance
    assert [c.name for c in gen.ci_slice(cases)] == [c.name for c in chosen]


def test_every_option_of_every_subcommand_is_mutated(cases: list[gen.Case]) -> None:
    names = {c.name for c in cases}
    for path, p in gen._walk(gen._parser(), []):
        cmd = " ".join(path)
        assert f"G mpilab {cmd}".strip() + " --help > full" in names, cmd
        if not path or cmd in gen.NOT_MUTATED:
            continue
        for a in gen._options(p):
            if a.option_strings:
                opt = a.option_strings[-1]
                assert any(n.startswith(f"G mpilab {cmd} {opt} ") for n in names), (cmd, opt)


def test_every_c_tool_option_is_mutated(cases: list[gen.Case]) -> None:
    names = {c.name for c in cases}
    tools = {Path(t).name for t in gen.BIN.glob("mpilab-*")}
    assert tools and all(any(n.startswith(f"G {t}") for n in names) for t in tools)
    bench = [n for n in names if n.startswith("G mpilab-bench --")]
    assert any("--max-reps -1" in n for n in bench) and any("--out a FIFO" in n for n in bench)


def test_a_new_option_is_covered_without_a_case_written() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--brand-new", type=int)
    p.add_argument("--new-out", metavar="FILE")
    opts = {a.option_strings[-1]: gen._is_path(a) for a in gen._options(p)}
    assert opts == {"--brand-new": False, "--new-out": True}
    assert gen.c_options("  --frobs N   frobs\n  --quiet   less\n  --log FILE  x") == {
        "--frobs": True, "--quiet": False, "--log": True}


def test_every_document_kind_and_field_is_mutated(cases: list[gen.Case]) -> None:
    kinds = sorted(p.name for p in gen.SCHEMAS.glob("*.schema.json"))
    assert kinds and set(kinds) <= set(gen.DOCUMENTS)
    names = {c.name for c in cases}
    for kind in kinds:
        doc = gen.DOCUMENTS[kind][0]()
        for path in gen._paths(doc):
            where = ".".join(map(str, path))
            for label in ("missing", "wrong type", "nested 10^5 deep"):
                assert f"G {kind.split('-1')[0]} {where} {label}" in names


# ------------------------------------------------------------------ what the campaign found

def _tools() -> list[Path]:
    tools = sorted(gen.BIN.glob("mpilab-*"))
    if not tools:
        pytest.skip("the C tools are not built")
    return tools


def _run(argv: list[str], stdout: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=cwd,
                          env=gen.harness.env(), timeout=120)


def test_c_tools_check_their_standard_output(tmp_path: Path) -> None:
    """Every C tool: --help to /dev/full is one line and exit 1 (not 0 with the text lost);
    to a pipe whose reader has gone it ends quietly with 0 (not killed by SIGPIPE)."""
    for tool in _tools():
        with open("/dev/full", "w") as full:
            r = _run([str(tool), "--help"], full, tmp_path)
        assert r.returncode == 1 and r.stderr.count("\n") == 1, (tool.name, r.stderr)
        assert "standard output" in r.stderr, r.stderr
        rd, wr = os.pipe()
        os.close(rd)
        with os.fdopen(wr, "w") as closed:
            r = _run([str(tool), "--help"], closed, tmp_path)
        assert r.returncode == 0 and r.stderr == "", (tool.name, r.returncode, r.stderr)


def test_bench_table_to_a_full_disk_is_an_error(tmp_path: Path) -> None:
    bench = [str(gen.BIN / "mpilab-bench"), "--ops", "barrier", "--sizes", "0",
             "--max-reps", "5", "--quiet"]
    _tools()
    for fmt in ([], ["--format", "csv"]):
        with open("/dev/full", "w") as full:
            r = _run(bench + fmt, full, tmp_path)
        assert r.returncode == 1 and "standard output" in r.stderr, r.stderr


def test_bench_entries_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    _tools()
    os.mkfifo(tmp_path / "e.so")
    r = _run([str(gen.BIN / "mpilab-bench"), "--entries", "e.so", "--ops", "barrier"],
             subprocess.PIPE, tmp_path)
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr


def test_wavefront_flag_given_a_value_is_one_line(tmp_path: Path) -> None:
    _tools()
    r = _run([str(gen.BIN / "mpilab-wavefront"), "run", "--quiet=x"], subprocess.PIPE, tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--quiet=x" in r.stderr


def test_report_of_an_empty_name_is_one_line(tmp_path: Path) -> None:
    r = _run(gen.PY + ["report", ""], subprocess.PIPE, tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "empty results file name" in r.stderr
