"""Measure, on the whole tree, the countable targets of the house rules (issue 27): long files,
long functions, function-static mutable state, import cycles and function-level imports,
bench/ scripts outside the shared harness, C tests outside the test kit, capabilities
done a second way (ONE_WAY), references to numbered work periods, and the `duplicates`
pair count. Read from the sources (ctags for C, ast for Python); nothing is run.

    python tests/python/tree_audit.py              one report, each target with its offenders
    python tests/python/tree_audit.py --markdown   the figures table of docs/architecture.md
    python tests/python/tree_audit.py --update-docs  rewrite that table in docs/architecture.md

tests/python/test_tree_targets.py turns the countable targets into tests, and fails when the
table in docs/architecture.md is not what --markdown prints."""

from __future__ import annotations

import ast
import functools
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "python"
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120
CTAGS = ("ctags-universal", "universal-ctags", "ctags")


def tracked(*patterns: str) -> list[Path]:
    """Files git tracks (and untracked ones it does not ignore) matching the patterns."""
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others",
                          "--exclude-standard", "--", *patterns],
                         check=True, capture_output=True, text=True).stdout
    return sorted({REPO / p for p in out.splitlines() if (REPO / p).is_file()})


def rel(p: Path) -> str:
    return str(p.relative_to(REPO))


@functools.cache
def parse(p: Path) -> ast.Module:
    return ast.parse(p.read_text(), str(p))


def line_count(p: Path) -> int:
    with p.open("rb") as f:
        return sum(1 for _ in f)


# ---------------------------------------------------------------- files and functions


def long_files(limit: int = MAX_FILE_LINES) -> list[tuple[str, int]]:
    """C, header and Python files over limit lines."""
    return [(rel(p), n) for p in tracked("*.c", "*.h", "*.py")
            if (n := line_count(p)) > limit]


def ctags() -> str:
    for name in CTAGS:
        exe = shutil.which(name)
        if exe and "Universal Ctags" in subprocess.run([exe, "--version"], capture_output=True,
                                                       text=True).stdout:
            return exe
    raise RuntimeError("tree_audit: needs Universal Ctags (apt-get install universal-ctags; "
                       "scripts/install-deps installs it)")


def c_tags(files: list[Path], locals_too: bool = False) -> list[dict[str, object]]:
    """Universal Ctags' JSON tags of C files: functions (with their end line) and, with
    locals_too, local variables with their storage class and type."""
    if not files:
        return []
    kinds = "--kinds-C=fl" if locals_too else "--kinds-C=f"
    out = subprocess.run([ctags(), "--output-format=json", "--fields=+neKS",
                          "--fields-C=+{properties}", kinds, "--language-force=C", "-o", "-",
                          *map(str, files)],
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def c_functions() -> list[tuple[str, str, int, int]]:
    """(file, function, first line, lines) of every C function definition."""
    out = []
    for t in c_tags(tracked("*.c", "*.h")):
        if t.get("kind") == "function" and "end" in t:
            line, end = int(t["line"]), int(t["end"])  # type: ignore[call-overload]
            out.append((rel(Path(str(t["path"]))), str(t["name"]), line, end - line + 1))
    return out


def py_functions() -> list[tuple[str, str, int, int]]:
    """(file, function, first line, lines) of every Python function, nested ones included."""
    out = []
    for p in tracked("*.py"):
        for n in ast.walk(parse(p)):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([n.lineno] + [d.lineno for d in n.decorator_list])
                out.append((rel(p), n.name, first, (n.end_lineno or n.lineno) - first + 1))
    return out


def long_functions(limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, str, int, int]]:
    return sorted((f for f in c_functions() + py_functions() if f[3] > limit),
                  key=lambda f: -f[3])


def _top_level_const(typeref: str) -> bool:
    """Whether a ctags type ("typename:const int", "typename:char * const") is const itself:
    the last '*' is followed by const, or there is no pointer and const qualifies the base.
    An array's elements count: 'const char * []' is an array of mutable pointers."""
    t = re.sub(r"(\[[^]]*\]\s*)+$", "", typeref.removeprefix("typename:")).strip()
    if "*" in t:
        return t.rsplit("*", 1)[1].split() == ["const"]
    return "const" in t.split()


