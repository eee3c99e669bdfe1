"""CLI conventions of every tool: each C tool in build/bin named mpilab-* and the `mpilab`
command accept -h, --help and --version, exit 0 and print to stdout; --version names the
tool and mpilab's version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cli_env
from mpilab import __version__

BIN = REPO / "build" / "bin"


def _tools() -> list[str]:
    return sorted(p.name for p in BIN.glob("mpilab-*") if p.is_file())


def test_tools_are_built() -> None:
    if not BIN.is_dir():
        pytest.skip("build/bin missing: scripts/build")
    assert "mpilab-bench" in _tools()


@pytest.mark.parametrize("flag", ["-h", "--help", "--version"])
@pytest.mark.parametrize("tool", _tools() + ["mpilab"])
def test_help_and_version(tool: str, flag: str) -> None:
    cmd = ([sys.executable, "-m", "mpilab.cli"] if tool == "mpilab" else [str(BIN / tool)])
    p = subprocess.run(cmd + [flag], capture_output=True, text=True, timeout=120,
                       env=cli_env(), stdin=subprocess.DEVNULL)
    assert p.returncode == 0, (tool, flag, p.stderr)
    out = p.stdout.strip()
    assert out, (tool, flag)
    if flag == "--version":
        assert out.splitlines()[0] == f"{tool} {__version__}", out
    else:
        assert "usage" in out.lower(), out


@pytest.mark.parametrize("tool", _tools())
def test_unknown_option_is_one_line(tool: str) -> None:
    p = subprocess.run([str(BIN / tool), "--no-such-option"], capture_output=True, text=True,
                       timeout=300, env=cli_env(), stdin=subprocess.DEVNULL)
    assert p.returncode == 2, (tool, p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, (tool, p.stderr)
    assert "--no-such-option" in lines[0], (tool, lines)


@pytest.mark.parametrize("cmd,option", [
    (["mpilab-selftest", "fit", "--trials"], "--trials"),
    (["mpilab-seekfs", "--size"], "--size"),
    (["mpilab-bench", "--sizes"], "--sizes"),
])
def test_missing_value_is_one_line(cmd: list[str], option: str) -> None:
    if not (BIN / cmd[0]).is_file():
        pytest.skip(f"{cmd[0]} not built")
    p = subprocess.run([str(BIN / cmd[0]), *cmd[1:]], capture_output=True, text=True,
                       timeout=300, env=cli_env(), stdin=subprocess.DEVNULL)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [p.stderr.strip()], p.stderr
    assert f"option '{option}' needs a value" in p.stderr, p.stderr


def test_selftest_unwritable_out_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "fit.json"
    p = subprocess.run([str(BIN / "mpilab-selftest"), "fit", "--trials", "1", "--out", str(out)],
                       capture_output=True, text=True, timeout=300, env=cli_env(),
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(out) in lines[0], p.stderr
    assert not out.parent.exists()


@pytest.mark.parametrize("group", ["disk", "multilane", "pathmig", "testbed"])
def test_command_group_without_action_is_one_line(group: str) -> None:
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", group], capture_output=True,
                       text=True, timeout=120, env=cli_env(), stdin=subprocess.DEVNULL)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [f"mpilab: {group}: no action given "
                                             f"(mpilab {group} --help lists them)"], p.stderr


def _subcommands(parser: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    import argparse
    out = []
    for a in parser._actions:  # type: ignore[attr-defined]
        if isinstance(a, argparse._SubParsersAction):
            for name, p in a.choices.items():
                out.append(path + (name,))
                out += _subcommands(p, path + (name,))
    return out


def test_every_subcommand_answers_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`mpilab SUB [SUB...] --version` prints mpilab's version and exits 0, for every
    subcommand the CLI has (OSU/IMB users type it first)."""
    from mpilab import __version__
    from mpilab.cli import build_parser

    subs = _subcommands(build_parser())
    assert len(subs) > 20
    for sub in subs:
        with pytest.raises(SystemExit) as e:
            build_parser().parse_args([*sub, "--version"])
        assert e.value.code == 0, sub
        assert capsys.readouterr().out.strip() == f"mpilab {__version__}", sub
