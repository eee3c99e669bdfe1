"""CLI conventions of every tool: each C tool in build/bin named mpilab-* and the `mpilab`
command accept -h, --help and --version, exit 0 and print to stdout; --version names the
tool and mpilab's version."""

from __future__ import annotations

import subprocess
import sys

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
