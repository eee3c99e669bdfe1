"""scripts/install-deps installs exactly what is missing and nothing when everything is
present: the real script in a scratch tree whose dpkg-query, apt-get and pip are stubs that
log their calls (the Python check itself runs for real, on a scratch pyproject.toml)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _stub(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def _run(tmp_path: Path, apt_absent: str, extra_dep: str
         ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "install-deps", tree / "scripts" / "install-deps")
    log = tmp_path / "calls.log"
    log.write_text("")
    _stub(tree / "scripts" / "venv", "exit 0")
    # .venv's python: pip is a stub, everything else this interpreter (which has pytest)
    _stub(tree / ".venv" / "bin" / "python",
          f'if [ "$1" = -m ] && [ "$2" = pip ]; then echo "pip $*" >> {log}; exit 0; fi\n'
          f'exec {sys.executable} "$@"')
    test_extra = '"pytest"' + (f', "{extra_dep}"' if extra_dep else "")
    (tree / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\n'
        '[project]\nname = "x"\ndependencies = ["pytest>=1"]\n'
        f"[project.optional-dependencies]\ntest = [{test_extra}]\n")
    bin_dir = tmp_path / "bin"
    # dpkg-query: every package asked for is installed but apt_absent (as dpkg-query says
    # of an unknown package: on stderr, status 1)
    _stub(bin_dir / "dpkg-query",
          f'printf "%s\\n" "dpkg-query $*" >> {log}; shift 2; rc=0\n'
          f'for p; do if [ "$p" = "{apt_absent}" ]; then echo "no packages found matching $p" >&2; '
          'rc=1; else echo "$p install ok installed"; fi; done; exit $rc')
    _stub(bin_dir / "apt-get", f'echo "apt-get $*" >> {log}')
    _stub(bin_dir / "sudo", '"$@"')
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    r = subprocess.run(["bash", str(tree / "scripts" / "install-deps")], capture_output=True,
                       text=True, timeout=120, env=env)
    return r, log.read_text().splitlines()


def test_nothing_installed_when_everything_is_present(tmp_path: Path) -> None:
    r, calls = _run(tmp_path, "", "")
    assert r.returncode == 0, r.stderr
    # one dpkg-query for every package, no apt-get, no pip
    assert len(calls) == 1 and calls[0].startswith("dpkg-query -W"), calls
    assert " cmake " in calls[0] and " chromium-driver " in calls[0], calls
    assert r.stderr.strip() == "install-deps: all dependencies present"


def test_exactly_the_missing_ones_are_installed(tmp_path: Path) -> None:
    r, calls = _run(tmp_path, "cmake", "mpilab-no-such-dist>=1")
    assert r.returncode == 0, r.stderr
    installs = [c for c in calls if "install" in c.split()[:4]]
    assert installs == ["apt-get install -y -qq --no-install-recommends cmake",
                        "pip -m pip install -q mpilab-no-such-dist>=1"], calls
    assert "apt installing cmake" in r.stderr and "pip installing mpilab-no-such-dist" in r.stderr


def test_a_failed_pip_install_fails(tmp_path: Path) -> None:
    # the stub pip succeeds; make it fail: install-deps must not claim success
    r, _ = _run(tmp_path, "", "mpilab-no-such-dist")
    assert r.returncode == 0
    py = tmp_path / "tree" / ".venv" / "bin" / "python"
    py.write_text(py.read_text().replace("exit 0; fi", "exit 1; fi"))
    r = subprocess.run(["bash", str(tmp_path / "tree" / "scripts" / "install-deps")],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}"))
    assert r.returncode != 0 and "all dependencies present" not in r.stderr, r.stderr

