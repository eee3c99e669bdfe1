"""A run killed midway keeps what it measured: mpilab-bench checkpoints its results file
(marked partial) while it runs; after SIGKILL of the whole job the file loads, says it is
partial, and `mpilab report` renders it with a partial banner."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env, real_runner
from mpilab import results
from mpilab.launch import mpirun_command


def _partial_measurements(path: Path) -> int:
    """Measurements in a partial checkpoint at path (0 if none yet or being replaced)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return 0
    return len(doc.get("measurements", [])) if doc.get("partial") is True else 0


def _descendants(pid: int) -> list[int]:
    """Every process below pid (children first found, deepest last)."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    out: list[int] = []
    todo = [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


@pytest.mark.skipif(real_runner() is None, reason="mpilab-bench not built")
def test_killed_run_leaves_partial_file_report_shows_banner(
        tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    out = tmp_path / "run.json"
    # far more work than any machine finishes before the second checkpoint (which comes at
    # least a second after the first): 25 sizes up to 16 MiB x 3 entries x 3 timings, 1000
    # repetitions each. (With sizes to 64 KiB and 200 repetitions a fast CI machine finished
    # the whole run between two polls.)
    cmd = mpirun_command(2) + [str(real_runner()), "--quiet", "--ops", "scatter,gather,bcast",
                              "--timing", "max,root,global", "--sizes", "0:16M:x2",
                              "--min-reps", "1000", "--max-reps", "1000", "--out", str(out)]
    p = subprocess.Popen(cmd, env=cli_env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # wait for progress, not for a time: the second checkpoint (>= 2 measurements)
        n = 0
        while p.poll() is None and n < 2:
            time.sleep(0.2)
            n = _partial_measurements(out)
        assert p.poll() is None, "the run finished before it could be interrupted"
    finally:
        if p.poll() is None:
            # the whole job: Open MPI puts each rank in a process group of its own, so
            # killing mpirun's group alone can leave rank 0 running to a complete file
            for pid in [*_descendants(p.pid), p.pid]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        p.wait()
    doc = json.loads(out.read_text())
    assert doc["partial"] is True and "stopped" in doc["partial_reason"]
    r = results.load(out)
    assert len(r.measurements) >= 2
    html = tmp_path / "run.html"
    q = run_cli("report", str(out), "-o", str(html), timeout=900)
    assert q.returncode == 0, q.stderr
    text = html.read_text()
    assert "PARTIAL RESULTS" in text and f"the {len(r.measurements)} measurements" in text
