"""scripts/build exits non-zero when a step fails: the real script, run in a scratch tree
whose cmake succeeds and whose venv python fails the editable pip install (as it did with
"invalid command 'bdist_wheel'" before scripts/install-deps had run)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _stub(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def test_build_fails_when_pip_install_fails(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "build", tree / "scripts" / "build")
    _stub(tree / "scripts" / "venv", "exit 0")
    _stub(tree / ".venv" / "bin" / "python",
          "echo \"error: invalid command 'bdist_wheel'\" >&2; exit 1")
    _stub(tree / "build" / "bin" / "mpilab-x", "exit 0")  # what cmake would have built
    _stub(tmp_path / "bin" / "cmake", "exit 0")
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    r = subprocess.run(["bash", str(tree / "scripts" / "build")], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "bdist_wheel" in r.stdout + r.stderr
