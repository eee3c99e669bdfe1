"""cmake/entries_check.sh, the build step that refuses a C file defining built-in entries
(MPILAB_ENTRIES(tag, ...)) whose mpilab_entries(tag FILE) line is missing, and a line whose
tag no file defines: one line each (file:line and the tag), status 1, no stamp (so the build
stops); the real tree's build runs it (tests/mpi/recipe_builtin.sh misspells and leaves out
a line in a copy of the tree)."""
from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "cmake" / "entries_check.sh"


def _check(tmp_path: Path, tags: str) -> tuple[subprocess.CompletedProcess[str], bool]:
    src = tmp_path / "src"
    (src / "bench").mkdir(parents=True, exist_ok=True)
    (src / "bench" / "a.c").write_text('#include "mpilab/ops.h"\n\n'
                                       'MPILAB_ENTRIES(alpha, {.name = "a"})\n')
    # a plugin's list and the macro's own definition are not built-in entries
    (src / "bench" / "b.c").write_text("MPILAB_PLUGIN_ENTRIES({.name = \"b\"})\n"
                                       "#define MPILAB_ENTRIES(tag, ...) x\n")
    (src / "bench" / "c.c").write_text("  MPILAB_ENTRIES( gamma,\n    {.name = \"c\"})\n")
    stamp = tmp_path / "stamp"
    stamp.write_text("old")
    r = subprocess.run(["sh", str(SCRIPT), str(tmp_path), str(stamp), tags,
                        *(str(src / "bench" / n) for n in ("a.c", "b.c", "c.c"))],
                       capture_output=True, text=True, timeout=60)
    return r, stamp.exists()


def test_every_entry_file_listed_passes(tmp_path: Path) -> None:
    r, stamped = _check(tmp_path, "alpha,gamma")
    assert r.returncode == 0 and r.stdout == "" and stamped, r.stdout + r.stderr


def test_a_file_left_out_is_named_in_one_line(tmp_path: Path) -> None:
    r, stamped = _check(tmp_path, "alpha")
    assert r.returncode == 1 and not stamped
    assert r.stdout.splitlines() == [
        "src/bench/c.c:1: defines built-in entries 'gamma' but no mpilab_entries(gamma c.c) "
        "line names the file in its folder's CMakeLists.txt"], r.stdout


def test_a_tag_that_is_a_prefix_of_a_listed_one_is_not_listed(tmp_path: Path) -> None:
    r, _ = _check(tmp_path, "alphabet,gamma")
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "src/bench/a.c:3: defines built-in entries 'alpha' but no mpilab_entries(alpha a.c) "
        "line names the file in its folder's CMakeLists.txt",
        "mpilab_entries(alphabet ...): no file of the built folders defines "
        "MPILAB_ENTRIES(alphabet, ...)"], r.stdout

