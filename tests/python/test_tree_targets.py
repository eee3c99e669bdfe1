"""The countable house rules, measured on the whole tree (tests/python/tree_audit.py; run it
as a script for the full report): no C or Python file over 800 lines, no function over 120
lines, no function-static mutable state in src/, every bench/ script on the shared harness,
every C test program on the test kit."""

from __future__ import annotations

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
