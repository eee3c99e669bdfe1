"""Every third-party package that python/mpilab imports is declared in pyproject.toml's
[project] dependencies, and every one the tests and bench/ scripts import in those or in the
test extra ([project.optional-dependencies] test)."""
from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "mpilab"


def imported_top_levels(root: Path) -> dict[str, str]:
    """Top-level module names imported anywhere under root (absolute imports only), each
    with one place (file:line) that imports it."""
    found: dict[str, str] = {}
    for f in sorted(root.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"), filename=str(f))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for n in names:
                found.setdefault(n.split(".")[0], f"{f.relative_to(root)}:{node.lineno}")
    return found


def declared(test_extra: bool = False) -> set[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    deps = list(meta["project"]["dependencies"])
    if test_extra:  # the test extra and the others install-deps installs (static, reframe)
        for extra in meta["project"]["optional-dependencies"].values():
            deps += extra
    # "name>=1.0" / "name[extra]" -> name, normalised as pip does
    out = set()
    for d in deps:
        name = d
        for sep in "<>=!~[; ":
            name = name.split(sep)[0]
        out.add(name.lower().replace("_", "-"))
    return out


def undeclared(root: Path, have: set[str], local_dirs: tuple[Path, ...] = ()) -> list[str]:
    """Third-party modules imported under root whose distribution is not in have (the
    standard library, mpilab and modules that are files under root or local_dirs are not
    third-party)."""
    dists = packages_distributions()  # top-level module -> distributions providing it
    local = {f.stem for d in (root, *local_dirs) for f in d.rglob("*.py")}
    local |= {"mpilab", "__future__"}
    missing = []
    for mod, where in sorted(imported_top_levels(root).items()):
        if mod in sys.stdlib_module_names or mod in local:
            continue
        names = {d.lower().replace("_", "-") for d in dists.get(mod, [mod])}
        if not names & have:
            missing.append(f"{mod} ({where}; distribution {', '.join(sorted(names))})")
    return missing


def test_every_third_party_import_is_declared() -> None:
    missing = undeclared(PACKAGE, declared())
    assert not missing, "imported but not in pyproject.toml dependencies: " + "; ".join(missing)


def test_every_test_and_bench_import_is_declared() -> None:
    have = declared(test_extra=True)
    # tests import bench/ modules and bench/ scripts import tests' helpers
    mine = (ROOT / "tests", ROOT / "bench")
    missing = undeclared(ROOT / "tests", have, mine) + undeclared(ROOT / "bench", have, mine)
    assert not missing, ("imported by tests/ or bench/ but not in pyproject.toml dependencies "
                         "or the test extra: " + "; ".join(missing))


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    # the scanner itself: a third-party import in a file is found with its place
    (tmp_path / "m.py").write_text("import os\nfrom yaml import safe_load\n", encoding="utf-8")
    got = imported_top_levels(tmp_path)
    assert set(got) == {"os", "yaml"} and got["yaml"].endswith("m.py:2")


def test_the_check_sees_an_undeclared_test_import(tmp_path: Path) -> None:
    # a local module is not third-party; pytest counts only when declared
    (tmp_path / "helper.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "test_a.py").write_text("import helper\nimport pytest\n", encoding="utf-8")
    assert undeclared(tmp_path, {"pytest"}) == []
    assert [m.split()[0] for m in undeclared(tmp_path, set())] == ["pytest"]
