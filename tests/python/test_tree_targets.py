"""The countable house rules, measured on the whole tree (tests/python/tree_audit.py; run it
as a script for the full report): no C or Python file over 800 lines, no function over 120
lines (C by ctags, Python by ast, outside generated code), no function-static mutable state
in src/, every bench/ script on the shared harness, every C test program on the test kit
(tests/c/kit.h, named cases, no private check macros, none of the older check headers)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tree_audit as audit


def test_the_measures_see_what_they_count() -> None:
    fns = audit.c_functions()
    assert any(f == "src/bench/ops.c" for f, *_ in fns)
    assert all(n >= 1 for *_, n in fns)
    assert any(f == "python/mpilab/cli.py" and name == "main" for f, name, *_ in
               audit.py_functions())
    assert audit._top_level_const("typename:const int")
    assert audit._top_level_const("typename:const char * const[][2]")
    assert not audit._top_level_const("typename:const char * []")
    assert not audit._top_level_const("typename:int")


def test_no_function_static_mutable_state_in_the_library() -> None:
    assert audit.static_locals() == []


def test_every_bench_script_uses_the_shared_harness() -> None:
    scripts = audit.bench_scripts()
    assert len(scripts) > 30 and all("harness" not in p.name for p in scripts)
    assert audit.bench_offences() == {}


def test_the_bench_rules_catch_what_they_name() -> None:
    rules = audit.BENCH_RULES
    assert rules["REPO constant"].search("REPO = Path(__file__).resolve().parents[1]\n")
    assert rules["sys.path.insert"].search('sys.path.insert(0, str(REPO / "python"))')
    assert not rules["sys.path.insert"].search(
        "sys.path.insert(0, str(Path(__file__).resolve().parents[1]))")
    assert rules["private mpilab() helper"].search("def mpilab(*args: str) -> None:\n")
    assert rules["private mpilab() helper"].search('M="python3 -m mpilab.cli"\n')
    assert rules["private mpirun command"].search('    mpirun -q -np "$np" x\n')
    assert rules["private mpirun command"].search('cmd = ["mpirun", "-np", "2"]')
    assert not rules["private mpirun command"].search("# mpirun -np 2 in a comment\n")
    assert rules["sibling script imported"].search("from wavefront_fig7a import draw\n")
    assert not rules["sibling script imported"].search("from wf_disklib import summary\n")


def test_no_source_file_over_800_lines() -> None:
    assert audit.long_files() == []


def test_no_function_over_120_lines() -> None:
    assert audit.long_functions() == []


def test_every_c_test_program_uses_the_kit() -> None:
    progs = audit.c_test_programs()
    assert len(progs) > 30 and audit.REPO / "tests" / "c" / "wavefront_test.c" in progs
    assert audit.c_test_offences() == {}


def test_the_kit_rules_catch_what_they_name(tmp_path: Path) -> None:
    assert audit.PRIVATE_CHECK.search("#define CHECK(c) do { if (!(c)) return 1; } while (0)\n")
    assert audit.PRIVATE_CHECK.search("#define FAIL(...) fprintf(stderr, __VA_ARGS__)\n")
    assert not audit.PRIVATE_CHECK.search("#define NMAX 256\n")
    assert audit.KIT_OTHER.search('#include "bench_check.h"')
    assert audit.KIT_OTHER.search('#include "mpi_check.h"')
    with_kit, without = tmp_path / "a.c", tmp_path / "b.c"
    with_kit.write_text('#include "kit.h"\nMPILAB_TEST(x) {}\nMPILAB_TEST_MAIN()\n')
    without.write_text("#include <stdio.h>\nint main(void) { return 0; }\n")
    assert audit._includes_kit(with_kit) and not audit._includes_kit(without)


def test_architecture_figures_are_current() -> None:
    table = audit.docs_table(audit.ARCH_DOC.read_text())
    assert table is not None, "docs/architecture.md lost its generated table's markers"
    assert table == audit.figures_markdown(), (
        "docs/architecture.md's tree figures differ from the tree: run "
        "python tests/python/tree_audit.py --update-docs")


def test_update_docs_rewrites_only_the_table(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# T\n\nbefore\n{audit.FIGURES_BEGIN}\n| stale | 1 |\n{audit.FIGURES_END}\n"
                    "after\n")
    audit.update_docs(page)
    text = page.read_text()
    assert audit.docs_table(text) == audit.figures_markdown()
    assert text.startswith("# T\n\nbefore\n") and text.endswith(f"{audit.FIGURES_END}\nafter\n")
    assert [p.name for p in tmp_path.iterdir()] == ["page.md"]
    page.write_text("# no markers\n")
    with pytest.raises(SystemExit, match="markers"):
        audit.update_docs(page)


def test_docs_pages_and_their_data_stay_within_the_limits() -> None:
    """Reference pages of at most 600 lines (split and indexed beyond); docs/data holds only
    what the pages' figures need: under 1 MB in all."""
    docs = audit.REPO / "docs"
    long = {p.name: n for p in docs.glob("*.md")
            if (n := len(p.read_text().splitlines())) > 600}
    assert long == {}
    data = sum(p.stat().st_size for p in (docs / "data").rglob("*") if p.is_file())
    assert data < 1_000_000, f"docs/data holds {data} bytes"


