"""`mpilab multilane run` stopped before its plan is complete (time limit, SIGINT/SIGTERM,
failure) keeps every measurement it completed: the output is written, marked "partial" with
the reason, named in the one-line message; it loads as a multilane document."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import cli_env
from mpilab.errors import AlreadyReported
from mpilab.multilane import doc
from mpilab.multilane import run as mlrun
from mpilab.tools import REPO

SMPI_MULTILANE = REPO / "build-smpi" / "bin" / "mpilab-multilane"
needs_smpi = pytest.mark.skipif(
    shutil.which("smpirun") is None or not SMPI_MULTILANE.is_file(),
    reason="no SMPI build of mpilab-multilane (scripts/build --smpi) or no smpirun")

HANG_S = 300.0
PROGRESS = re.compile(r"^mpilab-multilane: (scatter|gather) (\w+)\s+P=(\d+)\s+(\d+) B")


def _partial_doc(tmp_path: Path, nruns: int) -> Path:
    """A checkpoint as mpilab-multilane --partial writes it: nruns completed runs."""
    runs = [{"op": "scatter", "impl": "single", "lanes": 1, "bytes": 1024,
             "times": [1e-3, 2e-3], "mean": 1.5e-3, "min": 1e-3, "wall_start": 1.0,
             "wall_end": 2.0} for _ in range(nruns)]
    p = tmp_path / "partial.json"
    p.write_text(json.dumps({"schema": "mpilab.multilane/1", "runs": runs, "partial": True,
                             "partial_reason": "the run stopped before its plan was complete",
                             "grid": {"nranks": 2, "site_of_rank": [0, 1]}}))
    return p


def test_keep_partial_writes_the_checkpoint(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ml.json"
    err = mlrun._keep_partial(_partial_doc(tmp_path, 3), out, "time limit of 5 s reached",
                              124, {"testbed": {"sites": 2}})
    assert isinstance(err, AlreadyReported) and err.status == 124
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and str(out) in line and "3 completed" in line
    d = doc.load(out)
    assert d.data["partial"] is True and d.data["partial_reason"] == "time limit of 5 s reached"
    assert len(d.runs) == 3 and d.data["testbed"] == {"sites": 2}
    from mpilab.multilane import report

    page = report.write([d], tmp_path / "ml.html").read_text()
    assert "PARTIAL: the run stopped before its plan was complete (time limit of 5 s " \
           "reached); 3 completed" in page


def test_keep_partial_without_a_checkpoint(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ml.json"
    err = mlrun._keep_partial(tmp_path / "none.json", out, "SIGTERM received", 143, {})
    assert err.status == 143 and not out.exists()
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and "before any measurement completed" in line


def test_stop_reasons() -> None:
    assert mlrun._stop_reason(124, 30) == "time limit of 30 s reached"
    assert mlrun._stop_reason(128 + signal.SIGINT, 30) == "SIGINT received"
    assert mlrun._stop_reason(1, 30) == "mpilab-multilane failed (exit 1)"


def _stop_at(cmd: list[str], cwd: Path, after: int, sig: int
             ) -> tuple[int, list[tuple[str, str, int, int]], str]:
    """Run cmd; once `after` progress lines have come, send sig to it. Its exit status,
    every progress line it printed (parsed) and its other stderr lines."""
    p = subprocess.Popen(cmd, cwd=cwd, env=cli_env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert p.stderr is not None
    # hang guard: a job that stops printing is killed (its whole session), which ends the
    # read loop below; the test then fails on the status
    guard = threading.Timer(HANG_S, os.killpg, (p.pid, signal.SIGKILL))
    guard.start()
    seen: list[tuple[str, str, int, int]] = []
    other: list[str] = []
    sent = False
    try:
        for line in p.stderr:
            m = PROGRESS.match(line)
            if m:
                seen.append((m[1], m[2], int(m[3]), int(m[4])))
            else:
                other.append(line)
            if len(seen) >= after and not sent:
                p.send_signal(sig)
                sent = True
        return p.wait(timeout=HANG_S), seen, "".join(other)
    finally:
        guard.cancel()


@needs_smpi
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_simulated_run_stopped_at_half_keeps_every_completed_run(
        run_cli: object, tmp_path: Path, sig: int) -> None:
    """4 sizes x 2 operations x (single + P = 1..4) = 40 runs; stopped after the 20th
    progress line: the output holds exactly the runs whose progress lines were printed
    (each line is printed after its run is checkpointed), at least 20 of 40."""
    plat = tmp_path / "spec.xml"
    p = subprocess.run([sys.executable, "-m", "mpilab.cli", "sim", "platform", "spec", "-o",
                        str(plat)], env=cli_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "ml.json"
    status, seen, other = _stop_at(
        [sys.executable, "-m", "mpilab.cli", "multilane", "run", "--sim", str(plat), "--sizes",
         "64K,128K,256K,512K", "--lanes", "all", "--reps", "60", "--model-reps", "2", "-o",
         str(out)], tmp_path, 20, sig)
    assert status == 130, other
    assert 20 <= len(seen) < 40, other
    msg = [ln for ln in other.splitlines() if "completed measurements kept in" in ln]
    assert len(msg) == 1 and str(out) in msg[0] and "(interrupted)" in msg[0], other
    d = doc.load(out)
    assert d.data["partial"] is True and d.data["partial_reason"] == "interrupted"
    assert [(r.op, r.impl, r.lanes if r.impl == "multilane" else 1, r.bytes)
            for r in d.runs] == [(op, impl, P if impl == "multilane" else 1, b)
                                 for op, impl, P, b in seen]
    assert d.data["provenance"]["simulated"]["ranks"] == 8
    assert not list(tmp_path.glob("ml.json.*")), "a temporary file was left"
