"""Every third-party package that python/mpilab imports is declared in pyproject.toml's
[project] dependencies (issue 28 item 9: plotly was imported and not declared)."""
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


def declared() -> set[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    deps = meta["project"]["dependencies"]
    # "name>=1.0" / "name[extra]" -> name, normalised as pip does
    out = set()
    for d in deps:
        name = d
        for sep in "<>=!~[; ":
            name = name.split(sep)[0]
        out.add(name.lower().replace("_", "-"))
    return out


def test_every_third_party_import_is_declared() -> None:
    dists = packages_distributions()  # top-level module -> distributions providing it
    stdlib = sys.stdlib_module_names
    have = declared()
    missing = []
    for mod, where in sorted(imported_top_levels(PACKAGE).items()):
        if mod in stdlib or mod == "mpilab" or mod == "__future__":
            continue
        names = {d.lower().replace("_", "-") for d in dists.get(mod, [mod])}
        if not names & have:
            missing.append(f"{mod} ({where}; distribution {', '.join(sorted(names))})")
    assert not missing, "imported but not in pyproject.toml dependencies: " + "; ".join(missing)


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    # the scanner itself: a third-party import in a file is found with its place
    (tmp_path / "m.py").write_text("import os\nfrom yaml import safe_load\n", encoding="utf-8")
    got = imported_top_levels(tmp_path)
    assert set(got) == {"os", "yaml"} and got["yaml"].endswith("m.py:2")