def static_locals(under: str = "src") -> list[tuple[str, int, str, str]]:
    """(file, line, function, declaration type) of every function-static local that is not
    const itself under the folder: mutable state kept between calls."""
    out = []
    for t in c_tags(tracked(f"{under}/*.c", f"{under}/*.h"), locals_too=True):
        if t.get("kind") == "local" and "static" in str(t.get("properties", "")).split(","):
            typeref = str(t.get("typeref", ""))
            if not _top_level_const(typeref):
                out.append((rel(Path(str(t["path"]))), int(t["line"]),  # type: ignore[call-overload]
                            f"{t.get('scope')}:{t['name']}", typeref.removeprefix("typename:")))
    return out


# ---------------------------------------------------------------- the Python package


def modules() -> dict[str, Path]:
    mods = {}
    for f in (PKG / "mpilab").rglob("*.py"):
        parts = f.relative_to(PKG).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = f
    return mods


def _targets(n: ast.Import | ast.ImportFrom, mods: dict[str, Path]) -> list[str]:
    if isinstance(n, ast.Import):
        return [a.name for a in n.names]
    if n.module and n.level == 0:
        return [f"{n.module}.{a.name}" if f"{n.module}.{a.name}" in mods else n.module
                for a in n.names]
    return []


def edges(mods: dict[str, Path], lazy: bool = True) -> dict[str, set[str]]:
    """The package's import graph; lazy=False leaves out the imports made inside functions."""
    g: dict[str, set[str]] = {}
    for name, f in mods.items():
        tree = parse(f)
        inner = {id(i) for i, _ in _function_imports(tree)}
        out: set[str] = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.Import | ast.ImportFrom) and (lazy or id(n) not in inner):
                out |= {t for t in _targets(n, mods) if t in mods and t != name}
        g[name] = out
    return g


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
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
                    work.append((w, iter(sorted(g.get(w, ())))))
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


