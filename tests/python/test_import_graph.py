"""The mpilab package is layered: no import cycle between its modules, counting the imports
made inside functions too (a lazy import only hides a cycle until the day both modules are
loaded in the other order), and no import inside a function that exists to dodge one. Read
from the source with ast, not by importing (tests/python/tree_audit.py)."""

from __future__ import annotations

from tree_audit import cycles, edges, function_imports, modules


def test_the_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_package() -> None:
    mods = modules()
    assert "mpilab.cli" in mods and "mpilab.testbed.faults" in mods
    g = edges(mods)
    assert "mpilab.hostlimits" in g["mpilab.launch"]  # lazy imports are seen
    assert "mpilab.hostlimits" not in edges(mods, lazy=False)["mpilab.launch"]
    assert cycles(g) == []


def test_no_function_level_import_dodges_a_cycle() -> None:
    lazy = function_imports()
    assert any(i.internal for i in lazy)  # the finder sees them
    assert [f"{i.file}:{i.line}" for i in lazy if i.dodges_cycle] == []
