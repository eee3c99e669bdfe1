"""Which MPI a program and a launcher belong to is probed once per file and remembered in the
data folder; a rebuilt file is probed again; a damaged memory is ignored."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest
from mpilab import launch


def _ident(p: Path) -> tuple[str, int, int, int]:
    return launch._identity(str(p))


def test_a_probe_is_remembered_and_a_changed_file_probed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPILAB_DATA_DIR", str(tmp_path / "data"))
    f = tmp_path / "prog"
    f.write_text("one")
    calls: list[str] = []

    def probe(answer: str) -> str:
        calls.append(answer)
        return answer

    assert launch._probed("program", _ident(f), functools.partial(probe, "mpich")) == "mpich"
    # a second run (no probe: the remembered answer)
    assert launch._probed("program", _ident(f), functools.partial(probe, "openmpi")) == "mpich"
    assert calls == ["mpich"]
    f.write_text("rebuilt, longer")  # another size and modification time
    os.utime(f, ns=(1, 1))
    assert launch._probed("program", _ident(f), functools.partial(probe, "openmpi")) == "openmpi"
    assert calls == ["mpich", "openmpi"]
    kept = json.loads((tmp_path / "data" / launch.PROBES_FILE).read_text())
    assert sorted(kept.values()) == ["mpich", "openmpi"]


def test_unanswered_probes_and_damaged_memory_are_not_trusted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPILAB_DATA_DIR", str(tmp_path / "data"))
    f = tmp_path / "mpirun"
    f.write_text("x")
    assert launch._probed("launcher", _ident(f), functools.partial(lambda: None)) is None
    assert not (tmp_path / "data" / launch.PROBES_FILE).exists()  # None is not remembered
    (tmp_path / "data").mkdir()
    key = json.dumps(["launcher", *_ident(f)])
    (tmp_path / "data" / launch.PROBES_FILE).write_text(json.dumps({key: "rm -rf"}))
    assert launch._probed("launcher", _ident(f), functools.partial(lambda: "mpich")) == "mpich"
    (tmp_path / "data" / launch.PROBES_FILE).write_text("not json")
    assert launch._probed("launcher", _ident(f), functools.partial(lambda: "openmpi")) == \
        "openmpi"


def test_a_data_folder_that_cannot_be_written_still_probes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("MPILAB_DATA_DIR", str(tmp_path / "file" / "data"))
    f = tmp_path / "prog"
    f.write_text("x")
    assert launch._probed("program", _ident(f), functools.partial(lambda: "openmpi")) == "openmpi"