def _function_imports(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """Import statements inside a function, with the (outermost) function's name."""
    out: list[tuple[ast.Import | ast.ImportFrom, str]] = []
    seen: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for n in ast.walk(fn):
                if isinstance(n, ast.Import | ast.ImportFrom) and id(n) not in seen:
                    seen.add(id(n))
                    out.append((n, fn.name))
    return out


@dataclass
class LazyImport:
    file: str
    line: int
    function: str
    names: list[str]      # what it imports
    internal: bool        # an mpilab module
    dodges_cycle: bool    # hoisted to the top of its module, it would close a cycle


def function_imports() -> list[LazyImport]:
    """Every import made inside a function in python/mpilab, and whether it exists to dodge a
    cycle: the graph of top-level imports plus this one edge has a cycle through it."""
    mods = modules()
    eager = edges(mods, lazy=False)
    out = []
    for name, f in sorted(mods.items()):
        for n, fn in _function_imports(parse(f)):
            raw = [a.name for a in n.names] if isinstance(n, ast.Import) else \
                [f"{'.' * n.level}{n.module or ''}:{a.name}" for a in n.names]
            targets = {t for t in _targets(n, mods) if t in mods and t != name}
            dodges = False
            for t in targets:
                g = {k: set(v) for k, v in eager.items()}
                g[name].add(t)
                dodges |= any(name in c and t in c for c in cycles(g))
            internal = bool(targets) or any(r.startswith(("mpilab", ".")) for r in raw)
            out.append(LazyImport(rel(f), n.lineno, fn, raw, internal, dodges))
    return out


# ---------------------------------------------------------------- bench/ and the C tests

_SIBLINGS = "|".join(re.escape(p.stem) for p in sorted((REPO / "bench").glob("*.py"))
                     if "__main__" in p.read_text() and p.stem != "harness")
BENCH_RULES = {
    "REPO constant": re.compile(r"^\s*(REPO|ROOT)\s*=\s*(Path\(|\$\(|\")", re.M),
    # a script in a folder below bench/ may put bench/ itself on the path, for the harness
    "sys.path.insert": re.compile(
        r"sys\.path\.(insert|append)\((?!0, str\(Path\(__file__\)\.resolve\(\)\.parents\[1\]\)\))"),
    "private mpilab() helper": re.compile(
        r"^\s*def _?mpilab\w*\(|^[^#\n]*-m\s+mpilab\.cli|[\[(]\s*sys\.executable,\s*\"-m\","
        r"\s*\"mpilab\.cli\"", re.M),
    "private mpirun command": re.compile(
        r"""["']mpirun(\.openmpi)?["']\s*,|mpirun_prefix\(|^[^#\n]*\bmpirun(\.openmpi)?\s+-""",
        re.M),
    "PYTHONPATH or root exported": re.compile(
        r"^\s*export\s+(PYTHONPATH|OMPI_ALLOW_RUN_AS_ROOT)|PYTHONPATH=str\(", re.M),
    "sibling script imported": re.compile(
        rf"^\s*(from|import)\s+({_SIBLINGS})\b", re.M),
}
HARNESS_USE = {".py": re.compile(r"^\s*(import harness|from harness import)", re.M),
               ".sh": re.compile(r"^\s*(\.|source)\s+.*harness\.sh", re.M)}
HARNESS_FILES = {"bench/harness.py", "bench/harness.sh"}


def bench_scripts() -> list[Path]:
    return [p for p in tracked("bench/*.py", "bench/*.sh", "bench/*/*.py", "bench/*/*.sh")
            if rel(p) not in HARNESS_FILES]


def bench_offences() -> dict[str, list[str]]:
    """Per bench/ script, what it does outside the shared harness ("no harness" where it
    neither imports bench/harness.py nor sources bench/harness.sh)."""
    out: dict[str, list[str]] = {}
    for p in bench_scripts():
        text = p.read_text()
        bad = [name for name, rx in BENCH_RULES.items() if rx.search(text)]
        if not HARNESS_USE[p.suffix].search(text):
            bad.insert(0, "no harness")
        if bad:
            out[rel(p)] = bad
    return out


KIT_OTHER = re.compile(r'#\s*include\s+"(bench_check|mpi_check)\.h"')
PRIVATE_CHECK = re.compile(r"^\s*#\s*define\s+(CHECK|EXPECT|ASSERT|REQUIRE|TEST|FAIL|OK)\w*\b",
                           re.M)
LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def c_test_programs() -> list[Path]:
    """The C test programs: the tests/ sources of the executables that a CMake test runs
    (mpilab_add_test, add_test, mpilab_add_mpi_test), not the fuzz targets, not the helper
    programs a test only starts, not the bench programs built beside them."""
    cmake = "\n".join(p.read_text() for p in tracked("CMakeLists.txt", "*/CMakeLists.txt")
                      if "tests/fuzz" not in rel(p))
    progs = dict(re.findall(r"(?:add_executable|mpilab_add_test(?:_program)?)\(\s*(\w+)\s+"
                            r"\$\{CMAKE_SOURCE_DIR\}/(tests/\S+?\.c)", cmake))
    calls = " ".join(re.findall(r"(?:\badd_test|mpilab_add_mpi_test|mpilab_add_test)\(([^)]*)\)",
                                cmake))
    return sorted(REPO / src for name, src in progs.items()
                  if re.search(rf"\b{name}\b", calls))


def _includes_kit(p: Path, seen: set[Path] | None = None) -> bool:
    """p includes tests/c/kit.h, itself or through a header of the tests."""
    seen = seen or set()
    for inc in LOCAL_INCLUDE.findall(p.read_text()):
        if Path(inc).name == "kit.h":
            return True
        for d in (p.parent, REPO / "tests" / "c", REPO / "tests" / "mpi"):
            h = (d / inc).resolve()
            if h.is_file() and h not in seen and REPO / "tests" in h.parents:
                seen.add(h)
                if _includes_kit(h, seen):
                    return True
    return False


def c_test_offences() -> dict[str, list[str]]:
    """Per C test program, how it falls short of the kit: not including tests/c/kit.h, no
    named case, private check macros, the older check headers."""
    out: dict[str, list[str]] = {}
    for p in c_test_programs():
        text = p.read_text()
        bad = []
        if not _includes_kit(p):
            bad.append("no kit.h")
        if not re.search(r"^MPILAB_TEST\(\w+\)", text, re.M):
            bad.append("no named case")
        if m := PRIVATE_CHECK.findall(text):
            bad.append("private macros " + ",".join(sorted(set(m))))
        if KIT_OTHER.search(text):
            bad.append("older check header")
        if bad:
            out[rel(p)] = bad
    return out


def duplicate_pairs(seconds: int = 300) -> tuple[int | None, str]:
    """The pair count of the `duplicates` tool over the whole tree, and its first line."""
    exe = shutil.which("duplicates")
    if exe is None:
        return None, "duplicates: not on PATH"
    first = subprocess.run([exe, "--repo", str(REPO), "--seconds", str(seconds)],
                           capture_output=True, text=True).stdout.splitlines()[:1]
    m = re.match(r"(\d+) pairs", first[0]) if first else None
    return (int(m.group(1)) if m else 0 if first and "no duplicates" in first[0] else None,
            first[0] if first else "")


# ---------------------------------------------------------------- the report


# ---------------------------------------------------------------- one way to do each thing

# capability -> (the libraries it is done with elsewhere, the files of python/mpilab that
# may import those libraries). Statistics go through scipy.stats: distributions written by
# hand (math.erf, math.lgamma) or taken from Python's statistics.NormalDist are offences
# anywhere (its descriptive functions, median, fmean, stdev, are not distributions).
ONE_WAY = {
    "schema validation (jsonschema, in mpilab.schemacheck)":
        (("jsonschema", "fastjsonschema"), ("python/mpilab/schemacheck.py",)),
    "plotting (plotly)": (("matplotlib", "bokeh", "seaborn", "pygal", "altair"), ()),
    "progress (rich, through mpilab.stage; the survey's bar)":
        (("rich", "tqdm", "progressbar", "alive_progress"),
         ("python/mpilab/stage.py", "python/mpilab/commands/survey.py")),
}
STATS = "statistics (scipy.stats)"
HAND_STATS = {"math": {"erf", "erfc", "lgamma", "gamma"}, "statistics": {"NormalDist"}}
# launching: every mpirun / mpiexec / srun command line is built by mpilab.launch (Launcher,
# Placement, rank_env_args). Elsewhere (python/mpilab and bench/), a list that names a
# launcher followed by an option, or that holds the launchers' own placement or rank
# variable syntax, is a second launcher (smpirun, SimGrid's, is not one of them; --mca
# and --bind-to are arguments handed to the launcher, as --launcher-arg is; Open MPI's -x
# is left out: OSU's warm-up option has the same name)
LAUNCHING = "launching (mpilab.launch)"
LAUNCH_FILE = "python/mpilab/launch.py"
LAUNCHER_NAMES = {"mpirun", "mpirun.openmpi", "orterun", "mpiexec", "mpiexec.openmpi",
                  "mpiexec.mpich", "mpiexec.hydra", "srun"}
LAUNCH_SYNTAX = {"--hostfile", "--machinefile", "-machinefile", "--map-by", "--oversubscribe",
                 "plm_rsh_agent", "plm_rsh_no_tree_spawn", "-launcher", "-launcher-exec",
                 "-iface", "-hosts", "-ppn", "-genv", "--nodelist", "--distribution"}


def launch_offences(files: list[Path] | None = None) -> list[str]:
    """file:line what, for every launcher command line (or piece of one) written outside
    mpilab.launch, in python/mpilab and bench/."""
    found: list[str] = []
    for f in files if files is not None else tracked("python/mpilab/*.py", "bench/*.py"):
        if rel(f) == LAUNCH_FILE:
            continue
        for n in ast.walk(parse(f)):
            if not isinstance(n, ast.List):
                continue
            words = [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str)
                     else None for e in n.elts]
            for k, w in enumerate(words):
                nxt = words[k + 1] if k + 1 < len(words) else None
                if (w in LAUNCH_SYNTAX or w in LAUNCHER_NAMES and nxt is not None
                        and nxt.startswith("-")):
                    found.append(f"{rel(f)}:{n.lineno} {w}")
                    break
    return found


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level name) of every module an ast imports."""
    out: list[tuple[int, str]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out += [(n.lineno, a.name.split(".")[0]) for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out.append((n.lineno, n.module.split(".")[0]))
    return out


def one_way_offences(files: list[Path] | None = None) -> dict[str, list[str]]:
    """capability -> the places (file:line what) doing it a second way."""
    found: dict[str, list[str]] = {}
    for f in files if files is not None else tracked("python/mpilab/*.py"):
        tree = parse(f)
        for line, mod in _imported(tree):
            for what, (libs, allowed) in ONE_WAY.items():
                if mod in libs and rel(f) not in allowed:
                    found.setdefault(what, []).append(f"{rel(f)}:{line} imports {mod}")
        for n in ast.walk(tree):
            if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                    and n.attr in HAND_STATS.get(n.value.id, ())):
                found.setdefault(STATS, []).append(f"{rel(f)}:{n.lineno} {n.value.id}.{n.attr}")
            elif isinstance(n, ast.ImportFrom) and n.module in HAND_STATS and not n.level:
                found.setdefault(STATS, []).extend(
                    f"{rel(f)}:{n.lineno} {n.module}.{a.name}" for a in n.names
                    if a.name in HAND_STATS[n.module])
    if files is None:
        launching = launch_offences()
        if launching:
            found[LAUNCHING] = launching
    return found


# history (numbered work periods) belongs in CHANGELOG.md, never in docs, names or comments
WORK_PERIOD = re.compile(r"(?<![a-z])(session|work[- ]period|sprint)[-_ ]?#?\d+(?!\d)",
                         re.IGNORECASE)


def work_period_references(files: list[Path] | None = None) -> list[str]:
    """file:line (or the file's name) of every reference to a numbered work period in the
    tracked docs, sources, tests and scripts (CHANGELOG.md is where history goes)."""
    found: list[str] = []
    for f in files if files is not None else tracked(
            "*.md", "*.py", "*.c", "*.h", "*.sh", "*.cmake", "CMakeLists.txt", "scripts/*"):
        if f.name == "CHANGELOG.md":
            continue
        if WORK_PERIOD.search(f.name):
            found.append(f"{rel(f)} (its name)")
        try:
            text = f.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{rel(f)}:{i}" for i, line in enumerate(text.splitlines(), 1)
                  if WORK_PERIOD.search(line)]
    return found


def report(dup_seconds: int = 300) -> int:
    """Print every target with its offenders; returns the number of targets missed."""
    missed = 0

    def head(title: str, n: int, target: str, ok: bool) -> None:
        nonlocal missed
        missed += not ok
        print(f"\n[{'ok' if ok else 'MISSED'}] {title}: {n} ({target})")

    lf = long_files()
    head(f"files over {MAX_FILE_LINES} lines (C, headers, Python)", len(lf), "target 0", not lf)
    for f, n in lf:
        print(f"  {f}: {n}")
    lfn = long_functions()
    head(f"functions over {MAX_FUNCTION_LINES} lines (C by ctags, Python by ast)", len(lfn),
         "target 0", not lfn)
    for f, name, line, n in lfn:
        print(f"  {f}:{line} {name}: {n}")
    sl = static_locals()
    head("function-static mutable locals in src/", len(sl), "target 0", not sl)
    for f, line, name, t in sl:
        print(f"  {f}:{line} {name} ({t})")
    cyc = cycles(edges(modules()))
    head("import cycles in python/mpilab (lazy imports counted)", len(cyc), "target 0", not cyc)
    for c in cyc:
        print("  " + " -> ".join(c))
    fi = function_imports()
    dodging = [i for i in fi if i.dodges_cycle]
    internal = [i for i in fi if i.internal]
    head("function-level imports in python/mpilab that dodge a cycle", len(dodging),
         f"target 0; {len(fi)} function-level imports in all, {len(internal)} of mpilab "
         f"modules", not dodging)
    for i in fi:
        kind = "DODGES A CYCLE" if i.dodges_cycle else "mpilab" if i.internal else "external"
        print(f"  {i.file}:{i.line} {i.function}: {', '.join(i.names)} [{kind}]")
    bo = bench_offences()
    head("bench/ scripts outside the shared harness", len(bo),
         f"target 0 of {len(bench_scripts())}", not bo)
    for f, why in bo.items():
        print(f"  {f}: {'; '.join(why)}")
    co = c_test_offences()
    head("C test programs outside the kit (tests/c/kit.h, named cases)", len(co),
         f"target 0 of {len(c_test_programs())}", not co)
    for f, why in co.items():
        print(f"  {f}: {'; '.join(why)}")
    ow = one_way_offences()
    head("capabilities done a second way (schema, plotting, progress, statistics, launching)",
         sum(map(len, ow.values())), "target 0", not ow)
    for what, where in ow.items():
        print(f"  {what}: {'; '.join(where)}")
    wp = work_period_references()
    head("references to numbered work periods (docs, file names, sources)", len(wp),
         "target 0", not wp)
    for w in wp:
        print(f"  {w}")
    n, line = duplicate_pairs(dup_seconds)
    head("`duplicates` pairs on the whole tree", -1 if n is None else n, "target < 105",
         n is not None and n < 105)
    print(f"  {line}")
    print(f"\n{missed} target(s) missed")
    return missed


# ---------------------------------------------------------------- docs/architecture.md

ARCH_DOC = REPO / "docs" / "architecture.md"
FIGURES_BEGIN = "<!-- tree_audit.py --markdown: begin -->"
FIGURES_END = "<!-- tree_audit.py --markdown: end -->"


def figures() -> list[tuple[str, str]]:
    """The tree's figures that docs/architecture.md quotes, as (figure, value) rows: sizes of
    the thin tools and the recipes' worked examples, the longest functions, the kit and the
    house targets (everything but the `duplicates` count, which takes minutes)."""
    fns = c_functions()

    def longest(prefixes: tuple[str, ...]) -> str:
        f = max((f for f in fns if f[0].startswith(prefixes)), key=lambda f: f[3])
        return f"`{f[1]}` ({f[0]}), {f[3]} lines"

    def size(path: str) -> str:
        return f"{line_count(REPO / path)} lines"

    def main_of(path: str) -> str:
        n = next(f[3] for f in fns if f[0] == path and f[1] == "main")
        return f"{line_count(REPO / path)} lines, `main` {n}"

    cases = json.loads((REPO / "tests" / "data" / "parse_cases.json").read_text())["cases"]
    progs, scripts = c_test_programs(), bench_scripts()
    fi = function_imports()
    return [
        ("`tools/mpilab-bench.c`", main_of("tools/mpilab-bench.c")),
        ("`tools/mpilab-wavefront.c`", size("tools/mpilab-wavefront.c") + ", longest function "
         + longest(("tools/mpilab-wavefront.c",)).split(" (")[0]
         + ", " + longest(("tools/mpilab-wavefront.c",)).rsplit(", ", 1)[1]),
        ("longest function in tools/ and src/", longest(("tools/", "src/"))),
        ("worked example of an operation: `tests/mpi/recipe_pingpong.c` (entry and test)",
         size("tests/mpi/recipe_pingpong.c")),
        ("worked example of a collective: `tests/mpi/recipe_scatter.c` (entry, test, "
         "prediction)", size("tests/mpi/recipe_scatter.c")),
        ("C test programs in named cases (tests/c/kit.h)",
         f"{len(progs) - len(c_test_offences())} of {len(progs)}"),
        ("parser cases shared by C and Python (`tests/data/parse_cases.json`)", str(len(cases))),
        (f"files over {MAX_FILE_LINES} lines (C, headers, Python)", str(len(long_files()))),
        (f"functions over {MAX_FUNCTION_LINES} lines", str(len(long_functions()))),
        ("function-static mutable locals in src/", str(len(static_locals()))),
        ("import cycles in python/mpilab / function-level imports",
         f"{len(cycles(edges(modules())))} / {len(fi)}"),
        ("bench/ scripts outside the shared harness",
         f"{len(bench_offences())} of {len(scripts)}"),
    ]


def figures_markdown() -> str:
    rows = ["| figure | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in figures()]
    return "\n".join(rows) + "\n"


def docs_table(text: str) -> str | None:
    """The generated table in a docs page's text (between the markers), None without them."""
    if FIGURES_BEGIN not in text or FIGURES_END not in text:
        return None
    return text.split(FIGURES_BEGIN, 1)[1].split(FIGURES_END, 1)[0].strip("\n") + "\n"


def update_docs(path: Path = ARCH_DOC) -> None:
    """Rewrite the table between the markers of path (temporary name and rename)."""
    text = path.read_text()
    if docs_table(text) is None:
        raise SystemExit(f"tree_audit: {path}: no {FIGURES_BEGIN} ... {FIGURES_END} markers")
    head, rest = text.split(FIGURES_BEGIN, 1)
    tail = rest.split(FIGURES_END, 1)[1]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{head}{FIGURES_BEGIN}\n{figures_markdown()}{FIGURES_END}{tail}")
    tmp.replace(path)


if __name__ == "__main__":
    if sys.argv[1:] == ["--markdown"]:
        print(figures_markdown(), end="")
    elif sys.argv[1:] == ["--update-docs"]:
        update_docs()
    elif sys.argv[1:]:
        print("usage: tree_audit.py [--markdown | --update-docs]", file=sys.stderr)
        sys.exit(2)
    else:
        sys.exit(1 if report() else 0)
