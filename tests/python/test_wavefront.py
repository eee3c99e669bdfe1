"""`mpilab wavefront` end to end through the CLI (wraps the C tool mpilab-wavefront)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, cli_env


def _tool_dir() -> str | None:
    cands = [os.environ.get("MPILAB_BIN", ""), str(REPO / "build" / "bin"),
             str(REPO / "build-wf" / "bin")]
    for c in cands:
        if c and (Path(c) / "mpilab-wavefront").is_file():
            return c
    return None


TOOLS = _tool_dir()
needs_tool = pytest.mark.skipif(TOOLS is None, reason="mpilab-wavefront not built")


def _env() -> dict[str, str]:
    e = cli_env()
    assert TOOLS is not None
    e["MPILAB_BIN"] = TOOLS
    return e


@needs_tool
@pytest.mark.mpi
def test_create_convert_run_verify(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    env = _env()
    p = run_cli("wavefront", "create", "--rows", "29", "--cols", "31", "--seed", "3",
                "d0", "c0", env=env)
    assert p.returncode == 0, p.stderr
    for what, src in (("d", "d0"), ("c", "c0")):
        p = run_cli("wavefront", "convert", "--layout", "optimized", "--mb", "6", "--nb", "7",
                    "--bands", "2", src, what, env=env)
        assert p.returncode == 0, p.stderr
    assert (tmp_path / "d.0").is_file() and (tmp_path / "d.1").is_file()
    p = run_cli("wavefront", "run", "--np", "2", "--data", "d", "--coef", "c",
                "--iterations", "3", "--waves", "2", "--json", "r.json", env=env)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["schema"] == "mpilab.results/1"
    assert doc["wavefront"]["workers"] == 2 and doc["wavefront"]["mode"] == "mpi"
    assert doc["measurements"][0]["op"] == "wavefront"
    assert len(doc["measurements"][0]["samples"]) == 3
    # the results reader takes it (timing "iteration" was refused as unknown, which stopped
    # `mpilab compare` at its application-scaling part)
    from mpilab import results

    assert results.load(tmp_path / "r.json").measurements[0].timing == "iteration"
    p = run_cli("wavefront", "verify", "--initial", "d0", "--coef", "c0", "--iterations", "3",
                "d", env=env)
    assert p.returncode == 0 and "bitwise equal" in p.stdout, p.stdout + p.stderr
    # threads on a single file, post-processed back to row-major
    p = run_cli("wavefront", "convert", "--layout", "block", "--mb", "6", "--nb", "7", "d0", "b",
                env=env)
    assert p.returncode == 0, p.stderr
    p = run_cli("wavefront", "run", "--data", "b", "--coef", "c0", "--iterations", "2",
                "--workers", "3", "--io", "mmap", env=env)
    assert p.returncode == 0, p.stderr
    assert "time per iteration" in p.stdout
    p = run_cli("wavefront", "verify", "--initial", "d0", "--coef", "c0", "--iterations", "1",
                "b", env=env)
    assert p.returncode == 1 and "DIFFERENT" in p.stdout


@needs_tool
def test_uring_or_auto(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """io_uring where the kernel allows it (else auto must fall back to pread and an
    explicit uring must fail with one line); the result is bitwise the reference."""
    env = _env()
    assert run_cli("wavefront", "create", "--rows", "23", "--cols", "19", "d0", "c0",
                   env=env).returncode == 0
    for what, src in (("d", "d0"), ("c", "c0")):
        assert run_cli("wavefront", "convert", "--layout", "optimized", "--mb", "5", "--nb",
                       "4", src, what, env=env).returncode == 0
    p = run_cli("wavefront", "run", "--data", "d", "--coef", "c", "--iterations", "2",
                "--workers", "2", "--io", "uring", "--queue-depth", "3", "--json", "u.json",
                env=env)
    if p.returncode == 0:
        doc = json.loads((tmp_path / "u.json").read_text())
        assert doc["wavefront"]["io"] == "uring" and doc["wavefront"]["queue_depth"] == 3
        assert doc["measurements"][0]["impl"] == "optimized/uring"
    else:
        assert p.returncode == 2 and "io_uring" in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
        p = run_cli("wavefront", "run", "--data", "d", "--coef", "c", "--iterations", "2",
                    "--workers", "2", "--io", "auto", env=env)
        assert p.returncode == 0 and "io pread" in p.stdout, p.stdout + p.stderr
    p = run_cli("wavefront", "verify", "--initial", "d0", "--coef", "c0", "--iterations", "2",
                "d", env=env)
    assert p.returncode == 0 and "bitwise equal" in p.stdout, p.stdout + p.stderr


@needs_tool
def test_bad_input_one_line(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    env = _env()
    assert run_cli("wavefront", "create", "--rows", "9", "--cols", "9", "d0", "c0",
                   env=env).returncode == 0
    p = run_cli("wavefront", "convert", "--layout", "block", "--mb", "10", "--nb", "3", "d0",
                "out", env=env)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "larger than" in p.stderr
    assert not (tmp_path / "out").exists()
    p = run_cli("wavefront", "run", "--data", "missing", "--coef", "c0", "--iterations", "1",
                "--mb", "3", "--nb", "3", env=env)
    assert p.returncode == 2 and "missing" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = run_cli("wavefront", "run", "--data", "d0", "--coef", "c0", "--iterations", "1",
                "--workers", "0", env=env)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    p = run_cli("wavefront", "run", "--data", "d0", "--coef", "c0", "--iterations", "1",
                "--mb", "3", "--nb", "3", "--io", "uring", "--queue-depth", "40", env=env)
    assert p.returncode == 2 and "queue-depth" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


@needs_tool
@pytest.mark.parametrize("extra, says", [
    (["--json", "adir"], "adir: is a directory"),
    (["--json", ""], "--json: empty file name"),
    (["--launcher", "abc"], "--launcher abc: unknown launcher"),
    (["--data", "adir"], "--data adir: is a directory"),
    (["--coef", ""], "--coef: empty file name"),
])
def test_run_refuses_before_the_data_is_changed(run_cli: Callable[..., Any], tmp_path: Path,
                                                extra: list[str], says: str) -> None:
    """A --json the tool could write only after the iterations (which change DATA in place)
    or a --launcher that threads mode would ignore: one line, DATA unchanged."""
    env = _env()
    assert run_cli("wavefront", "create", "--rows", "8", "--cols", "8", "d0", "c0",
                   env=env).returncode == 0
    (tmp_path / "adir").mkdir()
    before = (tmp_path / "d0").read_bytes()
    args = {"--data": "d0", "--coef": "c0"}
    for k in range(0, len(extra), 2):
        args[extra[k]] = extra[k + 1]
    p = run_cli("wavefront", "run", *[x for kv in args.items() for x in kv],
                "--iterations", "1", "--mb", "2", "--nb", "2", env=env)
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert says in p.stderr, p.stderr
    assert (tmp_path / "d0").read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["adir", "c0", "d0"]


@needs_tool
@pytest.mark.parametrize("out, says", [("adir", "adir: is a directory"),
                                       ("nofolder/r.json", "its folder nofolder does not exist"),
                                       ("", "output: empty file name")])
def test_the_tool_refuses_its_results_file_before_the_iterations(tmp_path: Path, out: str,
                                                                 says: str) -> None:
    """mpilab-wavefront itself (not only `mpilab wavefront`): a --json it could not write
    after the iterations, which change DATA in place, is one line and exit 2 at parse time,
    DATA unchanged."""
    tool = str(Path(str(TOOLS)) / "mpilab-wavefront")
    assert subprocess.run([tool, "create", "--rows", "8", "--cols", "8", "d0", "c0"],
                          cwd=tmp_path, capture_output=True).returncode == 0
    (tmp_path / "adir").mkdir()
    before = (tmp_path / "d0").read_bytes()
    p = subprocess.run([tool, "run", "--data", "d0", "--coef", "c0", "--iterations", "1",
                        "--mb", "2", "--nb", "2", "--json", out], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert says in p.stderr, p.stderr
    assert (tmp_path / "d0").read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["adir", "c0", "d0"]


@needs_tool
def test_verify_refuses_a_folder_or_an_empty_name(run_cli: Callable[..., Any],
                                                  tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    for args, says in ((["--initial", "adir", "--coef", "c0", "d0"], "--initial adir"),
                       (["--initial", "d0", "--coef", "", "d0"], "--coef: empty"),
                       (["--initial", "d0", "--coef", "c0", "adir"], "result adir")):
        p = run_cli("wavefront", "verify", "--iterations", "0", *args, env=_env())
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert says in p.stderr, p.stderr


def test_argument_errors(run_cli: Callable[..., Any]) -> None:
    p = run_cli("wavefront", "convert", "--layout", "diagonal", "a", "b")
    assert p.returncode == 2 and "diagonal" in p.stderr
    p = run_cli("wavefront", "create", "--rows", "-3", "--cols", "4", "a", "b")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


@needs_tool
@pytest.mark.mpi
def test_block_chaining(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """--chain block: bitwise the reference (threads with mmap, 2 ranks with pread), the
    JSON says so and reports a W-fold smaller write volume than band chaining; io_uring
    is refused with one line."""
    env = _env()
    assert run_cli("wavefront", "create", "--rows", "31", "--cols", "29", "--seed", "4",
                   "d0", "c0", env=env).returncode == 0
    for what, src in (("d", "d0"), ("c", "c0")):
        assert run_cli("wavefront", "convert", "--layout", "optimized", "--mb", "7", "--nb",
                       "5", src, what, env=env).returncode == 0
    written = {}
    for chain in ("band", "block"):
        assert run_cli("wavefront", "convert", "--layout", "optimized", "--mb", "7", "--nb",
                       "5", "d0", "w", env=env).returncode == 0
        p = run_cli("wavefront", "run", "--data", "w", "--coef", "c", "--iterations", "6",
                    "--workers", "2", "--waves", "3", "--chain", chain, "--io", "mmap",
                    "--json", f"{chain}.json", env=env)
        assert p.returncode == 0, p.stderr
        doc = json.loads((tmp_path / f"{chain}.json").read_text())
        assert doc["wavefront"]["chain"] == chain and doc["wavefront"]["buffer_bytes"] > 0
        assert doc["provenance"]["options"]["chain"] == chain
        written[chain] = doc["wavefront"]["bytes_written"]
        p = run_cli("wavefront", "verify", "--initial", "d0", "--coef", "c0", "--iterations",
                    "6", "w", env=env)
        assert p.returncode == 0 and "bitwise equal" in p.stdout, p.stdout + p.stderr
    assert written["band"] == 3 * written["block"]
    for what, src in (("b", "d0"), ("bc", "c0")):
        assert run_cli("wavefront", "convert", "--layout", "block", "--mb", "7", "--nb", "5",
                       "--bands", "2", src, what, env=env).returncode == 0
    p = run_cli("wavefront", "run", "--np", "2", "--data", "b", "--coef", "bc", "--iterations",
                "5", "--waves", "2", "--chain", "block", env=env)
    assert p.returncode == 0, p.stderr
    p = run_cli("wavefront", "verify", "--initial", "d0", "--coef", "c0", "--iterations", "5",
                "b", env=env)
    assert p.returncode == 0 and "bitwise equal" in p.stdout, p.stdout + p.stderr
    p = run_cli("wavefront", "run", "--data", "d", "--coef", "c", "--iterations", "1",
                "--chain", "block", "--io", "uring", env=env)
    assert p.returncode == 2 and "io_uring" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = run_cli("wavefront", "run", "--data", "d", "--coef", "c", "--iterations", "1",
                "--chain", "diagonal", env=env)
    assert p.returncode == 2 and "diagonal" in p.stderr


@needs_tool
def test_tool_help_version_direct_stats(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """The C tool: --help (every option with its unit) and --version exit 0; `--io direct`
    through the CLI is bitwise the reference and the JSON carries the request counts and
    the library's statistics (confidence level, honest `converged`); a stale temporary
    file of a killed conversion is reported and removed."""
    import subprocess

    from mpilab.tools import find_tool

    tool = find_tool("mpilab-wavefront")
    p = subprocess.run([tool, "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--queue-depth" in p.stdout and "in elements" in p.stdout
    assert "seconds" in p.stdout and "direct" in p.stdout
    p = subprocess.run([tool, "run", "-h"], capture_output=True, text=True)
    assert p.returncode == 0 and "--iterations" in p.stdout
    p = subprocess.run([tool, "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("mpilab-wavefront ")
    env = _env()
    assert run_cli("wavefront", "create", "--rows", "40", "--cols", "36", "d0", "c0",
                   env=env).returncode == 0
    (tmp_path / "d.tmp.999999999").write_text("left by a killed conversion")
    for what, src in (("d", "d0"), ("c", "c0")):
        p = run_cli("wavefront", "convert", "--layout", "optimized", "--mb", "8", "--nb", "9",
                    src, what, env=env)
        assert p.returncode == 0, p.stderr
        if what == "d":
            assert "removed stale temporary file" in p.stderr
    assert not (tmp_path / "d.tmp.999999999").exists()
    p = run_cli("wavefront", "run", "--data", "d", "--coef", "c", "--iterations", "3",
                "--workers", "2", "--io", "direct", "--json", "r.json", env=env)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    wf = doc["wavefront"]
    assert wf["io"] == "direct" and wf["requests_read"] > 0 and wf["requests_written"] > 0
    st = doc["measurements"][0]["stats"]
    assert st["reps"] == 3 and st["cl"] == 0.95 and isinstance(st["converged"], bool)
    assert st["converged"] == (st["ci_half"] <= st["eps"] * st["mean"])
    p = run_cli("wavefront", "verify", "--initial", "d0", "--coef", "c0", "--iterations", "3",
                "d", env=env)
    assert p.returncode == 0 and "bitwise equal" in p.stdout, p.stdout + p.stderr


@needs_tool
def test_io_turns(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """--io-turns through the CLI: 3 workers, pread and O_DIRECT, bitwise the reference, the
    JSON says so (wavefront and provenance options); io_uring refused with one line."""
    env = _env()
    assert run_cli("wavefront", "create", "--rows", "31", "--cols", "29", "--seed", "5",
                   "d0", "c0", env=env).returncode == 0
    assert run_cli("wavefront", "convert", "--layout", "block", "--mb", "7", "--nb", "5",
                   "c0", "c", env=env).returncode == 0
    for io in ("pread", "direct"):
        assert run_cli("wavefront", "convert", "--layout", "optimized", "--mb", "7", "--nb",
                       "5", "d0", "w", env=env).returncode == 0
        p = run_cli("wavefront", "run", "--data", "w", "--coef", "c", "--iterations", "3",
                    "--workers", "3", "--io", io, "--io-turns", "--json", "t.json", env=env)
        assert p.returncode == 0, p.stderr
        doc = json.loads((tmp_path / "t.json").read_text())
        assert doc["wavefront"]["io_turns"] is True
        assert doc["provenance"]["options"]["io_turns"] is True
        p = run_cli("wavefront", "verify", "--initial", "d0", "--coef", "c0", "--iterations",
                    "3", "w", env=env)
        assert p.returncode == 0 and "bitwise equal" in p.stdout, p.stdout + p.stderr
    p = run_cli("wavefront", "run", "--data", "w", "--coef", "c", "--iterations", "1",
                "--io", "uring", "--io-turns", env=env)
    assert p.returncode == 2 and ("io-turns" in p.stderr or "io_uring" in p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1
