"""The hostile-input campaign generated from the interfaces (bench/hostile_generated.py):
its fixed CI slice runs here and fails on any hang, traceback or internal error, signal,
or file left behind; and the generation itself covers every subcommand, option, C tool
and document kind, so a new one cannot be missed."""

from __future__ import annotations

import argparse
import concurrent.futures as cf
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
