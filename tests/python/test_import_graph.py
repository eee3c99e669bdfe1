"""The mpilab package is layered: no import cycle between its modules, counting the imports
made inside functions too (a lazy import only hides a cycle until the day both modules are
loaded in the other order). Read from the source with ast, not by importing."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "python"


def _modules() -> dict[str, Path]:
    mods = {}
    for f in (PKG / "mpilab").rglob("*.py"):
        parts = f.relative_to(PKG).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = f
    return mods


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for name, f in mods.items():
        out: set[str] = set()
        for n in ast.walk(ast.parse(f.read_text(), str(f))):
            targets: list[str] = []
            if isinstance(n, ast.Import):
                targets = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                targets = [f"{n.module}.{a.name}" if f"{n.module}.{a.name}" in mods
                           else n.module for a in n.names]
            out |= {t for t in targets if t in mods and t != name}
        g[name] = out
    return g


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in g:
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_package() -> None:
    mods = _modules()
    assert "mpilab.cli" in mods and "mpilab.testbed.faults" in mods
    g = _edges(mods)
    assert "mpilab.hostlimits" in g["mpilab.launch"]  # lazy imports are seen
    assert _cycles(g) == []