def test_each_capability_is_done_one_way() -> None:
    assert audit.one_way_offences() == {}


def test_the_one_way_rules_catch_what_they_name(tmp_path: Path) -> None:
    pkg = audit.REPO / "python" / "mpilab"
    cases = {
        "a.py": ("import matplotlib.pyplot as plt\n", "plotting (plotly)"),
        "b.py": ("from fastjsonschema import compile\n",
                 "schema validation (jsonschema, in mpilab.schemacheck)"),
        "c.py": ("from tqdm import tqdm\n",
                 "progress (rich, through mpilab.stage; the survey's bar)"),
        "d.py": ("import math\n\ndef cdf(x):\n    return 0.5 * (1 + math.erf(x))\n",
                 "statistics (scipy.stats)"),
        "e.py": ("from statistics import NormalDist, median\n", "statistics (scipy.stats)"),
        "f.py": ("import statistics\n\nz = statistics.NormalDist().inv_cdf(0.975)\n",
                 "statistics (scipy.stats)"),
    }
    files = []
    for name, (text, _) in cases.items():
        f = tmp_path / name
        f.write_text(text)
        files.append(f)
    # rel() names files under the repository: stand the scratch files in for package files
    real_rel = audit.rel
    try:
        audit.rel = lambda p: f"python/mpilab/{p.name}" if p.parent == tmp_path else real_rel(p)
        found = audit.one_way_offences(files)
        # descriptive statistics are no distribution; the files allowed a library may use it
        clean = tmp_path / "g.py"
        clean.write_text("import statistics\n\nm = statistics.median([1.0, 2.0])\n")
        assert audit.one_way_offences([clean]) == {}
        assert audit.one_way_offences([pkg / "schemacheck.py", pkg / "stage.py"]) == {}
    finally:
        audit.rel = real_rel
    for name, (_, what) in cases.items():
        assert any(w.startswith(f"python/mpilab/{name}:") for w in found.get(what, [])), \
            (name, found)


def test_launch_command_lines_are_built_by_the_launcher_module(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert audit.launch_offences() == []
    cases = {
        "a.py": 'cmd = ["mpirun", "-np", "2", prog]\n',
        "b.py": 'cmd = [exe, "-n", "4", "-hosts", "a,b", "-ppn", "1"]\n',
        "c.py": 'extra = ["--hostfile", hf, "--map-by", "node"]\n',
        "d.py": 'args = ["-genv", "LD_PRELOAD", lib]\n',
        "e.py": 'x = 1\ncmd = [*pre, "srun", "--nodelist=a", prog]\n',
    }
    clean = {
        # process names, a launcher passed to the helper, OSU's -x, SimGrid's smpirun
        "f.py": 'LAUNCHERS = ("mpirun", "orterun")\nTOOLS = ["srun", "sinfo"]\n'
                'cmd = mpirun(2, ["--bind-to", "core", "--mca", "btl", "self,tcp"])\n'
                'osu = [exe, "-m", "1:8", "-x", "2"]\n'
                'sim = ["smpirun", "-np", "4", "-hostfile", hf]\n',
    }
    for name, text in {**cases, **clean}.items():
        (tmp_path / name).write_text(text)
    real_rel = audit.rel
    try:
        audit.rel = lambda p: p.name
        found = audit.launch_offences(sorted(tmp_path.glob("*.py")))
    finally:
        audit.rel = real_rel
    assert found == ["a.py:1 mpirun", "b.py:1 -hosts", "c.py:1 --hostfile", "d.py:1 -genv",
                     "e.py:2 srun"]
    # the launcher module itself writes them; the one-way count includes launching
    launcher = audit.REPO / audit.LAUNCH_FILE
    assert "--hostfile" in launcher.read_text() and audit.launch_offences([launcher]) == []
    monkeypatch.setattr(audit, "launch_offences", lambda: ["x.py:1 mpirun"])
    assert audit.one_way_offences()[audit.LAUNCHING] == ["x.py:1 mpirun"]


def test_no_numbered_work_period_in_docs_names_or_sources(tmp_path: Path) -> None:
    assert audit.work_period_references() == []
    word = "sess" + "ion"  # spelled apart: this file is audited too
    bad = tmp_path / f"notes_{word}12.md"
    bad.write_text(f"# Notes\nMeasured in {word.title()} 31 on the busy machine.\n{word} data\n")
    ok = tmp_path / "CHANGELOG.md"
    ok.write_text(f"## {word} 30\n")
    real_rel = audit.rel
    try:
        audit.rel = lambda p: p.name
        assert audit.work_period_references([bad, ok]) == [
            f"notes_{word}12.md (its name)", f"notes_{word}12.md:2"]
    finally:
        audit.rel = real_rel
