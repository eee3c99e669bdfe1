"""Outputs that could hang or break: a FIFO with no reader is refused at once in one line
(a timeout turns a hang into a failure), and `-o - | head -c 10` exits 0 quietly."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import real_runner
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text

DATA = Path(__file__).resolve().parents[1] / "data" / "survey-quick-np3.json"
MPILAB = [sys.executable, "-m", "mpilab.cli"]


def test_fifo_without_reader_refused_not_hung(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(MpilabError, match="no reader"):
        atomic_write_text(fifo, "x")


def test_report_to_fifo_without_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "out.html"
    os.mkfifo(fifo)
    r = subprocess.run(MPILAB + ["report", str(DATA), "-o", str(fifo)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2
    assert "a FIFO with no reader" in r.stderr and r.stderr.count("\n") == 1


def test_report_stdout_closed_early_is_quiet() -> None:
    p = subprocess.Popen(MPILAB + ["report", str(DATA), "-o", "-"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    head = p.stdout.read(10)
    p.stdout.close()  # the reader stops, as `| head -c 10` does
    err = p.stderr.read().decode()
    rc = p.wait(timeout=120)
    assert head.startswith(b"<!DOCTYPE")
    assert rc == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err


@pytest.mark.skipif(real_runner() is None or shutil.which("mpirun") is None,
                    reason="needs the built mpilab-bench and mpirun")
def test_bench_out_dash_is_one_json_document() -> None:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(["mpirun", "--oversubscribe", "-np", "2", str(real_runner()),
                        "--ops", "p2p", "--sizes", "1", "--quiet", "--out", "-"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # exactly one document: "Extra data" fails here
    assert doc["measurements"] and "op" in r.stderr  # the table went to standard error


@pytest.mark.skipif(real_runner() is None or shutil.which("mpirun") is None,
                    reason="needs the built mpilab-bench and mpirun")
@pytest.mark.parametrize("launches", ["1", "2"])
def test_mpilab_bench_out_dash_closed_early_is_quiet(launches: str) -> None:
    # one launch used to hand our stdout to mpirun, which died of SIGPIPE (status 139)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               MPILAB_BIN=str(Path(str(real_runner())).parent))
    p = subprocess.Popen(MPILAB + ["bench", "--launches", launches, "--out", "-",
                                   "--launcher-arg=--oversubscribe", "--", "--ops", "p2p",
                                   "--sizes", "1", "--quiet", "--time-budget", "2s"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert p.stdout is not None and p.stderr is not None
    head = p.stdout.read(10)
    p.stdout.close()  # the reader stops, as `| head -c 10` does
    err = p.stderr.read().decode()
    rc = p.wait(timeout=300)
    assert head.startswith(b"{"), err
    assert rc == 0, err
    assert "SIGPIPE" not in err and "Traceback" not in err and "Broken pipe" not in err


@pytest.mark.skipif(real_runner() is None, reason="needs the built mpilab-bench")
def test_bench_to_fifo_without_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    r = subprocess.run([str(real_runner()), "--ops", "barrier", "--sizes", "0", "--quiet",
                        "--out", str(fifo)], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "a FIFO with no reader" in r.stderr


@pytest.mark.skipif(real_runner() is None, reason="needs the built mpilab-bench")
def test_inject_clock_key_twice_refused() -> None:
    r = subprocess.run([str(real_runner()), "--ops", "barrier", "--sizes", "0",
                        "--inject-clock", "offset=1ms,offset=2ms"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "'offset' given twice" in r.stderr
    assert r.stderr.count("\n") == 1
