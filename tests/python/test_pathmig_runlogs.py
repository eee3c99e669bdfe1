"""Path migration without a testbed (no root): the merged event logs of `testbed run
--pathmig` kept per run (rotated by count, never removed by the next run's clean-up of the
agents' own logs), and `pathmig arm|migrate all` ending with exit 2 when an agent refused
a connection."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mpilab.pathmig import agents

REPO = Path(__file__).resolve().parents[2]


class FakeSpec:
    prefix = "fk"
    rails = 2

    def node_names(self) -> list[str]:
        return ["s0n0", "s1n0"]


@pytest.fixture()
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSpec:
    monkeypatch.setenv("MPILAB_TESTBED_STATE_ROOT", str(tmp_path))
    sp = FakeSpec()
    agents.agent_dir(sp).mkdir(parents=True)
    return sp


def test_the_next_run_keeps_the_previous_runs_events(spec: FakeSpec) -> None:
    d = agents.agent_dir(spec)
    run = agents.run_log_path(spec)
    run.write_text('{"event": "state"}\n')
    other = d / "notes.jsonl"  # not an agent's log either
    other.write_text("{}\n")
    for n in spec.node_names():
        (d / f"{n}.jsonl").write_text("{}\n")
    agents.clear_logs(spec)
    assert run.read_text() == '{"event": "state"}\n'
    assert other.exists()
    assert not any((d / f"{n}.jsonl").exists() for n in spec.node_names())


def test_run_logs_are_rotated_by_count(spec: FakeSpec) -> None:
    t0 = 1_800_000_000.0
    paths = [agents.run_log_path(spec, t0 + k * 0.25) for k in range(25)]
    assert len(set(paths)) == 25  # runs within one second get names of their own
    assert paths == sorted(paths)  # names sort by time
    for p in reversed(paths):  # written in any order: the name decides
        p.write_text("{}\n")
    removed = agents.rotate_runs(spec)
    assert removed == paths[:5]
    left = sorted(agents.agent_dir(spec).glob("run-*.jsonl"))
    assert left == paths[5:] and len(left) == agents.RUNS_KEPT
    assert agents.rotate_runs(spec) == []


# `mpilab pathmig arm|migrate` against fake agents, one of which refuses a connection
RUNNER = r"""
import sys
from mpilab.pathmig import agents
from mpilab.testbed import net

class FakeSpec:
    prefix = "fk"
    rails = 2
    def node_names(self):
        return ["s0n0", "s1n0"]

REFUSE = sys.argv.pop(1) == "refuse"

def request(sp, node, line, timeout=10.0):
    if node == "s1n0" and REFUSE:
        return {"done": 0, "errors": ["connection 0000002a: no alternate path available "
                                      "(primary rail 0)"]}
    return {"done": 2}

net.current_spec = lambda prefix: FakeSpec()
agents.running = lambda sp: {"s0n0": 11, "s1n0": 12}
agents.request = request
from mpilab.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("verb", ["arm", "migrate"])
def test_arm_all_refused_exits_2(verb: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    for mode, rc in (("refuse", 2), ("accept", 0)):
        p = subprocess.run([sys.executable, "-c", RUNNER, mode, "pathmig", verb, "all"],
                           capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode == rc, (mode, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr
        if rc:
            assert "refused" in p.stdout and "0000002a" in p.stdout
